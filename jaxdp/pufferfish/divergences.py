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
from .._config import jit
from .._special import log_ndtr

from ._common import log_g_laplace, prepare_samples, check_alpha, check, nan_where_invalid
from .._validate import check_choice, check_broadcast
from .couplings import quantile_coupling

_U = float(np.finfo(np.float64).eps)
_SAFETY = 10.0
_FLOOR = 1e-12
_KINK = 60.0  # largest bend of the non-quadratic part of log f on a trusted Gaussian panel (as Laplace)


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


# Windows: far-apart atoms are integrated cluster by cluster.  With one grid over the hull of all
# atoms a separation of ~1e3-1e4 noise scales leaves every panel wider than the noise, the
# quadrature sees nothing and the mass is lost.  Instead the nodes are spread uniformly over the
# union of windows around the places where the integrand has its mass (the atoms for Laplace,
# the pair-term centres and atoms for Gaussian); what lies between windows is bounded rigorously.
_T0 = 40.0


def _pullback(seg_lo, seg_hi, grid):
    """``grid + 1`` points uniform in covered length over sorted, disjoint segments ``[lo_k, hi_k]``
    (empty ones allowed), so each cluster gets nodes in proportion to its own extent."""
    ln = jnp.maximum(seg_hi - seg_lo, 0.0)
    C = jnp.concatenate([jnp.zeros(1, ln.dtype), jnp.cumsum(ln)])
    u = C[-1] * jnp.linspace(0.0, 1.0, grid + 1)
    k = jnp.clip(jnp.searchsorted(C, u, side="right", method="compare_all") - 1, 0, seg_lo.shape[0] - 1)
    return jnp.minimum(seg_lo[k] + (u - C[k]), seg_hi[k])


def _lse(v, axis=-1):
    """logsumexp that is -inf with a zero (not NaN) derivative where every entry is -inf (empty
    panels, masks), in forward and reverse mode."""
    m = jnp.max(v, axis=axis, keepdims=True)
    fin = jnp.isfinite(m)
    ms = jax.lax.stop_gradient(jnp.where(fin, m, 0.0))
    e = jnp.where(jnp.isfinite(v), jnp.exp(jnp.where(jnp.isfinite(v), v, 0.0) - ms), 0.0)
    t = jnp.sum(e, axis=axis, keepdims=True)
    out = jnp.where(fin, ms + jnp.log(jnp.where(fin, t, 1.0)), m)
    return jnp.squeeze(out, axis=axis) if isinstance(axis, int) else out.reshape(
        [d for i, d in enumerate(out.shape) if i not in tuple(a % out.ndim for a in axis)])


def _lse_where(v, m):
    return _lse(jnp.where(m, v, -jnp.inf), axis=-1)


def _safe_log(v):
    return jnp.where(v > 0, jnp.log(jnp.where(v > 0, v, 1.0)), -jnp.inf)


def _log1p_margin(rel_err):
    """log(1 + rel_err), +inf where rel_err is inf or NaN (an unreliable quadrature).  Capping it
    (the former log1p(min(rel_err, 1e300))) added only 690.8 to log I, i.e. 690.8 / (alpha - 1)
    to D: at alpha = 735 an 'unreliable' upper value was 0.94 above an estimate that was itself
    0.67 below the truth.  (Select, not min, so the gradient is 0, not NaN, where it is inf.)"""
    ok = rel_err < 1e300
    return jnp.where(ok, jnp.log1p(jnp.where(ok, rel_err, 0.0)), jnp.inf)


