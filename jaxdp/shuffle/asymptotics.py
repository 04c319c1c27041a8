"""Asymptotic approximations for the shuffled Gaussian: CLT, Edgeworth, Poisson comparison.

Model as in :mod:`jaxdp.shuffle.closed_form`: one epoch tests P = N(0, I_M) against
Q = (1/M) sum_j N(e_j/sigma, I_M); the likelihood ratio is L = 1 + U/sqrt(M) with
U = sum_j (Y_j - 1)/sqrt(M), Y_j i.i.d. lognormal under P, v = Var Y = e^{1/sigma^2} - 1, and

.. math::

    a(t) = P(U > t),\\qquad f(a(t)) = Q(U \\le t) = E_P\\big[(1 + U/\\sqrt M)\\,1\\{U \\le t\\}\\big].

**Everything here is an approximation, not a bound** (unlike
:func:`jaxdp.shuffle.closed_form.tradeoff_berry_esseen` / ``tradeoff_linear_test``): use the exact
accountant for certified numbers.  Tags as in the spec: [P] paper's abstract, [R] reconstruction,
[D] standard derivation.

Conventions: pure JAX, numbers (sigma, M, E, a, p, T) may be traced; M and E are real numbers
(formulas are smooth in them); shape-deciding settings (``order``, ``num_points``) are static.
Eager invalid input raises ``ValueError``; traced invalid input gives NaN.

References:
    M. van Dijk, M. B. Ertan, arXiv:2605.06259 (2026) (shuffling trade-off functions).
    Z. Bu, J. Dong, Q. Long, W. Su, "Deep learning with Gaussian differential privacy",
    Harvard Data Science Review (2020), arXiv:1911.11607 (CLT mu_P).
    J. Dong, A. Roth, W. Su, "Gaussian differential privacy", JRSS-B (2022), arXiv:1905.02383.
    W. Feller, "An Introduction to Probability Theory and Its Applications II", XVI.4
    (Edgeworth expansions); P. Hall, "The Bootstrap and Edgeworth Expansion" (1992), 2.2.
"""

from __future__ import annotations

import functools
from math import comb

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxdp._config import jit
from jaxdp import _config  # noqa: F401  (float64)
from jaxdp import closed_forms as _cf
from jaxdp._validate import check, check_choice, check_static_int, nan_where_invalid
from jaxdp.shuffle._common import _alpha, _epochs, _mu_curve, _rounds, _sigma

__all__ = [
    "clt_ratio",
    "delta_gap_clt",
    "delta_gap_edgeworth",
    "edgeworth_cdf",
    "edgeworth_partial_expectation",
    "lognormal_cumulants",
    "loss_cumulants",
    "mu_clt",
    "mu_poisson_bu",
    "mu_poisson_drs",
    "tradeoff_clt",
    "tradeoff_edgeworth",
]

_SQRT_2PI = float(np.sqrt(2.0 * np.pi))


def _phi(x):
    return jnp.exp(-0.5 * x * x) / _SQRT_2PI


# --------------------------------------------------------------------------------------------
# CLT
# --------------------------------------------------------------------------------------------


def _mu_clt(sigma, M, E):
    return _cf.shuffle_clt_mu(sigma, M, E)


def mu_clt(sigma, M, E=1):
    """CLT Gaussian-DP parameter of E shuffled epochs [D].

    .. math::  \\mu_E = \\sqrt{E\\,(e^{1/\\sigma^2} - 1)/M} = \\sqrt{E v / M}

    (per epoch, log L ~ N(-+ v/(2M), v/M) under P / Q to first order).
    """
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    E, ok_e = _epochs(E)
    return nan_where_invalid(_mu_clt(sigma, M, E), ok_s & ok_m & ok_e)


def tradeoff_clt(a, sigma, M, E=1):
    """CLT approximation :math:`G_{\\mu_E}(a) = \\Phi(\\Phi^{-1}(1-a) - \\mu_E)` [D] (not a bound)."""
    return _mu_curve(_mu_clt, a, sigma, M, E)


def delta_gap_clt(sigma, M, E=1):
    """CLT gap :math:`2\\Phi(\\mu_E/2) - 1 \\approx \\mu_E/\\sqrt{2\\pi}` [D] (not a bound)."""
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    E, ok_e = _epochs(E)
    return nan_where_invalid(_cf.gaussian_tv(_mu_clt(sigma, M, E)), ok_s & ok_m & ok_e)


