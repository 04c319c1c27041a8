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

The engine is split by idea: :mod:`jaxdp.core._grid` (the static :class:`Grid`),
:mod:`jaxdp.core._conversions` (delta, eps and curves of a discrete pmf; the Chernoff conversion),
:mod:`jaxdp.core._distribution` (the certified :class:`PLD` and its brackets),
:mod:`jaxdp.core._windows` (log-MGFs and the Chernoff windows) and :mod:`jaxdp.core._composition`
(discretisation and FFT composition).  This module is its public face.
"""

from __future__ import annotations

from ._composition import compose, compose_directions, ctd_pmf, map_directions, max_width, self_compose
from ._distribution import PLD, Bracket, lower_bound_delta
from ._grid import DEFAULT_GRID, Grid

__all__ = ["Grid", "DEFAULT_GRID", "Bracket", "PLD", "lower_bound_delta", "compose", "compose_directions", "map_directions",
           "self_compose", "ctd_pmf",
           "max_width"]