def _lap_quad(x, lwx, y, lwy, b, alpha, grid, order):
    """Sound log-integral of q_x^alpha q_y^(1-alpha), both directions: ``(log I_est, log I_bound)``,
    the bound an upper one for alpha > 1 and a lower one for alpha < 1 (so D's upper value)."""
    z = jnp.sort(jnp.concatenate([x, y]))
    lo, hi = z[0], z[-1]
    rng = hi - lo
    # Between atoms f = q_x^a q_y^(1-a) is quasi-convex (every critical point of its log is a
    # minimum) and its log decays at rate >= 1/(2b) away from both ends outside a kink region of
    # half-width log(4a)/2 b; so at W from the atoms f is e^-(T0 + log(1 + R/b)) below its ends.
    W = (2.0 * (_T0 + jnp.log1p(rng / b)) + jnp.log(4.0 * jnp.maximum(alpha, 1.0) + 4.0)) * b
    g = jnp.diff(z)
    far = g > 2.0 * W
    a_hi = jnp.where(far, z[:-1] + W, z[1:])
    b_lo = jnp.where(far, z[1:] - W, z[1:])
    seg_lo = jnp.stack([z[:-1], b_lo], 1).reshape(-1)
    seg_hi = jnp.stack([a_hi, z[1:]], 1).reshape(-1)
    t = jnp.sort(jnp.concatenate([z, _pullback(seg_lo, seg_hi, grid), a_hi, b_lo]))
    h = jnp.diff(t)
    gx, gw = _gl(order)
    lLx, lRx = _lap_coeffs(x, lwx, t, b)
    lLy, lRy = _lap_coeffs(y, lwy, t, b)

    def logq(lL, lR, s):
        # inside panel p: q = (L_p e^{-s/b} + R_{p+1} e^{-(h_p - s)/b}) / (2b), s = z - t_p
        return jnp.logaddexp(lL[:-1, None] - s / b, lR[1:, None] - (h[:, None] - s) / b) - jnp.log(2.0 * b)

    def logf(rel):
        lqi, lqj = logq(lLx, lRx, rel), logq(lLy, lRy, rel)
        return jnp.stack([alpha * lqi + (1.0 - alpha) * lqj, alpha * lqj + (1.0 - alpha) * lqi])  # (2, P, k)

    def panels(rel, wts):
        return _lse(logf(rel) + _safe_log(wts)[None], axis=-1)  # (2, P)

    relc = 0.5 * h[:, None] * (gx[None, :] + 1.0)
    wc = 0.5 * h[:, None] * gw[None, :]
    relf = jnp.concatenate([0.5 * relc, 0.5 * h[:, None] + 0.5 * relc], axis=1)
    wf = jnp.concatenate([0.5 * wc, 0.5 * wc], axis=1)
    lic, lif = panels(relc, wc), panels(relf, wf)
    lend = jnp.max(logf(jnp.stack([jnp.zeros_like(h), h], 1)), axis=-1)  # f at both panel ends
    # Gauss-Legendre is trusted where the log-integrand (Lipschitz 2 alpha / b) varies by <= 60 on
    # the panel; a wider panel (the gap between clusters) is bounded by width x max(f at its ends)
    # (quasi-convexity) for alpha > 1 and dropped for alpha < 1 (a lower bound on I is the safe side).
    res = (jnp.maximum(2.0 * alpha, 2.0) * h / b <= 60.0)[None]
    # closed-form tails: beyond hi, q = L(hi) e^{-(z-hi)/b} / (2b); below lo, q = R(lo) e^{-(lo-z)/b} / (2b)
    ex = jnp.stack([lLx[-1], lLy[-1]])
    ey = jnp.stack([lLy[-1], lLx[-1]])
    fx = jnp.stack([lRx[0], lRy[0]])
    fy = jnp.stack([lRy[0], lRx[0]])
    ltails = jnp.logaddexp(alpha * ex + (1.0 - alpha) * ey, alpha * fx + (1.0 - alpha) * fy) - jnp.log(2.0)
    logI_f = _safe_logaddexp(_lse_where(lif, res), ltails)
    logI_c = _safe_logaddexp(_lse_where(lic, res), ltails)
    logI_est = _safe_logaddexp(_lse(lif, axis=-1), ltails)
    l_unres = _lse_where(_safe_log(h)[None] + lend, ~res)
    rel_err = _SAFETY * jnp.abs(jnp.expm1(logI_c - logI_f)) + _FLOOR + 8.0 * _U * (1.0 + jnp.abs(alpha) * rng / b)
    up = _safe_logaddexp(logI_f, l_unres) + _log1p_margin(rel_err)
    low = jnp.where(rel_err < 0.5, logI_f + jnp.log1p(-jnp.minimum(rel_err, 0.5)), -jnp.inf)
    return logI_est, jnp.where(alpha > 1.0, up, low)




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
    """As :func:`_lap_quad` for Gaussian noise; ``alpha`` finite, != 1."""
    c = quantile_coupling(x, y, jnp.exp(lwx), jnp.exp(lwy))
    lm = _safe_log(c.mass)
    npair = c.mass.shape[0]
    # pointwise f <= sum_kl pi_kl e^{(alpha-1) D_kl} N(c_kl, sigma^2) (joint convexity, alpha > 1),
    # c_kl = alpha x_k - (alpha-1) y_l: a window of T_kl sigma around every pair centre leaves at most
    # e^-60 outside in all.  For alpha < 1, f <= alpha q_x + (1-alpha) q_y: windows round the atoms.
    lpair = alpha * (alpha - 1.0) * jnp.square(c.diff) / (2.0 * sigma**2)  # (alpha - 1) D_kl
    Tk = jnp.sqrt(2.0 * (jnp.maximum(lm + lpair + jnp.log(float(npair)), 0.0) + 60.0))
    Ta = jnp.sqrt(120.0)
    cen = jnp.concatenate([alpha * c.x - (alpha - 1.0) * c.y, alpha * c.y - (alpha - 1.0) * c.x, x, y])
    half = jnp.concatenate([Tk, Tk, Ta * jnp.ones_like(x), Ta * jnp.ones_like(y)]) * sigma
    o = jnp.argsort(cen - half)
    wl, wr = (cen - half)[o], (cen + half)[o]
    prev = jnp.concatenate([jnp.full((1,), -jnp.inf), jax.lax.cummax(wr)[:-1]])
    s_lo, s_hi = jnp.maximum(wl, prev), jnp.maximum(wr, prev)  # disjoint, sorted: the union of windows
    t = jnp.sort(jnp.concatenate([_pullback(s_lo, s_hi, grid), s_lo, s_hi]))
    h = jnp.diff(t)
    mid = t[:-1] + 0.5 * h
    k = jnp.searchsorted(s_lo, mid, side="right", method="compare_all") - 1
    inside = (k >= 0) & (mid <= s_hi[jnp.clip(k, 0, s_hi.shape[0] - 1)]) & (h > 0)
    gx, gw = _gl(order)
    lnorm = 0.5 * jnp.log(2.0 * jnp.pi * sigma**2)
    lw_max = jnp.maximum(jnp.max(jnp.where(jnp.isfinite(lwx), -lwx, 0.0)),
                         jnp.max(jnp.where(jnp.isfinite(lwy), -lwy, 0.0)))

    def lq(xx, lw, zz):
        v = jax.nn.logsumexp(lw[None, None, :] - jnp.square(zz[..., None] - xx[None, None, :]) / (2.0 * sigma**2),
                             axis=-1)
        return v - lnorm, v

    def panels(rel, wts):
        zz = t[:-1, None] + rel
        (lqi, ei), (lqj, ej) = lq(x, lwx, zz), lq(y, lwy, zz)
        lf = jnp.stack([alpha * lqi + (1.0 - alpha) * lqj, alpha * lqj + (1.0 - alpha) * lqi])
        lwt = _safe_log(wts)[None]
        # first-order rounding of the exponents at this node: relative 4u of the dominant term's
        # exponent (<= |log q| + max |log w| + 1 in noise units) plus the node's own rounding u|z|
        e = jnp.maximum(jnp.abs(ei), jnp.abs(ej)) + lw_max + 1.0
        err = (1.0 + jnp.abs(alpha)) * _U * (4.0 * e + jnp.abs(zz) / sigma * jnp.sqrt(2.0 * e))
        tot = _lse(jnp.where(inside[None, :, None], lf + lwt, -jnp.inf), axis=(-2, -1))
        rnd = _lse(jnp.where(inside[None, :, None], lf + lwt + jnp.log(err)[None], -jnp.inf), axis=(-2, -1))
        return tot, jnp.exp(rnd - tot)

    relc = 0.5 * h[:, None] * (gx[None, :] + 1.0)
    wc = 0.5 * h[:, None] * gw[None, :]
    relf = jnp.concatenate([0.5 * relc, 0.5 * h[:, None] + 0.5 * relc], axis=1)
    wf = jnp.concatenate([0.5 * wc, 0.5 * wc], axis=1)
    lic, _ = panels(relc, wc)
    lif, rnd = panels(relf, wf)
    # mass outside the windows <= sum_kl pi_kl e^{(alpha-1)D_kl} erfc(T_kl / sqrt2) (alpha > 1)
    ltail = _lse(lm + lpair + jnp.log(2.0) + log_ndtr(-Tk))
    rel_err = _SAFETY * jnp.abs(jnp.expm1(lic - lif)) + _FLOOR + 2.0 * rnd
    rel_err = rel_err + jnp.where(alpha > 1.0, jnp.exp(ltail - lif), 0.0)
    # Kinks: log q = -z^2/(2 sigma^2) + (convex log-sum-exp of lines), whose slope is
    # xbar(z) / sigma^2, xbar the posterior mean of the atoms, non-decreasing in z.  Where two
    # components far apart cross, xbar jumps by their distance within sigma^2 / distance, and at
    # large alpha the integrand can peak right there (x = [0, 2101.45], y = [0.257, 2103.99],
    # weights [1.2e-5, 1 - 1.2e-5], alpha = 735: all mass at z ~ 1052.12, Gauss-Legendre and its
    # halves agreed on a value 3.5e-4 relative below the truth).  On a panel the non-quadratic part
    # of log f bends by at most h (alpha dxbar_x + |alpha - 1| dxbar_y) / sigma^2 (exact from the
    # end points, by monotonicity); a panel bending by more than _KINK = 60 is not trusted (the
    # Laplace panels' criterion: the log-integrand's slope changes by at most 60 across a panel;
    # 8 rejected ordinary laws, e.g. the alpha = 12 calibration of tests/pufferfish/test_gradients_jit.py).
    def xbar(xx, lw):
        r = jax.nn.softmax(lw[None, :] - jnp.square(t[:, None] - xx[None, :]) / (2.0 * sigma**2), axis=-1)
        return jnp.sum(jnp.where(r > 0, r * xx[None, :], 0.0), axis=-1)

    dbx, dby = jnp.abs(jnp.diff(xbar(x, lwx))), jnp.abs(jnp.diff(xbar(y, lwy)))
    bend = h * jnp.maximum(jnp.abs(alpha), jnp.abs(alpha - 1.0)) * (dbx + dby) / sigma**2
    reliable = jnp.all(jnp.where(inside, h, 0.0) <= 2.0 * sigma) & jnp.all(jnp.where(inside, bend, 0.0) <= _KINK)
    rel_err = jnp.where(reliable, rel_err, jnp.inf)
    up = lif + _log1p_margin(rel_err)
    low = jnp.where(rel_err < 0.5, lif + jnp.log1p(-jnp.minimum(rel_err, 0.5)), -jnp.inf)
    return lif, jnp.where(alpha > 1.0, up, low)