# --------------------------------------------------------------------------------------------
# Cumulants
# --------------------------------------------------------------------------------------------


def _lognormal_cumulants(sigma):
    # Y - 1 with E Y^k = q^{k(k-1)/2}, q = e^{1/sigma^2}, w = q - 1:
    #   k2 = w, k3 = (q - 1)^2 (q + 2) = w^2 (w + 3), k4 = w^2 (q^4 + 2q^3 + 3q^2 - 6)
    # (lognormal skewness (q+2) sqrt(w), excess kurtosis q^4+2q^3+3q^2-6 = w(16+15w+6w^2+w^3)).
    w = _cf.ratio_variance(sigma)
    k3 = w * w * (w + 3.0)
    k4 = w**3 * (16.0 + w * (15.0 + w * (6.0 + w)))
    return w, k3, k4


def lognormal_cumulants(sigma):
    """Cumulants (kappa_2, kappa_3, kappa_4) of Y - 1 under P [D].

    .. math::

        \\kappa_2 = w,\\ \\kappa_3 = w^2(w + 3),\\ \\kappa_4 = w^3(16 + 15w + 6w^2 + w^3),
        \\qquad w = e^{1/\\sigma^2} - 1,

    from :math:`E Y^k = e^{k(k-1)/(2\\sigma^2)}`.  U = sum_j (Y_j - 1)/sqrt(M) has cumulants
    kappa_r M^{1 - r/2}.
    """
    sigma, ok = _sigma(sigma)
    return tuple(nan_where_invalid(c, ok) for c in _lognormal_cumulants(sigma))


# Series in eps = 1/sqrt(M), truncated after eps^_NS-1.  Only even powers are non-zero.
_NS = 7


def _smul(a, b):
    return jnp.convolve(a, b)[:_NS]


def _log_poly(with_tilt: bool):
    """Static coefficients c[i, m] of eps^i U^m in l^k (or (1 + eps U) l^k), l = log(1 + eps U)."""
    base = np.zeros((_NS, _NS + 1))
    for n in range(1, _NS):
        base[n, n] = (-1.0) ** (n + 1) / n
    out = []
    cur = np.zeros((_NS, _NS + 1))
    cur[0, 0] = 1.0
    for _ in range(4):
        nxt = np.zeros_like(cur)
        for i in range(_NS):
            for m in range(_NS + 1):
                if cur[i, m] == 0.0:
                    continue
                for j in range(_NS - i):
                    for n in range(_NS + 1 - m):
                        nxt[i + j, m + n] += cur[i, m] * base[j, n]
        cur = nxt
        poly = cur
        if with_tilt:
            tilt = cur.copy()
            tilt[1:, 1:] += cur[:-1, :-1]
            poly = tilt
        out.append(poly)
    return np.stack(out)  # (4, _NS, _NS + 1)


_LOG_POLY_P = _log_poly(False)
_LOG_POLY_Q = _log_poly(True)


def _u_moment_series(w, k3, k4):
    """E_P[U^m], m = 0.._NS, as eps-series (rows).  Cumulants of U: w, k3 eps, k4 eps^2 (k_5, k_6
    only enter at eps^7 and beyond in the loss cumulants below, so they are dropped)."""
    z = jnp.zeros(_NS)
    cum = [z, z.at[0].set(w), z.at[1].set(k3), z.at[2].set(k4)] + [z] * (_NS - 3)
    mom = [z.at[0].set(1.0)]
    for n in range(1, _NS + 1):
        acc = z
        for j in range(1, n + 1):
            acc = acc + comb(n - 1, j - 1) * _smul(cum[j - 1], mom[n - j])
        mom.append(acc)
    return jnp.stack(mom)  # (_NS + 1, _NS)


def _shift_tensor(poly):
    # T[k, n, m, j] = poly[k, n - j, m]: coefficient of eps^n from eps^i E[U^m]_j, i + j = n.
    T = np.zeros((4, _NS, _NS + 1, _NS))
    for n in range(_NS):
        for j in range(n + 1):
            T[:, n, :, j] = poly[:, n - j, :]
    return T


_SHIFT_P = _shift_tensor(_LOG_POLY_P)
_SHIFT_Q = _shift_tensor(_LOG_POLY_Q)


