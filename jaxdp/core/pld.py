r"""Certified privacy-loss distributions (PLDs) on a static grid, composed by FFT.

The one representation every accountant in jaxdp feeds.  A mechanism (see
:mod:`jaxdp.mechanisms.base`) gives the survival functions of its privacy loss
:math:`L = \log dA/dB` under both laws of its dominating pair; this module

1. **discretises** each mechanism by *connect-the-dots* (CTD; Doroshenko, Ghazi, Kamath, Kumar,
   Manurangsi, PETS 2022): the mass of every bin :math:`(l_j, l_{j+1}]` of the loss lattice
   :math:`l_j = j h` is split between its two end points so that both its A-mass and its B-mass are
   preserved.  Splitting an atom between the end points of its bin is a *spreading* of the
   likelihood ratio, so the discrete pair dominates the true one (its hockey-stick curve is the
   chord interpolation of the true curve in :math:`e^\varepsilon`, equal at grid points and above
   in between): every delta computed from it, after any number of compositions, is an **upper
   bound**.  Mass below the grid goes to the lowest point, mass above to :math:`+\infty`.
2. **composes** by FFT: the characteristic function of the lattice pmf is raised to the integer
   power k by binary exponentiation (cost independent of k), on a window placed by Chernoff bounds.
   The composed law outside the window (which the circular FFT aliases into it) is bounded by the
   rigorous Chernoff bound :math:`P(S \ge x) \le \min_t e^{-tx + k K(t)}` computed from the
   discretised law itself, and added on the pessimistic side.
3. **brackets** every number.  The same CTD pmf also gives a *lower* bound: CTD is a randomised
   rounding :math:`\tilde Y` of the true loss Y that preserves :math:`E[e^{-Y}]`; given Y the
   rounding error lies in an interval of width h with conditional mean in :math:`[0, \mu_h]`,
   :math:`\mu_h \approx h^2/8`.  Hoeffding's inequality gives
   :math:`P(\sum_i (\tilde Y_i - Y_i) > k\mu_h + t) \le e^{-2t^2/(k h^2)}`, hence
   :math:`\delta(\varepsilon) \ge \tilde\delta(\varepsilon + k\mu_h + t) - e^{-2t^2/(kh^2)} - k\,\tau`,
   with :math:`\tau` the mechanism's mass outside the grid.  The bracket therefore shrinks like
   :math:`h\sqrt{k}`, not :math:`hk` as rounding down would; for few steps the deterministic
   bound (each error is at most h, so the sum moves by at most kh) is used when it is smaller.
   Every failure level :math:`\eta` gives a valid bound; eps(delta) takes the best of five levels
   around ``hoeffding_eta * delta``.
4. **two stages** (``Grid.stages``; by default at ``size >= 2**18``, for a single ``(mechanism,
   count)``): T = k_2 k_1 + r steps are composed as k_1 (and k_1 + 1) steps on a fine lattice h_1
   of ``Grid.fine_factor * size`` points (default 2x) sized for the k_1-fold window, whose results
   are CTD-discretised again, atom by atom, onto a coarse lattice h_2 sized for the T-fold window
   and raised to the powers k_2 - r and r.  Upper bound: each stage-1 result is turned into a
   measure that dominates the exact CTD composition (clipped at 0, its Chernoff outside-mass and
   +inf mass put at +inf), and CTD of a discrete pair is again a spreading.  Lower bound: all
   T + k_2 rounding errors form one martingale-difference sequence, so Azuma-Hoeffding gives the
   shift ``T mu_{h_1} + k_2 mu_{h_2} + sqrt((T h_1^2 + k_2 h_2^2) log(1/eta) / 2)`` (or
   ``T h_1 + k_2 h_2``), and the stage-1 excess
   mass (at most twice its outside bound per block) is subtracted.  With k_1 ~ sqrt(T) the shift
   shrinks like T^{1/4} instead of T^{1/2} when the window (not the single-step range) sets h.
   The split is chosen at run time (the largest k_1 whose predicted shift is within 10% of the
   best: fewer blocks carry less float allowance); one stage is kept when it is not worse.  See
   :func:`_compose_two_stage`.

The placement levels ``tail`` and ``window_tail`` may be overridden per call (traced): the
eps(delta) entry points use levels relative to delta (e.g. the Poisson accountant: 1e-3 delta / T
per step, 1e-7 delta for the window), which are sound for any value (every mass left out is
accounted) and narrow the lattice.

Float64 rounding is not part of the proof: an allowance of ``n * 2^-52`` for an FFT of length n
(about 6e-11 at 2^18 cells; 1.2e-10 for a one-stage result on the default grid's 2^19-point fine
stage) is added to every delta on the safe side, which covers the FFT noise we measure
(the stage-1 laws of a two-stage composition, which enter k_2 times, get ``n * 2^-52 *
||pmf||_2`` instead, 10x the per-cell noise we measure there);
survival functions of closed-form mechanisms are taken as exact (numerical laws state their own
error).

Shapes are fixed by :class:`Grid` (static); every number (sigma, q, k, ...) is traced, so
``jit``/``vmap``/``grad`` work.  The lattice spacing is a continuous function of the parameters
(the Chernoff window), treated as a constant by autodiff; lattice offsets are integers, whose jumps
only move mass at the 1e-17 level, so every value is continuous in the parameters and gradients
(through the survival functions at the lattice points) match finite differences to ~1e-5 relative.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence, Tuple

import jax
import jax.numpy as jnp
from jax import lax

from .. import _config  # noqa: F401  (float64)
from .._pytree import pytree_dataclass
from .piecewise import PiecewiseLinear


@dataclasses.dataclass(frozen=True)
class Grid:
    """Static discretisation settings (they decide array shapes, so they are not traced).

    size: number of lattice points of each single-step pmf and of the composed window (FFT length).
    tail: target mass outside the single-step grid, per step (placement only; always accounted).
    window_tail: target mass of the composed law outside the output window (Chernoff level).
    hoeffding_eta: failure probability used for the lower (optimistic) bound, relative to the
        delta being bounded when converting eps(delta) (there the best of ``eta * {0.01, 0.1, 1,
        10, 100}`` is taken: each gives a valid bound); absolute for delta(eps) and curves.
    differentiate_lattice: let autodiff see how the lattice moves with the parameters (through the
        mechanism's range hint), so gradients are those of the function computed (they then match
        finite differences); switch off for mechanisms whose range hint is not differentiable.
    stages: composition of a single ``(mechanism, count)`` component in one FFT power (1) or in two
        (2: ``k1`` steps on a fine lattice, that law discretised again onto the coarse lattice of
        the full window and raised to the power ``count // k1``; see :func:`compose`).  With 2 the
        split is chosen at run time from the Chernoff windows, and one stage is used whenever the
        two-stage bracket would not be narrower (e.g. few steps).  ``"auto"`` (default): 2 when
        ``size >= 2**18`` (about 1.5x the cost, brackets up to 10x narrower for 1e5 steps),
        else 1 (small grids keep their cost).  Several components always use one stage.
    coarse_size: points of the coarse single-step law that places the Chernoff windows (``"auto"``:
        see :meth:`coarse_points`); only placement depends on it, every bound is recomputed on the
        real lattice.
    fine_factor: two-stage composition only: the fine (first) stage uses ``fine_factor * size``
        lattice points (default 2), and so does the returned PLD (a two-stage result, which lives on
        ``size`` coarse points, is padded with zeros).  The fine spacing ``h_1`` sets the lower
        bound's shift (``T h_1^2`` dominates it), so 2 halves the bracket width of long compositions
        (e.g. 1.38% -> 0.7% at q = 1e-4, T = 1e5, sigma = 0.5, delta = 1e-5) for about 1.5x the cost.
    """

    size: int = 2**18
    tail: float = 1e-20
    window_tail: float = 1e-17
    hoeffding_eta: float = 1e-3
    hoeffding_eta_abs: float = 1e-14
    num_chernoff: int = 192
    coarse_size: object = "auto"
    differentiate_lattice: bool = True
    stages: object = "auto"
    fine_factor: int = 2

    def coarse_points(self) -> int:
        """Points of the coarse single-step law that only places windows (no certificate rests on it).

        ``"auto"``: the largest power of two <= size / 8, clipped to [2048, 8192] (8192 from 2^16 on;
        smaller grids keep it in proportion: at 3 * 2^13 cells 2048 points move eps by < 5e-7
        relative and save 20% of a Poisson eps(delta) sweep).
        """
        if self.coarse_size == "auto":
            return int(min(8192, max(2048, 1 << max(int(self.size // 8).bit_length() - 1, 0))))
        if not isinstance(self.coarse_size, int) or self.coarse_size < 16:
            raise ValueError(f"Grid.coarse_size must be 'auto' or an integer >= 16, got {self.coarse_size!r}")
        return int(self.coarse_size)

    def fine_points(self) -> int:
        """Lattice points of the fine stage of a two-stage composition (``fine_factor * size``)."""
        if not isinstance(self.fine_factor, int) or self.fine_factor < 1:
            raise ValueError(f"Grid.fine_factor must be an integer >= 1, got {self.fine_factor!r}")
        return int(self.fine_factor * self.size)

    def num_stages(self) -> int:
        if self.stages == "auto":
            return 2 if self.size >= 2**18 else 1
        if self.stages not in (1, 2):
            raise ValueError(f"Grid.stages must be 1, 2 or 'auto', got {self.stages!r}")
        return int(self.stages)


DEFAULT_GRID = Grid()


def lower_bound_delta(delta):
    """The delta at which eps lower bounds are evaluated: ``delta (1 + 1e-9)`` (``delta`` itself when
    that reaches 1).  eps(delta) is non-increasing, so a lower bound there is a lower bound at
    ``delta``; the margin keeps lower ends from flipping across a jump of eps(delta) that float64
    cannot resolve (e.g. delta = q TV of one subsampled step, where eps jumps from ~5400 to 0)."""
    up = delta * (1.0 + 1e-9)
    return jnp.where(up < 1.0, up, delta)


@pytree_dataclass
class Bracket:
    """A certified value: the truth lies in ``[lower, upper]``; ``value`` is the pessimistic end."""

    lower: jax.Array
    upper: jax.Array
    value: jax.Array


@pytree_dataclass(static=("eta", "eta_abs"))
class PLD:
    """A composed, certified privacy-loss distribution (law of the loss under A).

    pmf: CTD pmf of the composed loss on the lattice ``(offset + arange(size)) * h`` (may contain
        float rounding noise of order 1e-17).
    inf_mass: A-mass at loss +inf (composed).
    alias: Chernoff bound on the composed mass outside the window (added pessimistically).
    tail_mass: total single-step mass outside the grids, times the number of steps.
    steps: number of composed steps k (for the Hoeffding bracket).
    h_fine, steps_fine: two-stage composition only (else 0): the fine lattice spacing and the
        number of steps rounded on it; the ``steps`` rounding errors on ``h`` are then those of
        the second stage (see :func:`compose`).
    """

    pmf: jax.Array
    offset: jax.Array
    h: jax.Array
    inf_mass: jax.Array
    alias: jax.Array
    tail_mass: jax.Array
    steps: jax.Array
    h_fine: jax.Array = 0.0
    steps_fine: jax.Array = 0.0
    eta: float = 1e-3
    eta_abs: float = 1e-14
    # an upper bound on the log-MGF of the composed finite loss at positive orders (computed from
    # the single-step CTD pmfs, no FFT): a second, FFT-free bound on delta (:meth:`delta_upper`)
    mgf_t: jax.Array = None
    mgf_K: jax.Array = None
    mgf_inf: jax.Array = None  # P(some step's loss is +inf): the atom the Chernoff bound adds

    @property
    def losses(self):
        return (self.offset + jnp.arange(self.pmf.shape[-1], dtype=jnp.float64)) * self.h

    # ---- the Hoeffding shift for the lower bound ---------------------------------------------
    def _shift(self, eta):
        """(shift, failure probability) of the lower bound.

        Each interior rounding error lies in [-h, h] (deterministic: the k-fold sum moves by at most
        k h, failure probability 0) and has conditional mean in [0, mu_h] (Hoeffding: k mu_h + t with
        failure probability eta).  Both are valid; the smaller shift is used.
        """
        h, k = self.h, self.steps
        h1, k1 = jnp.asarray(self.h_fine, jnp.float64), jnp.asarray(self.steps_fine, jnp.float64)
        # (two stages: the errors of both roundings form one martingale-difference sequence,
        # k1 of range h1 and k of range h; Azuma-Hoeffding adds their squared ranges)
        t = jnp.sqrt((k * h**2 + k1 * h1**2) * jnp.log(1.0 / eta) / 2.0)
        s_h = k * _mu_h(h) + k1 * _mu_h(h1) + t
        s_d = k * h + k1 * h1
        det = s_d <= s_h
        return jnp.where(det, s_d, s_h), jnp.where(det, 0.0, eta)

    # ---- delta(eps) ---------------------------------------------------------------------------
    def delta_upper(self, epsilon):
        """The smaller of two upper bounds on delta(eps): the composed pmf's (+ its FFT allowance and
        a relative conversion allowance) and the Chernoff bound from the exact log-MGF (no FFT, so no
        absolute float allowance: it stays useful at deltas below the FFT's rounding level)."""
        c = jnp.maximum(self.pmf, 0.0)
        rel = _conv_rel(c.shape[-1])
        d = _delta_of(c, self.losses, epsilon, rel) + self.inf_mass + self.alias
        if self.mgf_K is not None:
            d = jnp.minimum(d, _chernoff_delta(self.mgf_K, self.mgf_t, epsilon, self.mgf_inf))
        return jnp.minimum(d, 1.0)

    def delta_lower(self, epsilon):
        s, eta = self._shift(self.eta_abs)
        v = _delta_of(self.pmf, self.losses, epsilon + s) + self.inf_mass
        return jnp.maximum(v - self.alias - self.tail_mass - eta, 0.0)

    # ---- eps(delta) ---------------------------------------------------------------------------
    def epsilon_upper(self, delta):
        """The smaller of the pmf's eps (see :meth:`delta_upper`) and the Chernoff eps."""
        c = jnp.maximum(self.pmf, 0.0)
        rel = _conv_rel(c.shape[-1])
        e = _eps_of(c, self.losses, self.h, delta - self.inf_mass - self.alias, rel)
        if self.mgf_K is not None:
            e = jnp.minimum(e, _chernoff_eps(self.mgf_K, self.mgf_t, delta, self.mgf_inf))
        return e

    def epsilon_lower(self, delta):
        # every failure level eta gives a valid lower bound (a smaller shift for a larger delta
        # target); the best of five levels around ``self.eta * delta`` is taken (one tail-sum pass)
        d = jnp.asarray(delta, dtype=jnp.float64)
        levels = self.eta * d[..., None] * jnp.array(_ETA_LEVELS)
        s, eta = self._shift(levels)
        target = d[..., None] - self.inf_mass + self.alias + self.tail_mass + eta
        return jnp.max(_eps_of(self.pmf, self.losses, self.h, target) - s, axis=-1)

    # ---- trade-off curve T(B, A): type II error of testing B (null) against A ---------------------
    def tradeoff_lower(self, a):
        """Pessimistic (lower) bound on the trade-off curve: a sound f-DP guarantee."""
        c = jnp.maximum(self.pmf, 0.0)
        f = _curve_of(c, self.losses, self.inf_mass, a)
        return jnp.clip(f - self.alias, 0.0, 1.0 - a)

    def curve(self, pessimistic: bool = True):
        """The composed curve as a :class:`~jaxdp.core.piecewise.PiecewiseLinear` (lower or upper bound)."""
        if pessimistic:
            xs, ys = _curve_vertices(jnp.maximum(self.pmf, 0.0), self.losses, self.inf_mass)
            return PiecewiseLinear(a=xs, f=ys - self.alias)
        s, eta = self._shift(self.eta_abs)
        xs, ys = _curve_vertices(self.pmf, self.losses, self.inf_mass)
        return PiecewiseLinear(a=xs * jnp.exp(s), f=ys + self.alias + self.tail_mass + eta)

    def tradeoff_upper(self, a):
        """Optimistic (upper) bound on the trade-off curve (the truth lies in between)."""
        s, eta = self._shift(self.eta_abs)
        f = _curve_of(self.pmf, self.losses, self.inf_mass, a * jnp.exp(-s))
        return jnp.clip(f + self.alias + self.tail_mass + eta, 0.0, 1.0 - a)


_ETA_LEVELS = (0.01, 0.1, 1.0, 10.0, 100.0)  # (a tuple: no device array at import time)


# ------------------------------------------------------------------------------------------------
# the FFT-free Chernoff bound on delta (the optimal conversion of a moment bound)
# ------------------------------------------------------------------------------------------------
#
# With x = L - eps, (1 - e^{-x})_+ <= c_t e^{t x} for every t > 0, c_t = max_x (1 - e^{-x}) e^{-t x}
# = (1/(1+t)) (t/(1+t))^t, so delta(eps) = E_A[(1 - e^{eps - L})_+] <= P_A(L = inf)
# + c_t e^{K(t) - t eps} with K(t) = log E_A[e^{tL}; L finite].  For a composition K adds over the
# steps (the finite part of a product is the product of the finite parts).  K is evaluated on the
# single-step CTD pmfs, which dominate the true pairs, so the bound holds for the true composition.

_MGF_NUM = 96
_MGF_MARGIN = 1e-12  # relative, on the exponent and on eps: covers the rounding of K


def _mgf_orders(scale):
    """Positive orders t for the Chernoff bound: 1e-3 .. 1e4 over the loss's standard deviation."""
    return jax.lax.stop_gradient(jnp.logspace(-3.0, 4.0, _MGF_NUM) / scale)


def _log_c(t):
    return -jnp.log1p(t) + t * (jnp.log(t) - jnp.log1p(t))


def _chernoff_delta(K, ts, epsilon, inf_mass):
    e = jnp.asarray(epsilon, dtype=jnp.float64)
    v = jnp.min(_log_c(ts) + K - ts * e[..., None], axis=-1)
    v = v + _MGF_MARGIN * jnp.abs(v)
    return inf_mass + jnp.exp(jnp.minimum(v, 0.0))


def _chernoff_eps(K, ts, delta, inf_mass):
    d = jnp.asarray(delta, dtype=jnp.float64) - inf_mass
    logd = jnp.log(jnp.where(d > 0, d, 1.0))
    e = jnp.min((_log_c(ts) + K - logd[..., None]) / ts, axis=-1)
    e = e + _MGF_MARGIN * jnp.abs(e)
    return jnp.where(d > 0, e, jnp.inf)


def _mu_h(h):
    """max over y in [0, h] of E[rounded] - y for the e^{-y}-preserving split (about h^2/8); 0 at h = 0."""
    hs = jnp.where(h > 0, h, 1.0)
    em = -jnp.expm1(-hs)
    mu = (hs - em) / em + jnp.log(em / hs)
    return jnp.where(h > 0, jnp.maximum(mu, 0.0), 0.0)


# ------------------------------------------------------------------------------------------------
# conversions on a discrete pmf
# ------------------------------------------------------------------------------------------------


def _spacing(losses):
    """The lattice spacing from its end points (l_1 - l_0 loses ~|l_0| 2^-52 absolute: a relative
    error 1e-12 at h ~ 6e-4 that shifts far cells' weights e^{-l} by 1e-11)."""
    n = losses.shape[-1]
    return (losses[-1] - losses[0]) / (n - 1) if n > 1 else jnp.asarray(1.0, losses.dtype)


def _tail_sums(c, losses, block: int = 128):
    """A_j = sum_{i > j} c_i and P_j = e^h R_j = sum_{i > j} c_i e^{-(l_i - l_{j+1})}.

    (R_j = sum_{i > j} c_i e^{l_j - l_i} is the quantity of the hockey-stick sums; it is returned
    scaled by e^h so that it neither underflows at large spacings h nor needs e^{+h} later.)

    Blockwise: inside each block of ``block`` cells a product with the matrix
    ``M_{ji} = e^{-(i - j - 1) h}`` (i > j), whose entries are exact exponentials of non-positive
    numbers; across blocks the recurrence ``E_b = F_{b+1} + e^{-B h} E_{b+1}`` by a short
    associative scan.  Only exponentials of non-positive numbers appear (the previous
    ``e^{+(B-1-i) h}`` rescaling overflowed once ``block * h > 709``, i.e. at loss ranges above
    ~1.8e5 on 2^18 cells, and lost the whole tail), so nothing overflows at any spacing; terms that
    underflow are below 2^-1022 of a neighbour.  Powers of a rounded ``e^{-h}`` would carry a
    relative error ``k 2^-52`` at distance k (4e-13 at h = 6e-4), hence the exact matrix.  All
    terms are positive, so this is stable.
    """
    n = c.shape[-1]
    h = _spacing(losses)
    a_rev = jnp.cumsum(c[::-1])[::-1]  # sum_{i >= j}
    A = jnp.concatenate([a_rev[1:], jnp.zeros((1,), c.dtype)])
    B = block if n % block == 0 else 1
    nb = n // B
    cb = c.reshape(nb, B)
    pos = jnp.arange(B, dtype=c.dtype)
    gap = pos[None, :] - pos[:, None] - 1.0  # (j, i): i - j - 1
    M = jnp.where(gap >= 0, jnp.exp(-jnp.maximum(gap, 0.0) * h), 0.0)
    S = jnp.dot(cb, M.T, precision=lax.Precision.HIGHEST)  # S[b, j] = sum_{i > j in block} ...
    # across blocks: E_b = P at the last cell of block b = F_{b+1} + e^{-B h} E_{b+1}, with
    # F_{b+1} = sum_{i in block b+1} c_i e^{-(i - first) h}
    F = cb[:, 0] + jnp.exp(-h) * S[:, 0]

    def combine(x, y):
        # (reverse scan: x holds the maps to the right, applied first, then y)
        mx, bx = x
        my, by = y
        return mx * my, bx * my + by

    m = jnp.full((nb,), jnp.exp(-B * h), dtype=c.dtype)
    v = jnp.concatenate([F[1:], jnp.zeros((1,), c.dtype)])
    _, E = jax.lax.associative_scan(combine, (m, v), reverse=True)
    P = S + E[:, None] * jnp.exp(-(B - 1 - pos) * h)[None, :]
    return A, P.reshape(n)


def _delta_of(c, losses, epsilon, rel=0.0):
    """delta(eps) = sum_i c_i (1 - e^{eps - l_i})_+ for a pmf on the lattice, vectorised over eps.

    On the segment eps in [l_j, l_{j+1}): delta = A_j - e^{eps - l_{j+1}} P_j with
    eps - l_{j+1} in [-h, 0): no overflow at any eps or spacing (eps far above the lattice gave
    e^{eps - l} * 0 = NaN before).
    """
    eps = jnp.asarray(epsilon, dtype=jnp.float64)
    flat = eps.reshape(-1)
    A, P = _tail_sums(c, losses)
    h = _spacing(losses)
    l0 = losses[0]
    n = c.shape[-1]
    j, Aj = _segment(A, jnp.sum(c), losses, flat)
    P_below = c[0] + jnp.exp(-h) * P[0]  # P for a virtual point l_{-1} = l_0 - h
    Pj = jnp.where(j >= 0, P[jnp.maximum(j, 0)], P_below)
    # j = -1 covers every eps below the lattice (all atoms above eps); j = n-1 every eps at or above
    # the top point (no atom above: A = P = 0)
    x = jnp.minimum(flat - (l0 + (j + 1) * h), 0.0)
    val = Aj - jnp.exp(x) * Pj
    val = jnp.where(j >= n - 1, 0.0, val)
    # (+ rel times the mass above eps: the relative float allowance of :func:`_conv_rel`)
    val = jnp.maximum(val, 0.0) + rel * jnp.where(j >= n - 1, 0.0, Aj)
    return val.reshape(eps.shape)


def _eps_of(c, losses, h, target, rel=0.0):
    """Smallest eps with sum_i c_i (1 - e^{eps - l_i})_+ + rel * A(eps) <= target (vectorised).

    ``A(eps)`` is the mass above eps (``rel``: the relative float allowance of :func:`_conv_rel`).
    The plain problem (``rel = 0``) is solved exactly for the discrete pmf (piecewise closed form);
    with ``rel > 0`` a second solve at ``target - rel * A(eps_1)`` is sound because A is
    non-increasing and the second answer is not below the first.  Differentiable in c and target.
    Returns +inf when the target is not positive and the left end of the lattice when it is at
    least the mass.
    """
    t = jnp.asarray(target, dtype=jnp.float64)
    flat = t.reshape(-1)
    A, P = _tail_sums(c, losses)
    eps = _eps_from_sums(A, P, losses, h, flat)
    if rel:
        _, a1 = _segment(A, jnp.sum(c), losses, jnp.where(jnp.isfinite(eps), eps, losses[0]))
        eps = _eps_from_sums(A, P, losses, h, flat - rel * a1)
    return eps.reshape(t.shape)


def _eps_from_sums(A, P, losses, h, flat):
    D = A - jnp.exp(-h) * P  # delta at the lattice points, non-increasing
    n = A.shape[-1]
    # first index j with D_j <= target  ->  eps in [l_{j-1}, l_j]
    # D is non-increasing: count of entries > target
    j = jnp.searchsorted(-D, -flat, side="left")
    jm = jnp.clip(j - 1, 0, n - 1)
    # on [l_{jm}, l_{jm+1}]: A_jm - e^{eps - l_{jm+1}} P_jm = target
    Aj, Pj = A[jm], P[jm]
    ratio = (Aj - flat) / jnp.where(Pj > 0, Pj, 1.0)
    eps = losses[jm] + h + jnp.log(jnp.where(ratio > 0, ratio, 1.0))
    eps = jnp.clip(eps, losses[jm], losses[jm] + h)
    eps = jnp.where(j <= 0, losses[0], eps)
    eps = jnp.where(flat <= 0.0, jnp.inf, eps)
    return jnp.where(jnp.isnan(flat), jnp.nan, eps)


def _segment(A, total, losses, eps):
    """(j, mass above eps): eps in [l_j, l_{j+1}) (j = -1 below the lattice, n-1 at or above its top)
    and A_j = sum_{i > j} c_i (the total mass for j = -1)."""
    n = A.shape[-1]
    j = jnp.clip(jnp.floor((eps - losses[0]) / _spacing(losses)).astype(jnp.int64), -1, n - 1)
    return j, jnp.where(j >= 0, A[jnp.maximum(j, 0)], total)


def _conv_rel(n: int) -> float:
    """Relative float allowance of a conversion on n cells, as a fraction of the mass above eps.

    Each cell of a CTD pmf is a difference of survival values (error ~ 2^-52 times the survival
    value, i.e. the mass above the cell), and the tail sums add n positive terms: both errors are
    at most ~n 2^-52 times the mass above eps.  ``n 2^-47`` (32x that) is added on the pessimistic
    side.  Relative, not absolute: it never puts a floor under small deltas.  Not a proof (float
    rounding never is here; see the module docstring).
    """
    return float(n) * 2.0**-47


def _curve_vertices(c, losses, inf_mass):
    # reject iff loss >= l_j:  alpha_j = B(L >= l_j) = sum_{i>=j} c_i e^{-l_i}
    logb = jnp.where(c > 0, jnp.log(jnp.where(c > 0, c, 1.0)) - losses, -jnp.inf)
    bmass = jnp.exp(jnp.minimum(logb, 700.0))
    alpha = jnp.cumsum(bmass[::-1])[::-1]
    beta = (1.0 - inf_mass) - jnp.cumsum(c[::-1])[::-1]
    # vertices in increasing alpha: (0, 1 - inf_mass), then j = n-1 ... 0
    xs = jnp.concatenate([jnp.zeros((1,)), alpha[::-1]])
    ys = jnp.concatenate([(1.0 - inf_mass)[None], beta[::-1]])
    return xs, ys


def _curve_of(c, losses, inf_mass, a):
    """Trade-off curve T(B, A) of the pair whose A-law is c (+ inf_mass at +inf): piecewise linear."""
    a = jnp.asarray(a, dtype=jnp.float64)
    xs, ys = _curve_vertices(c, losses, inf_mass)
    f = jnp.interp(a, xs, ys, right=0.0)
    return jnp.maximum(f, 0.0)


# ------------------------------------------------------------------------------------------------
# discretisation and composition
# ------------------------------------------------------------------------------------------------


def ctd_pmf(mechanism, direction: str, h, offset, size: int):
    """Connect-the-dots pmf of one mechanism on the lattice ``(offset + arange(size)) * h``.

    Returns ``(pmf, inf_mass, tail_mass)``; ``tail_mass`` is the A-mass outside the lattice range
    (below it: moved up to the first point; above it: sent to +inf).
    """
    l = (offset + jnp.arange(size, dtype=jnp.float64)) * h
    sa, sb = mechanism.privacy_loss_sf(l, direction)
    sa = jnp.clip(sa, 0.0, 1.0)
    sb = jnp.clip(sb, 0.0, 1.0)
    a_bin = jnp.maximum(sa[:-1] - sa[1:], 0.0)
    b_bin = jnp.maximum(sb[:-1] - sb[1:], 0.0)
    # split preserving A and B:  lo * e^{-l_j} + hi * e^{-l_{j+1}} = b, lo + hi = a
    em = -jnp.expm1(-h)
    lj = l[:-1]
    be = jnp.exp(jnp.minimum(jnp.log(jnp.where(b_bin > 0, b_bin, 1.0)) + lj, 700.0))
    be = jnp.where(b_bin > 0, be, 0.0)
    lo = jnp.clip((be - jnp.exp(-h) * a_bin) / em, 0.0, a_bin)
    hi = a_bin - lo
    # below the grid: all A-mass to l_0 (its B-deficit goes to loss -inf, which carries no A-mass)
    below = 1.0 - sa[0]
    # above the grid: B-mass to l_{n-1} (A = e^{l} B), the rest of the A-mass to +inf
    top_b = sb[-1]
    top_a = jnp.minimum(jnp.exp(jnp.minimum(jnp.log(jnp.where(top_b > 0, top_b, 1.0)) + l[-1], 700.0)) * (top_b > 0), sa[-1])
    # one concatenation (no scatter-adds: XLA re-evaluated the whole fused tabulation for each)
    pmf = jnp.concatenate([lo[:1] + below, lo[1:] + hi[:-1], hi[-1:] + top_a])
    inf_mass = sa[-1] - top_a
    # the mechanism's own +inf atom is represented exactly; only finite mass beyond the grid is
    # "tail" (it breaks the |rounding error| <= h assumption of the lower bound)
    sa_inf = jnp.clip(mechanism.privacy_loss_sf(jnp.array([jnp.inf]), direction)[0][0], 0.0, 1.0)
    tail_mass = below + jnp.maximum(sa[-1] - sa_inf, 0.0)
    return pmf, inf_mass, tail_mass


def _log_mgf(pmf, losses, ts):
    logp = jnp.where(pmf > 0, jnp.log(jnp.where(pmf > 0, pmf, 1.0)), -jnp.inf)
    return jax.nn.logsumexp(logp[None, :] + ts[:, None] * losses[None, :], axis=1)


def _log_mgf_blocked(pmf, losses, ts, block: int = 16):
    """Upper bound on log E[e^{tL}] from block sums placed at the block's top (t>0) or bottom (t<0)."""
    n = pmf.shape[0]
    nb = n // block
    pb = pmf[: nb * block].reshape(nb, block).sum(axis=1)
    lb = losses[: nb * block].reshape(nb, block)
    lo, hi = lb[:, 0], lb[:, -1]
    logp = jnp.where(pb > 0, jnp.log(jnp.where(pb > 0, pb, 1.0)), -jnp.inf)
    at = jnp.where(ts[:, None] > 0, hi[None, :], lo[None, :])
    return jax.nn.logsumexp(logp[None, :] + ts[:, None] * at, axis=1)


def _chernoff_ts(scale, num):
    half = num // 2
    mags = jnp.logspace(-3.0, 4.0, half) / scale
    return jnp.concatenate([-mags[::-1], mags])


def _chernoff_window(K, ts, log_tail):
    """[x_L, x_R] with P(S < x_L), P(S > x_R) <= e^{log_tail} by Chernoff, from K(t) of the sum."""
    pos = ts > 0
    xr = jnp.where(pos, (K - log_tail) / jnp.where(pos, ts, 1.0), jnp.inf)
    xl = jnp.where(~pos, (K - log_tail) / jnp.where(pos, 1.0, ts), -jnp.inf)
    return jnp.max(xl), jnp.min(xr)


def _chernoff_bound(K, ts, x, upper: bool):
    """log of min_t e^{-t x + K(t)} over t > 0 (upper tail P(S >= x)) or t < 0 (P(S <= x))."""
    sel = ts > 0 if upper else ts < 0
    vals = jnp.where(sel, -ts * x + K, jnp.inf)
    return jnp.minimum(jnp.min(vals), 0.0)


@jax.custom_jvp
def _cpow(z, k):
    """z**k for a traced integer k >= 0, by binary exponentiation (about 2 log2 k complex products).

    Its relative error grows like k * 2^-52 (the error doubles at each squaring), the same order as
    exp(k log z) (the previous method), at a third of the cost on CPU (complex log/exp are slow).
    A ``while_loop`` is not reverse-differentiable, so the derivative k z^(k-1) is given by a
    custom JVP rule.

    Each loop iteration handles ``_CPOW_BITS`` bits of k, unrolled: XLA (CPU) then fuses them into
    one elementwise kernel (acc and base stay in registers), whereas one bit per iteration costs a
    full pass over memory per bit (measured 5-7x slower on 16 x 49153 complex entries).  The
    products are the same, in the same order, as one bit per iteration (the fused kernel may
    contract them into FMAs: rounding-level differences); squarings past k's top bit are unused.
    """
    k = jnp.maximum(jnp.asarray(k, dtype=jnp.int64), 0)

    # (no lax.clz, and every shift amount kept below 64: with constant inputs XLA folded the
    # clz-based bit count / out-of-range shifts into a wrong power -- eps 14.9 instead of 0.62)
    def cond(state):
        i = state[0]
        return (i < 64) & ((k >> jnp.minimum(i, 63)) > 0)

    def body(state):
        i, acc, base = state
        for j in range(_CPOW_BITS):
            sh = i + j
            bit = jnp.where(sh < 64, (k >> jnp.minimum(sh, 63)) & 1, 0)
            acc = jnp.where(bit == 1, acc * base, acc)
            base = base * base
        return i + _CPOW_BITS, acc, base

    _, acc, _ = lax.while_loop(cond, body, (jnp.zeros((), jnp.int64), jnp.ones_like(z), z))
    return acc


_CPOW_BITS = 8


@_cpow.defjvp
def _cpow_jvp(primals, tangents):
    z, k = primals
    dz, _ = tangents
    out = _cpow(z, k)
    kf = jnp.asarray(k, dtype=jnp.float64)
    nz = z != 0
    # d/dz z^k = k z^(k-1) = k z^k / z  (z = 0: 1 if k == 1 else 0)
    deriv = jnp.where(nz, kf * out / jnp.where(nz, z, 1.0), jnp.where(kf == 1.0, 1.0, 0.0))
    return out, deriv * dz


def _log_mgf_mm(pmf, losses, ts, block: int = 128):
    """log E[e^{tL}] of a (non-negative) pmf on a uniform lattice, as block matrix products.

    Cell ``b * block + i`` contributes ``p e^{t h (i - r)}`` times ``e^{t l_ref}``, with the reference
    cell r at the block's top for t > 0 and its bottom for t < 0, so every factor is <= 1 (no
    overflow).  A product that underflows loses less than 2^-1022 (p <= 1) and at most p, so each
    block sum is raised by ``min(block mass, block * 2^-1022)``: the result is never below the
    exact value (up to rounding), and Chernoff bounds built on it stay valid.  The cost is one
    (n/block, block) x (block, len(ts)) product instead of ``n * len(ts)`` exponentials.
    """
    n = pmf.shape[-1]
    if n % block:
        return _log_mgf(pmf, losses, ts)
    nb = n // block
    h = losses[1] - losses[0]
    pos = jnp.arange(block, dtype=jnp.float64)
    ref = jnp.where(ts > 0, block - 1.0, 0.0)
    fac = jnp.exp(ts[None, :] * h * (pos[:, None] - ref[None, :]))
    pb = jnp.maximum(pmf, 0.0).reshape(nb, block)
    S = jnp.dot(pb, fac, precision=lax.Precision.HIGHEST)
    S = S + jnp.minimum(jnp.sum(pb, axis=1), block * 2.0**-1022)[:, None]
    lref = losses.reshape(nb, block)[:, :1] + ref[None, :] * h
    logS = jnp.where(S > 0, jnp.log(jnp.where(S > 0, S, 1.0)), -jnp.inf)
    return jax.nn.logsumexp(logS + ts[None, :] * lref, axis=0)


def _log_mgf_exact(pmf, losses, ts):
    """log E[e^{tL}] at a few t, referenced to the support's end (no log of the pmf, no overflow).

    ``K(t) = t r + log sum_j p_j e^{t (l_j - r)}`` with r the highest (t > 0) or lowest (t < 0)
    lattice point carrying mass, so every factor on the support is <= 1; products that underflow
    lose less than 2^-1022 each, covered by adding ``min(mass, n 2^-1022)``.  Never below the exact
    value (up to rounding): valid for the certified Chernoff bounds.
    """
    n = pmf.shape[-1]
    p = jnp.maximum(pmf, 0.0)
    pos = p > 0
    any_pos = jnp.any(pos)
    top = jnp.max(jnp.where(pos, losses, -jnp.inf))
    bot = jnp.min(jnp.where(pos, losses, jnp.inf))
    ref = jnp.where(any_pos, jnp.where(ts > 0, top, bot), 0.0)
    fac = jnp.exp(jnp.minimum(ts[:, None] * (losses[None, :] - ref[:, None]), 0.0))
    S = jnp.dot(fac, p, precision=lax.Precision.HIGHEST) + jnp.minimum(jnp.sum(p), n * 2.0**-1022)
    return jnp.where(any_pos, ts * ref + jnp.log(S), -jnp.inf)


def _coarse_ctd(mechanism, direction, lo, hi, nc):
    """Coarse CTD pmf of one step over [lo, hi] on ``nc`` points: (pmf, lattice, variance).

    Used only to place windows (no certificate needed: the bounds are recomputed on the real lattice).
    """
    h = jnp.maximum(hi - lo, 1e-300) / (nc - 3)
    off = jnp.floor(lo / h) - 1.0
    p, _, _ = ctd_pmf(mechanism, direction, h, off, nc)
    l = (off + jnp.arange(nc)) * h
    tot = jnp.maximum(jnp.sum(p), 1e-300)
    mean = jnp.sum(p * l) / tot
    return p, l, jnp.sum(p * (l - mean) ** 2) / tot


def _snap(x):
    """Round a positive spacing up to a power of 2^(1/8): piecewise constant in the parameters."""
    return jnp.exp2(jnp.ceil(jnp.log2(x) * 8.0) / 8.0)


def compose(
    components: Sequence[Tuple[object, object]],
    direction: str = "remove",
    grid: Grid = DEFAULT_GRID,
    *,
    tail=None,
    window_tail=None,
) -> PLD:
    """Certified PLD of the composition of ``count_i`` copies of each ``mechanism_i``.

    ``components`` is a sequence of ``(mechanism, count)``; counts are traced non-negative integers.
    The lattice spacing is common to all components; the output window holds the composed law up to
    ``grid.window_tail`` (Chernoff), the rest is accounted in ``alias``.

    ``tail`` and ``window_tail`` (optional, may be traced) override ``grid.tail`` and
    ``grid.window_tail``.  Both only place the lattices: every mass they leave out is accounted
    (single-step mass above the range at +inf, below it at the lowest point; the composed law
    outside the window by its Chernoff bound), so any positive value is sound.  When the delta of
    interest is known (eps(delta)), tails far below delta narrow the lattice for free.

    With ``grid.num_stages() == 2`` and a single component, the composition is done in two stages
    (:func:`_compose_two_stage`).
    """
    if grid.num_stages() == 2 and len(components) == 1:
        return _compose_two_stage(components[0], direction, grid, tail, window_tail)
    n = grid.size
    log_tail = jnp.log(grid.window_tail if window_tail is None else window_tail)
    tail = grid.tail if tail is None else tail
    # numerical laws tabulate themselves once (shared by every evaluation below)
    components = [(m.prepare(), k) for m, k in components]
    ks = [jnp.asarray(k, dtype=jnp.int64) for _, k in components]
    ranges = [m.privacy_loss_range(direction, tail) for m, _ in components]
    los = [jnp.asarray(r[0], dtype=jnp.float64) for r in ranges]
    his = [jnp.asarray(r[1], dtype=jnp.float64) for r in ranges]
    if not grid.differentiate_lattice:
        los = [jax.lax.stop_gradient(x) for x in los]
        his = [jax.lax.stop_gradient(x) for x in his]
    h, ts, Ksum, xl, scale = _place_window(components, ks, los, his, direction, grid, log_tail)
    circ, total_off, inf_keep, tail, parts, pmf = _fine_spectrum(components, ks, los, direction, h, n)
    # one copy of one mechanism needs no FFT: its CTD pmf is exact (no float allowance either)
    no_fft = (jnp.asarray(ks[0] == 1) if len(components) == 1 else jnp.asarray(False))
    if len(components) == 1:
        circ = jnp.where(no_fft, pmf, circ)
    w_lo = jnp.floor(jax.lax.stop_gradient(xl) / h).astype(jnp.int64) - 1
    shift = jnp.mod(w_lo - total_off, n)
    out = jnp.roll(circ, -shift)
    # + an allowance for float64 rounding in the FFT: n times the normwise error scale
    # 2^-52 ||out||_2 per cell (not a proof; see the module docstring), none without an FFT
    alias = (_outside_window(parts[0], ts, Ksum, w_lo, h, n)
             + jnp.where(no_fft, 0.0, _fft_allowance(out, n, sum(ks))))
    inf_total = -jnp.expm1(inf_keep)
    steps = sum(ks)
    mgf_t = _mgf_orders(scale)
    mgf_K = sum(jnp.asarray(k, jnp.float64) * _log_mgf_mm(p, l, mgf_t) for k, p, l in parts[1])
    return PLD(
        pmf=out,
        offset=w_lo.astype(jnp.float64),
        h=h,
        inf_mass=inf_total,
        alias=alias,
        tail_mass=tail,
        steps=jnp.asarray(steps, dtype=jnp.float64),
        eta=grid.hoeffding_eta,
        eta_abs=grid.hoeffding_eta_abs,
        mgf_t=mgf_t,
        mgf_K=mgf_K,
        mgf_inf=inf_total,
    )


def _fft_allowance(out, n: int, k):
    """Float64 allowance for a k-fold FFT power of length n: ``2^-51 (k + log2 n) sqrt(n) ||out||_2``.

    Binary exponentiation doubles a relative error at each squaring, so the spectrum carries a
    relative error of order ``k 2^-52`` (plus ``log2 n`` ulps from the transforms); by Parseval the
    output then has an l2 error of that order times ``||out||_2``, and any tail sum over at most n
    cells at most ``sqrt(n)`` times that (Cauchy-Schwarz).  Measured against exact circular
    convolution powers (direct sums of positive terms) the summed absolute error is 5-60x below
    this for k = 3 .. 10^4 (tests/core/test_pld.py checks it); the previous flat ``n 2^-52``
    was 14x too small at n = 2^12, k = 10^4, and 10^3 times too large for few steps (it made
    eps(1e-12) infinite).  Not a proof (see the module docstring).  A constant for autodiff.
    """
    o = jax.lax.stop_gradient(out)
    kf = jnp.asarray(k, dtype=jnp.float64)
    return 2.0**-51 * (kf + math.log2(n)) * math.sqrt(n) * jnp.sqrt(jnp.sum(o * o))


def _near_optimum(K, ts, x_lo, x_hi, num: int = 5):
    """A few t around the best Chernoff exponents (from a cheap K) for P(S < x_lo) and P(S > x_hi)."""
    t_up = ts[jnp.argmin(jnp.where(ts > 0, -ts * x_hi + K, jnp.inf))]
    t_dn = ts[jnp.argmin(jnp.where(ts < 0, -ts * x_lo + K, jnp.inf))]
    mult = jnp.geomspace(1.0 / 4.0, 4.0, num)
    return jnp.concatenate([t_dn * mult, t_up * mult])


def _outside_bound(Kx, tx, Kb, ts, x_lo, x_hi):
    """Chernoff bound on the mass below x_lo plus the mass above x_hi (any t gives a valid bound)."""
    lb = jnp.minimum(_chernoff_bound(Kx, tx, x_lo, upper=False), _chernoff_bound(Kb, ts, x_lo, upper=False))
    ub = jnp.minimum(_chernoff_bound(Kx, tx, x_hi, upper=True), _chernoff_bound(Kb, ts, x_hi, upper=True))
    return jnp.exp(lb) + jnp.exp(ub)


def _rebin(c, x, off, h, n: int):
    """Connect-the-dots of atoms ``c >= 0`` at losses ``x`` onto the lattice ``(off + arange(n)) * h``.

    The atom at y in the bin ``(l_j, l_{j+1}]`` (the bin convention of :func:`ctd_pmf`) puts the
    fraction ``w = (1 - e^{-(y - l_j)}) / (1 - e^{-h})`` of its A-mass on ``l_{j+1}`` and the rest on
    ``l_j``: A-mass and B-mass (``A e^{-l}``) are preserved, so this is the CTD of the discrete law
    (a spreading, i.e. dominating), atom by atom (no differences of cumulative sums, so no
    cancellation).  Returns ``(pmf, above, below)``: A-mass above the lattice (to be put at +inf)
    and A-mass at or below ``l_0`` (moved up to ``l_0``); both are pessimistic moves and both are
    zero when the lattice covers the atoms, as :func:`_compose_two_stage` arranges.
    """
    j = jnp.ceil(x / h - off) - 1.0  # l_j < x <= l_{j+1}
    frac = jnp.clip(x - (off + j) * h, 0.0, h)
    w_hi = jnp.expm1(-frac) / jnp.expm1(-h)
    below = j < 0
    above = j > n - 2
    inside = ~(below | above)
    ji = jnp.clip(j, 0, n - 2).astype(jnp.int64)
    lo_m = jnp.where(inside, c * (1.0 - w_hi), 0.0)
    hi_m = jnp.where(inside, c * w_hi, 0.0)
    m_below = jnp.sum(jnp.where(below, c, 0.0))
    m_above = jnp.sum(jnp.where(above, c, 0.0))
    pmf = jnp.zeros((n,), jnp.float64).at[ji].add(lo_m).at[ji + 1].add(hi_m).at[0].add(m_below)
    return pmf, m_above, m_below


def _place_window(components, ks, los, his, direction, grid, log_tail):
    """Coarse CTD of each component, only to place the composed window (no certificate needed
    here: the final alias bound is recomputed on the real lattice).  Returns the common spacing h,
    the Chernoff t grid and the coarse log-MGF on it, the window's left end and the spread."""
    n, nc = grid.size, grid.coarse_points()
    coarse = []
    spread = 0.0
    for (m, _), k, lo, hi in zip(components, ks, los, his):
        p1, l1, var1 = _coarse_ctd(m, direction, lo, hi, nc)
        spread = spread + k * var1
        coarse.append((k, p1, l1))
    scale = jnp.sqrt(spread)
    scale = jnp.where(scale > 0, scale, 1.0)
    ts = _chernoff_ts(scale, grid.num_chernoff)
    Ksum = sum(k * _log_mgf_mm(p1, l1, ts) for k, p1, l1 in coarse)
    xl, xr = _chernoff_window(Ksum, ts, log_tail)
    width = jnp.maximum(xr - xl, max_width(los, his))
    h = width * 1.02 / (n - 4)
    return h, ts, Ksum, xl, scale


def _fine_spectrum(components, ks, los, direction, h, n):
    """CTD of each component on the common lattice, composed by one FFT product (circular).

    Returns the circular result, the summed lattice offset, log P(no +inf loss), the single-step
    tail mass, the parts ``(count, pmf, losses)`` (stop-gradient pmfs for the Chernoff bounds, live
    ones for the moment-generating function) and the last pmf (returned as is when one step is
    composed)."""
    total_off = 0
    spectrum = None
    inf_keep = 0.0  # log of P(no +inf loss in any step)
    tail = 0.0
    fine_parts = []
    mgf_parts = []
    for (m, _), k, lo in zip(components, ks, los):
        off = jnp.floor(lo / h) - 1.0
        pmf, inf_mass, tail_mass = ctd_pmf(m, direction, h, off, n)
        spec = jnp.fft.rfft(pmf)
        term = _cpow(spec, k)
        spectrum = term if spectrum is None else spectrum * term
        total_off = total_off + k * off.astype(jnp.int64)
        inf_keep = inf_keep + k * jnp.log1p(-jnp.minimum(inf_mass, 1.0))
        tail = tail + k * tail_mass
        l = (off + jnp.arange(n)) * h
        fine_parts.append((k, jax.lax.stop_gradient(pmf), l))
        mgf_parts.append((k, pmf, l))
    circ = jnp.fft.irfft(spectrum, n=n)
    return circ, total_off, inf_keep, tail, (fine_parts, mgf_parts), pmf


def _outside_window(fine_parts, ts, Ksum, w_lo, h, n):
    """Rigorous Chernoff bound (on the discretised law itself) on the mass outside the window.

    Any t gives a valid bound, so the cell-wise MGF is evaluated only at a few t near the coarse
    optimum, plus a global search from the blocked MGF: each block of 64 cells moved to the block's
    far end (the top for t > 0, the bottom for t < 0) bounds the true MGF from above, so it also
    gives valid bounds, over the whole t grid, at 1/64 of the cost."""
    x_lo = (w_lo.astype(jnp.float64) - 0.5) * h
    x_hi = (w_lo.astype(jnp.float64) + n - 0.5) * h
    t_up = ts[jnp.argmin(jnp.where(ts > 0, -ts * x_hi + Ksum, jnp.inf))]
    t_dn = ts[jnp.argmin(jnp.where(ts < 0, -ts * x_lo + Ksum, jnp.inf))]
    mult = jnp.geomspace(1.0 / 4.0, 4.0, 5)
    tf = jnp.concatenate([t_dn * mult, t_up * mult])
    Kfine = sum(k * _log_mgf_exact(p, l, tf) for k, p, l in fine_parts)
    lb = _chernoff_bound(Kfine, tf, x_lo, upper=False)
    ub = _chernoff_bound(Kfine, tf, x_hi, upper=True)
    Kup = sum(k * _log_mgf_blocked(p, l, ts, block=64) for k, p, l in fine_parts)
    lb = jnp.minimum(lb, _chernoff_bound(Kup, ts, x_lo, upper=False))
    ub = jnp.minimum(ub, _chernoff_bound(Kup, ts, x_hi, upper=True))
    return jnp.exp(lb) + jnp.exp(ub)


def _compose_two_stage(component, direction: str, grid: Grid, tail=None, window_tail=None) -> PLD:
    r"""``T`` copies of one mechanism in two stages (or one, when that is not worse).

    With ``T = k_1 k_2 + r`` (``0 <= r < k_2``, i.e. ``k_1 = floor(T / k_2)``) the composition is ``k_2 - r`` copies of the
    ``k_1``-fold law and ``r`` copies of the ``(k_1 + 1)``-fold law.

    * **Stage 1**: CTD of the mechanism on a fine lattice ``h_1`` sized for the ``(k_1+1)``-fold
      Chernoff window (and the single-step range), FFT powers ``k_1`` and ``k_1 + 1``.  Each result
      is made into a *measure* that dominates the exact CTD composition: the circular output
      clipped at 0 (the exact circular output is the window part plus the folded outside part, both
      >= 0), plus A-mass at +inf equal to its Chernoff bound on the mass outside the window
      (``alias_1``) and its +inf mass.  Every delta after further composition is a positive linear
      functional, non-decreasing when A-mass moves to a higher loss (with ``B = e^{-l} A`` on the
      finite part), so this keeps upper bounds valid.
    * **Stage 2**: CTD of these discrete laws (atom by atom, :func:`_rebin`) onto a coarse lattice
      ``h_2`` sized for the ``T``-fold window (and covering the stage-1 window); CTD of a discrete
      pair is again a spreading, so the result dominates.  FFT powers ``k_2 - r`` and ``r``; the
      outside of the final window is bounded by Chernoff on the stage-2 laws (``alias``).

    **Lower bound.**  Let Y_i be the true losses and consider the ideal chain: each Y_i rounded by
    CTD on lattice 1 (error e_i of range ``h_1``, conditional mean in ``[0, mu_{h_1}]``), each block
    sum Z_b rounded by CTD on (the infinite extension of) lattice 2 (error f_b of range ``h_2``,
    conditional mean in ``[0, mu_{h_2}]`` given Z_b).  Given all Y, the e_i then the f_b form a
    martingale-difference sequence with predictable ranges, so Azuma-Hoeffding bounds
    ``P(sum e + sum f > T mu_{h_1} + k_2 mu_{h_2} + t) <= e^{-2 t^2 / (T h_1^2 + k_2 h_2^2)}``
    (:meth:`PLD._shift`; the deterministic shift ``T h_1 + k_2 h_2`` when smaller).  The computed
    stage-2 input exceeds the ideal rounded law of a block (total mass <= 1) by a measure of mass
    ``f <= 2 alias_1`` (+ rebinning's below/above mass, zero by construction), so the composed
    measure exceeds the ideal one by at most ``prod (1 + f)^{count} - 1`` in mass, subtracted with
    the single-step tail mass ``T tau`` (``tail_mass``) and ``alias``.

    The split ``k_1`` is chosen at run time among a few ``T^a`` (and ``k_1 = T``: one stage, whose
    result is then returned): the largest whose predicted Hoeffding shift is within 10% of the
    smallest (fewer blocks carry less float allowance and excess mass).  The fine stage has
    ``grid.fine_points()`` (``fine_factor * size``) points; so does the returned PLD (the coarse
    stage-2 law padded with zeros), so one- and two-stage results have one shape.
    """
    m, k = component
    n = grid.size
    n1 = grid.fine_points()  # fine stage (and output) length
    log_tail = jnp.log(grid.window_tail if window_tail is None else window_tail)
    tail = grid.tail if tail is None else tail
    m = m.prepare()
    T = jnp.asarray(k, dtype=jnp.int64)
    Tf = T.astype(jnp.float64)
    lo, hi = (jnp.asarray(x, dtype=jnp.float64) for x in m.privacy_loss_range(direction, tail))
    if not grid.differentiate_lattice:
        lo, hi = jax.lax.stop_gradient(lo), jax.lax.stop_gradient(hi)
    k1f, xl1, h1, h2, xlT, ts, K1, scale = _two_stage_split(m, direction, grid, lo, hi, Tf, log_tail)
    k1 = k1f.astype(jnp.int64)
    single = k1 >= T
    s1 = _stage_one(m, direction, grid, lo, hi, k1, k1f, xl1, h1, ts, K1)
    out_a, alias_a, inf_a, w_lo1, pmf1, l1, log_keep1, tail1 = s1[:8]
    k2, out2, w_lo2, alias2, inf2, excess = _stage_two(s1, T, Tf, k1, h1, h2, xlT, ts, K1, n, n1)
    mgf_t = _mgf_orders(scale)
    mgf_K = Tf * _log_mgf_mm(pmf1, l1, mgf_t)
    pick = lambda one, two: jnp.where(single, one, two)  # noqa: E731
    return PLD(
        pmf=pick(out_a, jnp.concatenate([out2, jnp.zeros((n1 - n,), out2.dtype)])),
        offset=pick(w_lo1, w_lo2).astype(jnp.float64),
        h=pick(h1, h2),
        inf_mass=pick(inf_a, inf2),
        alias=pick(alias_a, alias2),
        tail_mass=Tf * tail1 + pick(0.0, excess),
        steps=pick(Tf, k2.astype(jnp.float64)),
        h_fine=pick(0.0, h1),
        steps_fine=pick(0.0, Tf),
        eta=grid.hoeffding_eta,
        eta_abs=grid.hoeffding_eta_abs,
        mgf_t=mgf_t,
        mgf_K=mgf_K,
        mgf_inf=-jnp.expm1(Tf * log_keep1),
    )


def _two_stage_split(m, direction, grid, lo, hi, Tf, log_tail):
    """Choose k_1 (and the lattices h_1, h_2) from the Chernoff windows of the k-fold laws on a
    coarse per-step law.  Returns k_1 (float), the stage-1 window's left end, h_1, h_2, the T-fold
    window's left end, the t grid, the coarse one-step log-MGF on it and the spread."""
    n, nc, n1 = grid.size, grid.coarse_points(), grid.fine_points()
    w_single = hi - lo
    pc, lc, varc = _coarse_ctd(m, direction, lo, hi, nc)
    scale = jnp.sqrt(Tf * varc)
    scale = jnp.where(scale > 0, scale, 1.0)
    ts = _chernoff_ts(scale, grid.num_chernoff)
    K1 = _log_mgf_mm(pc, lc, ts)

    def window(kf):
        return _chernoff_window(kf * K1, ts, log_tail)

    xlT, xrT = window(Tf)
    stretch = 1.02 / (n - 4)
    stretch1 = 1.02 / (n1 - 4)
    log_eta = jnp.log(1e8)  # typical eps(delta) failure level, only to rank the splits

    def plan(k1):
        xa, xb = window(k1)
        xa2, xb2 = window(k1 + 1.0)
        xl1 = jnp.minimum(xa, xa2)
        h1 = jnp.maximum(jnp.maximum(xb, xb2) - xl1, w_single) * stretch1
        h2 = jnp.maximum(xrT - xlT, (n1 + 4) * h1) * stretch
        k2 = jnp.floor(Tf / k1)
        one = k1 >= Tf
        var = jnp.where(one, Tf * h1**2, Tf * h1**2 + k2 * h2**2)
        det = jnp.where(one, Tf * h1, Tf * h1 + k2 * h2)
        score = jnp.minimum(jnp.sqrt(var * log_eta / 2.0), det)
        return xl1, h1, h2, score

    expo = jnp.array([0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7])
    cands = jnp.concatenate([jnp.clip(jnp.floor(Tf**expo + 0.5), 1.0, Tf), Tf[None]])
    # T = k2 k1 + r with 0 <= r < k2: k1 = floor(T / k2) for k2 = floor(T / candidate)
    cands = jnp.floor(Tf / jnp.floor(Tf / cands))
    xl1s, h1s, h2s, scores = jax.vmap(plan)(cands)
    # the predicted shift is nearly flat in k1 once the (k1+1)-fold window sets h1, while the
    # stage-1 float allowance and excess mass enter k2 = T / k1 times: take the largest k1 whose
    # predicted shift is within 10% of the smallest (benchmarks/results/poisson_accuracy.md: the
    # bracket at q = 3e-4, T = 3e4, sigma = 0.8, delta = 1e-8 halved in width)
    idx = jnp.arange(cands.shape[0])
    best = jnp.max(jnp.where(scores <= 1.1 * jnp.min(scores), idx, -1))
    return cands[best], xl1s[best], h1s[best], h2s[best], xlT, ts, K1, scale


def _stage_one(m, direction, grid, lo, hi, k1, k1f, xl1, h1, ts, K1):
    """Fine lattice h_1: the CTD pmf, its FFT powers k_1 and k_1 + 1 in the stage-1 window, their
    outside-window bounds (+ float allowance) and +inf masses."""
    n1 = grid.fine_points()
    off1 = jnp.floor(lo / h1) - 1.0
    pmf1, inf1, tail1 = ctd_pmf(m, direction, h1, off1, n1)
    l1 = (off1 + jnp.arange(n1)) * h1
    # the lattice is wider than the single-step range; the (tiny) mass above the range would
    # dominate the Chernoff bounds of the k1-fold law, so it goes to +inf (pessimistic) and counts
    # as tail (lower bound), like the mass above the lattice.  The cut is a smooth ramp over the
    # four cells above hi + h1 (the cell holding the top of the range is kept whole: the add
    # direction's loss piles up just below its supremum): a hard cut moved whole cells (at the tail
    # budget's level) to +inf as the lattice slid past it, a sawtooth in sigma that autodiff does
    # not see (d eps / d sigma 2e-4 off the finite differences at q = 0.012, sigma = 3.1, T = 500)
    ramp = jnp.clip((l1 - hi - h1) / (4.0 * h1), 0.0, 1.0)
    w_cut = ramp * ramp * (3.0 - 2.0 * ramp)
    m_cut = jnp.sum(pmf1 * w_cut)
    pmf1 = pmf1 * (1.0 - w_cut)
    inf1, tail1 = inf1 + m_cut, tail1 + m_cut
    spec = jnp.fft.rfft(pmf1)
    spec_a = _cpow(spec, k1)
    spec_b = spec_a * spec
    off1i = off1.astype(jnp.int64)
    w_lo1 = jnp.floor(jax.lax.stop_gradient(xl1) / h1).astype(jnp.int64) - 1
    # one step needs no FFT: the CTD pmf itself is exact (and carries no float allowance)
    no_fft = k1 == 1
    out_a = jnp.roll(jnp.where(no_fft, pmf1, jnp.fft.irfft(spec_a, n=n1)), -jnp.mod(w_lo1 - k1 * off1i, n1))
    out_b = jnp.roll(jnp.fft.irfft(spec_b, n=n1), -jnp.mod(w_lo1 - (k1 + 1) * off1i, n1))
    x_lo1 = (w_lo1.astype(jnp.float64) - 0.5) * h1
    x_hi1 = (w_lo1.astype(jnp.float64) + n1 - 0.5) * h1
    # (one set of t for both powers: the optima of k1 and k1 + 1 steps are within a few percent)
    tf1 = _near_optimum((k1f + 0.5) * K1, ts, x_lo1, x_hi1)
    # the outside bounds (~window_tail) are constants for autodiff: no (n x #t) residuals stored
    sg = jax.lax.stop_gradient
    p1, l1s, tss, tf1 = sg(pmf1), sg(l1), sg(ts), sg(tf1)
    x_lo1, x_hi1 = sg(x_lo1), sg(x_hi1)
    Kx1 = _log_mgf_exact(p1, l1s, tf1)
    Kb1 = _log_mgf_blocked(p1, l1s, tss, block=64)
    # Every FFT result gets the allowance of :func:`_fft_allowance` (it scales with the power and
    # the result's l2 norm): smooth in the parameters (a measured maximum would put float noise
    # into finite differences).  Not a proof either.
    alias_a = sg(_outside_bound(k1f * Kx1, tf1, k1f * Kb1, tss, x_lo1, x_hi1) + jnp.where(no_fft, 0.0, _fft_allowance(out_a, n1, k1f)))
    alias_b = sg(_outside_bound((k1f + 1.0) * Kx1, tf1, (k1f + 1.0) * Kb1, tss, x_lo1, x_hi1) + _fft_allowance(out_b, n1, k1f + 1.0))
    log_keep1 = jnp.log1p(-jnp.minimum(inf1, 1.0))
    inf_a = -jnp.expm1(k1f * log_keep1)
    inf_b = -jnp.expm1((k1f + 1.0) * log_keep1)
    return out_a, alias_a, inf_a, w_lo1, pmf1, l1, log_keep1, tail1, out_b, alias_b, inf_b


def _stage_two(s1, T, Tf, k1, h1, h2, xlT, ts, K1, n, n1):
    """The stage-1 laws as mechanisms on the coarse lattice h_2: k_2 - r copies of the k_1-fold law
    and r of the (k_1 + 1)-fold law, the outside of the T-fold window bounded by Chernoff."""
    out_a, alias_a, inf_a, w_lo1, _, _, _, _, out_b, alias_b, inf_b = s1
    sg = jax.lax.stop_gradient
    tss = sg(ts)
    k2 = T // k1
    r = T - k1 * k2
    na, nb = (k2 - r).astype(jnp.float64), r.astype(jnp.float64)
    x1 = (w_lo1.astype(jnp.float64) + jnp.arange(n1)) * h1
    off2 = jnp.floor(w_lo1.astype(jnp.float64) * h1 / h2) - 1.0
    pa2, above_a, below_a = _rebin(jnp.maximum(out_a, 0.0), x1, off2, h2, n)
    pb2, above_b, below_b = _rebin(jnp.maximum(out_b, 0.0), x1, off2, h2, n)
    infa2 = inf_a + alias_a + above_a
    infb2 = inf_b + alias_b + above_b
    spec2 = _cpow(jnp.fft.rfft(pa2), k2 - r) * _cpow(jnp.fft.rfft(pb2), r)
    off2i = off2.astype(jnp.int64)
    w_lo2 = jnp.floor(jax.lax.stop_gradient(xlT) / h2).astype(jnp.int64) - 1
    out2 = jnp.roll(jnp.fft.irfft(spec2, n=n), -jnp.mod(w_lo2 - k2 * off2i, n))
    l2 = (off2 + jnp.arange(n)) * h2
    x_lo2 = (w_lo2.astype(jnp.float64) - 0.5) * h2
    x_hi2 = (w_lo2.astype(jnp.float64) + n - 0.5) * h2
    x_lo2, x_hi2, l2 = sg(x_lo2), sg(x_hi2), sg(l2)
    tf2 = sg(_near_optimum(Tf * K1, ts, x_lo2, x_hi2, num=3))
    qa, qb = sg(pa2), sg(pb2)
    Kx2 = na * _log_mgf_exact(qa, l2, tf2) + nb * _log_mgf_exact(qb, l2, tf2)
    Kb2 = na * _log_mgf_blocked(qa, l2, tss, block=64) + nb * _log_mgf_blocked(qb, l2, tss, block=64)
    alias2 = sg(_outside_bound(Kx2, tf2, Kb2, tss, x_lo2, x_hi2) + _fft_allowance(out2, n, k2))
    # +inf mass of the composed measure: (total)^count - (finite)^count, per law
    Fa, Fb = jnp.sum(pa2), jnp.sum(pb2)
    log_fin = na * jnp.log(Fa) + nb * jnp.log(Fb)
    inf2 = jnp.exp(log_fin) * jnp.expm1(na * jnp.log1p(infa2 / Fa) + nb * jnp.log1p(infb2 / Fb))
    excess = jnp.expm1(
        na * jnp.log1p(2.0 * alias_a + above_a + below_a) + nb * jnp.log1p(2.0 * alias_b + above_b + below_b)
    )
    return k2, out2, w_lo2, alias2, inf2, excess


def max_width(los, his):
    w = 0.0
    for lo, hi in zip(los, his):
        w = jnp.maximum(w, hi - lo)
    return w


def self_compose(
    mechanism, count, direction: str = "remove", grid: Grid = DEFAULT_GRID, *, tail=None, window_tail=None
) -> PLD:
    """Certified PLD of ``count`` (traced integer) independent runs of ``mechanism``."""
    return compose([(mechanism, count)], direction=direction, grid=grid, tail=tail, window_tail=window_tail)


__all__ = ["Bracket", "Grid", "DEFAULT_GRID", "PLD", "compose", "self_compose", "ctd_pmf"]