# ---------------------------------------------------------------------------------------------
# public kernels
# ---------------------------------------------------------------------------------------------


def _lse_rounding(terms, size, a):
    """Bound on the float64 rounding of ``_lse(terms) / (a - 1)`` (absolute), first order: term k is
    off by at most 8u ``size_k`` (its parts' magnitudes) and enters with its softmax weight; the
    log-sum-exp itself adds a few ulps of its value and of log n (8u each, times 4 for safety)."""
    lse = _lse(terms)
    fin = jnp.isfinite(lse)
    wts = jnp.where(jnp.isfinite(terms) & fin, jnp.exp(jnp.where(jnp.isfinite(terms), terms, 0.0)
                                                       - jnp.where(fin, lse, 0.0)), 0.0)
    e = 8.0 * jnp.sum(wts * size) + 8.0 * (1.0 + jnp.where(fin, jnp.abs(lse), 0.0) + jnp.log(float(terms.shape[0])))
    return 4.0 * _U * e / jnp.abs(a - 1.0)


def _renyi_discrete(x, wx, y, wy, alpha):
    """:func:`renyi_discrete` and a bound on its float64 rounding error (absolute, in D)."""
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
    both = use & (py > 0)
    terms = jnp.where(both, a * lpx + (1.0 - a) * jnp.where(py > 0, lpy, 0.0), -jnp.inf)
    d = _lse(terms) / (a - 1.0)
    d = jnp.where(gt1 & missing, jnp.inf, d)
    dinf = jnp.max(jnp.where(use, lpx - lpy, -jnp.inf))
    size = jnp.abs(a * lpx) + jnp.abs((1.0 - a) * jnp.where(py > 0, lpy, 0.0))
    err = _lse_rounding(terms, jnp.where(both, size, 0.0), a)
    err_inf = 32.0 * _U * (1.0 + jnp.max(jnp.where(both, jnp.abs(lpx) + jnp.abs(jnp.where(py > 0, lpy, 0.0)), 0.0)))
    return jnp.maximum(jnp.where(a_inf, dinf, d), 0.0), jnp.where(a_inf, err_inf, err)