def _loss_cumulant_series(w, k3, k4, shift):
    mom_u = _u_moment_series(w, k3, k4)
    raw = jnp.einsum("knmj,mj->kn", shift, mom_u)
    m1, m2, m3, m4 = raw
    m1sq = _smul(m1, m1)
    c1 = m1
    c2 = m2 - m1sq
    c3 = m3 - 3.0 * _smul(m2, m1) + 2.0 * _smul(m1sq, m1)
    c4 = (
        m4
        - 4.0 * _smul(m3, m1)
        - 3.0 * _smul(m2, m2)
        + 12.0 * _smul(m2, m1sq)
        - 6.0 * _smul(m1sq, m1sq)
    )
    return jnp.stack([c1, c2, c3, c4])  # (4, _NS)


@jit
def _loss_cumulants(sigma, M):
    w, k3, k4 = _lognormal_cumulants(sigma)
    eps_pow = (1.0 / jnp.sqrt(M)) ** jnp.arange(_NS)
    cp = _loss_cumulant_series(w, k3, k4, _SHIFT_P) @ eps_pow
    cq = _loss_cumulant_series(w, k3, k4, _SHIFT_Q) @ eps_pow
    return cp, cq


def loss_cumulants(sigma, M):
    """First four cumulants of the one-epoch privacy loss log L = log(1 + U/sqrt M) [D]/[R].

    Returns ``(cumulants_under_P, cumulants_under_Q)``, each of shape ``(..., 4)``.  Computed as a
    series in 1/M (``log(1 + eps U)`` expanded in eps = 1/sqrt(M), moments of U from its
    cumulants w, kappa_3 eps, kappa_4 eps^2), exact through O(M^{-3}): leading terms
    k_1 = -+ v/(2M), k_2 = v/M, k_3 = (kappa_3 -+ 3 v^2 ...)/M^2, k_4 = O(M^{-3}).
    An approximation for small M (the series in 1/M diverges when v/M is not small).
    """
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    sigma, M = jnp.broadcast_arrays(sigma, M)
    f = jnp.vectorize(_loss_cumulants, signature="(),()->(k),(k)")
    cp, cq = f(sigma, M)
    ok = (ok_s & ok_m)[..., None]
    return nan_where_invalid(cp, ok), nan_where_invalid(cq, ok)


# --------------------------------------------------------------------------------------------
# Edgeworth expansions
# --------------------------------------------------------------------------------------------


def _edgeworth_coeffs(skew, exkurt, order):
    """Coefficients (c3, c4, c6) of He_3, He_4, He_6 in the Edgeworth density."""
    c3 = skew / 6.0
    if order == 1:
        return c3, 0.0 * c3, 0.0 * c3
    return c3, exkurt / 24.0, skew * skew / 72.0


def _finite(x):
    # phi(x) * polynomial(x) -> 0 at x = +-inf; evaluate the polynomial at 0 there (no inf * 0).
    return jnp.where(jnp.isfinite(x), x, 0.0)


def _ew_correction(x, c3, c4, c6):
    # phi(x)[c3 He2 + c4 He3 + c6 He5]  (int_{-inf}^x phi He_n = -phi He_{n-1})
    xs, x = x, _finite(x)
    x2 = x * x
    he2 = x2 - 1.0
    he3 = x * (x2 - 3.0)
    he5 = x * (x2 * x2 - 10.0 * x2 + 15.0)
    return _phi(xs) * (c3 * he2 + c4 * he3 + c6 * he5)


def _ew_sf(x, c3, c4, c6):
    # 1 - F(x),  F(x) = Phi(x) - phi(x)[c3 He2 + c4 He3 + c6 He5]
    return ndtr(-x) + _ew_correction(x, c3, c4, c6)


def _ew_cdf(x, c3, c4, c6):
    return ndtr(x) - _ew_correction(x, c3, c4, c6)


def _ew_first_moment(x, c3, c4, c6):
    # E[S 1{S <= x}] = -phi(x)[1 + sum_n c_n (He_n + n He_{n-2})]   (y He_n = He_{n+1} + n He_{n-1}):
    #   He3 + 3He1 = x^3,  He4 + 4He2 = x^4 - 2x^2 - 1,  He6 + 6He4 = x^6 - 9x^4 + 9x^2 + 3.
    xs, x = x, _finite(x)
    x2 = x * x
    poly = 1.0 + c3 * x2 * x + c4 * (x2 * x2 - 2.0 * x2 - 1.0) + c6 * (x2**3 - 9.0 * x2 * x2 + 9.0 * x2 + 3.0)
    return -_phi(xs) * poly


