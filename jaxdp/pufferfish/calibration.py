r"""Sufficient conditions and calibration for Renyi Pufferfish privacy (RPP).

Conventions: ``alpha`` is the Renyi order, in (0, 1) U (1, inf] (inf = eps-Pufferfish, Laplace
only); a mechanism must satisfy :math:`D_\alpha(q_i\|q_j) \le \varepsilon` **and**
:math:`D_\alpha(q_j\|q_i) \le \varepsilon`. All scales returned are the *smallest* meeting the named
condition, rounded to the feasible side; Laplace scale ``b`` (density :math:`e^{-|z|/b}/2b`),
Gaussian standard deviation ``sigma``.

Key inequality [D] (joint convexity of :math:`(p, q) \mapsto p^\alpha q^{1-\alpha}`): for any coupling
:math:`\pi` of :math:`(\mu_i, \mu_j)`,
:math:`e^{(\alpha-1)D_\alpha(q_i\|q_j)} \lessgtr \mathbb E_\pi[e^{(\alpha-1)D_\alpha(p(\cdot-X)\|p(\cdot-X'))}]`
(``<=`` for alpha > 1, ``>=`` for alpha < 1). Every condition below is
:math:`B(\text{scale}) = \frac{1}{\alpha-1}\log \mathbb E_\pi[e^{\phi(X - X')}] \le \varepsilon` with
the quantile coupling (optimal in 1-D for every convex :math:`h(x-x')`), :math:`D = X - X'`:

========================  =======================================================  =======
method                    :math:`\phi(D)`                                             status
========================  =======================================================  =======
Laplace ``theorem1``      :math:`\pm\alpha|D|/b` (+ for alpha > 1)                      [R]
Laplace ``tight``         :math:`\log g_\alpha(|D|/b)`                                [D]
Gaussian ``theorem2``     :math:`\alpha(\alpha-1)D^2/(2\sigma^2)`                      [R]
exp-family ``expfam``     :math:`\pm\alpha\,\bar c(D)/b`, cost c = |z|, ||z||_1, ||z||_2  [R]
Laplace ``pierquin``      tight at the deterministic :math:`|D| = W_\infty`           [R]
Gaussian ``pierquin``     :math:`\sigma^2 = \alpha W_\infty^2/(2\varepsilon)`           [R]
Laplace ``song``          :math:`b = W_\infty/\varepsilon`                             [R]
========================  =======================================================  =======

``exact`` [D]: the smallest scale at which the quadrature *upper* value of
:math:`\max(D_\alpha(q_i\|q_j), D_\alpha(q_j\|q_i))` is :math:`\le\varepsilon`
(:mod:`jaxdp.pufferfish.divergences` states the margin), then the minimum with ``tight`` /
``theorem2`` (both proven sufficient, so the minimum is still sound).

The constants of the reconstructed [R] conditions are parameters of the bound functions (``phi``
is passed explicitly in :func:`calibrate_condition`). Root finding: :func:`jaxdp.roots.find_root` (bisection; Illinois steps, ``exact_iters`` of them,
for the expensive exact condition) in log-scale over brackets from the inequalities
:math:`\alpha W_1/((\alpha-1)\varepsilon) \le b^*_{\rm Thm1} \le \alpha W_\infty/((\alpha-1)\varepsilon)`,
:math:`\alpha W_2^2/(2\varepsilon) \le \sigma^{*2}_{\rm Thm2} \le \alpha W_\infty^2/(2\varepsilon)`
(and analogues); gradients by the implicit-function theorem.

References:
  N. Ding, W. Yang, Z. Zhang, alpha-Wasserstein Mechanism for Renyi Pufferfish Privacy, arXiv 2605.05723.
  C. Pierquin et al., Renyi Pufferfish Privacy, ICML 2024, https://arxiv.org/abs/2312.13985.
  S. Song, Y. Wang, K. Chaudhuri, Pufferfish privacy mechanisms for correlated data, SIGMOD 2017.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._config import jit
from .._validate import check_choice, check, check_broadcast
from ._common import (check_alpha, check_epsilon, prepare_samples, nan_where_invalid, solve_increasing,
                      log_g_laplace, is_traced)
from .couplings import quantile_coupling, optimise_coupling
from .divergences import renyi_mixture_both, renyi_gaussian_priors, renyi_discrete

LAPLACE_METHODS = ("theorem1", "tight", "exact", "pierquin", "song")
GAUSSIAN_METHODS = ("theorem2", "exact", "pierquin")
_MAX_STEPS = 100  # root-finder steps of the closed-form bounds (each step is cheap)


# ---------------------------------------------------------------------------------------------
# coupled differences
# ---------------------------------------------------------------------------------------------


def coupled_differences(x, wx, y, wy):
    """|D| and log-masses of the quantile coupling, plus W_1, W_2, W_inf."""
    c = quantile_coupling(x, y, wx, wy)
    d = jnp.abs(c.diff)
    pos = c.mass > 0
    lm = jnp.where(pos, jnp.log(jnp.where(pos, c.mass, 1.0)), -jnp.inf)
    w1 = jnp.sum(c.mass * d)
    w2 = jnp.sqrt(jnp.sum(c.mass * d * d))
    winf = jnp.max(jnp.where(pos, d, 0.0))
    return d, lm, w1, w2, winf


def _lse(lm, v):
    return jax.nn.logsumexp(jnp.where(jnp.isfinite(lm), lm + v, -jnp.inf))


# bound functions B(.) of the inverse scale; alpha finite, != 1 -----------------------------------


def bound_theorem1(u, d, lm, alpha, coef=1.0):
    r""":math:`\frac{1}{\alpha-1}\log\mathbb E_\pi e^{\pm \mathrm{coef}\,\alpha|D|u}`, u = 1/b [R]
    (``coef`` = 1 is the paper's constant, kept as a parameter)."""
    sgn = jnp.where(alpha > 1.0, 1.0, -1.0)
    return _lse(lm, sgn * coef * alpha * d * u) / (alpha - 1.0)


def bound_tight(u, d, lm, alpha):
    r""":math:`\frac{1}{\alpha-1}\log\mathbb E_\pi g_\alpha(|D|u)` [D]."""
    return _lse(lm, log_g_laplace(d * u, alpha)) / (alpha - 1.0)


def bound_theorem2(w, d, lm, alpha, coef=1.0):
    r""":math:`\frac{1}{\alpha-1}\log\mathbb E_\pi e^{\mathrm{coef}\,\alpha(\alpha-1)D^2 w}`, w = 1/(2 sigma^2) [R]."""
    return _lse(lm, coef * alpha * (alpha - 1.0) * d * d * w) / (alpha - 1.0)


def _solve_log(bound, lo, hi, params, eps, max_steps=_MAX_STEPS, method="bisection"):
    """Largest v in [lo, hi] with bound(v, *params) <= eps, searched in log v."""

    def fn(xv, p):
        prm, e = p
        return bound(jnp.exp(xv), *prm) - e

    xv = solve_increasing(fn, max_steps, method, jnp.log(lo), jnp.log(hi), (params, eps))
    return jnp.exp(xv)


# The exact methods solve up(scale) <= eps (1 - _EVAL_NOISE).  The quadrature's upper value is
# not bit-reproducible across compilations (inside the calibration's loop vs the public
# renyi_divergence): its margin 10 |I_c - I_f| / I_f amplifies rounding noise.  Measured (thorough
# profile): Laplace, alpha = 0.5, eps = 1, x = [0, 1, 5.67e5], y = [0.5, 5.67e5, 5.67e5 + 2]: the
# calibrated b = 0.1419861583846227 had up = 1 + 4.6e-11 by the public call (1 + 1.7e-11 one ulp
# lower), so the scale was not feasible by the public number.
_EVAL_NOISE = 1e-9


def _noise_free_ok(x, wx, y, wy, alpha, eps):
    """True where the priors themselves already satisfy D_alpha <= eps both ways (then no noise)."""
    d = jnp.maximum(renyi_discrete(x, wx, y, wy, alpha), renyi_discrete(y, wy, x, wx, alpha))
    return d <= eps * (1.0 - 1e-12) - 1e-12


def _safe_pos(v):
    return jnp.where(v > 0, v, 1.0)


# ---------------------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------------------


def _laplace_sufficient(d, lm, w1, winf, alpha, eps, method):
    a_inf = jnp.isinf(alpha)
    a = jnp.where(a_inf, 2.0, alpha)
    gt1 = a > 1.0
    W1, Wi = _safe_pos(w1), _safe_pos(winf)
    song = winf / eps
    if method == "song":
        return song
    if method == "theorem1":
        u_lo = jnp.where(gt1, (a - 1.0) * eps / (a * Wi), (1.0 - a) * eps / (a * W1)) * 0.5
        u_hi = jnp.where(gt1, 2.0 * (a - 1.0) * eps / (a * W1), u_lo * 1e12)
        u = _solve_log(bound_theorem1, u_lo, u_hi, (d, lm, a), eps)
    elif method == "tight":
        u_lo = jnp.where(gt1, eps / Wi, (1.0 - a) * eps / (a * W1)) * 0.5
        u_hi = jnp.where(gt1, 2.0 * (eps + jnp.log((2.0 * a - 1.0) / a) / (a - 1.0)) / W1, u_lo * 1e12)
        u = _solve_log(bound_tight, u_lo, u_hi, (d, lm, a), eps)
    elif method == "pierquin":
        one = jnp.ones((1,))
        u_lo = jnp.where(gt1, eps / Wi, (1.0 - a) * eps / (a * Wi)) * 0.5
        u_hi = jnp.where(gt1, 2.0 * (eps + jnp.log((2.0 * a - 1.0) / a) / (a - 1.0)) / Wi, u_lo * 1e12)
        u = _solve_log(bound_tight, u_lo, u_hi, (Wi * one, 0.0 * one, a), eps)
    else:
        raise ValueError(method)
    b = 1.0 / u
    b = jnp.where(a_inf, song, b)
    return jnp.where(winf > 0, b, 0.0)


def _exact_scale(noise, scale_of, lo, hi, args, eps, *, grid, order, exact_iters):
    """The smallest noise scale whose quadrature upper divergence (worse direction) is at most eps,
    solved in a variable v with scale = scale_of(v) decreasing (v = 1/b for Laplace, 1/(2 s^2)
    for Gaussian) over the starting bracket [lo, hi]; +inf where the solve fails."""

    def bound(v, x, wx, y, wy, a):
        _, up = renyi_mixture_both(x, wx, y, wy, alpha=a, noise=noise, scale=scale_of(v), grid=grid, order=order)
        return jnp.max(up)

    v = _solve_log(bound, lo, hi, args, eps * (1.0 - _EVAL_NOISE), max_steps=exact_iters,
                   method="illinois")
    return jnp.where(jnp.isfinite(v), scale_of(jnp.where(jnp.isfinite(v), v, 1.0)), jnp.inf)


@functools.partial(jit, static_argnames=("method", "grid", "order", "exact_iters"))
def laplace_scale(x, wx, y, wy, alpha, eps, *, method="theorem1", grid=256, order=8, exact_iters=28):
    """Kernel (no validation, jit/vmap-able over alpha, eps, weights): calibrated Laplace b."""
    return _scale("laplace", x, wx, y, wy, alpha, eps, method, grid, order, exact_iters)


# ---------------------------------------------------------------------------------------------
# Gaussian
# ---------------------------------------------------------------------------------------------


def _gaussian_sufficient(d, lm, w2, winf, alpha, eps, method):
    a_inf = jnp.isinf(alpha)
    a = jnp.where(a_inf, 2.0, alpha)
    gt1 = a > 1.0
    if method == "pierquin":
        s = jnp.sqrt(a * winf**2 / (2.0 * eps))
    elif method == "theorem2":
        W2, Wi = _safe_pos(w2), _safe_pos(winf)
        w_lo = jnp.where(gt1, eps / (a * Wi**2), eps / (a * W2**2)) * 0.5
        w_hi = jnp.where(gt1, 2.0 * eps / (a * W2**2), w_lo * 1e12)
        w = _solve_log(bound_theorem2, w_lo, w_hi, (d, lm, a), eps)
        s = jnp.sqrt(0.5 / w)
    else:
        raise ValueError(method)
    s = jnp.where(a_inf, jnp.inf, s)
    return jnp.where(winf > 0, s, 0.0)


@functools.partial(jit, static_argnames=("method", "grid", "order", "exact_iters"))
def gaussian_scale(x, wx, y, wy, alpha, eps, *, method="theorem2", grid=192, order=6, exact_iters=28):
    """Kernel: calibrated Gaussian sigma (standard deviation)."""
    return _scale("gaussian", x, wx, y, wy, alpha, eps, method, grid, order, exact_iters)


def _scale(noise, x, wx, y, wy, alpha, eps, method, grid, order, exact_iters):
    """Both kernels: the sufficient condition's scale, or for ``method="exact"`` the smallest scale
    meeting the quadrature's upper divergence, started from (and never above) the sufficient one
    (tight for Laplace, Theorem 2 for Gaussian)."""
    d, lm, w1, w2, winf = coupled_differences(x, wx, y, wy)
    exact = method == "exact"
    if noise == "laplace":
        ref = _laplace_sufficient(d, lm, w1, winf, alpha, eps, "tight" if exact else method)
    else:
        ref = _gaussian_sufficient(d, lm, w2, winf, alpha, eps, "theorem2" if exact else method)
    if not exact:
        return ref
    a_inf = jnp.isinf(alpha)
    if noise == "laplace":
        bt = _safe_pos(ref)
        s = _exact_scale("laplace", lambda u: 1.0 / u, 0.5 / bt, 1e2 / bt, (x, wx, y, wy, alpha), eps,
                         grid=grid, order=order, exact_iters=exact_iters)
    else:
        a = jnp.where(a_inf, 2.0, alpha)
        st = jnp.where(jnp.isfinite(ref) & (ref > 0), ref, 1.0)
        w_t2 = 0.5 / st**2
        s = _exact_scale("gaussian", lambda w: jnp.sqrt(0.5 / w), 0.5 * w_t2, 1e2 * w_t2, (x, wx, y, wy, a), eps,
                         grid=grid, order=order, exact_iters=exact_iters)
    s = jnp.minimum(s, ref)
    if noise == "gaussian":
        s = jnp.where(a_inf, jnp.inf, s)
    s = jnp.where(_noise_free_ok(x, wx, y, wy, alpha, eps), 0.0, s)
    return jnp.where(winf > 0, s, 0.0)


# ---------------------------------------------------------------------------------------------
# validated entry points
# ---------------------------------------------------------------------------------------------


def _broadcast_call(kernel, x, wx, y, wy, a, e):
    """Apply a scalar kernel over broadcast arrays of alpha and epsilon (vmapped, static shapes)."""
    a, e = jnp.broadcast_arrays(a, e)
    if a.ndim == 0:
        return kernel(x, wx, y, wy, a, e)
    out = jax.vmap(lambda aa, ee: kernel(x, wx, y, wy, aa, ee))(a.ravel(), e.ravel())
    return out.reshape(a.shape)


def _prepare(samples_i, samples_j, weights_i, weights_j, alpha, epsilon, allow_inf=True):
    check_broadcast(alpha=alpha, epsilon=epsilon)
    x, wx, okx = prepare_samples("samples_i", samples_i, weights_i, wname="weights_i")
    y, wy, oky = prepare_samples("samples_j", samples_j, weights_j, wname="weights_j")
    a, oka = check_alpha(alpha, allow_inf=allow_inf)
    e, oke = check_epsilon(epsilon)
    return x, wx, y, wy, a, e, okx & oky & oka & oke


def calibrate_laplace(samples_i, samples_j, *, alpha, epsilon, method="theorem1", weights_i=None,
                      weights_j=None, **kwargs):
    r"""Smallest Laplace scale ``b`` giving (alpha, epsilon)-RPP for the pair (mu_i, mu_j), both directions.

    Methods: ``"theorem1"`` (:math:`\inf_\pi \mathbb E_\pi e^{\alpha|X-X'|/b} \le e^{(\alpha-1)\varepsilon}`, [R]),
    ``"tight"`` (:math:`\inf_\pi\mathbb E_\pi g_\alpha(|X-X'|/b) \le e^{(\alpha-1)\varepsilon}`, [D]),
    ``"exact"`` (true :math:`D_\alpha` by quadrature with a safe margin, [D]), ``"pierquin"``
    (:math:`\log g_\alpha(W_\infty/b) = (\alpha-1)\varepsilon`, [R]), ``"song"`` (:math:`W_\infty/\varepsilon`).
    alpha = inf gives :math:`W_\infty/\varepsilon` for every method but ``exact`` (exact :math:`D_\infty`).
    ``alpha`` and ``epsilon`` may be arrays (broadcast together; one vmapped call).

    Examples:
      >>> import jaxdp.pufferfish as pf
      >>> round(float(pf.calibrate_laplace([0.0], [1.0], alpha=2.0, epsilon=1.0)), 6)
      2.0
    """
    check_choice("method", method, set(LAPLACE_METHODS))
    x, wx, y, wy, a, e, ok = _prepare(samples_i, samples_j, weights_i, weights_j, alpha, epsilon)
    b = _broadcast_call(functools.partial(laplace_scale, method=method, **kwargs), x, wx, y, wy, a, e)
    return nan_where_invalid(b, ok)


def calibrate_gaussian(samples_i, samples_j, *, alpha, epsilon, method="theorem2", weights_i=None,
                       weights_j=None, **kwargs):
    r"""Smallest Gaussian standard deviation ``sigma`` giving (alpha, epsilon)-RPP, both directions.

    Methods: ``"theorem2"`` (:math:`\inf_\pi\mathbb E_\pi e^{\alpha(\alpha-1)(X-X')^2/(2\sigma^2)} \le e^{(\alpha-1)\varepsilon}`, [R]),
    ``"exact"`` ([D]), ``"pierquin"`` (:math:`\sigma^2 = \alpha W_\infty^2 / (2\varepsilon)`, [R]).
    alpha = inf gives ``inf`` (no Gaussian mechanism is eps-Pufferfish for distinct priors).

    Examples:
      >>> import jaxdp.pufferfish as pf
      >>> round(float(pf.calibrate_gaussian([0.0], [1.0], alpha=2.0, epsilon=1.0)) ** 2, 6)
      1.0
    """
    check_choice("method", method, set(GAUSSIAN_METHODS))
    x, wx, y, wy, a, e, ok = _prepare(samples_i, samples_j, weights_i, weights_j, alpha, epsilon)
    s = _broadcast_call(functools.partial(gaussian_scale, method=method, **kwargs), x, wx, y, wy, a, e)
    return nan_where_invalid(s, ok)


def calibrate_condition(samples_i, samples_j, *, alpha, epsilon, phi, bracket, weights_i=None,
                        weights_j=None):
    r"""Generic calibration of :math:`\frac{1}{\alpha-1}\log \mathbb E_\pi e^{\phi(|D|, v)} \le \varepsilon`
    over the inverse scale ``v`` on the quantile coupling. ``phi(d, v, alpha)`` must be non-decreasing
    in v for alpha > 1 (non-increasing for alpha < 1) and ``bracket = (v_lo, v_hi)`` must contain the
    root with ``v_lo`` feasible. Returns the largest feasible ``v`` (NaN if ``v_lo`` is infeasible)."""
    x, wx, y, wy, a, e, ok = _prepare(samples_i, samples_j, weights_i, weights_j, alpha, epsilon,
                                      allow_inf=False)
    d, lm, *_ = coupled_differences(x, wx, y, wy)

    def bound(v, d, lm, a):
        return _lse(lm, phi(d, v, a)) / (a - 1.0)

    v = _solve_log(bound, jnp.asarray(bracket[0], jnp.float64), jnp.asarray(bracket[1], jnp.float64),
                   (d, lm, a), e)
    return nan_where_invalid(v, ok)


# ---------------------------------------------------------------------------------------------
# exponential-family noise ("exponential mechanism"), 1-D and multivariate [R]
# ---------------------------------------------------------------------------------------------

_COSTS = {
    "abs": lambda d: jnp.abs(d).sum(-1),
    "l1": lambda d: jnp.abs(d).sum(-1),
    "l2": lambda d: jnp.sqrt(jnp.sum(d * d, -1)),
}


def expfam_bound(u, log_pi, cbar, alpha):
    r""":math:`\frac{1}{\alpha-1}\log\sum_{kl}\pi_{kl}e^{\pm\alpha\,\bar c_{kl} u}` (+ for alpha > 1) [R]."""
    sgn = jnp.where(alpha > 1.0, 1.0, -1.0)
    return _lse(log_pi, sgn * alpha * cbar * u) / (alpha - 1.0)


def calibrate_exponential_family(samples_i, samples_j, *, alpha, epsilon, cost="l2", weights_i=None,
                                 weights_j=None, coupling=None, rounds=2, num_steps=300):
    r"""Scale ``b`` of the noise :math:`p(z)\propto e^{-c(z)/b}` (natural parameter :math:`\eta=-1/b`)
    with :math:`\inf_\pi \mathbb E_\pi[e^{\alpha\,\bar c(X-X')/b}] \le e^{(\alpha-1)\varepsilon}` [R].

    ``cost``: ``"abs"`` (1-D, Laplace: equals ``calibrate_laplace(method="theorem1")``), ``"l1"``
    (:math:`\|z\|_1`, product Laplace) or ``"l2"`` (:math:`\|z\|_2`, the multivariate "K-norm"
    mechanism); :math:`\bar c = c` by the triangle inequality. Samples are (n, d). In d > 1 the
    coupling is ``coupling`` if given (an n x m matrix with the right marginals), otherwise
    ``rounds`` rounds of :func:`~jaxdp.pufferfish.couplings.optimise_coupling` (started from the
    independent coupling) alternating with calibration at fixed coupling; every round's coupling is
    exact (rounded), so every round's scale is valid and the smallest is returned.
    Returns ``(b, coupling)``.
    """
    check_choice("cost", cost, set(_COSTS))
    check_broadcast(alpha=alpha, epsilon=epsilon)
    check("samples_i", samples_i)  # type errors (None, bool, str) before the conversion below
    check("samples_j", samples_j)
    x = jnp.asarray(samples_i, jnp.float64)
    y = jnp.asarray(samples_j, jnp.float64)
    if x.ndim == 1:
        x = x[:, None]
    if y.ndim == 1:
        y = y[:, None]
    x, wx, okx = prepare_samples("samples_i", x, weights_i, wname="weights_i", ndim=2)
    y, wy, oky = prepare_samples("samples_j", y, weights_j, wname="weights_j", ndim=2)
    a, oka = check_alpha(alpha, allow_inf=False)
    e, oke = check_epsilon(epsilon)
    ok = okx & oky & oka & oke
    cbar = _COSTS[cost](x[:, None, :] - y[None, :, :])
    cmax = _safe_pos(jnp.max(cbar))
    gt1 = a > 1.0

    def solve(P):
        lp = jnp.where(P > 0, jnp.log(jnp.where(P > 0, P, 1.0)), -jnp.inf)
        cmean = _safe_pos(jnp.sum(P * cbar))
        u_lo = jnp.where(gt1, (a - 1.0) * e / (a * cmax), (1.0 - a) * e / (a * cmean)) * 0.5
        u_hi = jnp.where(gt1, 2.0 * (a - 1.0) * e / (a * cmean), u_lo * 1e12)
        return _solve_log(expfam_bound, u_lo, u_hi, (lp, cbar, a), e)

    if x.shape[1] == 1 and coupling is None:
        d, lm, w1, _, winf = coupled_differences(x[:, 0], wx, y[:, 0], wy)
        b = _laplace_sufficient(d, lm, w1, winf, a, e, "theorem1")
        c = quantile_coupling(x[:, 0], y[:, 0], wx, wy)
        return nan_where_invalid(b, ok), c
    if coupling is not None:
        P = jnp.asarray(coupling, jnp.float64)
        return nan_where_invalid(1.0 / solve(P), ok), P
    P = jnp.outer(wx, wy)
    best_u = solve(P)
    best_P = P
    u = best_u
    for _ in range(rounds):
        ell = jnp.where(gt1, 1.0, -1.0) * a * cbar * u
        P, _ = optimise_coupling(wx, wy, ell, num_steps=num_steps)
        un = solve(P)
        better = un > best_u
        best_P = jnp.where(better, P, best_P)
        best_u = jnp.where(better, un, best_u)
        u = un
    return nan_where_invalid(1.0 / best_u, ok), best_P


# ---------------------------------------------------------------------------------------------
# Gaussian priors (closed form) and Gaussian-mixture priors (OT over components)
# ---------------------------------------------------------------------------------------------


def _gprior_thm2_bound(w, mu, tau, a):
    # E exp(c D^2), D ~ N(mu, tau^2), c = a(a-1) w  (quantile coupling of two Gaussians)
    c = a * (a - 1.0) * w
    den = 1.0 - 2.0 * c * tau**2
    ok = den > 0
    dens = jnp.where(ok, den, 1.0)
    v = (-0.5 * jnp.log(dens) + c * mu**2 / dens) / (a - 1.0)
    return jnp.where(ok, v, jnp.inf)


@functools.partial(jit, static_argnames=("method",))
def gaussian_prior_sigma(mean_i, std_i, mean_j, std_j, alpha, eps, *, method="exact"):
    """Kernel: sigma for Gaussian priors N(mean_i, std_i^2), N(mean_j, std_j^2)."""
    a_inf = jnp.isinf(alpha)
    a = jnp.where(a_inf, 2.0, alpha)
    mu = mean_i - mean_j
    tau = std_i - std_j
    gt1 = a > 1.0
    m2 = _safe_pos(mu**2 + tau**2)
    if method == "pierquin":
        winf = jnp.where(tau == 0, jnp.abs(mu), jnp.inf)
        s2 = a * winf**2 / (2.0 * eps)
        return jnp.where(a_inf, jnp.inf, jnp.sqrt(s2))
    w_lo = jnp.where(gt1, jnp.minimum(eps / (2.0 * a * m2), 1.0 / _safe_pos(4.0 * a * (a - 1.0) * tau**2)),
                     eps / (a * m2)) * 0.5
    w_hi = jnp.where(gt1, 2.0 * eps / (a * m2), w_lo * 1e12)
    w = _solve_log(_gprior_thm2_bound, w_lo, w_hi, (mu, tau, a), eps)
    s_t2 = jnp.sqrt(0.5 / w)
    s_t2 = jnp.where(m2 > 0, s_t2, 0.0)
    if method == "theorem2":
        return jnp.where(a_inf, jnp.inf, s_t2)

    def bound(w, mi, si, mj, sj, a):
        s = jnp.sqrt(0.5 / w)
        return jnp.maximum(renyi_gaussian_priors(mi, si, mj, sj, s, a), renyi_gaussian_priors(mj, sj, mi, si, s, a))

    st = jnp.where(s_t2 > 0, s_t2, 1.0)
    wt = 0.5 / st**2
    w = _solve_log(bound, 0.5 * wt, 1e12 * wt, (mean_i, std_i, mean_j, std_j, a), eps)
    s = jnp.sqrt(0.5 / w)
    d0 = jnp.maximum(renyi_gaussian_priors(mean_i, std_i, mean_j, std_j, 0.0, a),
                     renyi_gaussian_priors(mean_j, std_j, mean_i, std_i, 0.0, a))
    s = jnp.where(d0 <= eps, 0.0, jnp.minimum(s, s_t2))
    return jnp.where(a_inf, jnp.inf, s)


def calibrate_gaussian_prior(mean_i, std_i, mean_j, std_j, *, alpha, epsilon, method="exact"):
    r"""Gaussian noise sigma for Gaussian priors, both directions.

    ``"exact"``: closed-form :math:`D_\alpha` (module :mod:`~jaxdp.pufferfish.divergences`) [D];
    ``"theorem2"``: Theorem 2 on the quantile coupling :math:`D \sim N(m_i-m_j, (s_i-s_j)^2)`,
    :math:`\mathbb E e^{cD^2} = (1-2c\tau^2)^{-1/2} e^{c\mu^2/(1-2c\tau^2)}` [R];
    ``"pierquin"``: :math:`\alpha W_\infty^2/(2\varepsilon)`, infinite when ``std_i != std_j``.
    Returns 0 when no noise is needed.
    """
    check_choice("method", method, {"exact", "theorem2", "pierquin"})
    check_broadcast(mean_i=mean_i, std_i=std_i, mean_j=mean_j, std_j=std_j, alpha=alpha, epsilon=epsilon)
    mi, ok1 = check("mean_i", mean_i)
    mj, ok2 = check("mean_j", mean_j)
    si, ok3 = check("std_i", std_i, lo=0.0)
    sj, ok4 = check("std_j", std_j, lo=0.0)
    a, oka = check_alpha(alpha)
    e, oke = check_epsilon(epsilon)
    s = jnp.vectorize(functools.partial(gaussian_prior_sigma, method=method))(mi, si, mj, sj, a, e)
    return nan_where_invalid(s, ok1 & ok2 & ok3 & ok4 & oka & oke)


def gmm_bound(w, log_pi, mi, si, mj, sj, a):
    """max over directions of (1/(a-1)) log sum_kl pi_kl exp((a-1) D_a(N_k || N_l)) at sigma^2 = 1/(2w)."""
    s = jnp.sqrt(0.5 / w)
    d1 = renyi_gaussian_priors(mi[:, None], si[:, None], mj[None, :], sj[None, :], s, a)
    d2 = renyi_gaussian_priors(mj[None, :], sj[None, :], mi[:, None], si[:, None], s, a)
    b1 = _lse(log_pi, (a - 1.0) * d1) / (a - 1.0)
    b2 = _lse(log_pi, (a - 1.0) * d2) / (a - 1.0)
    return jnp.maximum(b1, b2)


def calibrate_gaussian_mixture_prior(weights_i, means_i, stds_i, weights_j, means_j, stds_j, *, alpha,
                                     epsilon, coupling=None, rounds=2, num_steps=300):
    r"""Gaussian sigma for Gaussian-mixture priors through an OT condition over components [D]:
    :math:`e^{(\alpha-1)D_\alpha(q_i\|q_j)} \le \sum_{kl}\pi_{kl} e^{(\alpha-1)D_\alpha(N(m_k, s_k^2+\sigma^2)\|N(m_l, s_l^2+\sigma^2))}`
    (joint convexity, alpha > 1; reversed for alpha < 1), both directions, with a coupling of the
    component weights (given, or optimised as in :func:`calibrate_exponential_family`).
    Returns ``(sigma, coupling)``."""
    check_broadcast(alpha=alpha, epsilon=epsilon)
    for nm, (m_, s_) in {"i": (means_i, stds_i), "j": (means_j, stds_j)}.items():
        if np.shape(m_) != np.shape(s_):
            raise ValueError(f"means_{nm} and stds_{nm} must have the same shape, got {np.shape(m_)} and {np.shape(s_)}")
    mi, ok1 = check("means_i", means_i)
    mj, ok2 = check("means_j", means_j)
    si, ok3 = check("stds_i", stds_i, lo=0.0)
    sj, ok4 = check("stds_j", stds_j, lo=0.0)
    _, wi, ok5 = prepare_samples("means_i", means_i, weights_i, wname="weights_i")
    _, wj, ok6 = prepare_samples("means_j", means_j, weights_j, wname="weights_j")
    a, oka = check_alpha(alpha, allow_inf=False)
    e, oke = check_epsilon(epsilon)
    ok = jnp.all(ok1) & jnp.all(ok2) & jnp.all(ok3) & jnp.all(ok4) & ok5 & ok6 & oka & oke
    scale2 = (jnp.max(jnp.abs(mi[:, None] - mj[None, :])) ** 2 + jnp.max(si) ** 2 + jnp.max(sj) ** 2)
    scale2 = _safe_pos(scale2) * (a + 1.0) * (1.0 + 1.0 / e) * (1.0 + jnp.abs(a - 1.0))

    def solve(P):
        lp = jnp.where(P > 0, jnp.log(jnp.where(P > 0, P, 1.0)), -jnp.inf)
        w = _solve_log(gmm_bound, 1e-6 / scale2, 1e8 / scale2, (lp, mi, si, mj, sj, a), e)
        return w

    def ell_at(w):
        s = jnp.sqrt(0.5 / w)
        d1 = renyi_gaussian_priors(mi[:, None], si[:, None], mj[None, :], sj[None, :], s, a)
        d2 = renyi_gaussian_priors(mj[None, :], sj[None, :], mi[:, None], si[:, None], s, a)
        return (a - 1.0) * jnp.maximum(d1, d2) * jnp.where(a > 1, 1.0, -1.0)

    if coupling is not None:
        P = jnp.asarray(coupling, jnp.float64)
        w = solve(P)
        return nan_where_invalid(jnp.sqrt(0.5 / w), ok), P
    P = jnp.outer(wi, wj)
    best_w, best_P = solve(P), P
    w = best_w
    for _ in range(rounds):
        P, _ = optimise_coupling(wi, wj, ell_at(w), num_steps=num_steps)
        wn = solve(P)
        better = wn > best_w
        best_P = jnp.where(better, P, best_P)
        best_w = jnp.where(better, wn, best_w)
        w = wn
    return nan_where_invalid(jnp.sqrt(0.5 / best_w), ok), best_P


def calibrate_all(x, wx, y, wy, alpha, eps, *, exact=True, grid=256, order=8, exact_iters=28, gaussian_grid=192,
                  gaussian_order=6):
    """Kernel returning every method's scale at once (dict), jit/vmap-able over (alpha, eps, weights)."""
    out = {}
    for m in LAPLACE_METHODS:
        if m == "exact" and not exact:
            continue
        out["laplace_" + m] = laplace_scale(x, wx, y, wy, alpha, eps, method=m, grid=grid, order=order,
                                            exact_iters=exact_iters)
    for m in GAUSSIAN_METHODS:
        if m == "exact" and not exact:
            continue
        out["gaussian_" + m] = gaussian_scale(x, wx, y, wy, alpha, eps, method=m, exact_iters=exact_iters,
                                              grid=gaussian_grid, order=gaussian_order)
    return out


__all__ = [
    "LAPLACE_METHODS", "GAUSSIAN_METHODS", "coupled_differences", "bound_theorem1", "bound_tight",
    "bound_theorem2", "expfam_bound", "laplace_scale", "gaussian_scale", "calibrate_laplace",
    "calibrate_gaussian", "calibrate_condition", "calibrate_exponential_family",
    "calibrate_gaussian_prior", "gaussian_prior_sigma", "calibrate_gaussian_mixture_prior", "gmm_bound",
    "calibrate_all",
]