def renyi_discrete(x, wx, y, wy, alpha):
    """D_alpha(mu_x || mu_y) of the noise-free discrete laws (atoms matched by equality); alpha = inf allowed."""
    return _renyi_discrete(x, wx, y, wy, alpha)[0]


def _coupling_bound(x, wx, y, wy, alpha, noise, scale):
    r"""Joint-convexity bound on the quantile coupling, valid both ways and for every alpha != 1:
    :math:`D_\alpha(q_x\|q_y) \le \frac{1}{\alpha-1}\log\mathbb E_\pi e^{(\alpha-1)D_\alpha(\text{pair})}`
    (alpha = inf: the largest pair divergence, W_inf / b for Laplace, inf for Gaussian).

    Returns ``(bound, err)``, ``err`` a bound on the float64 rounding of ``bound`` (absolute): the
    pair differences are rounded to u relative, each exponent ``log m + (alpha - 1) D_pair`` to a
    few ulps of its parts (:func:`_lse_rounding`)."""
    c = quantile_coupling(x, y, wx, wy)
    lm = _safe_log(c.mass)
    a_inf = jnp.isinf(alpha)
    a = jnp.where(a_inf, 2.0, alpha)
    if noise == "laplace":
        lp = log_g_laplace(jnp.abs(c.diff) / scale, a)
        dinf = jnp.max(jnp.where(c.mass > 0, jnp.abs(c.diff), 0.0)) / scale
    else:
        lp = a * (a - 1.0) * jnp.square(c.diff) / (2.0 * scale**2)
        dinf = jnp.where(jnp.all(jnp.where(c.mass > 0, c.diff == 0, True)), 0.0, jnp.inf)
    pos = c.mass > 0
    terms = jnp.where(pos, lm + lp, -jnp.inf)
    err = _lse_rounding(terms, jnp.where(pos, jnp.abs(lm) + 2.0 * jnp.abs(lp), 0.0), a)
    bound = jnp.where(a_inf, dinf, _lse(terms) / (a - 1.0))
    return bound, jnp.where(a_inf, 8.0 * _U * dinf, err)


