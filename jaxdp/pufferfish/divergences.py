r"""Renyi divergences of noisy outputs: closed forms and exact quadrature.

Notation: :math:`D_\alpha(P\|Q) = \frac{1}{\alpha-1}\log\int p^\alpha q^{1-\alpha}`, alpha the Renyi
order. The outputs of an additive mechanism with prior :math:`\mu` are :math:`q = \mu * p`.

Closed forms [D]

* :math:`D_\alpha(N(x, s^2)\|N(x', s^2)) = \alpha (x - x')^2 / (2 s^2)`;
* :math:`(\alpha - 1) D_\alpha(\mathrm{Lap}(x, b)\|\mathrm{Lap}(x', b)) = \log g_\alpha(|x-x'|/b)`,
  :math:`g_\alpha(t) = \frac{\alpha}{2\alpha-1}e^{(\alpha-1)t} + \frac{\alpha-1}{2\alpha-1}e^{-\alpha t}`;
* Gaussian priors :math:`N(m_i, s_i^2), N(m_j, s_j^2)`, :math:`v = s^2 + \sigma^2`,
  :math:`v_a = \alpha v_j + (1-\alpha) v_i`:
  :math:`D_\alpha = \frac{\alpha (m_i-m_j)^2}{2 v_a} + \frac{\log(v_a / (v_i^{1-\alpha} v_j^\alpha))}{2(1-\alpha)}`
  (:math:`+\infty` if :math:`v_a \le 0`).

Exact quadrature for discrete priors (finite Laplace / Gaussian mixtures), all in log domain:

* Laplace: panels between the sorted union of all atoms and a uniform grid of ``grid`` cells.
  Inside a panel no atom lies, so each mixture is :math:`L e^{-(z-t_p)/b} + R e^{-(t_{p+1}-z)/b}`
  with coefficients from cumulative log-sum-exp (O(1) per node); the two tails are integrated in
  closed form. Each panel uses ``order``-point Gauss-Legendre, once on the panel and once on its two
  halves.
* Gaussian: uniform panels over :math:`[\min_k c_k - T\sigma, \max_k c_k + T\sigma]` with
  :math:`c = \alpha x - (\alpha-1) y` the centres of the pair terms, and
  :math:`T^2/2 = (\alpha-1) B + 60` where :math:`B` is the Theorem-2 bound on the quantile coupling;
  the mass outside is at most :math:`e^{(\alpha-1)B}\,\mathrm{erfc}(T/\sqrt2)` by joint convexity
  (added for alpha > 1; dropping it is already safe for alpha < 1).

**Error margin** (stated, added on the safe side): with :math:`I_f` (halves) and :math:`I_c`
(whole panels), the integral is taken as
:math:`I_f (1 \pm \delta)`, :math:`\delta = 10 |I_f - I_c| / I_f + 10^{-12} + 8 u (1 + \alpha R / s)`
(:math:`u` = float64 unit roundoff, :math:`R/s` the support range in noise units, for the
cancellation in the cumulative sums); + for alpha > 1, - for alpha < 1, so the returned upper value
of :math:`D_\alpha` errs high. If a panel is wider than ``2 s / (2 alpha - 1)`` times
``max_panel_ratio`` the quadrature is declared unreliable and the upper value is ``+inf``.
The 10x factor on the Richardson-type difference is a heuristic, not a proof: Gauss-Legendre on
analytic integrands converges geometrically, so the half-panel error is far below the difference.

alpha = inf (Laplace only, exact): on each panel :math:`q_i/q_j` is a Moebius function of
:math:`e^{2z/b}`, hence monotone, so :math:`D_\infty = \max(\text{atoms}, \text{tail limits})` of
:math:`\log q_i/q_j`, evaluated exactly.
"""

from __future__ import annotations

import functools

import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr

from ._common import log_g_laplace, prepare_samples, check_alpha, check, nan_where_invalid
from .._validate import check_choice
from .couplings import quantile_coupling