def _u_std_params(sigma, M, order):
    w = _cf.ratio_variance(sigma)
    skew1 = (w + 3.0) * jnp.sqrt(w)  # lognormal skewness
    exk1 = w * (16.0 + w * (15.0 + w * (6.0 + w)))  # lognormal excess kurtosis
    c3, c4, c6 = _edgeworth_coeffs(skew1 / jnp.sqrt(M), exk1 / M, order)
    return w, c3, c4, c6


def _check_order(order):
    order = check_static_int("order", order, 1, 2)
    return order


def _edgeworth_args(t, sigma, M, order):
    order = _check_order(order)
    t, ok_t = check("t", t, allow_inf=True)
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    return t, M, ok_t & ok_s & ok_m, _u_std_params(sigma, M, order)


def edgeworth_cdf(t, sigma, M, *, order=2):
    """Edgeworth approximation of P(U <= t) [D] (not a bound).

    With S = U/sqrt(v) (standardised), skewness g = g_1/sqrt(M), excess kurtosis k = k_1/M,
    g_1 = (q + 2) sqrt(q - 1), k_1 = q^4 + 2q^3 + 3q^2 - 6 (lognormal, q = e^{1/sigma^2}):

    .. math::

        P(S \\le x) \\approx \\Phi(x) - \\phi(x)\\Big[\\frac{g}{6} He_2(x)
            + \\frac{k}{24} He_3(x) + \\frac{g^2}{72} He_5(x)\\Big],

    ``order=1`` keeps only the g term (error O(1/M)), ``order=2`` all (error O(M^{-3/2})).
    """
    t, M, ok, (w, c3, c4, c6) = _edgeworth_args(t, sigma, M, order)
    return nan_where_invalid(_ew_cdf(t / jnp.sqrt(w), c3, c4, c6), ok)


def edgeworth_partial_expectation(t, sigma, M, *, order=2):
    """Edgeworth approximation of Q(U <= t) = E_P[(1 + U/sqrt M) 1{U <= t}] [D] (not a bound).

    .. math::

        Q(U \\le t) \\approx F(x) + \\sqrt{v/M}\\,E[S 1\\{S \\le x\\}],\\quad x = t/\\sqrt v,

        E[S 1\\{S \\le x\\}] \\approx -\\phi(x)\\Big[1 + \\frac g6 x^3 + \\frac k{24}(x^4 - 2x^2 - 1)
            + \\frac{g^2}{72}(x^6 - 9x^4 + 9x^2 + 3)\\Big]

    (y He_n(y) = He_{n+1}(y) + n He_{n-1}(y) and int_{-inf}^x phi He_n = -phi He_{n-1}).
    """
    t, M, ok, (w, c3, c4, c6) = _edgeworth_args(t, sigma, M, order)
    x = t / jnp.sqrt(w)
    val = _ew_cdf(x, c3, c4, c6) + jnp.sqrt(w / M) * _ew_first_moment(x, c3, c4, c6)
    return nan_where_invalid(val, ok)


_GRID_HALF_WIDTH = 12.0


def _rearranged_interp(a_query, a_pts, f_pts):
    """Monotone rearrangement (sort a ascending, f descending) + linear interpolation + clip.

    Sorting is the monotone rearrangement (Chernozhukov, Fernandez-Val, Galichon 2010): it leaves
    a monotone curve unchanged and never increases the L^p distance to a monotone target.
    Anchors (0, 1) and (1, 0) are valid for these mutually absolutely continuous pairs.
    """
    a_pts = jnp.concatenate([jnp.array([0.0, 1.0]), jnp.clip(a_pts, 0.0, 1.0)])
    f_pts = jnp.concatenate([jnp.array([1.0, 0.0]), jnp.clip(f_pts, 0.0, 1.0)])
    a_s = jnp.sort(a_pts)
    f_s = jnp.sort(f_pts)[::-1]
    f = jnp.interp(a_query, a_s, f_s)
    return jnp.clip(f, 0.0, 1.0 - a_query)


