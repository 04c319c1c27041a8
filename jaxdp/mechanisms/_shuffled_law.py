"""Numerical core of the exact single-epoch shuffled-Gaussian law (private).

Everything here is a pure function of traced ``(sigma, M)`` with static grid sizes, so it is
``jit`` / ``vmap`` / ``grad`` friendly and its cost does not depend on M.

Notation: s = 1/sigma, Y = exp(s Z - s^2/2) (Z standard normal, the law under P of one
coordinate's likelihood ratio), L = (1/M) sum_j Y_j, U = sqrt(M) (L - 1) under P.
Under Q one summand is tilted: its law is Y' with dP_{Y'} = y dP_Y.

Pipeline (see docs/shuffle_exact.md for the error analysis):

1. ``_log_cf_y``: K(u) = log E[e^{iuY}] - iu and K_Q(u) = log E[Y e^{iuY}] - iu for complex u
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

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr, ndtri

_SQRT2PI = math.sqrt(2.0 * math.pi)
_N_PROBE = 128
_LOG_TAIL_SUPPRESSION = 24.0  # alpha * W: wrap-around of the right tail damped by e^-24


# ---------------------------------------------------------------- characteristic functions


def _g_series(zeta):
    """e^{i zeta} - 1 - i zeta; series for |zeta| < 1/4 (12 terms, error < 3e-18 relative)."""
    small = jnp.abs(zeta) < 0.25
    zs = jnp.where(small, zeta, 0.0)
    iz = 1j * zs
    term = 0.5 * iz * iz
    acc = term
    for k in range(3, 14):
        term = term * iz / k
        acc = acc + term
    zb = jnp.where(small, 1.0, zeta)
    big = jnp.exp(1j * zb) - 1.0 - 1j * zb
    return jnp.where(small, acc, big)


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


def _quad_nodes(s, nz):
    """Nodes/weights of the shifted-contour trapezoid rule for E[h(Y)], Y = e^{sZ - s^2/2}."""
    beta = jnp.minimum(jnp.pi / (4.0 * s), 2.5)
    t_lo = -9.5
    t_hi = 2.0 * s + 9.5
    t = jnp.linspace(0.0, 1.0, nz) * (t_hi - t_lo) + t_lo
    hz = (t_hi - t_lo) / (nz - 1)
    z = t + 1j * beta
    y = jnp.exp(s * z - 0.5 * s * s)
    wp = hz * jnp.exp(-0.5 * z * z) / _SQRT2PI
    wq = hz * jnp.exp(-0.5 * (z - s) ** 2) / _SQRT2PI  # y * phi(z) = phi(z - s)
    return y, wp, wq


def _log_cf_y(u, s, nz, block):
    """K(u) = log E e^{iuY} - iu and K_Q(u) = log E[Y e^{iuY}] - iu, u sorted by Re u >= 0."""
    y, wp, wq = _quad_nodes(s, nz)
    n = u.shape[0]
    nb = n // block
    ub = u.reshape(nb, block)

    def one(ublk):
        zeta = ublk[:, None] * y[None, :]
        g = _g_series(zeta)
        r = jnp.sum(g * wp[None, :], axis=1)
        eiz = g + 1.0 + 1j * zeta
        php = jnp.sum(eiz * wp[None, :], axis=1)
        phq = jnp.sum(eiz * wq[None, :], axis=1)
        return r, php, phq

    r, php, phq = jax.lax.map(one, ub)
    r = r.reshape(n)
    php = php.reshape(n)
    phq = phq.reshape(n)
    z = 1j * u + r
    small = jnp.abs(z) < 0.1
    zs = jnp.where(small, z, 0.0)
    k_small = r + _log1p_minus_id(zs)
    # Away from u = 0 the direct sum has no cancellation (absolute error ~1e-17).
    one_p = jnp.where(jnp.abs(z) < 0.5, 1.0 + z, php)
    ang = _unwrap(jnp.angle(one_p))
    k_big = jnp.log(jnp.maximum(jnp.abs(one_p), 1e-300)) + 1j * ang - 1j * u
    k = jnp.where(small, k_small, k_big)
    # Re u >= 0 along the array and u[0] = i alpha / sqrt(M) on the positive imaginary axis, where
    # E[e^{iuY}] is real positive: the unwrapped argument is the continuous logarithm.
    kq = jnp.log(jnp.maximum(jnp.abs(phq), 1e-300)) + 1j * _unwrap(jnp.angle(phq)) - 1j * u
    return k, kq


# ---------------------------------------------------------------- grid law


class GridLaw(NamedTuple):
    lo: jax.Array  # left end of the grid (U units)
    h: jax.Array  # fine cell width
    sqrt_m: jax.Array
    s: jax.Array
    m: jax.Array
    cdf_p: jax.Array  # P(U <= e_k), e_k = lo + k h, k = 0..n_trusted
    sf_p: jax.Array
    cdf_q: jax.Array
    sf_q: jax.Array
    ratio_p: jax.Array  # grid / one-big-jump tail at the end of the trusted range
    ratio_q: jax.Array
    nyquist_cf: jax.Array  # |phi_U| at the coarse Nyquist frequency (resolution diagnostic)


def _log_sf_y(y, s):
    """log P(Y > y), Y = e^{sZ - s^2/2}."""
    return jax.scipy.special.log_ndtr(-(jnp.log(y) + 0.5 * s * s) / s)


def _log_sf_yq(y, s):
    """log P(Y' > y), Y' = e^{sZ + s^2/2} (tilted summand)."""
    return jax.scipy.special.log_ndtr(-(jnp.log(y) - 0.5 * s * s) / s)


def jump_tail(x, s, m, sqrt_m):
    """One-big-jump approximations of P(U > x), Q(U > x) for large x (U units)."""
    y = jnp.maximum(1.0 + sqrt_m * x, 1e-300)
    lp = jnp.log(m) + _log_sf_y(y, s)
    lq = jnp.logaddexp(_log_sf_yq(y, s), jnp.log(jnp.maximum(m - 1.0, 1e-300)) + _log_sf_y(y, s))
    return jnp.exp(lp), jnp.exp(lq)


def grid_law(sigma, m, *, n_coarse: int, upsample: int, tail: float, nz: int, block: int = 64):
    """Law of U under P and Q on a grid; see module docstring."""
    s = 1.0 / sigma
    sqrt_m = jnp.sqrt(m)
    v = jnp.expm1(s * s)
    sd = jnp.sqrt(v)
    # Lower tail: sums of nonnegative terms are sub-Gaussian below their mean with variance proxy
    # E[Y^2] = e^{s^2} per summand, so P(U < x) <= exp(-x^2 / (2 e^{s^2})).
    x_lo = -jnp.minimum(sqrt_m, 9.0 * jnp.exp(0.5 * s * s))
    # Upper end wanted: Q(U > x_hi) ~ tail, from the tilted jump and the M untilted jumps.
    zt = -ndtri(tail / 2.0)
    y_q = jnp.maximum(jnp.exp(0.5 * s * s + s * zt), jnp.exp(-0.5 * s * s - s * ndtri(tail / (2.0 * m))))
    x_hi = (y_q - 1.0) / sqrt_m + 10.0 * sd + v / sqrt_m
    # Resolution: |phi_U(pi/h)| ~ exp(-v (pi/h)^2 / 2) <= e^-37 for a near-Gaussian law; for small
    # M the law of L has structure on the scale of the median of Y, e^{-s^2/2}.
    # Resolution from the characteristic function itself: the coarse Nyquist frequency pi/h must
    # lie where |phi_U| < e^-40 (probed on a log grid of frequencies, undamped, u real).
    w_probe = jnp.logspace(-5.0, 4.0, _N_PROBE)
    k_probe, _ = _log_cf_y(w_probe / sqrt_m + 0j, s, nz, _N_PROBE // 4)
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
    n_fine = n_coarse * upsample
    hf = h / upsample
    j = jnp.arange(n_coarse // 2 + 1, dtype=jnp.float64)
    w = 2.0 * jnp.pi * j / width
    nf = n_coarse // 2 + 1
    pad = (-nf) % block
    wpad = jnp.concatenate([w, w[-1] + (1 + jnp.arange(pad)) * (w[1] - w[0])]) if pad else w
    u = (wpad + 1j * alpha) / sqrt_m
    k, kq = _log_cf_y(u, s, nz, block)
    k = k[:nf]
    kq = kq[:nf]
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
    # (safe denominators: the untaken branch's derivative would otherwise be NaN in reverse mode)
    ratio_p = jnp.clip(jnp.where(jp > 0, bp / jnp.where(jp > 0, jp, 1.0), 1.0), 0.2, 5.0)
    ratio_q = jnp.clip(jnp.where(jq > 0, bq / jnp.where(jq > 0, jq, 1.0), 1.0), 0.2, 5.0)
    nyq = jnp.exp(jnp.real(log_phi_p[-1]))
    return GridLaw(x_lo, hf, sqrt_m, s, m, cdf_p, sf_p, cdf_q, sf_q, ratio_p, ratio_q, nyq)


# ---------------------------------------------------------------- interpolation


def _lagrange6(values, pos):
    """6-point Lagrange interpolation of ``values`` (on 0..n-1) at real positions ``pos``."""
    n = values.shape[0]
    i0 = jnp.clip(jnp.floor(pos).astype(jnp.int32) - 2, 0, n - 6)
    t = pos - i0
    out = jnp.zeros_like(pos)
    for a in range(6):
        wa = jnp.ones_like(pos)
        for b in range(6):
            if b != a:
                wa = wa * (t - b) / (a - b)
        out = out + wa * values[i0 + a]
    return out


def cdf_sf_at(law: GridLaw, x):
    """(P(U <= x), P(U > x), Q(U <= x), Q(U > x)) for an array x in U units.

    6-point Lagrange interpolation of the tabulated cdf (where it is below 1/2) or sf (above), so
    both tails keep their relative accuracy; beyond the trusted range the matched one-big-jump tail.
    """
    n = law.cdf_p.shape[0]
    pos = (x - law.lo) / law.h
    posc = jnp.clip(pos, 0.0, n - 1.0)
    out = []
    for cdf, sf, ratio, which in (
        (law.cdf_p, law.sf_p, law.ratio_p, 0),
        (law.cdf_q, law.sf_q, law.ratio_q, 1),
    ):
        s_int = jnp.clip(_lagrange6(sf, posc), 0.0, 1.0)
        c_int = jnp.clip(_lagrange6(cdf, posc), 0.0, 1.0)
        sfv = jnp.where(s_int <= 0.5, s_int, 1.0 - c_int)
        cdv = jnp.where(c_int <= 0.5, c_int, 1.0 - s_int)
        beyond = pos > n - 1.0
        # finite stand-in for x = +inf (set exactly below): jump_tail(inf) has a NaN derivative
        xt = jnp.where(beyond, jnp.minimum(x, 1e250), law.lo + (n - 1.0) * law.h)
        tail = jnp.minimum(jump_tail(xt, law.s, law.m, law.sqrt_m)[which] * ratio, sf[-1])
        sfv = jnp.where(pos < 0.0, 1.0, jnp.where(beyond, tail, sfv))
        cdv = jnp.where(pos < 0.0, 0.0, jnp.where(beyond, 1.0 - tail, cdv))
        sfv = jnp.where(jnp.isposinf(x), 0.0, sfv)
        cdv = jnp.where(jnp.isposinf(x), 1.0, cdv)
        out += [cdv, sfv]
    return tuple(out)


def invert_sf(law: GridLaw, a, which: str):
    """x with P(U > x) = a (which="p_sf") or Q(U <= x) = a (which="q_cdf")."""
    n = law.cdf_p.shape[0]
    if which == "p_sf":
        tab, sign = law.sf_p, -1.0  # decreasing
    else:
        tab, sign = law.cdf_q, 1.0  # increasing
    key = sign * tab
    i = jnp.clip(jnp.searchsorted(key, sign * a), 1, n - 1)
    f0, f1 = tab[i - 1], tab[i]
    frac = jnp.clip((a - f0) / jnp.where(f1 != f0, f1 - f0, 1.0), 0.0, 1.0)
    x = law.lo + (i - 1 + frac) * law.h
    for _ in range(2):  # Newton on the interpolant; the local cell slope is the derivative
        cp, sp, cq, sq = cdf_sf_at(law, x)
        val = sp if which == "p_sf" else cq
        j = jnp.clip(jnp.floor((x - law.lo) / law.h).astype(jnp.int32), 0, n - 2)
        slope = (tab[j + 1] - tab[j]) / law.h
        step = jnp.where(slope != 0, (val - a) / jnp.where(slope != 0, slope, 1.0), 0.0)
        x = jnp.clip(x - step, law.lo + (i - 2) * law.h, law.lo + (i + 1) * law.h)
    return x


def density_p_at(law: GridLaw, x):
    pos = jnp.clip((x - law.lo) / law.h, 0.0, law.cdf_p.shape[0] - 1.0)
    i = jnp.clip(jnp.floor(pos).astype(jnp.int32), 0, law.cdf_p.shape[0] - 2)
    return (law.cdf_p[i + 1] - law.cdf_p[i]) / law.h