_U = float(np.finfo(np.float64).eps)
_SAFETY = 10.0
_FLOOR = 1e-12


def _gl(order):
    x, w = np.polynomial.legendre.leggauss(order)
    return jnp.asarray(x), jnp.asarray(w)


# ---------------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------------


def renyi_gaussian_shift(delta, sigma, alpha):
    """alpha delta^2 / (2 sigma^2): D_alpha(N(x, sigma^2) || N(x + delta, sigma^2)), any alpha > 0."""
    return alpha * jnp.square(delta) / (2.0 * jnp.square(sigma))


def renyi_laplace_shift(delta, b, alpha):
    """D_alpha(Lap(x, b) || Lap(x + delta, b)) = log g_alpha(|delta|/b) / (alpha - 1); alpha = inf gives |delta|/b."""
    t = jnp.abs(delta) / b
    a_fin = jnp.isfinite(alpha)
    a_s = jnp.where(a_fin, alpha, 2.0)
    return jnp.where(a_fin, log_g_laplace(t, a_s) / (a_s - 1.0), t)


def renyi_gaussian_priors(mean_i, std_i, mean_j, std_j, sigma, alpha):
    """Closed-form D_alpha(N(m_i, s_i^2 + sigma^2) || N(m_j, s_j^2 + sigma^2)) [D]; +inf if v_a <= 0."""
    vi = jnp.square(std_i) + jnp.square(sigma)
    vj = jnp.square(std_j) + jnp.square(sigma)
    va = alpha * vj + (1.0 - alpha) * vi
    pos = va > 0
    vas = jnp.where(pos, va, 1.0)
    d = alpha * jnp.square(mean_i - mean_j) / (2.0 * vas) + (
        jnp.log(vas) - (1.0 - alpha) * jnp.log(vi) - alpha * jnp.log(vj)) / (2.0 * (1.0 - alpha))
    return jnp.where(pos, d, jnp.inf)


# ---------------------------------------------------------------------------------------------
# exact quadrature: Laplace mixtures
# ---------------------------------------------------------------------------------------------


def _safe_logaddexp(a, b):
    """logaddexp with a zero (not NaN) derivative where both arguments are -inf (zero-weight atoms)."""
    m = jnp.maximum(a, b)
    fin = jnp.isfinite(m)
    ms = jnp.where(fin, m, 0.0)
    s = jnp.exp(jnp.where(fin, a, 0.0) - ms) * jnp.isfinite(a) + jnp.exp(jnp.where(fin, b, 0.0) - ms) * jnp.isfinite(b)
    return jnp.where(fin, ms + jnp.log(jnp.where(fin, s, 1.0)), m)


def _cumlse(v, reverse=False):
    # sequential scan: compiles far faster than lax.cumlogsumexp on CPU and is exact in log domain
    _, out = jax.lax.scan(lambda c, a: (_safe_logaddexp(c, a),) * 2, jnp.asarray(-jnp.inf, v.dtype), v,
                          reverse=reverse)
    return out


def _lap_coeffs(x, lw, t, b):
    """For each breakpoint t_p: log L(t_p) = log sum_{x <= t_p} w e^{-(t_p - x)/b} and
    log R(t_p) = log sum_{x >= t_p} w e^{-(x - t_p)/b}."""
    o = jnp.argsort(x)
    xs, lws = x[o], lw[o]
    x0 = xs[0]
    cl = _cumlse(lws + (xs - x0) / b)            # prefix
    cr = _cumlse(lws - (xs - x0) / b, reverse=True)  # suffix
    n = xs.shape[0]
    kl = jnp.searchsorted(xs, t, side="right", method="compare_all")  # number of x <= t
    kr = jnp.searchsorted(xs, t, side="left", method="compare_all")   # first index with x >= t
    logL = jnp.where(kl > 0, cl[jnp.clip(kl - 1, 0, n - 1)] - (t - x0) / b, -jnp.inf)
    logR = jnp.where(kr < n, cr[jnp.clip(kr, 0, n - 1)] + (t - x0) / b, -jnp.inf)
    return logL, logR