def _points_u(sigma, M, order, num_points):
    w, c3, c4, c6 = _u_std_params(sigma, M, order)
    shift = jnp.sqrt(w / M)
    x = jnp.linspace(-_GRID_HALF_WIDTH, _GRID_HALF_WIDTH + shift, num_points)
    a_pts = _ew_sf(x, c3, c4, c6)
    f_pts = _ew_cdf(x, c3, c4, c6) + shift * _ew_first_moment(x, c3, c4, c6)
    return a_pts, f_pts


def _lambda_params(sigma, M, E, order):
    cp, cq = _loss_cumulants(sigma, M)
    out = []
    for c in (cp, cq):
        k1, k2, k3, k4 = E * c[0], E * c[1], E * c[2], E * c[3]
        sd = jnp.sqrt(k2)
        out.append((k1, sd) + _edgeworth_coeffs(k3 / sd**3, k4 / k2**2, order))
    return out


def _points_lambda(sigma, M, E, order, num_points):
    (mp, sp, p3, p4, p6), (mq, sq, q3, q4, q6) = _lambda_params(sigma, M, E, order)
    x = jnp.linspace(-_GRID_HALF_WIDTH, _GRID_HALF_WIDTH + (mq - mp) / sp, num_points)
    t = mp + sp * x
    a_pts = _ew_sf(x, p3, p4, p6)
    f_pts = _ew_cdf((t - mq) / sq, q3, q4, q6)
    return a_pts, f_pts


@functools.partial(jit, static_argnums=(4, 5))
def _tradeoff_edgeworth_one(a, sigma, M, E, order, num_points):
    au, fu = _points_u(sigma, M, order, num_points)
    al, fl = _points_lambda(sigma, M, E, order, num_points)
    one = E == 1.0
    return _rearranged_interp(a, jnp.where(one, au, al), jnp.where(one, fu, fl))


def tradeoff_edgeworth(a, sigma, M, E=1, *, order=2, num_points=8193):
    """Edgeworth approximation of the E-epoch trade-off function [R] -- **an approximation, not a
    bound** (it may lie on either side of the true curve; use it to see finite-M corrections to
    :func:`tradeoff_clt`, the exact accountant for guarantees).

    * E = 1: the Edgeworth law of U under P (:func:`edgeworth_cdf`) and its exact tilt to Q
      (:func:`edgeworth_partial_expectation`) give the curve parametrically,
      a(t) = P(U > t), f = Q(U <= t).
    * E > 1: the optimal statistic is Lambda = sum over epochs of log L_e.  Its cumulants under P
      and Q are E times the one-epoch loss cumulants (:func:`loss_cumulants`, a series in 1/M), and
      a one-/two-term Edgeworth expansion (``order``) of Lambda under each hypothesis gives
      a(t) = P(Lambda > t), f = Q(Lambda <= t).  Its expansion parameter is 1/sqrt(E M).

    The parametric points (``num_points`` on a static grid of standardised thresholds) are made a
    valid trade-off function: values clipped to [0, 1], monotone rearrangement (sort a ascending,
    f descending), anchors (0, 1) and (1, 0), linear interpolation in a, then clip to [0, 1 - a].
    The result is therefore in [0, 1 - a] and non-increasing in a; where the Edgeworth density is
    negative (far tails, small M) the clipping/rearrangement is what you see.
    """
    order = _check_order(order)
    num_points = check_static_int("num_points", num_points, 16)
    a, ok_a = _alpha(a)
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    E, ok_e = _epochs(E)
    ok = ok_a & ok_s & ok_m & ok_e
    if jnp.ndim(sigma) == 0 and jnp.ndim(M) == 0 and jnp.ndim(E) == 0:
        f = _tradeoff_edgeworth_one(a, sigma, M, E, order, num_points)
    else:
        one = jnp.vectorize(
            lambda a_, s_, m_, e_: _tradeoff_edgeworth_one(a_, s_, m_, e_, order, num_points)
        )
        f = one(a, sigma, M, E)
    return nan_where_invalid(f, ok)


