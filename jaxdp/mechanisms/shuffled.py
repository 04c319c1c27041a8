r"""Exact single-epoch privacy-loss law of DP-SGD with random shuffling.

One epoch of DP-SGD with a fresh random permutation, after projecting on the differing direction,
is the test of

.. math::

    P = N(0, I_M), \qquad Q = \frac1M \sum_{j=1}^M N(e_j/\sigma, I_M),

with likelihood ratio :math:`L = dQ/dP = \frac1M\sum_j Y_j`, :math:`Y_j = e^{x_j/\sigma -
1/(2\sigma^2)}` i.i.d. lognormal under P, and privacy loss :math:`\ell = \log L`
(``docs/shuffle_exact.md``; spec ``shuffle.md`` section 1).  Everything follows from the law of
:math:`U = \sqrt M (L - 1)` under P and Q, whose characteristic functions are

.. math::

    \varphi^P_U(w) = \bigl(\varphi_Y(w/\sqrt M)\, e^{-iw/\sqrt M}\bigr)^M, \qquad
    \varphi^Q_U(w) = \varphi_{Y'}(w/\sqrt M)\,\varphi_Y(w/\sqrt M)^{M-1} e^{-iw\sqrt M},

valid for real :math:`M \ge 1` (the lognormal is infinitely divisible).  :math:`\varphi_Y` is
computed by a geometrically convergent trapezoid rule on a shifted contour, the laws by a damped,
zero-padded FFT on a grid adapted to :math:`(\sigma, M)` (static size, so the cost does not depend on
M), the far upper tail by the matched one-big-jump formula.  ``M == 1`` uses the closed form
(:math:`\ell` is Gaussian; the trade-off curve is :math:`G_{1/\sigma}`).

Public API
----------
* :class:`ShuffledGaussian` -- the mechanism (protocol of :mod:`jaxdp.mechanisms.base`).
* :func:`tradeoff` -- :math:`T(P, Q)(a)`; :func:`tradeoff_reverse` -- :math:`T(Q, P)(a)`.
* :func:`tv_gap` -- :math:`TV(P, Q) = \sup_a (1 - a - f(a)) = \tfrac12 E_P|L - 1|`.

Accuracy (measured against the independent mpmath reference of ``tests/shuffle/reference_law.py``,
see ``docs/shuffle_exact.md`` for the table): survival functions to about 1e-11 absolute with the
mechanism's default grid, trade-off values and gap to better than 1e-8 with the defaults of the
direct functions, inside the resolvable domain.  Where the grid cannot resolve the law (very small
sigma with small M, e.g. sigma < 0.5 and 1 < M < ~100) the result is NaN, never a plausible number.

References:
  M. van Dijk, M. B. Ertan, "Trade-off Functions for DP-SGD with Subsampling based on Random
  Shuffling: Tight Upper and Lower Bounds", arXiv:2605.06259.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr, ndtri

import jaxdp._config  # noqa: F401  (float64)
from jaxdp._config import jit
from jaxdp import closed_forms as _cf
from jaxdp import _validate
from jaxdp.mechanisms import _shuffled_gap as _gap
from jaxdp.mechanisms import _shuffled_law as _law
from jaxdp.mechanisms.base import DIRECTIONS, pytree_dataclass

from jaxdp.mechanisms._shuffled_law import ENVELOPE_TOL, SIGMA_MIN, curve_envelope, gap_envelope

__all__ = ["ShuffledGaussian", "tradeoff", "tradeoff_curves", "tradeoff_curve_ends", "tradeoff_ends", "tradeoff_ends_both_directions", "tradeoff_reverse", "tv_gap", "tv_gap_ends",
           "ENVELOPE_TOL", "SIGMA_MIN", "curve_envelope", "gap_envelope"]

_SIGMA_RANGE = dict(lo=0.0, lo_open=True)
_M_RANGE = dict(lo=1.0)


def _law_for(sigma, m, grid_size, upsample, quad_nodes, tail):
    return _law.grid_law(
        sigma, m, n_coarse=grid_size, upsample=upsample, tail=tail, nz=quad_nodes
    )


def _exact_m1(u_thr, s):
    """M == 1: ell = log Y ~ N(-s^2/2, s^2) under P and N(s^2/2, s^2) under Q; threshold on U = L - 1.

    Thresholds with L <= 0 (every law above) or L = +inf (every law below) are set exactly, with a
    finite stand-in fed to the log: otherwise reverse mode multiplies the zero cotangent of the
    untaken branch by an infinite derivative (0 * inf = NaN) even where this branch is not used.
    """
    lv = 1.0 + u_thr
    below = lv <= 0.0
    above = jnp.isposinf(lv)
    ell = jnp.log(jnp.where(below | above, 1.0, lv))
    zp = (ell + 0.5 * s * s) / s
    zq = (ell - 0.5 * s * s) / s
    out = ndtr(zp), ndtr(-zp), ndtr(zq), ndtr(-zq)
    return tuple(
        jnp.where(below, float(i % 2), jnp.where(above, float(1 - i % 2), v)) for i, v in enumerate(out)
    )


def _cdf_sf(sigma, m, u_thr, grid_size, upsample, quad_nodes, tail):
    """(P(U<=x), P(U>x), Q(U<=x), Q(U>x)) with the M == 1 closed form and the resolution check."""
    is_one = m == 1.0
    m_safe = jnp.where(is_one, 2.0, m)
    law = _law_for(sigma, m_safe, grid_size, upsample, quad_nodes, tail)
    return _cdf_sf_from_law(law, sigma, m, u_thr)


def _cdf_sf_from_law(law, sigma, m, u_thr):
    is_one = m == 1.0
    grid = _law.cdf_sf_at(law, u_thr)
    bad = ~law.resolved
    exact = _exact_m1(u_thr, 1.0 / sigma)
    return tuple(
        jnp.where(is_one, e, jnp.where(bad, jnp.nan, g)) for e, g in zip(exact, grid)
    )


# ------------------------------------------------------------------------- mechanism


@pytree_dataclass(static=("grid_size", "upsample", "quad_nodes"))
class ShuffledGaussian:
    r"""One epoch of DP-SGD with random shuffling (single differing example, M rounds).

    Args:
      noise_multiplier: sigma > 0 (designed and tested for [0.3, 50]).
      num_rounds: M >= 1, real-valued (tested for [1, 1e10]).
      grid_size: coarse FFT grid (static).  The internal table has ``grid_size * upsample / 2``
        cells; the characteristic function is evaluated ``grid_size / 2`` times.
      upsample: zero-padding factor of the FFT (static), sets the table spacing for interpolation.
      quad_nodes: trapezoid nodes for :math:`\varphi_Y` (static).

    Directions: ``"remove"``: (A, B) = (Q, P), loss :math:`\ell = \log dQ/dP`; ``"add"``:
    (A, B) = (P, Q), loss :math:`-\ell`.

    Examples:
      >>> mech = ShuffledGaussian(noise_multiplier=1.0, num_rounds=1000.0)
      >>> a_mass, b_mass = mech.privacy_loss_sf(jnp.array([0.0, 0.1]), "remove")
    """

    noise_multiplier: jax.Array
    num_rounds: jax.Array
    grid_size: int = 2**15
    upsample: int = 16
    quad_nodes: int = 640

    def __post_init__(self):
        if not _validate.is_traced(self.noise_multiplier):
            _validate.check("noise_multiplier", self.noise_multiplier, **_SIGMA_RANGE)
        if not _validate.is_traced(self.num_rounds):
            _validate.check("num_rounds", self.num_rounds, **_M_RANGE)

    def _params(self):
        sigma, ok_s = _validate.check("noise_multiplier", self.noise_multiplier, **_SIGMA_RANGE)
        m, ok_m = _validate.check("num_rounds", self.num_rounds, **_M_RANGE)
        return sigma, m, ok_s & ok_m

    def prepare(self):
        """The same mechanism with its law tabulated once (the PLD engine calls this first, so the
        law is built once and shared by every survival-function evaluation and both directions)."""
        sigma, m, _ = self._params()
        m_safe = jnp.where(m == 1.0, 2.0, m)
        law = _law_for(sigma, m_safe, self.grid_size, self.upsample, self.quad_nodes, 1e-13)
        return PreparedShuffledGaussian(self.noise_multiplier, self.num_rounds, law, self.grid_size, self.upsample, self.quad_nodes)

    def _cdf_sf(self, sigma, m, u):
        return _cdf_sf(sigma, m, u, self.grid_size, self.upsample, self.quad_nodes, 1e-13)

    def gdp_mu(self):
        # post-processing: knowing the round leaves the plain Gaussian, so f >= G_{1/sigma} both ways
        return 1.0 / jnp.asarray(self.noise_multiplier, jnp.float64)

    def privacy_loss_sf(self, x, direction: str):
        """(A(ell_d > x), B(ell_d > x)) for an array x of loss values (x = +inf -> 0)."""
        _validate.check_choice("direction", direction, DIRECTIONS)
        return _privacy_loss_sf(self, jnp.asarray(x, dtype=jnp.float64), direction)

    def _privacy_loss_sf(self, x, direction):
        sigma, m, ok = self._params()
        sqrt_m = jnp.sqrt(m)
        # |x| > 600 (incl. +-inf): the masses there are 0 or 1 in float64 (+-inf are set exactly
        # below); the clamp keeps sqrt(M) expm1(x) finite, so no 0 * inf = NaN enters reverse mode.
        xc = jnp.clip(x, -600.0, 600.0)
        if direction == "remove":
            u = sqrt_m * jnp.expm1(xc)
            _, sp, _, sq = self._cdf_sf(sigma, m, u)
            a, b = sq, sp
            a = jnp.where(jnp.isposinf(x), 0.0, a)
            b = jnp.where(jnp.isposinf(x), 0.0, b)
        else:
            # -ell > x  <=>  L < e^{-x}; L has no atom, so < and <= agree.
            u = sqrt_m * jnp.expm1(-xc)
            cp, _, cq, _ = self._cdf_sf(sigma, m, u)
            a, b = cp, cq
            a = jnp.where(jnp.isposinf(x), 0.0, jnp.where(jnp.isneginf(x), 1.0, a))
            b = jnp.where(jnp.isposinf(x), 0.0, jnp.where(jnp.isneginf(x), 1.0, b))
        return _validate.nan_where_invalid(a, ok), _validate.nan_where_invalid(b, ok)

    def privacy_loss_range(self, direction: str, tail: float):
        """(lo, hi) with A-mass of the loss below lo and above hi about <= tail."""
        _validate.check_choice("direction", direction, DIRECTIONS)
        _validate.check("tail", tail, lo=0.0, hi=0.5, lo_open=True)
        sigma, m, ok = self._params()
        s = 1.0 / sigma
        sqrt_m = jnp.sqrt(m)
        v = jnp.expm1(s * s)
        tail = jnp.asarray(tail, jnp.float64)
        z = -ndtri(tail / 4.0)
        # Upper end of L: one big (tilted or untilted) summand, plus the bulk.
        y_hi = jnp.maximum(jnp.exp(0.5 * s * s + s * z), jnp.exp(-0.5 * s * s + s * -ndtri(tail / (4.0 * m))))
        l_hi = 1.0 + y_hi / m + z * jnp.sqrt(v / m) + v / m
        # Lower end of L: sub-Gaussian lower tail of a sum of nonnegative terms (variance proxy
        # e^{s^2}/M) and L >= Y_max / M >= (a single summand's lower quantile) / M.
        l_lo = jnp.maximum(1.0 - jnp.sqrt(2.0 * jnp.log(4.0 / tail) * jnp.exp(s * s) / m), 0.0)
        l_lo = jnp.maximum(l_lo, jnp.exp(-0.5 * s * s + s * ndtri(tail / 4.0)) / jnp.maximum(m, 1.0))
        ell_lo, ell_hi = jnp.log(l_lo), jnp.log(l_hi)
        if direction == "remove":
            lo, hi = ell_lo, ell_hi
        else:
            lo, hi = -ell_hi, -ell_lo
        return _validate.nan_where_invalid(lo, ok), _validate.nan_where_invalid(hi, ok)


# one compiled program per mechanism configuration and direction (an eager call otherwise tabulated
# the law op by op, re-tracing its loops each time: ~1.5 s a call after a ~14 s first one)
@partial(jit, static_argnames=("direction",))
def _privacy_loss_sf(mech, x, direction):
    return mech._privacy_loss_sf(x, direction)


@pytree_dataclass(static=("grid_size", "upsample", "quad_nodes"))
class PreparedShuffledGaussian(ShuffledGaussian):
    """:class:`ShuffledGaussian` with its tabulated law (see :meth:`ShuffledGaussian.prepare`)."""

    law: object = None

    def __init__(self, noise_multiplier, num_rounds, law, grid_size=2**15, upsample=16, quad_nodes=640):
        object.__setattr__(self, "noise_multiplier", noise_multiplier)
        object.__setattr__(self, "num_rounds", num_rounds)
        object.__setattr__(self, "law", law)
        object.__setattr__(self, "grid_size", grid_size)
        object.__setattr__(self, "upsample", upsample)
        object.__setattr__(self, "quad_nodes", quad_nodes)

    def prepare(self):
        return self

    def _cdf_sf(self, sigma, m, u):
        return _cdf_sf_from_law(self.law, sigma, m, u)


# ------------------------------------------------------------------------- direct functions


# Fourier tables whose one-big-jump hand-over carries more Q-mass than this give f errors above
# ~1e-6 beyond the table (measured, docs/shuffle_exact.md): NaN there rather than a wrong number.
_HANDOVER_MASS = 3e-3


@partial(jit, static_argnames=("reverse", "grid_size", "upsample", "quad_nodes"))
def _tradeoff_impl(a, sigma, m, reverse, grid_size, upsample, quad_nodes):
    """(lower, upper) of the single-epoch curve from the tabulated law."""
    return _tradeoff_from_law(_curve_law(sigma, m, grid_size, upsample, quad_nodes), a, sigma, m, reverse)


@partial(jit, static_argnames=("grid_size", "upsample", "quad_nodes"))
def _both_directions_impl(a, sigma, m, grid_size, upsample, quad_nodes):
    law = _curve_law(sigma, m, grid_size, upsample, quad_nodes)
    return _tradeoff_from_law(law, a, sigma, m, False), _tradeoff_from_law(law, a, sigma, m, True)


def _curve_law(sigma, m, grid_size, upsample, quad_nodes):
    """The law the curves read (M = 1 is answered in closed form: a stand-in M = 2 law is tabulated)."""
    return _law_for(sigma, jnp.where(m == 1.0, 2.0, m), grid_size, upsample, quad_nodes, 1e-10)


def _tradeoff_from_law(law, a, sigma, m, reverse):
    is_one = m == 1.0
    m_safe = jnp.where(is_one, 2.0, m)
    s = 1.0 / sigma
    sf_p_end = law.sf_p[law.n_used - 1]
    # the table knows its cdfs to err absolutely (log-axis tables: 10x their Chebyshev diagnostic)
    err = jnp.where(law.log_axis, jnp.maximum(10.0 * law.diag, _law.CDF_ERR), _law.CDF_ERR)
    if not reverse:
        x = _law.invert_sf(law, a, "p_sf")
        # a below the table: invert the matched jump tail M r Pbar_Y(1 + sqrt(M) x) = a.
        y = jnp.exp(-0.5 * s * s - s * ndtri(jnp.clip(a / (m_safe * law.ratio_p), 1e-300, 0.5)))
        x = jnp.where(a < sf_p_end, (y - 1.0) / law.sqrt_m, x)
        _, _, cq, _ = _law.cdf_sf_at(law, x)
        allow = _law.curve_allowance(1.0 + x / law.sqrt_m, err, False)
        f_lo = jnp.where(a >= law.sf_p[0], 0.0, cq - allow)
        # below the table's first threshold x0: f = Q(U <= x) <= Q(U <= x0)
        f_up = jnp.where(a >= law.sf_p[0], law.cdf_q[0] + err, cq + allow)
        # M == 1: G_{1/sigma}(a) = Phi(Phi^{-1}(1 - a) - 1/sigma).
        exact = _cf.gaussian_curve(a, s)
        beyond = a < sf_p_end
    else:
        x = _law.invert_sf(law, a, "q_cdf")
        _, sp, _, _ = _law.cdf_sf_at(law, x)
        # The table knows the Q-cdf only to err absolutely, so its lower tail (a of the order of
        # err) gave f far above the truth (sigma = 0.3, M = 2, a = 1e-10: 0.9999998 > the linear
        # test's 0.9999689).  Deducting the propagated error keeps f a lower bound; where it leaves
        # nothing the closed-form floor (knowing the round: G_{1/sigma}) takes over in the guard.
        allow = _law.curve_allowance(1.0 + x / law.sqrt_m, err, True)
        # below the first table entry nothing is known but the envelope
        low = a <= law.cdf_q[0]
        top = a >= law.cdf_q[law.n_used - 1]
        f_lo = jnp.where(low, -1.0, jnp.where(top, 0.0, sp - allow))
        f_up = jnp.where(low, 2.0, jnp.where(top, law.sf_p[law.n_used - 1] + err, sp + allow))
        exact = _cf.gaussian_curve(a, s)  # G_mu is symmetric
        beyond = a > law.cdf_q[law.n_used - 1]
    weak_tail = beyond & ~law.log_axis & (law.sf_q[law.n_used - 1] > _HANDOVER_MASS)
    bad = ~law.resolved | weak_tail
    f_lo, f_up = _law.guard_curve_ends(a, f_lo, f_up, s, m_safe)
    return jnp.where(is_one, exact, jnp.where(bad, jnp.nan, f_lo)), jnp.where(is_one, exact, jnp.where(bad, jnp.nan, f_up))


def _checked_curve(a, sigma, M, reverse, grid_size, upsample, quad_nodes):
    """(lower, upper) ends of the single-epoch curve, NaN where invalid."""
    a, ok_a = _validate.check("a", a, lo=0.0, hi=1.0)
    sigma, ok_s = _validate.check("sigma", sigma, **_SIGMA_RANGE)
    m, ok_m = _validate.check("M", M, **_M_RANGE)
    if not (jnp.ndim(sigma) == 0 and jnp.ndim(m) == 0):
        a, sigma, m = jnp.broadcast_arrays(a, sigma, m)
    lo, up = _vmapped(a, sigma, m, reverse, grid_size, upsample, quad_nodes)
    ok = ok_a & ok_s & ok_m
    return _validate.nan_where_invalid(lo, ok), _validate.nan_where_invalid(up, ok)


def tradeoff(a, sigma, M, *, grid_size: int = 2**11, upsample: int = 16, quad_nodes: int = 320):
    r"""Exact single-epoch trade-off :math:`T(P, Q)(a)` of shuffled DP-SGD (its certified lower end).

    :math:`a(t) = P(L > t)`, :math:`f(a(t)) = Q(L \le t)` (Neyman-Pearson: the tests threshold L).
    ``a``, ``sigma`` and ``M`` broadcast; all are traced (jit / vmap / grad).  The computed value
    minus its propagated cdf error (:func:`tradeoff_ends`); error measured <= 1e-8 absolute with the
    defaults (``docs/shuffle_exact.md``); NaN where the law cannot be resolved on the grid or the
    input is invalid.
    """
    return _checked_curve(a, sigma, M, False, grid_size, upsample, quad_nodes)[0]


def tradeoff_reverse(a, sigma, M, *, grid_size: int = 2**11, upsample: int = 16, quad_nodes: int = 320):
    r"""Reverse trade-off :math:`T(Q, P)(a)`: :math:`a(t) = Q(L \le t)`, :math:`f = P(L > t)` (lower end)."""
    return _checked_curve(a, sigma, M, True, grid_size, upsample, quad_nodes)[0]


def tradeoff_ends(a, sigma, M, *, reverse: bool = False, grid_size: int = 2**11, upsample: int = 16, quad_nodes: int = 320):
    r"""``(lower, upper)`` ends of the single-epoch curve: the computed value -/+ its propagated cdf
    error err (1 + |slope|) (slope -t forward, -1/t reverse at the threshold t; err = 1e-10, or 10x
    the Chebyshev diagnostic of log-axis tables), clipped into the closed-form envelope.
    :func:`tradeoff` / :func:`tradeoff_reverse` return the lower end."""
    return _checked_curve(a, sigma, M, bool(reverse), grid_size, upsample, quad_nodes)


def tradeoff_ends_both_directions(a, sigma, M, *, grid_size: int = 2**11, upsample: int = 16, quad_nodes: int = 320):
    """``((lower, upper), (lower_reverse, upper_reverse))``: :func:`tradeoff_ends` of both directions
    at one ``(sigma, M)`` (scalars) from one tabulated law (each of the two calls tabulates its own)."""
    if np.ndim(sigma) != 0 or np.ndim(M) != 0:
        raise ValueError(f"sigma and M must be scalars here, got shapes {np.shape(sigma)} and {np.shape(M)}")
    a, ok_a = _validate.check("a", a, lo=0.0, hi=1.0)
    sigma, ok_s = _validate.check("sigma", sigma, **_SIGMA_RANGE)
    m, ok_m = _validate.check("M", M, **_M_RANGE)
    ok = ok_a & ok_s & ok_m
    ends = _both_directions_impl(a, sigma, m, grid_size, upsample, quad_nodes)
    return tuple(tuple(_validate.nan_where_invalid(x, ok) for x in pair) for pair in ends)


def _vmapped(a, sigma, m, reverse, grid_size, upsample, quad_nodes):
    if sigma.ndim == 0 and m.ndim == 0:  # one law, many a: compute the law once
        return _tradeoff_impl(a, sigma, m, reverse, grid_size, upsample, quad_nodes)
    shape = a.shape
    fa, fs, fm = a.reshape(-1), sigma.reshape(-1), m.reshape(-1)
    fn = jax.vmap(lambda aa, ss, mm: _tradeoff_impl(aa, ss, mm, reverse, grid_size, upsample, quad_nodes))
    lo, up = fn(fa, fs, fm)
    return lo.reshape(shape), up.reshape(shape)


@partial(jit, static_argnames=("reverse", "quad_nodes", "with_gap"))
def _line_curves(a, sigma, m, reverse, quad_nodes, with_gap=False):
    return jax.vmap(lambda s_, m_: _gap.line_curve(a, s_, m_, nz=quad_nodes, reverse=reverse, with_gap=with_gap))(sigma, m)


@partial(jit, static_argnames=("reverse", "grid_size", "upsample", "quad_nodes"))
def _table_curves(a, sigma, m, reverse, grid_size, upsample, quad_nodes):
    return jax.vmap(lambda s_, m_: _tradeoff_impl(a, s_, m_, reverse, grid_size, upsample, quad_nodes))(sigma, m)


def _bucket(n):
    """Padded size of a fallback group (powers of 2 from 8: few distinct compilations)."""
    return max(8, 1 << (int(n) - 1).bit_length())


def tradeoff_curves(a, sigma, M, *, reverse: bool = False, return_gap: bool = False, grid_size: int = 2**11, upsample: int = 16, quad_nodes: int = 320):
    r"""Single-epoch curves of many (sigma, M) pairs at the same type I errors: shape ``params + a``.

    ``sigma`` and ``M`` broadcast to the parameter shape; ``a`` (any shape) is shared by every pair.
    With concrete (not traced) inputs the pairs are **grouped by method**: every curve is first
    computed from one damped Fourier line (:func:`_shuffled_gap.line_curve`: ~100 transform values
    per pair, the threshold of each ``a`` by bisection and Newton on the line's cdf), and only the
    pairs whose line checks fail -- spread-out laws (small M and sigma, the Laplace region), ``a``
    within 1e-8 of 0 or 1, M = 1 -- are recomputed from the tabulated law (:func:`tradeoff`).  Both
    routes agree to <= 1e-9 where both apply (``tests/shuffle/test_exact_law.py``).  Under
    ``jit`` / ``vmap`` / ``grad`` (traced inputs) every pair uses the tabulated law.  The curves
    are the lower ends (:func:`tradeoff_curve_ends` gives both).

    ``return_gap``: also the gaps TV(P, Q) of the pairs, shape ``params`` (from the same line nodes
    where the curve comes from the line, else :func:`tv_gap`), returned as ``(f, gap)``.
    """
    lo, _, gap = _curves(a, sigma, M, reverse, return_gap, grid_size, upsample, quad_nodes)
    return (lo, gap) if return_gap else lo


def tradeoff_curve_ends(a, sigma, M, *, reverse: bool = False, grid_size: int = 2**11, upsample: int = 16, quad_nodes: int = 320):
    """``(lower, upper)`` ends of :func:`tradeoff_curves` (see :func:`tradeoff_ends` for the allowance)."""
    lo, up, _ = _curves(a, sigma, M, reverse, False, grid_size, upsample, quad_nodes)
    return lo, up


def _curves(a, sigma, M, reverse, return_gap, grid_size, upsample, quad_nodes):
    a, ok_a = _validate.check("a", a, lo=0.0, hi=1.0)
    sigma, ok_s = _validate.check("sigma", sigma, **_SIGMA_RANGE)
    m, ok_m = _validate.check("M", M, **_M_RANGE)
    sigma, m, ok = jnp.broadcast_arrays(sigma, m, ok_s & ok_m)
    pshape, ashape = sigma.shape, a.shape
    s_f = jnp.where(ok, sigma, 1.0).reshape(-1)
    m_f = jnp.where(ok, m, 2.0).reshape(-1)
    a_f = a.reshape(-1)
    traced = any(_validate.is_traced(x) for x in (a, sigma, m))
    gap = None
    if traced:
        lo, up = _table_curves(a_f, s_f, m_f, bool(reverse), grid_size, upsample, quad_nodes)
        if return_gap:
            gap = tv_gap(s_f, m_f, quad_nodes=quad_nodes)
    else:
        out = _line_curves(a_f, s_f, m_f, bool(reverse), quad_nodes, bool(return_gap))
        lo, up, good = out[0], out[1], out[-1]
        gap = out[2] if return_gap else None
        good = np.asarray(good) & (np.asarray(m_f) != 1.0)
        redo = np.flatnonzero(~good)
        if redo.size:
            k = _bucket(redo.size)
            idx = np.concatenate([redo, np.full(k - redo.size, redo[0])])
            lt, ut = _table_curves(a_f, s_f[idx], m_f[idx], bool(reverse), grid_size, upsample, quad_nodes)
            lo, up = lo.at[redo].set(lt[: redo.size]), up.at[redo].set(ut[: redo.size])
            if return_gap:
                gap = gap.at[redo].set(tv_gap(s_f[idx], m_f[idx], quad_nodes=quad_nodes)[: redo.size])
    okb = ok.reshape(pshape + (1,) * len(ashape)) & ok_a
    lo = _validate.nan_where_invalid(lo.reshape(pshape + ashape), okb)
    up = _validate.nan_where_invalid(up.reshape(pshape + ashape), okb)
    if return_gap:
        gap = _validate.nan_where_invalid(gap.reshape(pshape), ok)
    return lo, up, gap


def tv_gap_ends(sigma, M, **kwargs):
    """``(lower, upper)`` ends of the single-epoch gap: :func:`tv_gap` -/+ ``ENVELOPE_TOL`` (1e-8), the
    claimed accuracy of single-epoch values (the contour and the table gaps differ by up to
    2.7e-9, ``docs/shuffle_exact.md``), clipped to [0, 1].  ``kwargs`` go to :func:`tv_gap`."""
    g = tv_gap(sigma, M, **kwargs)
    return jnp.clip(g - ENVELOPE_TOL, 0.0, 1.0), jnp.clip(g + ENVELOPE_TOL, 0.0, 1.0)


@partial(jit, static_argnames=("grid_size", "upsample", "quad_nodes"))
def _tv_impl(sigma, m, grid_size, upsample, quad_nodes):
    cp, sp, cq, sq = _cdf_sf(sigma, m, jnp.zeros(()), grid_size, upsample, quad_nodes, 1e-10)
    return jnp.where(m == 1.0, sq - sp, _law.guard_gap(sq - sp, 1.0 / sigma, jnp.where(m == 1.0, 2.0, m)))


@partial(jit, static_argnames=("quad_nodes",))
def _tv_contour_impl(sigma, m, quad_nodes):
    is_one = m == 1.0
    m_safe = jnp.where(is_one, 2.0, m)
    g = _law.guard_gap(_gap.tv_gap(sigma, m_safe, nz=quad_nodes), 1.0 / sigma, m_safe)
    return jnp.where(is_one, 2.0 * ndtr(0.5 / sigma) - 1.0, g)  # M = 1: TV of G_{1/sigma}


def tv_gap(sigma, M, *, method: str = "contour", grid_size: int = 2**11, upsample: int = 16, quad_nodes: int = 320):
    r"""Single-epoch gap :math:`TV(P, Q) = \sup_a (1 - a - f(a)) = Q(L > 1) - P(L > 1)
    = \tfrac12 E_P|L - 1|` (the tight delta of :math:`f \ge 1 - a - \delta`).

    ``method="contour"`` (default): one damped Fourier line integral (~100 transform values), or a
    Talbot inversion for spread-out laws (``_shuffled_gap``), ~10x cheaper than tabulating the law;
    ``method="table"``: read off the tabulated law used by :func:`tradeoff` (``grid_size``,
    ``upsample`` apply).  The two agree to <= 1e-7 over sigma in [0.3, 50], M in [2, 1e10]
    (``tests/shuffle/test_exact_law.py``).  NaN where the law is not resolved.
    """
    if method not in ("contour", "table"):
        raise ValueError(f"method must be 'contour' or 'table', got {method!r}")
    sigma, ok_s = _validate.check("sigma", sigma, **_SIGMA_RANGE)
    m, ok_m = _validate.check("M", M, **_M_RANGE)
    sigma, m = jnp.broadcast_arrays(sigma, m)
    shape = sigma.shape
    if method == "contour":
        fn = lambda s, mm: _tv_contour_impl(s, mm, quad_nodes)  # noqa: E731
    else:
        fn = lambda s, mm: _tv_impl(s, mm, grid_size, upsample, quad_nodes)  # noqa: E731
    out = jax.vmap(fn)(sigma.reshape(-1), m.reshape(-1)).reshape(shape)
    return _validate.nan_where_invalid(out, ok_s & ok_m)