def _lap_quad(x, lwx, y, lwy, b, alpha, grid, order):
    lo = jnp.minimum(jnp.min(x), jnp.min(y))
    hi = jnp.maximum(jnp.max(x), jnp.max(y))
    rng = hi - lo
    t = jnp.sort(jnp.concatenate([x, y, lo + rng * jnp.linspace(0.0, 1.0, grid + 1)]))
    h = jnp.diff(t)
    gx, gw = _gl(order)
    lLx, lRx = _lap_coeffs(x, lwx, t, b)
    lLy, lRy = _lap_coeffs(y, lwy, t, b)

    def logq(lL, lR, s):
        # inside panel p: q = (L_p e^{-s/b} + R_{p+1} e^{-(h_p - s)/b}) / (2b), s = z - t_p
        return jnp.logaddexp(lL[:-1, None] - s / b, lR[1:, None] - (h[:, None] - s) / b) - jnp.log(2.0 * b)

    def integrate(rel, wts):
        # both directions (i||j, j||i) from the same log-densities
        lwts = jnp.where(wts > 0, jnp.log(jnp.where(wts > 0, wts, 1.0)), -jnp.inf)
        lqi, lqj = logq(lLx, lRx, rel), logq(lLy, lRy, rel)
        return jnp.stack([jax.nn.logsumexp(alpha * lqi + (1.0 - alpha) * lqj + lwts),
                          jax.nn.logsumexp(alpha * lqj + (1.0 - alpha) * lqi + lwts)])

    relc = 0.5 * h[:, None] * (gx[None, :] + 1.0)
    wc = 0.5 * h[:, None] * gw[None, :]
    relf = jnp.concatenate([0.5 * relc, 0.5 * h[:, None] + 0.5 * relc], axis=1)
    wf = jnp.concatenate([0.5 * wc, 0.5 * wc], axis=1)
    lic = integrate(relc, wc)
    lif = integrate(relf, wf)
    # closed-form tails: beyond hi, q = L(hi) e^{-(z-hi)/b} / (2b); below lo, q = R(lo) e^{-(lo-z)/b} / (2b)
    ex = jnp.stack([lLx[-1], lLy[-1]])
    ey = jnp.stack([lLy[-1], lLx[-1]])
    fx = jnp.stack([lRx[0], lRy[0]])
    fy = jnp.stack([lRy[0], lRx[0]])
    ltail_r = alpha * ex + (1.0 - alpha) * ey - jnp.log(2.0)
    ltail_l = alpha * fx + (1.0 - alpha) * fy - jnp.log(2.0)
    ltails = jnp.logaddexp(ltail_r, ltail_l)
    logI_f = jnp.logaddexp(lif, ltails)
    logI_c = jnp.logaddexp(lic, ltails)
    rel_err = _SAFETY * jnp.abs(jnp.expm1(logI_c - logI_f)) + _FLOOR + 8.0 * _U * (1.0 + jnp.abs(alpha) * rng / b)
    reliable = (2.0 * alpha) * jnp.max(h) / b <= 60.0
    rel_err = jnp.where(reliable, rel_err, jnp.inf)
    return logI_f, rel_err


def _lap_dinf(x, lwx, y, lwy, b):
    """Exact D_inf(q_i || q_j) for Laplace mixtures: max of log q_i/q_j at atoms and tail limits."""
    pts = jnp.concatenate([x, y])

    def logq(xx, lw, z):
        return jax.nn.logsumexp(lw[None, :] - jnp.abs(z[:, None] - xx[None, :]) / b, axis=1)

    r_atoms = jnp.max(logq(x, lwx, pts) - logq(y, lwy, pts))
    hi = jnp.maximum(jnp.max(x), jnp.max(y))
    lo = jnp.minimum(jnp.min(x), jnp.min(y))
    # tail limits of the ratio: right  sum w e^{x/b} / sum w' e^{y/b}, left  sum w e^{-x/b} / ...
    tr = jax.nn.logsumexp(lwx + (x - hi) / b) - jax.nn.logsumexp(lwy + (y - hi) / b)
    tl = jax.nn.logsumexp(lwx - (x - lo) / b) - jax.nn.logsumexp(lwy - (y - lo) / b)
    d = jnp.maximum(r_atoms, jnp.maximum(tr, tl))
    rng = hi - lo
    return d, 8.0 * _U * (1.0 + rng / b) + _FLOOR