@functools.partial(jit, static_argnums=(3,))
def _delta_gap_one(sigma, M, E, order):
    # E = 1: TV = F_P(0) - F_Q(0) = -sqrt(v/M) E[S 1{S <= 0}] = sqrt(v/(2 pi M)) [1 - c4 + 3 c6].
    w, c3, c4, c6 = _u_std_params(sigma, M, order)
    tv_u = jnp.sqrt(w / (2.0 * jnp.pi * M)) * (1.0 - c4 + 3.0 * c6)
    # E > 1: the densities of Lambda under P and Q cross at Lambda = 0.
    (mp, sp, p3, p4, p6), (mq, sq, q3, q4, q6) = _lambda_params(sigma, M, E, order)
    tv_l = _ew_cdf(-mp / sp, p3, p4, p6) - _ew_cdf(-mq / sq, q3, q4, q6)
    return jnp.clip(jnp.where(E == 1.0, tv_u, tv_l), 0.0, 1.0)


def delta_gap_edgeworth(sigma, M, E=1, *, order=2):
    """Edgeworth approximation of the tight gap sup_a(1 - a - f^{(x)E}(a)) = TV [R] (not a bound).

    E = 1 (closed form; the skewness term vanishes at the crossing point U = 0):

    .. math::

        \\mathrm{TV} \\approx \\sqrt{\\frac{v}{2\\pi M}}
            \\Big[1 + \\frac{g_1^2 - k_1}{24 M}\\Big]\\quad(\\text{order } 2),
        \\qquad \\sqrt{\\frac{v}{2\\pi M}}\\quad(\\text{order } 1).

    E > 1: P(Lambda <= 0) - Q(Lambda <= 0) from the Edgeworth laws of Lambda (see
    :func:`tradeoff_edgeworth`).  Clipped to [0, 1].
    """
    order = _check_order(order)
    sigma, ok_s = _sigma(sigma)
    M, ok_m = _rounds(M)
    E, ok_e = _epochs(E)
    f = jnp.vectorize(lambda s_, m_, e_: _delta_gap_one(s_, m_, e_, order))
    return nan_where_invalid(f(sigma, M, E), ok_s & ok_m & ok_e)


# --------------------------------------------------------------------------------------------
# Poisson subsampling comparison
# --------------------------------------------------------------------------------------------


def _poisson_args(sigma, p, T):
    sigma, ok_s = _sigma(sigma)
    p, ok_p = check("p", p, lo=0.0, hi=1.0)
    T, ok_t = check("T", T, lo=0.0)
    return sigma, p, T, ok_s & ok_p & ok_t


def mu_poisson_bu(sigma, p, T):
    """Bu-Dong-Long-Su CLT for Poisson-subsampled Gaussian [P]:
    :math:`\\mu_P = p\\sqrt{T(e^{1/\\sigma^2} - 1)}`."""
    sigma, p, T, ok = _poisson_args(sigma, p, T)
    return nan_where_invalid(_cf.poisson_clt_mu(sigma, p, T), ok)


def mu_poisson_drs(sigma, p, T):
    """Dong-Roth-Su CLT [P]:
    :math:`\\mu_U = \\sqrt2\\,p\\sqrt T\\sqrt{e^{1/\\sigma^2}\\Phi(1.5/\\sigma) + 3\\Phi(-0.5/\\sigma) - 2}`.
    """
    sigma, p, T, ok = _poisson_args(sigma, p, T)
    return nan_where_invalid(_cf.drs_clt_mu(sigma, p, T), ok)


def clt_ratio(sigma):
    """Ratio mu_U / mu_P of the two CLT parameters at equal p, T [R].

    .. math::  \\sqrt{2\\,\\frac{e^{1/\\sigma^2}\\Phi(1.5/\\sigma) + 3\\Phi(-0.5/\\sigma) - 2}
                              {e^{1/\\sigma^2} - 1}}

    1.3046 at sigma = 1, 1.1775 at sigma = 2, -> sqrt(2) as sigma -> 0, -> 1 as sigma -> inf
    ("shuffling is sqrt 2 closer to the diagonal in the low-noise limit").  The large-sigma end
    has cancellation (both numerator and denominator ~ 1/sigma^2): accurate to ~1e-16 sigma^2.
    """
    sigma, ok = _sigma(sigma)
    s = 1.0 / sigma
    # numerator and denominator divided by e^{s^2}: no overflow as sigma -> 0.
    num = ndtr(1.5 * s) + jnp.exp(-s * s) * (3.0 * ndtr(-0.5 * s) - 2.0)
    r = jnp.sqrt(2.0 * num / -jnp.expm1(-s * s))
    return nan_where_invalid(r, ok)
