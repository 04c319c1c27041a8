r"""The single-epoch gap TV(P, Q) of the shuffled Gaussian pair by one contour integral (private).

The gap needs the law of :math:`U = \sqrt M (L - 1)` at one point only,
:math:`TV = P(U \le 0) - Q(U \le 0)`, so instead of tabulating the whole law (``_shuffled_law``,
~1200 transform evaluations) it is computed from ~100 evaluations of the same characteristic
functions:

* **Fourier line** (the law is concentrated, M / v not small; v = e^{1/sigma^2} - 1 = Var Y): for
  c > 0, :math:`P(U \le 0) = \frac{1}{\pi}\,\mathrm{Re}\int_0^\infty \varphi_U(w + ic)/(c - iw)\,dw`
  (damped indicator), so

  .. math:: TV = \frac{1}{\pi}\mathrm{Re}\int_0^\infty
            \frac{-\varphi^P_U(w + ic)\,\mathrm{expm1}(\log\varphi^Q_U - \log\varphi^P_U)}{c - iw}\,dw,

  the difference taken inside the integrand (no cancellation when the gap is small).  The
  trapezoid rule with step 2 pi / T is exact up to aliasing
  :math:`\sum_{k \ge 1} e^{-ckT} + e^{ckT} P(U \le -kT)`.  The damping c is the largest with
  :math:`E e^{-2cU} \le e^{24}` (bisection on the real Laplace transform) and T = 56 / c, so the
  upper aliasing is e^{-56}, the lower one :math:`\le e^{-cT} E e^{-2cU} \le e^{-32}` (Chernoff
  at 2c) and the round-off amplification :math:`E e^{-cU} \le e^{12}` (for a Gaussian law
  T ~ 16 sd(U)); truncation is checked at the last node (:math:`|\varphi_U| < e^{-30}`) and the
  amplification at w = 0.  A failed check marks the branch unresolved.  Each block of 8 nodes
  integrates over Z on its own contour, centred so that arg(uY) ~ pi / 2.
* **Talbot** (small M / v, heavy multi-scale laws, where the Fourier integrand decays slowly): the
  fixed Talbot inversion (Abate & Valko 2004) of the Laplace transform of S = M L at t = M,
  :math:`P(S \le M) = \sum_j \mathrm{Re}(c_j \psi(r\lambda_j))`, 28 nodes, the same transform on
  rotated Gaussian contours as ``_shuffled_law``'s Laplace method, used where that method is
  (``_shuffled_law._use_laplace``) and where the line is unresolved but the law is spread
  (M <= 20 v, sigma in [0.29, 4]).

Both branches are evaluated (static shapes: ``vmap`` computes both anyway) and the result is NaN
when the selected one is not resolved.  Accuracy against the tabulated law and the mpmath
references: ``tests/shuffle/test_exact_law.py::test_contour_gap_*`` and ``docs/shuffle_exact.md``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxdp.mechanisms import _shuffled_law as _law

N_LINE = 96  # trapezoid nodes on the Fourier line
_BLOCK = 8  # line nodes sharing one contour shift
N_TALBOT = 28  # Talbot nodes
_CT = 56.0  # c T: upper aliasing e^{-56}
_LOG_MGF2 = 24.0  # log E e^{-2cU} allowed
_TALBOT_MV = 20.0  # Talbot as fallback up to M / v = 20
_LOG_TRUNC = -30.0  # |phi_U| at the last node below e^-30 (~1e-13; the integrand decays further)
_LOG_AMP = 12.0  # round-off amplification E e^{-cU} at most e^12 (~2e-11 absolute)


def _damping(s, m, sqrt_m, sd):
    """Largest c with log E_P e^{-2cU} <= _LOG_MGF2 (bisection in log c, real Laplace transform)."""

    def g(c):
        return m * _law._log_laplace_real(2.0 * c / sqrt_m, s)[0]

    lo = jnp.log(0.5 / sd)
    hi = jnp.log(jnp.maximum(1e3 / sd, 1e2 / sqrt_m))

    def body(_, b):
        lo_, hi_ = b
        mid = 0.5 * (lo_ + hi_)
        ok = g(jnp.exp(mid)) <= _LOG_MGF2
        return jnp.where(ok, mid, lo_), jnp.where(ok, hi_, mid)

    lo, hi = jax.lax.fori_loop(0, 40, body, (lo, hi))
    return jnp.exp(lo)


def _line_nodes(s, m, sqrt_m, v, nz, kappa=1.0):
    """(c, w, dw, log phi^P_U, log phi^Q_U) on the damped line w + ic, w = j dw (j < N_LINE).

    c = kappa * (the largest damping with E e^{-2cU} <= e^24); period 56 / c (upper aliasing e^-56).
    """
    sd = jnp.sqrt(v)
    # damping c: E e^{-2cU} <= e^24, so the round-off amplification E e^{-cU} <= e^12 and the
    # lower aliasing e^{cT} P(U <= -T) <= e^{-cT} E e^{-2cU} (Chernoff at 2c) <= e^{-32} with
    # period T = 56 / c; the upper aliasing is e^{-cT} = e^{-56}.  (~16 sd(U) for Gaussian laws.)
    c = jax.lax.stop_gradient(_damping(s, m, sqrt_m, sd)) * kappa
    period = _CT / c
    dw = 2.0 * jnp.pi / period
    w = dw * jnp.arange(N_LINE, dtype=jnp.float64)
    u = (w + 1j * c) / sqrt_m
    # contour shift per block of 8 nodes: arg(uY) centred on pi / 2 (strip half-width up to
    # pi / (2s), twice that of the fixed shift pi / (4s)), capped at 2.5 like _beta_cf
    arg_blk = jnp.arctan2(c, w).reshape(-1, _BLOCK).mean(axis=1)
    beta = jnp.clip((0.5 * jnp.pi - arg_blk) / s, 0.0, 2.5)
    r, php, phq = _law._cf_sums(u, s, nz, _BLOCK, beta)
    k, kq, _, _ = _law._cf_logs(u, r, php, phq, _law._unwrap, center=True)
    lp = m * k
    lq = (m - 1.0) * k + kq
    return c, w, dw, lp, lq


def _trapezoid_weights(dw):
    """Weights of the half-line trapezoid rule, times 1/pi (the node w = 0 counts half)."""
    return jnp.ones(N_LINE).at[0].set(0.5) * (dw / jnp.pi)


def _gap_sum(c, w, dw, lp, lq):
    """P(U <= 0) - Q(U <= 0) on the line, the difference taken inside the integrand."""
    num = -jnp.exp(lp) * _law._expm1c(lq - lp)
    return jnp.sum(_trapezoid_weights(dw) * jnp.real(num / (c - 1j * w)))


def _line_part(s, m, sqrt_m, v, nz):
    c, w, dw, lp, lq = _line_nodes(s, m, sqrt_m, v, nz)
    gap = _gap_sum(c, w, dw, lp, lq)
    # checks: truncation (|phi| at the last node); round-off amplification E e^{-cU} (w = 0 node,
    # P and Q); the aliasing bounds above hold by the choice of c (checked through the w = 0 node too)
    trunc = jnp.maximum(jnp.real(lp[-1]), jnp.real(lq[-1]))
    amp = jnp.maximum(jnp.real(lp[0]), jnp.real(lq[0]))
    ok = (trunc < _LOG_TRUNC) & (amp < _LOG_AMP) & jnp.isfinite(gap)
    return gap, ok


def _talbot_part(s, m, nz):
    th, lam, cst = _law._talbot_constants(N_TALBOT)
    r = 0.4 * N_TALBOT / m  # r = 2 N / (5 t) at t = M
    u = 1j * r * jnp.asarray(lam)
    # contour rotation per block of 4 nodes: arg(lambda Y) = 0 on Im z = -theta / s (e^{-lambda Y}
    # decays fastest); within a block |arg(lambda Y)| <= 1.5 pi / N_TALBOT
    th_blk = th.reshape(-1, 4).mean(axis=1)
    beta = jnp.maximum(-jnp.asarray(th_blk) / s, -8.0)
    rr, php, phq = _law._cf_sums(u, s, nz, 4, beta)
    _, _, lphi, lphiq = _law._cf_logs(u, rr, php, phq, _law._unwrap)
    lp = m * lphi
    lq = (m - 1.0) * lphi + lphiq
    lp = jnp.minimum(jnp.real(lp), 700.0) + 1j * jnp.imag(lp)
    num = -jnp.exp(lp) * _law._expm1c(lq - lp)
    return jnp.sum(jnp.real(jnp.asarray(cst) * num))


# ---- the curve at given type I errors from the same line (private) -----------------------------

_KAPPA_CURVE = 1.0 / 3.0  # curve damping relative to the gap's: keeps c x small at the thresholds
_CX_MAX = 12.0  # thresholds searched up to c x = 12 (round-off amplification e^{cx} E e^{-cU})
_A_MIN = 1e-8  # a (or 1 - a) below this: left to the tabulated law
_LOG_ALIAS = math.log(1e-10)  # lower aliasing bound allowed at the threshold
_N_BISECT = 44
_N_NEWTON = 3
_LOG_TRUNC_CURVE = -25.0  # |phi_U| e^{cx} at the last node (~1e-11; the integrand decays further)


def _line_cdf(x, c, w, dw, logphi):
    """(P(U <= x), density at x) for thresholds x (shape (k,)) from the damped line.

    P(U <= x) = (1/pi) Re int_0^inf phi_U(w + ic) e^{(c - iw) x} / (c - iw) dw (damped indicator of
    U - x), trapezoid rule on the nodes; the density is the same integral without 1 / (c - iw).
    """
    e = jnp.exp(logphi[None, :] + (c - 1j * w[None, :]) * x[:, None]) * _trapezoid_weights(dw)[None, :]
    cdf = jnp.sum(jnp.real(e / (c - 1j * w[None, :])), axis=1)
    dens = jnp.sum(jnp.real(e), axis=1)
    return cdf, dens


def line_curve(a, sigma, m, *, nz: int = 320, reverse: bool = False, with_gap: bool = False):
    """The single-epoch curve at type I errors ``a`` (shape (k,)) from one damped Fourier line.

    Forward: a = P(U > x), f = Q(U <= x); reverse: a = Q(U <= x), f = P(U > x).  The threshold x is
    found by bisection (44 steps) and Newton (3 steps) on the line's cdf, then f is one more sum.
    The damping is a third of the gap's (so c x stays small where the thresholds lie) and the
    period 56 / c: upper aliasing e^{-56}; lower aliasing at x bounded a priori by
    e^{-56 + 2cx} E e^{-2cU} with log E_P e^{-2cU} <= 24 / 3 (convexity of the log-Laplace
    transform from the gap's damping) and E_Q e^{-2cU} <= E_P e^{-2cU} + 1 + 1 / (2c sqrt M).
    ``with_gap``: also the gap TV = P(U <= 0) - Q(U <= 0) from the same nodes (the sum of the
    gap's line integral, without cancellation; the checks at x = 0 are added to ``ok``), returned
    as ``(f, f_up, gap, ok)``.
    Returns ``(f, f_up, ok)``: the lower and upper ends of the curve (the line's value -/+ its
    propagated cdf error, :func:`_shuffled_law.curve_allowance`); ``ok`` is False (the caller uses the tabulated law) where any check
    fails -- truncation (|phi_U| e^{cx} at the last node < e^-25), round-off amplification
    (e^{cx} E e^{-cU} < e^12), lower aliasing (< 1e-10), threshold beyond c x = 12, a outside
    [1e-8, 1 - 1e-8], the spread laws of the Laplace method, or a non-finite value.
    """
    s = 1.0 / sigma
    v = jnp.expm1(s * s)
    sqrt_m = jnp.sqrt(m)
    c, w, dw, lp, lq = _line_nodes(s, m, sqrt_m, v, max(64, (4 * nz) // 5), _KAPPA_CURVE)
    a = jnp.asarray(a, dtype=jnp.float64)
    if reverse:
        target, lsolve = a, lq
    else:
        target, lsolve = 1.0 - a, lp
    x_cap = _CX_MAX / c
    lo = jnp.full(a.shape, -sqrt_m)  # U >= -sqrt(M): the cdf is 0 there
    if not reverse:  # Cantelli: P(U <= x) <= v / (v + x^2) for x < 0
        lo = jnp.maximum(lo, -jnp.sqrt(v * a / jnp.maximum(1.0 - a, 1e-300)))
    hi = jnp.full(a.shape, x_cap)
    if not reverse:  # Cantelli: P(U > x) <= v / (v + x^2) for x > 0
        hi = jnp.minimum(hi, jnp.sqrt(v * (1.0 - a) / jnp.maximum(a, 1e-300)))
    reach = _line_cdf(hi, c, w, dw, lsolve)[0] >= target

    def bisect(_, b):
        l_, h_ = b
        mid = 0.5 * (l_ + h_)
        below = _line_cdf(mid, c, w, dw, lsolve)[0] < target
        return jnp.where(below, mid, l_), jnp.where(below, h_, mid)

    lo, hi = jax.lax.fori_loop(0, _N_BISECT, bisect, (lo, hi))
    x = 0.5 * (lo + hi)
    for _ in range(_N_NEWTON):
        cdf, dens = _line_cdf(x, c, w, dw, lsolve)
        step = (cdf - target) / jnp.where(dens > 0, dens, 1.0)
        x = jnp.clip(x - jnp.where(dens > 0, step, 0.0), lo, hi)
    cdf_p, _ = _line_cdf(x, c, w, dw, lp)
    cdf_q, _ = _line_cdf(x, c, w, dw, lq)
    # the line knows its cdfs to CDF_ERR absolutely; the propagated error brackets f
    allow = _law.curve_allowance(1.0 + x / sqrt_m, _law.CDF_ERR, reverse)
    f = (1.0 - cdf_p) if reverse else cdf_q
    f, f_up = f - allow, f + allow
    # checks at the threshold
    cx = c * x
    trunc = jnp.maximum(jnp.real(lp[-1]), jnp.real(lq[-1])) + cx
    amp = jnp.maximum(jnp.real(lp[0]), jnp.real(lq[0])) + cx
    log_mgf2 = jnp.log(jnp.exp(_LOG_MGF2 * _KAPPA_CURVE) + 1.0 + 1.0 / (2.0 * c * sqrt_m))
    alias = -_CT + 2.0 * cx + log_mgf2
    inner = (a >= _A_MIN) & (a <= 1.0 - _A_MIN)
    ok_a = (trunc < _LOG_TRUNC_CURVE) & (amp < _LOG_AMP) & (alias < _LOG_ALIAS) & reach & jnp.isfinite(f)
    edge = (a <= 0.0) | (a >= 1.0)
    ok_a = jnp.where(edge, True, ok_a & inner)
    f, f_up = _law.guard_curve_ends(a, f, f_up, s, m)
    ok_a = ok_a & jnp.isfinite(f)
    ok = jnp.all(ok_a) & ~_law._use_laplace(s, m, v, N_TALBOT) & (s <= 1.0 / _law.SIGMA_MIN)
    if not with_gap:
        return f, f_up, ok
    gap = _gap_sum(c, w, dw, lp, lq)
    ok0 = (jnp.maximum(jnp.real(lp[-1]), jnp.real(lq[-1])) < _LOG_TRUNC_CURVE)
    ok0 = ok0 & (jnp.maximum(jnp.real(lp[0]), jnp.real(lq[0])) < _LOG_AMP) & jnp.isfinite(gap)
    gap = _law.guard_gap(jnp.clip(gap, 0.0, 1.0), s, m)
    return f, f_up, gap, ok & ok0 & jnp.isfinite(gap)


def tv_gap(sigma, m, *, nz: int = 320):
    """TV(P, Q) of one epoch for scalar traced (sigma, M), M > 1; NaN where unresolved."""
    s = 1.0 / sigma
    v = jnp.expm1(s * s)
    sqrt_m = jnp.sqrt(m)
    # the line nodes sit on contours centred per block (strip half-width ~pi / (2s)): 0.8 nz nodes
    # are better than nz on the fixed contour (even the first block); the 28 Talbot nodes keep nz
    g_line, ok_line = _line_part(s, m, sqrt_m, v, max(64, (4 * nz) // 5))
    # Talbot where the tabulated law uses its Laplace method, and also where the line is not
    # resolved but the law is still spread out (M / v <= 20: single-point Talbot accurate to
    # ~1e-10 there, measured against the tabulated law, docs/shuffle_exact.md)
    spread = (m <= _TALBOT_MV * v) & (s >= 0.25) & (s <= 1.0 / 0.29)
    use_talbot = _law._use_laplace(s, m, v, N_TALBOT) | (~ok_line & spread)
    g_tal = _talbot_part(s, m, nz)
    g = jnp.where(use_talbot, g_tal, g_line)
    ok = (use_talbot | ok_line) & (s <= 1.0 / _law.SIGMA_MIN)
    return jnp.where(ok, jnp.clip(g, 0.0, 1.0), jnp.nan)


__all__: list[str] = []