# ---------------------------------------------------------------------------------------------
# exact quadrature: Gaussian mixtures
# ---------------------------------------------------------------------------------------------


def _gauss_quad(x, lwx, y, lwy, sigma, alpha, grid, order):
    wx, wy = jnp.exp(lwx), jnp.exp(lwy)
    c = quantile_coupling(x, y, wx, wy)
    a_gt1 = alpha > 1.0
    a_s = jnp.where(jnp.isfinite(alpha), alpha, 2.0)
    # Theorem-2 bound on the quantile coupling (for the tail mass bound)
    lm = jnp.where(c.mass > 0, jnp.log(jnp.where(c.mass > 0, c.mass, 1.0)), -jnp.inf)
    lB = jax.nn.logsumexp(lm + a_s * (a_s - 1.0) * jnp.square(c.diff) / (2.0 * sigma**2))  # (alpha-1)B
    T = jnp.sqrt(2.0 * (jnp.maximum(lB, 0.0) + 60.0))
    xmin, xmax = jnp.min(x), jnp.max(x)
    ymin, ymax = jnp.min(y), jnp.max(y)
    # pair-term centres alpha x - (alpha-1) y for both directions (i||j and j||i)
    cen_lo = jnp.where(a_gt1, jnp.minimum(a_s * xmin - (a_s - 1.0) * ymax, a_s * ymin - (a_s - 1.0) * xmax),
                       jnp.minimum(xmin, ymin))
    cen_hi = jnp.where(a_gt1, jnp.maximum(a_s * xmax - (a_s - 1.0) * ymin, a_s * ymax - (a_s - 1.0) * xmin),
                       jnp.maximum(xmax, ymax))
    lo = jnp.minimum(cen_lo, jnp.minimum(xmin, ymin)) - T * sigma
    hi = jnp.maximum(cen_hi, jnp.maximum(xmax, ymax)) + T * sigma
    h = (hi - lo) / grid
    gx, gw = _gl(order)
    left = lo + h * jnp.arange(grid)

    def lq(xx, lw, z):
        zz = z.reshape(-1)
        v = jax.nn.logsumexp(lw[None, :] - jnp.square(zz[:, None] - xx[None, :]) / (2.0 * sigma**2), axis=1)
        return (v - 0.5 * jnp.log(2.0 * jnp.pi * sigma**2)).reshape(z.shape)

    def integrate(rel, wts):
        z = left[:, None] + rel
        lqi, lqj = lq(x, lwx, z), lq(y, lwy, z)
        lw = jnp.log(wts)
        return jnp.stack([jax.nn.logsumexp(a_s * lqi + (1.0 - a_s) * lqj + lw),
                          jax.nn.logsumexp(a_s * lqj + (1.0 - a_s) * lqi + lw)])

    relc = 0.5 * h * (gx[None, :] + 1.0) * jnp.ones((grid, 1))
    wc = 0.5 * h * gw[None, :] * jnp.ones((grid, 1))
    relf = jnp.concatenate([0.5 * relc, 0.5 * h + 0.5 * relc], axis=1)
    wf = jnp.concatenate([0.5 * wc, 0.5 * wc], axis=1)
    lic = integrate(relc, wc)
    lif = integrate(relf, wf)
    # mass outside [lo, hi] <= e^{(alpha-1)B} erfc(T/sqrt2) (joint convexity, alpha > 1)
    ltail = lB + jnp.log(2.0) + log_ndtr(-T)
    rng = jnp.maximum(xmax, ymax) - jnp.minimum(xmin, ymin)
    rel_err = _SAFETY * jnp.abs(jnp.expm1(lic - lif)) + _FLOOR + 8.0 * _U * (1.0 + a_s * rng / sigma) ** 2
    rel_err = rel_err + jnp.where(a_gt1, jnp.exp(ltail - lif), 0.0)
    reliable = h <= 2.0 * sigma
    rel_err = jnp.where(reliable, rel_err, jnp.inf)
    return lif, rel_err


