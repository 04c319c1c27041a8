"""Numerical core of the exact single-epoch shuffled-Gaussian law (private).

Everything here is a pure function of traced ``(sigma, M)`` with static grid sizes, so it is
``jit`` / ``vmap`` / ``grad`` friendly and its cost does not depend on M.

Notation: s = 1/sigma, Y = exp(s Z - s^2/2) (Z standard normal, the law under P of one
coordinate's likelihood ratio), L = (1/M) sum_j Y_j, U = sqrt(M) (L - 1) under P.
Under Q one summand is tilted: its law is Y' with dP_{Y'} = y dP_Y.

Pipeline (see docs/shuffle_exact.md for the error analysis):

1. ``_cf_sums`` / ``_cf_logs``: K(u) = log E[e^{iuY}] - iu and K_Q(u) = log E[Y e^{iuY}] - iu for complex u
   with arg u in [0, pi/2], by the trapezoid rule on the shifted contour z = t + i beta of the
   Gaussian integral.  On that contour arg(uY) lies in (0, pi), so e^{iuY} decays instead of
   oscillating and the rule converges geometrically (analytic strip of half-width beta), uniformly
   in u.  The remainder r(u) = E[e^{iuY} - 1 - iuY] is summed directly (series for small uY), so
   K(u) = r + (log1p(z) - z) has full *relative* accuracy even for u ~ 1e-5, which is what
   M * K(u) with M = 1e10 needs.
2. ``_grid_law``: cell masses of U under P and Q on a uniform grid from the exponentially damped
   characteristic functions phi_U(w + i alpha) = exp(M K(u)), u = (w + i alpha)/sqrt(M), by one
   zero-padded inverse FFT each.  Damping suppresses the wrap-around of the heavy right tail by
   e^{-alpha W}; only the left half of the period (the "trusted" range) is used.
3. Tail beyond the trusted range: one-big-jump formula (subexponential asymptotics), scaled to
   match the grid at the end of the trusted range.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri

from jaxdp import closed_forms as _cf
from jaxdp._config import jit

_SQRT2PI = math.sqrt(2.0 * math.pi)

#: Smallest noise multiplier the numerical law is validated for.  phi_Y(u) = E e^{iuY} is a
#: trapezoid rule over z in [-9.5, 2s + 9.5] (s = 1/sigma) on a contour whose analytic strip has
#: half-width ~pi/(4s) (pi/(2s) centred), so with nz nodes its geometric rate is about
#: exp(-pi^2 nz / (2 s (2s + 19))): ~1e-8 at sigma = 0.3 with nz = 320, 2e-2 at sigma = 0.1; below
#: sigma ~ 0.05 y = e^{sz - s^2/2} overflows at the upper nodes (1.5 s^2 + 9.5 s > log(DBL_MAX)).  The transform is then wrong
#: while decaying fast, so the resolution checks pass: at sigma = 0.05 the gap came out as 0.
#: Every direct function returns NaN below it; jaxdp.shuffle falls back to its closed-form bounds.
SIGMA_MIN = 0.3
_N_PROBE = 128
_LOG_TAIL_SUPPRESSION = 24.0  # alpha * W: wrap-around of the right tail damped by e^-24


# ---------------------------------------------------------------- characteristic functions


def _g_series(zeta):
    """(e^{i zeta} - 1 - i zeta, e^{i zeta}) in real arithmetic, i zeta = x + i y.

    g = (expm1(x) - x - 2 sin^2(y/2) (1 + expm1(x))) + i ((sin y - y) + expm1(x) sin y): every
    term is either accurate or has absolute error <= 2 eps |zeta| (expm1(x) - x, sin y - y), so
    r(u) = E g(uY) has absolute error ~eps |u| and M r(u / sqrt(M)) ~eps w / sqrt(M) (measured
    <= 1.8 eps |zeta| against mpmath for |zeta| in [1e-8, 1e2]).  e^{i zeta} is computed directly
    (not as g + 1 + i zeta): for |zeta| ~ 1e12 (Laplace transform at large lambda) that sum would
    cancel catastrophically.  Four real transcendentals instead of a complex series plus a complex
    exponential: ~1.5x faster for the same accuracy.
    """
    x = -jnp.imag(zeta)
    y = jnp.real(zeta)
    em1 = jnp.expm1(x)
    ex = jnp.exp(x)
    sy = jnp.sin(y)
    sh = jnp.sin(0.5 * y)
    omc = 2.0 * sh * sh  # 1 - cos y without cancellation
    e = jax.lax.complex(ex * (1.0 - omc), ex * sy)
    g = jax.lax.complex(em1 - x - omc - em1 * omc, (sy - y) + em1 * sy)
    return g, e


def _log1p_minus_id(z):
    """log(1 + z) - z for |z| < 0.1 by series (error < 1e-18)."""
    acc = jnp.zeros_like(z)
    zk = z
    for k in range(2, 19):
        zk = zk * z
        acc = acc + ((-1.0) ** (k + 1)) * zk / k
    return acc


def _unwrap(angle):
    """Continuous branch along the last axis (differences folded into (-pi, pi])."""
    d = jnp.diff(angle, axis=-1)
    d = d - 2.0 * jnp.pi * jnp.round(d / (2.0 * jnp.pi))
    return jnp.concatenate([angle[..., :1], angle[..., :1] + jnp.cumsum(d, axis=-1)], axis=-1)


def _quad_nodes(s, nz, beta):
    """Nodes/weights of the trapezoid rule for E[h(Y)], Y = e^{sZ - s^2/2}, on Im z = beta."""
    t_lo = -9.5
    t_hi = 2.0 * s + 9.5
    t = jnp.linspace(0.0, 1.0, nz) * (t_hi - t_lo) + t_lo
    hz = (t_hi - t_lo) / (nz - 1)
    z = t + 1j * beta
    y = jnp.exp(s * z - 0.5 * s * s)
    wp = hz * jnp.exp(-0.5 * z * z) / _SQRT2PI
    wq = wp * y  # y phi(z) = phi(z - s)
    return y, wp, wq


def _beta_cf(s):
    """Contour shift for arg u in [0, pi/2] (Fourier side): arg(uY) in [pi/4, 3pi/4]."""
    return jnp.minimum(jnp.pi / (4.0 * s), 2.5)


def _cf_sums(u, s, nz, block, beta):
    """r(u) = E[e^{iuY} - 1 - iuY], E e^{iuY}, E[Y e^{iuY}] for u of length nb * block.

    ``beta`` (one per block of ``block`` consecutive u) is the contour shift Im z of the Gaussian
    integral: on Im z = beta, arg(uY) = arg u + s beta, which must stay in (0, pi) (decay of e^{iuY}).
    """
    n = u.shape[0]
    nb = n // block
    ub = u.reshape(nb, block)

    def one(args):
        ublk, b = args
        y, wp, wq = _quad_nodes(s, nz, b)
        zeta = ublk[:, None] * y[None, :]
        g, e = _g_series(zeta)
        r = jnp.sum(g * wp[None, :], axis=1)
        php = jnp.sum(e * wp[None, :], axis=1)
        phq = jnp.sum(e * wq[None, :], axis=1)
        return r, php, phq

    r, php, phq = jax.lax.map(one, (ub, beta))
    return r.reshape(n), php.reshape(n), phq.reshape(n)


def _safe_c(z):
    """z with |z| < 1e-150 replaced by 1e-150: the derivatives of angle and abs divide by |z|^2,
    which underflows (0/0 = NaN) below that.  Only transforms < 1e-150 are affected (log >= -345)."""
    return jnp.where(jnp.abs(z) > 1e-150, z, 1e-150 + 0j)


def _cf_logs(u, r, php, phq, unwrap, center: bool = False):
    """(K, K_Q, log phi_Y, log phi_Y') from the sums; K = log phi_Y(u) - iu, K_Q = log phi_Y'(u) - iu.

    Near u = 0, K = r + (log1p(z) - z), z = iu + r, keeps full relative accuracy (M K with
    M = 1e10); away from it the direct sums are used, their argument continued by ``unwrap``.
    ``center``: continue the argument of phi e^{-iu} (that of K) instead of that of phi.  On the
    Fourier side arg phi_Y(u) ~ Re u turns by 2 pi / (T sqrt(M)) per node, more than pi for small
    M and narrow laws, while arg e^{K} turns slowly; for non-integer M a lost turn of 2 pi in K
    would change M K (for integer M it cancels).
    """
    z = 1j * u + r
    # the series (principal log1p) only near u = 0: for narrow laws phi_Y(u) returns close to 1
    # near u = 2 pi k (|z| small again), where the continuous log differs by 2 pi i k
    small = (jnp.abs(z) < 0.1) & (jnp.abs(u) < 1.0)
    zs = jnp.where(small, z, 0.0)
    k_small = r + _log1p_minus_id(zs)
    # Away from u = 0 the direct sum has no cancellation (absolute error ~1e-17).
    one_p = _safe_c(jnp.where(jnp.abs(z) < 0.5, 1.0 + z, php))
    phq = _safe_c(phq)
    if center:
        re_u, im_u = jnp.real(u), jnp.imag(u)
        k_big = jnp.log(jnp.abs(one_p)) + im_u + 1j * unwrap(jnp.angle(one_p) - re_u)
        k = jnp.where(small, k_small, k_big)
        kq = jnp.log(jnp.abs(phq)) + im_u + 1j * unwrap(jnp.angle(phq) - re_u)
        return k, kq, k + 1j * u, kq + 1j * u
    lphi_big = jnp.log(jnp.abs(one_p)) + 1j * unwrap(jnp.angle(one_p))
    k = jnp.where(small, k_small, lphi_big - 1j * u)
    lphi = jnp.where(small, k_small + 1j * u, lphi_big)
    lphiq = jnp.log(jnp.abs(phq)) + 1j * unwrap(jnp.angle(phq))
    return k, lphiq - 1j * u, lphi, lphiq


def _log_laplace_real(lam, s, n: int = 384):
    """(log E e^{-lam (Y - 1)}, log E[Y e^{-lam (Y - 1)}]) for real lam >= 0 (P and the tilted Q).

    Trapezoid rule on the real line in log space: the integrand is positive, so the log-sum-exp
    has no cancellation or underflow (Chernoff bounds need lam up to ~10 / s, where E e^{-lam Y}
    itself is below the range of the complex quadrature); t in [-30, 2s + 12] holds the saddle
    point for lam s <= ~20.
    """
    t = jnp.linspace(-30.0, 2.0 * s + 12.0, n)
    h = t[1] - t[0]
    y = jnp.exp(s * t - 0.5 * s * s)
    base = jnp.log(h) - 0.5 * t * t - 0.5 * math.log(2.0 * math.pi) - lam * (y - 1.0)
    return jax.nn.logsumexp(base), jax.nn.logsumexp(base + jnp.log(y))


# ---------------------------------------------------------------- law on a grid


class GridLaw(NamedTuple):
    """Tabulated law of U = sqrt(M) (L - 1) under P and Q.

    The table is uniform in a coordinate c: c = U (Fourier method, ``log_axis`` False) or
    c = log S, S = M L = M + sqrt(M) U (Laplace method, ``log_axis`` True); entry k is at
    c_k = lo + k h, k = 0 .. n_used - 1 (arrays are padded with their last entry beyond n_used).
    """

    lo: jax.Array  # left end of the grid (table coordinate)
    h: jax.Array  # table spacing (table coordinate)
    sqrt_m: jax.Array
    s: jax.Array
    m: jax.Array
    cdf_p: jax.Array  # P(U <= x_k)
    sf_p: jax.Array
    cdf_q: jax.Array
    sf_q: jax.Array
    ratio_p: jax.Array  # table / one-big-jump tail at the end of the table
    ratio_q: jax.Array
    resolved: jax.Array  # the law is resolved to the stated accuracy (else the callers give NaN)
    log_axis: jax.Array  # table coordinate is log S
    n_used: jax.Array  # number of valid table entries
    x_end: jax.Array  # end of the table in U units
    diag: jax.Array  # the resolution diagnostic that ``resolved`` thresholds


def jump_tail(x, s, m, sqrt_m):
    """One-big-jump approximations of P(U > x), Q(U > x) for large x (U units).

    With Y = e^{sZ - s^2/2} and its tilt Y' = e^{sZ + s^2/2}: P(U > x) ~ M P(Y > y) and
    Q(U > x) ~ P(Y' > y) + (M - 1) P(Y > y), y = 1 + sqrt(M) x."""
    y = jnp.maximum(1.0 + sqrt_m * x, 1e-300)
    # log P(Y > y) and log P(Y' > y) in one log_ndtr call (a large program per call)
    ly = jnp.log(y)
    both = jax.scipy.special.log_ndtr(-(jnp.stack([ly + 0.5 * s * s, ly - 0.5 * s * s])) / s)
    lsf_y, lsf_yq = both[0], both[1]
    lp = jnp.log(m) + lsf_y
    lq = jnp.logaddexp(lsf_yq, jnp.log(jnp.maximum(m - 1.0, 1e-300)) + lsf_y)
    return jnp.exp(lp), jnp.exp(lq)


# ---- Laplace method (small M / v: heavy, multi-scale laws) ------------------------------------

_TALBOT_SIZES = ((28, 128), (20, 54))  # (Talbot nodes, Chebyshev nodes), largest that fits
_LOG_TABLE = 4097  # uniform log-S table resampled from the Chebyshev interpolant
_LOG_RANGE_TAIL = 1e-14  # mass left outside the Chebyshev range (each side)
_N_CHERNOFF = 32
_CHEB_TOL = 1e-7  # Chebyshev tail coefficients above this: not resolved (NaN)
_FFT_TOL = 1e-12  # |phi_U| at the coarse Nyquist frequency above this: not resolved (NaN)


def _talbot_sizes(slots):
    for n_t, n_c in _TALBOT_SIZES:
        if n_t * n_c <= slots:
            return n_t, n_c
    return _TALBOT_SIZES[-1]


def _talbot_constants(n):
    """Fixed Talbot (Abate & Valko 2004) in scaled form: f(t) = sum_j Re(c_j F(lam_j / t) / t...).

    With r = 2n/(5t), nodes r lam_j, lam_0 = 1, lam_j = th_j (cot th_j + i), th_j = j pi / n:
    L^{-1}[F/lambda](t) = sum_j Re(c_j F(r lam_j)) with c_j independent of t.
    """
    th = np.arange(n) * np.pi / n
    lam = np.ones(n, dtype=complex)
    sig = np.zeros(n)
    cot = np.cos(th[1:]) / np.sin(th[1:])
    lam[1:] = th[1:] * (cot + 1j)
    sig[1:] = th[1:] + (th[1:] * cot - 1.0) * cot
    c = np.exp(0.4 * n * lam) * (1.0 + 1j * sig) / (n * lam)
    c[0] *= 0.5
    return th, lam, c


def _expm1c(z):
    """e^z - 1 for complex z without cancellation near 0."""
    x, y = jnp.real(z), jnp.imag(z)
    sh = jnp.sin(0.5 * y)
    return jnp.expm1(x) * jnp.cos(y) - 2.0 * sh * sh + 1j * jnp.exp(x) * jnp.sin(y)


# Laplace method used for M / v <= c(sigma) (v = e^{1/sigma^2} - 1): piecewise linear in sigma for
# log10 c, measured where each method meets ~1e-8 on the survival functions (docs/shuffle_exact.md):
# the Talbot inversion degrades as the law of S concentrates (M / v up), the Fourier table's
# one-big-jump hand-over as the law spreads (M / v down, small sigma).
_C_SIGMA = np.array([0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 1.0])
_LOG10_C = {
    20: np.array([-2.2, -0.4, 0.11, 0.48, 0.7, 0.9, 0.95, 1.08]),  # 20 Talbot x 54 Chebyshev nodes
    28: np.array([-1.0, -0.1, 0.48, 0.7, 0.9, 1.08, 1.3, 1.3]),  # 28 x 128
}


def _use_laplace(s, m, v, n_talbot):
    """Where the Laplace (Talbot) method is used instead of the Fourier one."""
    knots = _LOG10_C[20 if n_talbot < 28 else 28]
    log10_c = jnp.interp(1.0 / s, jnp.asarray(_C_SIGMA), jnp.asarray(knots))
    # sigma <= 2.2: the contour shift -theta/s of the Gaussian integral stays moderate
    return (s >= 0.45) & (s <= 1.0 / 0.29) & (jnp.log10(m / v) <= log10_c)


def _laplace_law(s, m, v, sqrt_m, lphi, lphiq, xi_lo, xi_hi, n_talbot, n_cheb, n_out):
    """Tables of P/Q cdf and sf on a uniform log-S grid of n_out points from Talbot values.

    ``lphi``, ``lphiq``: log E e^{-lambda Y}, log E[Y e^{-lambda Y}] at lambda = r_k lam_j,
    shape (n_talbot, n_cheb), for Chebyshev nodes t_k in the asinh coordinate of log S.
    """
    _, _, c = _talbot_constants(n_talbot)
    c = jnp.asarray(c)[:, None]
    lp = m * lphi
    lq = (m - 1.0) * lphi + lphiq

    def inv(logf):
        logf = jnp.minimum(jnp.real(logf), 700.0) + 1j * jnp.imag(logf)
        cdf = jnp.sum(jnp.real(c * jnp.exp(logf)), axis=0)
        sf = jnp.sum(jnp.real(c * -_expm1c(logf)), axis=0)
        return cdf, sf

    vals = jnp.stack(inv(lp) + inv(lq))  # (4, n_cheb): cdf_p, sf_p, cdf_q, sf_q at the nodes
    # Chebyshev coefficients (first kind, DCT-II) of the cdfs: their tail is the resolution check
    kk = np.arange(n_cheb)
    dct = np.cos(np.pi * np.outer(kk, kk + 0.5) / n_cheb) * (2.0 / n_cheb)
    coef = vals[jnp.array([0, 2])] @ jnp.asarray(dct).T
    ctail = jnp.max(jnp.abs(coef[:, -8:]))
    # barycentric interpolation onto the uniform log-S table
    mu, sfw, e_lo, e_hi = _laplace_map(s, m, v, xi_lo, xi_hi)
    xi = xi_lo + (xi_hi - xi_lo) * jnp.linspace(0.0, 1.0, n_out)
    q = (jnp.arcsinh((xi - mu) / sfw) - e_lo) / (e_hi - e_lo)
    nodes = jnp.asarray(_cheb01(n_cheb))
    wb = jnp.asarray((-1.0) ** kk * np.sin(np.pi * (kk + 0.5) / n_cheb))
    d = q[:, None] - nodes[None, :]
    d = jnp.where(jnp.abs(d) < 1e-15, 1e-15, d)
    b = wb[None, :] / d
    tab = (b @ vals.T) / jnp.sum(b, axis=1, keepdims=True)  # (n_out, 4)
    tab = jnp.clip(tab, 0.0, 1.0)
    return tab[:, 0], tab[:, 1], tab[:, 2], tab[:, 3], ctail


def _cheb01(n):
    k = np.arange(n)
    return 0.5 * (1.0 - np.cos(np.pi * (k + 0.5) / n))


def _laplace_map(s, m, v, xi_lo, xi_hi):
    """asinh coordinate of log S centred on the Fenton-Wilkinson lognormal fit of S.

    Scale kappa x (log-sd of the fit): kappa = 1 concentrates the Chebyshev nodes on the bulk of
    moderately concentrated laws; for M <~ 3 the law of log S is itself lognormal-like over the
    whole range and kappa = 2 (closer to uniform in log S) resolves it better.
    """
    kappa = jnp.clip(2.5 - jnp.log10(m), 1.0, 2.0)
    sfw = kappa * jnp.sqrt(jnp.log1p(v / m))
    mu = jnp.log(m) - 0.5 * sfw * sfw / (kappa * kappa)
    e_lo = jnp.arcsinh((xi_lo - mu) / sfw)
    e_hi = jnp.arcsinh((xi_hi - mu) / sfw)
    return mu, sfw, e_lo, e_hi


def _laplace_nodes(s, m, v, xi_lo, xi_hi, n_talbot, n_cheb, n_slots, block):
    """lambda at the Talbot x Chebyshev nodes (row j = Talbot node j, column k = threshold t_k),
    padded to ``n_slots`` by repeating the last node, and the contour shift per block."""
    th, lam, _ = _talbot_constants(n_talbot)
    mu, sfw, e_lo, e_hi = _laplace_map(s, m, v, xi_lo, xi_hi)
    e = e_lo + (e_hi - e_lo) * jnp.asarray(_cheb01(n_cheb))
    xi = jnp.clip(mu + sfw * jnp.sinh(e), -700.0, 700.0)
    r = 0.4 * n_talbot * jnp.exp(-xi)  # r = 2N / (5 t)
    lam_jk = (jnp.asarray(lam)[:, None] * r[None, :]).reshape(-1)
    n_lt = n_talbot * n_cheb
    lam_all = jnp.concatenate([lam_jk, jnp.full((n_slots - n_lt,), lam_jk[-1])])
    # contour shift per block: arg(lambda Y) = 0 on the shifted line (e^{-lambda Y} decays fastest);
    # a block may straddle two Talbot rows (th differing by pi/N): the mean keeps |arg| <= pi/(2N)
    th_slot = np.concatenate([np.repeat(th, n_cheb), np.full(n_slots - n_lt, th[-1])])
    th_blk = th_slot.reshape(-1, block).mean(axis=1)
    beta = jnp.maximum(-jnp.asarray(th_blk) / s, -8.0)
    return lam_all, beta


# ---- the law ---------------------------------------------------------------------------------


def _fourier_range(s, m, *, n_coarse: int, tail: float, nz: int):
    """Support [x_lo, x_lo + width) of U on the Fourier grid, its spacing h and damping alpha, and
    the probe's Laplace transform at the Chernoff lambdas (for the log-S range)."""
    sqrt_m = jnp.sqrt(m)
    v = jnp.expm1(s * s)
    sd = jnp.sqrt(v)
    beta0 = _beta_cf(s)
    # Lower tail: sums of nonnegative terms are sub-Gaussian below their mean with variance proxy
    # E[Y^2] = e^{s^2} per summand, so P(U < x) <= exp(-x^2 / (2 e^{s^2})).
    x_lo = -jnp.minimum(sqrt_m, 9.0 * jnp.exp(0.5 * s * s))
    # ... and the Chernoff bound P(U <= x) <= exp(M log E e^{-lam (Y - 1) / sqrt(M)} + lam x) <= e^-40
    # at lam = 9 / sd (the Gaussian optimum), much tighter for small s where e^{s^2} ~ 1 >> v.
    lam_lo = 9.0 / sd
    x_ch = -(40.0 + m * _log_laplace_real(lam_lo / sqrt_m, s)[0]) / lam_lo
    x_lo = jnp.maximum(x_lo, jnp.minimum(x_ch, -sd))
    # Upper end wanted: Q(U > x_hi) ~ tail, from the tilted jump and the M untilted jumps.
    zt = -ndtri(tail / 2.0)
    y_q = jnp.maximum(jnp.exp(0.5 * s * s + s * zt), jnp.exp(-0.5 * s * s - s * ndtri(tail / (2.0 * m))))
    x_hi = (y_q - 1.0) / sqrt_m + 10.0 * sd + v / sqrt_m
    # Probe (one evaluation): the characteristic function at 128 real frequencies (resolution of
    # the Fourier grid: the coarse Nyquist frequency pi/h must lie where |phi_U| < e^-40) and the
    # Laplace transform at 32 real lambda (Chernoff lower end of the log-S range).
    w_probe = jnp.logspace(-5.0, 4.0, _N_PROBE)
    lam_ch = jnp.logspace(-6.0, 14.0, _N_CHERNOFF)
    u_probe = jnp.concatenate([w_probe / sqrt_m + 0j, 1j * lam_ch])
    nbp = (_N_PROBE + _N_CHERNOFF) // 32
    rp, pp, qp = _cf_sums(u_probe, s, nz, 32, jnp.full((nbp,), beta0))
    kp, _, lphi_p, _ = _cf_logs(u_probe, rp, pp, qp, _unwrap)
    k_probe = kp[:_N_PROBE]
    big = m * jnp.real(k_probe) > -40.0
    last = jnp.max(jnp.where(big, jnp.arange(_N_PROBE), 0))
    w_star = w_probe[jnp.minimum(last + 1, _N_PROBE - 1)]
    h_res = jnp.pi / w_star
    w_need = 2.0 * (x_hi - x_lo)
    h = jnp.minimum(h_res, w_need / n_coarse)
    width = n_coarse * h
    # Damping only as strong as the wrap-around of the mass beyond the period requires (it
    # amplifies FFT round-off by up to e^{alpha W / 2} in the trusted half).
    _, q_far = jump_tail(x_lo + width, s, m, sqrt_m)
    alpha = jnp.clip(jnp.log(q_far + 1e-300) + 34.0, 0.0, _LOG_TAIL_SUPPRESSION) / width
    return x_lo, x_hi, h, width, alpha, lphi_p, lam_ch


def _fourier_law(k, kq, s, m, x_lo, x_hi, h, width, alpha, w, nf, *, n_fine: int, upsample: int):
    """Fourier method: damped FFT cell masses of U under P and Q and their cdf / sf, with the mass
    beyond the trusted range from the one-big-jump estimate when that range reaches x_hi."""
    sqrt_m = jnp.sqrt(m)
    sd = jnp.sqrt(jnp.expm1(s * s))
    hf = h / upsample
    log_phi_p = m * k
    log_phi_q = (m - 1.0) * k + kq
    x0 = x_lo + 0.5 * hf
    cw = alpha - 1j * w
    tiny = jnp.abs(cw * hf) < 1e-4
    cws = jnp.where(tiny, 1.0, cw)
    shape = jnp.where(  # FT of the damped cell indicator, 2 sinh(c h/2)/c
        tiny, hf * (1.0 + (cw * hf) ** 2 / 24.0), 2.0 * jnp.sinh(0.5 * cws * hf) / cws
    )
    common = shape * jnp.exp(-1j * w * x0)

    def masses(log_phi):
        c = jnp.exp(log_phi) * common
        c = jnp.concatenate([c, jnp.zeros(n_fine // 2 + 1 - nf, c.dtype)])
        dens = jnp.fft.irfft(jnp.conj(c), n=n_fine) * (n_fine / width)
        xk = x0 + hf * jnp.arange(n_fine)
        return dens * jnp.exp(alpha * xk)

    n_t = n_fine // 2
    mp = masses(log_phi_p)[:n_t]
    mq = masses(log_phi_q)[:n_t]

    def cdf_sf(mass, beyond_est):
        # Signed masses: clipping the +-round-off of empty cells would bias the sums.
        cdf = jnp.concatenate([jnp.zeros(1), jnp.cumsum(mass)])
        beyond = jnp.where(beyond_est >= 0.0, beyond_est, jnp.maximum(1.0 - cdf[-1], 0.0))
        rc = jnp.cumsum(mass[::-1])[::-1]
        sf = jnp.concatenate([rc, jnp.zeros(1)]) + beyond
        return jnp.minimum(cdf, 1.0), jnp.minimum(sf, 1.0), beyond

    x_t = x_lo + n_t * hf
    jp, jq = jump_tail(x_t, s, m, sqrt_m)
    # If the trusted range reaches x_hi the mass beyond it is below ``tail`` and 1 - F_T is only
    # rounding noise: use the one-big-jump estimate.  Otherwise 1 - F_T is the mass beyond.
    reached = x_t >= x_hi - 10.0 * sd
    cdf_p, sf_p, bp = cdf_sf(mp, jnp.where(reached, jp, -1.0))
    cdf_q, sf_q, bq = cdf_sf(mq, jnp.where(reached, jq, -1.0))
    nyq = jnp.exp(jnp.real(log_phi_p[-1]))

    return cdf_p, sf_p, cdf_q, sf_q, bp, bq, x_t, nyq, n_t, hf


def _log_range(s, m, v, lphi_p, lam_ch):
    """[xi_lo, xi_hi] of log S for the Laplace method: S >= a summand and the Chernoff bound
    P(S <= t) <= e^{lambda t} E[e^{-lambda Y}]^M (any lambda > 0) on the probe's lambdas."""
    log_tail = math.log(_LOG_RANGE_TAIL)
    t_ch = jnp.max((log_tail - m * jnp.real(lphi_p[_N_PROBE:])) / lam_ch)
    y_hi = jnp.maximum(
        jnp.exp(0.5 * s * s - s * ndtri(_LOG_RANGE_TAIL)),
        jnp.exp(-0.5 * s * s - s * ndtri(_LOG_RANGE_TAIL / m)),
    )
    xi_hi = jnp.log(y_hi + m + 10.0 * jnp.sqrt(m * v))
    xi_lo = jnp.maximum(jnp.log(jnp.maximum(t_ch, 1e-300)), -0.5 * s * s + s * ndtri(_LOG_RANGE_TAIL))
    return jnp.minimum(xi_lo, xi_hi - 1.0), xi_hi


# one compiled program per static configuration: called eagerly (tests, direct use of the law) it
# otherwise ran op by op and re-traced its loops on every call (~14 s for the first eager call and
# ~1.5 s for each later one, against ~3 s once and milliseconds after)
@functools.partial(jit, static_argnames=("n_coarse", "upsample", "tail", "nz", "block", "method"))
def grid_law(sigma, m, *, n_coarse: int, upsample: int, tail: float, nz: int, block: int = 64, method: str = "auto"):
    """Law of U under P and Q on a grid; see module docstring.

    ``method``: "auto" (Laplace where :func:`_use_laplace`, else Fourier), or force "fourier" /
    "laplace" (for tests and calibration).
    """
    s = 1.0 / sigma
    sqrt_m = jnp.sqrt(m)
    v = jnp.expm1(s * s)
    beta0 = _beta_cf(s)
    x_lo, x_hi, h, width, alpha, lphi_p, lam_ch = _fourier_range(s, m, n_coarse=n_coarse, tail=tail, nz=nz)
    n_fine = n_coarse * upsample
    j = jnp.arange(n_coarse // 2 + 1, dtype=jnp.float64)
    w = 2.0 * jnp.pi * j / width
    nf = n_coarse // 2 + 1
    nf_pad = nf + (-nf) % block
    # ---- Laplace-method range and nodes (log S), computed for every (sigma, M) -------------------
    n_talbot, n_cheb = _talbot_sizes(max(nf_pad, 17 * block))
    n_slots = max(nf_pad, n_talbot * n_cheb)
    n_slots += (-n_slots) % block
    xi_lo, xi_hi = _log_range(s, m, v, lphi_p, lam_ch)
    use_log = {"auto": _use_laplace(s, m, v, n_talbot), "fourier": jnp.asarray(False), "laplace": jnp.asarray(True)}[method]
    lam_t, beta_t = _laplace_nodes(s, m, v, xi_lo, xi_hi, n_talbot, n_cheb, n_slots, block)
    n_lt = n_talbot * n_cheb
    # ---- one shared evaluation: Fourier frequencies or Laplace nodes -------------------------------
    wpad = jnp.concatenate([w, w[-1] + (1 + jnp.arange(n_slots - nf)) * (w[1] - w[0])])
    u_fft = (wpad + 1j * alpha) / sqrt_m
    u_lt = 1j * lam_t
    b_fft = jnp.full((n_slots // block,), beta0)
    b_lt = beta_t
    u = jnp.where(use_log, u_lt, u_fft)
    r, php, phq = _cf_sums(u, s, nz, block, jnp.where(use_log, b_lt, b_fft))
    k, kq, _, _ = _cf_logs(u, r, php, phq, _unwrap, center=True)
    # inputs of the branch not taken are made harmless (finite values, finite derivatives)
    k = jnp.where(use_log, 0.0, k[:nf])
    kq = jnp.where(use_log, 0.0, kq[:nf])

    def unwrap_rows(a):  # continue the logarithm along each Talbot contour (from lambda > 0)
        return jnp.swapaxes(_unwrap(jnp.swapaxes(a.reshape(n_talbot, n_cheb), 0, 1)), 0, 1).reshape(-1)

    _, _, lphi_t, lphiq_t = _cf_logs(u[:n_lt], r[:n_lt], php[:n_lt], phq[:n_lt], unwrap_rows)
    lam_flat = lam_t[:n_lt]
    lphi_t = jnp.where(use_log, lphi_t, -lam_flat).reshape(n_talbot, n_cheb)
    lphiq_t = jnp.where(use_log, lphiq_t, -lam_flat).reshape(n_talbot, n_cheb)

    cdf_p, sf_p, cdf_q, sf_q, bp, bq, x_t, nyq, n_t, hf = _fourier_law(
        k, kq, s, m, x_lo, x_hi, h, width, alpha, w, nf, n_fine=n_fine, upsample=upsample)

    # ---- Laplace method: Talbot inversion at Chebyshev nodes, resampled to a log-S table --------
    n_log = min(n_t + 1, _LOG_TABLE)
    lcp, lsp, lcq, lsq, ctail = _laplace_law(
        s, m, v, sqrt_m, lphi_t, lphiq_t, xi_lo, xi_hi, n_talbot, n_cheb, n_log
    )

    def pad(a):
        return jnp.concatenate([a, jnp.full((n_t + 1 - n_log,), a[-1])])

    h_log = (xi_hi - xi_lo) / (n_log - 1)
    x_end_log = (jnp.exp(jnp.where(use_log, xi_hi, 0.0)) - m) / sqrt_m
    # mass below the log range must be negligible (it is set to zero there)
    diag_log = jnp.maximum(ctail, jnp.maximum(lcp[0], lcq[0]))

    sel = lambda a, b: jnp.where(use_log, a, b)  # noqa: E731
    cdf_p, sf_p, cdf_q, sf_q = sel(pad(lcp), cdf_p), sel(pad(lsp), sf_p), sel(pad(lcq), cdf_q), sel(pad(lsq), sf_q)
    x_end = sel(x_end_log, x_t)
    jp, jq = jump_tail(x_end, s, m, sqrt_m)
    bp = sel(lsp[-1], bp)
    bq = sel(lsq[-1], bq)
    # (safe denominators: the untaken branch's derivative would otherwise be NaN in reverse mode)
    ratio_p = jnp.clip(jnp.where(jp > 0, bp / jnp.where(jp > 0, jp, 1.0), 1.0), 0.2, 5.0)
    ratio_q = jnp.clip(jnp.where(jq > 0, bq / jnp.where(jq > 0, jq, 1.0), 1.0), 0.2, 5.0)
    # below SIGMA_MIN the trapezoid rule for phi_Y has not converged (and y overflows): neither
    # resolution diagnostic sees that, since a wrong transform can still decay fast
    resolved = sel(diag_log <= _CHEB_TOL, nyq <= _FFT_TOL) & (s <= 1.0 / SIGMA_MIN)
    return GridLaw(
        lo=sel(xi_lo, x_lo),
        h=sel(h_log, hf),
        sqrt_m=sqrt_m,
        s=s,
        m=m,
        cdf_p=cdf_p,
        sf_p=sf_p,
        cdf_q=cdf_q,
        sf_q=sf_q,
        ratio_p=ratio_p,
        ratio_q=ratio_q,
        resolved=resolved,
        log_axis=use_log,
        n_used=sel(jnp.int32(n_log), jnp.int32(n_t + 1)),
        x_end=x_end,
        diag=sel(diag_log, nyq),
    )


# ---------------------------------------------------------------- interpolation


# 6-point Lagrange weights w_a(t) = prod_{b != a} (t - b) / (a - b): the factor indices and the
# constant denominators, so the weights are one gather and four products for any array of points
_LAG_OTHERS = np.array([[b for b in range(6) if b != a] for a in range(6)])
_LAG_DENOM = np.array([np.prod([a - b for b in range(6) if b != a]) for a in range(6)], dtype=np.float64)


def _lagrange6(tables, pos, n):
    """6-point Lagrange interpolation of each table in ``tables`` (valid on 0..n-1) at real positions ``pos``.

    The tables share the stencil, so the weights are computed once (vectorised over the six nodes:
    a small program to compile, whatever the number of tables)."""
    i0 = jnp.clip(jnp.floor(pos).astype(jnp.int32) - 2, 0, n - 6)
    d = (pos - i0)[..., None] - jnp.arange(6.0)
    g = d[..., _LAG_OTHERS]
    w = g[..., 0] * g[..., 1] * g[..., 2] * g[..., 3] * g[..., 4] / _LAG_DENOM
    idx = i0[..., None] + jnp.arange(6)
    return tuple(jnp.sum(values[idx] * w, axis=-1) for values in tables)


def _position(law: GridLaw, x):
    """Table position of x (U units); below the table (incl. L <= 0) negative."""
    sv = law.m + law.sqrt_m * x
    ok = sv > 0.0
    pos_log = jnp.where(ok, (jnp.log(jnp.where(ok, sv, 1.0)) - law.lo) / law.h, -1.0)
    return jnp.where(law.log_axis, pos_log, (x - law.lo) / law.h)


def _to_x(law: GridLaw, c):
    """U value of table coordinate c."""
    e = jnp.exp(jnp.where(law.log_axis, jnp.minimum(c, 700.0), 0.0))
    return jnp.where(law.log_axis, (e - law.m) / law.sqrt_m, c)


def cdf_sf_at(law: GridLaw, x):
    """(P(U <= x), P(U > x), Q(U <= x), Q(U > x)) for an array x in U units.

    6-point Lagrange interpolation of the tabulated cdf (where it is below 1/2) or sf (above), so
    both tails keep their relative accuracy; beyond the table the matched one-big-jump tail.
    """
    n = law.n_used
    pos = _position(law, x)
    posc = jnp.clip(pos, 0.0, n - 1.0)
    out = []
    interp = _lagrange6((law.cdf_p, law.sf_p, law.cdf_q, law.sf_q), posc, n)
    beyond = pos > n - 1.0
    # finite stand-in for x = +inf (set exactly below): jump_tail(inf) has a NaN derivative
    tails = jump_tail(jnp.where(beyond, jnp.minimum(x, 1e250), law.x_end), law.s, law.m, law.sqrt_m)
    for sf, ratio, which in ((law.sf_p, law.ratio_p, 0), (law.sf_q, law.ratio_q, 1)):
        c_int, s_int = (jnp.clip(v, 0.0, 1.0) for v in interp[2 * which : 2 * which + 2])
        sfv = jnp.where(s_int <= 0.5, s_int, 1.0 - c_int)
        cdv = jnp.where(c_int <= 0.5, c_int, 1.0 - s_int)
        tail = jnp.minimum(tails[which] * ratio, sf[n - 1])
        sfv = jnp.where(pos < 0.0, 1.0, jnp.where(beyond, tail, sfv))
        cdv = jnp.where(pos < 0.0, 0.0, jnp.where(beyond, 1.0 - tail, cdv))
        sfv = jnp.where(jnp.isposinf(x), 0.0, sfv)
        cdv = jnp.where(jnp.isposinf(x), 1.0, cdv)
        out += [cdv, sfv]
    return tuple(out)


def invert_sf(law: GridLaw, a, which: str):
    """x (U units) with P(U > x) = a (which="p_sf") or Q(U <= x) = a (which="q_cdf")."""
    n = law.n_used
    if which == "p_sf":
        tab, sign = law.sf_p, -1.0  # decreasing
    else:
        tab, sign = law.cdf_q, 1.0  # increasing
    key = sign * tab
    i = jnp.clip(jnp.searchsorted(key, sign * a), 1, n - 1)
    f0, f1 = tab[i - 1], tab[i]
    frac = jnp.clip((a - f0) / jnp.where(f1 != f0, f1 - f0, 1.0), 0.0, 1.0)
    pos = i - 1 + frac
    for _ in range(2):  # Newton on the interpolant; the local cell slope is the derivative
        cp, sp, cq, sq = cdf_sf_at(law, _to_x(law, law.lo + pos * law.h))
        val = sp if which == "p_sf" else cq
        j = jnp.clip(jnp.floor(pos).astype(jnp.int32), 0, n - 2)
        slope = tab[j + 1] - tab[j]
        step = jnp.where(slope != 0, (val - a) / jnp.where(slope != 0, slope, 1.0), 0.0)
        pos = jnp.clip(pos - step, i - 2.0, i + 1.0)
    return _to_x(law, law.lo + pos * law.h)


# ---------------------------------------------------------------- closed-form envelope (guards)

#: Claimed accuracy of the single-epoch values: a computed curve or gap within this of a rigorous
#: bound that it crosses is moved onto the bound (the truth lies on the bound's side, so the moved
#: value is no farther from it); farther out it is a detected failure (NaN).
ENVELOPE_TOL = 1e-8
#: Absolute cdf error of the tables and of the Fourier line (measured ~1e-11, see
#: docs/shuffle_exact.md; ten times that as the allowance); Laplace tables use 10 x their
#: Chebyshev diagnostic when larger.
CDF_ERR = 1e-10


def gaussian_curve(a, mu):
    """G_mu(a) = Phi(-Phi^{-1}(a) - mu), exact at a = 0 and 1 (finite derivatives there)."""
    inner = (a > 0.0) & (a < 1.0)
    g = _cf.gaussian_curve(jnp.where(inner, a, 0.5), mu)
    return jnp.where(a <= 0.0, 1.0, jnp.where(a >= 1.0, 0.0, g))


def gap_envelope(s, m, e=1.0):
    """Rigorous (lower, upper) bounds on the gap sup_a(1 - a - f(a)) of e epochs (both directions).

    Lower: the linear test on the sum of coordinates, G_{sqrt(e) s / sqrt(M)} (its TV is
    2 Phi(mu / 2) - 1; composing the per-epoch bound f <= G is monotone).  Upper: knowing the round
    (post-processing) gives the Gaussian G_{sqrt(e) s}; chi^2(Q || P) = v / M per epoch, so
    TV <= sqrt(chi^2_e) / 2 with 1 + chi^2_e = (1 + v / M)^e.
    """
    nd = jax.scipy.special.ndtr
    se = jnp.sqrt(e) * s
    lo = 2.0 * nd(0.5 * se / jnp.sqrt(m)) - 1.0
    chi2 = jnp.expm1(e * jnp.log1p(jnp.expm1(s * s) / m))
    up = jnp.minimum(2.0 * nd(0.5 * se) - 1.0, 0.5 * jnp.sqrt(chi2))
    return lo, jnp.clip(up, lo, 1.0)


def curve_envelope(a, s, m, e=1.0):
    """Rigorous (floor, ceiling) of the e-epoch trade-off curve, either direction.

    Ceiling: the linear test, f <= G_{sqrt(e) s / sqrt(M)}.  Floor: knowing the round,
    f >= G_{sqrt(e) s}, and f >= 1 - a - TV with TV below :func:`gap_envelope`'s upper bound.
    """
    _, tv_up = gap_envelope(s, m, e)
    ceil = gaussian_curve(a, jnp.sqrt(e) * s / jnp.sqrt(m))
    floor = jnp.maximum(gaussian_curve(a, jnp.sqrt(e) * s), 1.0 - a - tv_up)
    return jnp.clip(floor, 0.0, ceil), ceil


def curve_allowance(t, err, reverse):
    """Propagated cdf error of a single-epoch curve point at threshold t = L(x): err (1 + |slope|).

    The curve's slope at t is -t forward (a = P(L > t), f = Q(L <= t): dQ = t dP) and -1/t reverse
    (a = Q(L <= t), f = P(L > t)), so an absolute cdf error ``err`` of the table or the Fourier line
    moves f by up to err through f's own cdf and err |slope| through the threshold.  The curve's
    bracket is [f - allowance, f + allowance]; the reverse slope is unbounded as t -> 0 (issue 20,
    class 5), where the allowance grows past 1 and the envelope takes over; t <= 0 (a at an
    end of the curve) gets the allowance 2, which claims nothing."""
    tp = jnp.where(t > 0.0, t, 1.0)
    slope = (1.0 / tp) if reverse else tp
    return jnp.where(t > 0.0, err * (1.0 + slope), 2.0)


def guard_curve_ends(a, lo, up, s, m):
    """(lower, upper) ends of a computed single-epoch curve bracket, checked against :func:`curve_envelope`.

    The lower end is guarded as a computed curve (raised to the floor; NaN above the ceiling by more
    than ``ENVELOPE_TOL``); the upper end is clipped into the envelope, whose ceiling is itself an
    upper bound, and is NaN wherever the lower end is.  Both are 1 at a = 0 and 0 at a = 1.
    """
    def edges(f):
        return jnp.where(a <= 0.0, 1.0, jnp.where(a >= 1.0, 0.0, jnp.minimum(f, 1.0 - a)))

    lo, up = edges(lo), edges(up)
    floor, ceil = curve_envelope(a, s, m)
    lo = jnp.where(lo > ceil + ENVELOPE_TOL, jnp.nan, jnp.clip(lo, floor, ceil))
    up = jnp.where(jnp.isnan(lo) | jnp.isnan(up), jnp.nan, jnp.clip(up, floor, ceil))
    return lo, up


def guard_gap(g, s, m):
    """A computed single-epoch gap checked against :func:`gap_envelope` (NaN below it by > tol)."""
    lo, up = gap_envelope(s, m)
    bad = g < lo - ENVELOPE_TOL
    return jnp.where(bad, jnp.nan, jnp.clip(g, lo, up))