# the default return value is the estimate only where the upper value confirms it to this
# relative tolerance; elsewhere (an unresolved law) it is the upper value, never a guess
_RESOLVED = 1e-6


@functools.partial(jit, static_argnames=("noise", "grid", "order"))
def renyi_mixture(x, wx, y, wy, *, alpha, noise, scale, grid=256, order=8):
    """Kernel (no validation): ``(estimate, upper)`` of D_alpha(mu_x * p || mu_y * p).

    ``noise`` is ``"laplace"`` (scale = b) or ``"gaussian"`` (scale = sigma). Zero weights allowed.
    alpha = inf is exact for Laplace and +inf for Gaussian (unless the laws coincide).
    """
    est, up = renyi_mixture_both(x, wx, y, wy, alpha=alpha, noise=noise, scale=scale, grid=grid, order=order)
    return est[0], up[0]


@functools.partial(jit, static_argnames=("noise", "grid", "order"))
def renyi_mixture_both(x, wx, y, wy, *, alpha, noise, scale, grid=256, order=8):
    """Both directions at once: ``(estimate, upper)``, each of shape (2,) for (x||y, y||x);
    the log-densities are shared, so this costs about half of two calls."""
    x0 = jnp.asarray(x, jnp.float64)
    y0 = jnp.asarray(y, jnp.float64)
    wx = jnp.asarray(wx, jnp.float64)
    wy = jnp.asarray(wy, jnp.float64)
    # D is translation invariant; centring makes rounding scale with the spread, not the position
    # (fl(x - m) is exact to u |x - m|; the quadratures' stated margins cover that perturbation).
    # The guards below are tight (the coupling bound is the exact value for far-apart clusters),
    # so they are evaluated on the atoms as given: a centred pair difference can be off by
    # u |x - m| ~ u R, enough to put the guard below the true value (found by the thorough profile:
    # Laplace, b = 1e3, spread 2.75e11, upper 8e-9 relative below the truth).
    m = 0.5 * (jnp.minimum(jnp.min(x0), jnp.min(y0)) + jnp.maximum(jnp.max(x0), jnp.max(y0)))
    x, y = x0 - m, y0 - m
    lwx = _safe_log(wx)
    lwy = _safe_log(wy)
    alpha = jnp.asarray(alpha, jnp.float64)
    scale = jnp.asarray(scale, jnp.float64)
    a_inf = jnp.isinf(alpha)
    a_s = jnp.where(a_inf, 2.0, alpha)
    if noise == "laplace":
        logI, logB = _lap_quad(x, lwx, y, lwy, scale, a_s, grid, order)
    elif noise == "gaussian":
        logI, logB = _gauss_quad(x, lwx, y, lwy, scale, a_s, grid, order)
    else:
        raise ValueError(f"noise must be one of ['gaussian', 'laplace'], got {noise!r}")
    est = logI / (a_s - 1.0)
    up = jnp.where(jnp.isnan(logB), jnp.inf, logB / (a_s - 1.0))
    if noise == "laplace":
        d1, mg = _lap_dinf(x, lwx, y, lwy, scale)
        d2, _ = _lap_dinf(y, lwy, x, lwx, scale)
        dinf = jnp.stack([d1, d2])
        est = jnp.where(a_inf, dinf, est)
        up = jnp.where(a_inf, dinf + mg, up)
    else:
        est = jnp.where(a_inf, jnp.inf, est)
        up = jnp.where(a_inf, jnp.inf, up)
    # rigorous guards: the coupling (joint convexity) bound and data processing (noise-free laws)
    # (each plus its own rounding bound, so the guard itself never falls below the true value)
    cb, cb_err = _coupling_bound(x0, wx, y0, wy, alpha, noise, scale)
    cb = cb + cb_err
    (dp1, e1), (dp2, e2) = _renyi_discrete(x0, wx, y0, wy, alpha), _renyi_discrete(y0, wy, x0, wx, alpha)
    dp = jnp.stack([dp1 + e1, dp2 + e2])
    # (minimum by select: jnp.minimum's derivative multiplies the unused side's tangent by 0,
    # and an infinite guard's tangent is NaN)
    g = jnp.where(dp < cb, dp, cb)
    up = jnp.where(g < up, g, up)
    est = jnp.where(up < est, up, est)
    resolved = up - est <= _RESOLVED * (1.0 + jnp.abs(est))
    est = jnp.where(resolved, est, up)
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
    check_broadcast(alpha=alpha, scale=scale)
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