# ---------------------------------------------------------------------------------------------
# public kernels
# ---------------------------------------------------------------------------------------------


def renyi_discrete(x, wx, y, wy, alpha):
    """D_alpha(mu_x || mu_y) of the noise-free discrete laws (atoms matched by equality); alpha = inf allowed."""
    z = jnp.concatenate([x, y])
    eq = z[:, None] == z[None, :]
    first = ~jnp.any(jnp.tril(eq, k=-1), axis=1)
    px = jnp.sum(jnp.where(z[:, None] == x[None, :], wx[None, :], 0.0), axis=1)
    py = jnp.sum(jnp.where(z[:, None] == y[None, :], wy[None, :], 0.0), axis=1)
    use = first & (px > 0)
    lpx = jnp.log(jnp.where(px > 0, px, 1.0))
    lpy = jnp.where(py > 0, jnp.log(jnp.where(py > 0, py, 1.0)), -jnp.inf)
    a_inf = jnp.isinf(alpha)
    a = jnp.where(a_inf, 2.0, alpha)
    gt1 = a > 1.0
    missing = jnp.any(use & (py <= 0))
    terms = jnp.where(use & (py > 0), a * lpx + (1.0 - a) * jnp.where(py > 0, lpy, 0.0), -jnp.inf)
    d = jax.nn.logsumexp(terms) / (a - 1.0)
    d = jnp.where(gt1 & missing, jnp.inf, d)
    dinf = jnp.max(jnp.where(use, lpx - lpy, -jnp.inf))
    return jnp.maximum(jnp.where(a_inf, dinf, d), 0.0)


def _renyi_from_logI(logI, rel_err, alpha):
    """(estimate, upper) of D_alpha from log I and its relative error bound."""
    est = logI / (alpha - 1.0)
    gt1 = alpha > 1.0
    re = jnp.where(jnp.isfinite(rel_err), rel_err, 1.0)
    up_gt1 = (logI + jnp.log1p(re)) / (alpha - 1.0)
    up_lt1 = jnp.where(re < 1.0, (logI + jnp.log1p(-jnp.minimum(re, 0.5))) / (alpha - 1.0), jnp.inf)
    up = jnp.where(gt1, up_gt1, up_lt1)
    up = jnp.where(jnp.isfinite(rel_err) & (rel_err < 0.5), up, jnp.inf)
    return est, up


@functools.partial(jax.jit, static_argnames=("noise", "grid", "order"))
def renyi_mixture(x, wx, y, wy, *, alpha, noise, scale, grid=256, order=8):
    """Kernel (no validation): ``(estimate, upper)`` of D_alpha(mu_x * p || mu_y * p).

    ``noise`` is ``"laplace"`` (scale = b) or ``"gaussian"`` (scale = sigma). Zero weights allowed.
    alpha = inf is exact for Laplace and +inf for Gaussian (unless the laws coincide).
    """
    est, up = renyi_mixture_both(x, wx, y, wy, alpha=alpha, noise=noise, scale=scale, grid=grid, order=order)
    return est[0], up[0]


