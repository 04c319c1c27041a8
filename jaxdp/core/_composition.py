"""Discretisation (connect-the-dots) and FFT composition, one and two stages (see :mod:`jaxdp.core.pld`,
points 1, 2 and 4)."""

from __future__ import annotations

import functools
import math
from typing import Sequence, Tuple

import jax
import jax.numpy as jnp
from jax import lax

from .. import _config  # noqa: F401  (float64)
from .._config import jit
from .._pytree import pytree_dataclass
from ._conversions import _mgf_orders
from ._distribution import PLD
from ._grid import DEFAULT_GRID, Grid
from ._windows import (_chernoff_bound, _chernoff_ts, _chernoff_window, _log_mgf_blocked, _log_mgf_exact, _log_mgf_mm,
                       _near_optimum, _outside_bound)


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


# one compiled program per component structure and grid: called directly (outside another
# program) it otherwise ran op by op, re-tracing its loops on every call
@functools.partial(jit, static_argnames=("direction", "grid"))
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


DIRECTIONS = ("remove", "add")


@pytree_dataclass
class _Directed:
    """A mechanism fixed to the direction ``DIRECTIONS[index]``, with ``index`` traced.

    Lets one traced composition serve both directions (:func:`compose_directions`): only the
    mechanism's own law is written twice (a ``lax.switch``, which runs one branch)."""

    mechanism: object
    index: jax.Array

    def prepare(self):
        return _Directed(self.mechanism.prepare(), self.index)

    def privacy_loss_sf(self, x, direction=None):
        m = self.mechanism
        return lax.switch(self.index, [lambda y, d=d: m.privacy_loss_sf(y, d) for d in DIRECTIONS], x)

    def privacy_loss_range(self, direction, tail):
        m = self.mechanism
        return lax.switch(self.index, [lambda t, d=d: tuple(jnp.asarray(v, jnp.float64) for v in m.privacy_loss_range(d, t))
                                       for d in DIRECTIONS], jnp.asarray(tail, jnp.float64))

    def gdp_mu(self):
        return self.mechanism.gdp_mu()


def compose_directions(components, grid: Grid = DEFAULT_GRID, directions=DIRECTIONS, *, tail=None, window_tail=None) -> PLD:
    """:func:`compose` for each of ``directions``, stacked along a leading axis (one per direction).

    One traced program serves every direction (a ``lax.map`` over the direction index): the
    composition and everything computed from the result compile once instead of once per
    direction, which is most of a cold call's compile time (docs/performance.md).  Mechanisms are
    prepared (:meth:`prepare`) once, outside the loop."""
    components = [(m.prepare(), k) for m, k in components]
    idx = jnp.asarray([DIRECTIONS.index(d) for d in directions])
    if len(directions) == 1:
        return _stack1(compose(components, directions[0], grid, tail=tail, window_tail=window_tail))

    def one(i):
        return compose([(_Directed(m, i), k) for m, k in components], DIRECTIONS[0], grid, tail=tail,
                       window_tail=window_tail)

    return lax.map(one, idx)


def map_directions(fn, plds):
    """``fn(pld)`` for each PLD of a :func:`compose_directions` stack (one traced program), stacked."""
    if jax.tree_util.tree_leaves(plds)[0].shape[0] == 1:
        return _stack1(fn(jax.tree_util.tree_map(lambda x: x[0], plds)))
    return lax.map(fn, plds)


def _stack1(tree):
    """A one-entry stack (what ``lax.map`` over one direction would return)."""
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], tree)


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


__all__ = ["compose", "compose_directions", "map_directions", "self_compose", "ctd_pmf", "max_width"]