@functools.partial(jax.jit, static_argnames=("noise", "grid", "order"))
def renyi_mixture_both(x, wx, y, wy, *, alpha, noise, scale, grid=256, order=8):
    """Both directions at once: ``(estimate, upper)``, each of shape (2,) for (x||y, y||x);
    the log-densities are shared, so this costs about half of two calls."""
    x = jnp.asarray(x, jnp.float64)
    y = jnp.asarray(y, jnp.float64)
    wx = jnp.asarray(wx, jnp.float64)
    wy = jnp.asarray(wy, jnp.float64)
    lwx = jnp.where(wx > 0, jnp.log(jnp.where(wx > 0, wx, 1.0)), -jnp.inf)
    lwy = jnp.where(wy > 0, jnp.log(jnp.where(wy > 0, wy, 1.0)), -jnp.inf)
    alpha = jnp.asarray(alpha, jnp.float64)
    scale = jnp.asarray(scale, jnp.float64)
    a_inf = jnp.isinf(alpha)
    a_s = jnp.where(a_inf, 2.0, alpha)
    if noise == "laplace":
        logI, re = _lap_quad(x, lwx, y, lwy, scale, a_s, grid, order)
        est, up = _renyi_from_logI(logI, re, a_s)
        d1, m = _lap_dinf(x, lwx, y, lwy, scale)
        d2, _ = _lap_dinf(y, lwy, x, lwx, scale)
        dinf = jnp.stack([d1, d2])
        est = jnp.where(a_inf, dinf, est)
        up = jnp.where(a_inf, dinf + m, up)
    elif noise == "gaussian":
        logI, re = _gauss_quad(x, lwx, y, lwy, scale, a_s, grid, order)
        est, up = _renyi_from_logI(logI, re, a_s)
        est = jnp.where(a_inf, jnp.inf, est)
        up = jnp.where(a_inf, jnp.inf, up)
    else:
        raise ValueError(f"noise must be one of ['gaussian', 'laplace'], got {noise!r}")
    # D >= 0 always; clamp tiny negative rounding of the estimate
    return jnp.maximum(est, 0.0), jnp.maximum(up, 0.0)


def renyi_divergence(samples_i, samples_j, *, alpha, noise, scale, weights_i=None, weights_j=None,
                     grid=256, order=8, return_upper=False):
    r"""Exact :math:`D_\alpha(\mu_i * p \,\|\, \mu_j * p)` of the noisy outputs of two discrete priors.

    Args:
      samples_i, samples_j: 1-D atoms of the priors (secret-conditioned laws of the query).
      alpha: Renyi order in (0, 1) U (1, inf] (inf: exact for Laplace, +inf for Gaussian).
      noise: ``"laplace"`` (``scale`` = b) or ``"gaussian"`` (``scale`` = sigma, the std).
      weights_i, weights_j: optional non-negative weights (normalised).
      return_upper: also return the upper value including the stated quadrature margin.

    Examples:
      >>> import jaxdp.pufferfish as pf
      >>> float(pf.renyi_divergence([0.0], [1.0], alpha=2.0, noise="gaussian", scale=1.0))  # alpha/2
      1.0
    """
    check_choice("noise", noise, {"laplace", "gaussian"})
    x, wx, okx = prepare_samples("samples_i", samples_i, weights_i, wname="weights_i")
    y, wy, oky = prepare_samples("samples_j", samples_j, weights_j, wname="weights_j")
    a, oka = check_alpha(alpha)
    s, oks = check("scale", scale, lo=0.0, lo_open=True)
    ok = okx & oky & oka & oks
    a, s = jnp.broadcast_arrays(a, s)
    f = lambda aa, ss: renyi_mixture(x, wx, y, wy, alpha=aa, noise=noise, scale=ss, grid=grid, order=order)
    if a.ndim == 0:
        est, up = f(a, s)
    else:
        est, up = jax.vmap(f)(a.ravel(), s.ravel())
        est, up = est.reshape(a.shape), up.reshape(a.shape)
    est = nan_where_invalid(est, ok)
    up = nan_where_invalid(up, ok)
    return (est, up) if return_upper else est


__all__ = [
    "renyi_gaussian_shift", "renyi_laplace_shift", "renyi_gaussian_priors", "renyi_mixture",
    "renyi_divergence", "renyi_discrete", "renyi_mixture_both",
]
