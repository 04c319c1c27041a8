r"""DP-SGD with random shuffling in f-DP (van Dijk & Ertan 2026, arXiv 2605.06259).

**Threat model and adjacency.**  Every number here is for *add/remove one example*, against the
worst-case adversary who knows every other example's contribution and sees all M noisy batch
sums of each epoch: one epoch is then the test of :math:`P = N(0, I_M)` against
:math:`Q = \frac1M\sum_j N(e_j/\sigma, I_M)` (the differing example sits in a uniformly random
round).  This is the same pair as *random allocation* / balls-and-bins with one slot per example
(Feldman & Shenfeld; the ``pld-accounting`` package, arXiv 2602.17284).  Epochs reshuffle
independently, so E epochs are the exact E-fold composition.  Direction ``"remove"`` is
:math:`T(P, Q)` (A = Q, B = P), ``"add"`` the reverse pair (the words of :func:`jaxdp.account` and
:mod:`jaxdp.poisson`; :func:`tradeoff` takes ``direction=`` or the older ``reverse=True`` for
``"add"``); ``epsilon_for_delta`` reports the worse.

**Replace-one adjacency with fixed batches is not covered**: Chua et al. (2024) show lower bounds
far above Poisson there (eps >= 4.06 at sigma = 1, 100 steps, delta = 1e-5); passing
``neighboring="replace_one"`` raises rather than silently reusing add/remove numbers.

Methods of :func:`tradeoff` / :func:`delta_gap`:

* ``"exact"`` -- the exact curve: single epoch from the exact law of the likelihood ratio
  (:mod:`jaxdp.mechanisms.shuffled`, error <= 1e-8), E epochs through the certified PLD engine
  (the pessimistic end of a bracket whose width is reported by the ``*_bracket`` companions).
  M = 1 is the Gaussian mechanism: :math:`G_{\sqrt E/\sigma}` in closed form.
* ``"berry_esseen"`` -- the paper's closed-form lower bound on f (valid where
  :math:`\sigma \ge \sqrt{3/\ln M}`; NaN elsewhere). [R] reconstruction, constant ``C`` = 0.56.
* ``"linear_test"`` -- an upper bound on f (the test on the sum of all coordinates).
* ``"clt"``, ``"edgeworth"`` -- asymptotic approximations, not bounds.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._config import jit
from .. import _config  # noqa: F401
from .. import _tracecache
from .._batch import broadcast_map, map_with
from .._validate import check, check_broadcast, check_choice, is_traced, nan_where_invalid
from .. import accountant as _accountant
from .. import events as _events
from ..roots import INFEASIBLE, find_root
from ..core import accuracy as _acc
from ..core import pld as _pld
from ..core import tradeoff as _tf
from ..mechanisms import shuffled as _exact
from ..mechanisms.shuffled import ShuffledGaussian
from . import asymptotics, closed_form

ADJACENCY = (
    "add/remove one example; the adversary knows all other contributions and sees every round "
    "(random allocation with one slot per example)"
)
METHODS = ("exact", "berry_esseen", "linear_test", "clt", "edgeworth")
NEIGHBORING = ("add_remove", "replace_one")

#: PLD grid of the multi-epoch curve and gap (static), and the first rung of eps/delta's ``accuracy``
#: ladder at the default (the same grid, ``jaxdp.core.accuracy.LADDER[1]``, so one compiled program
#: serves both).  The shuffled law is tabulated by the mechanism, so a 2^16-cell PLD keeps brackets
#: at ~1e-3 relative for E up to 1e4.  The lattice
#: moves with (sigma, M) (through the mechanism's range hint) and autodiff sees it, so gradients are
#: those of the computed function: with a frozen lattice they missed the lattice-phase term of the
#: discretisation error, ~0.3% of d eps / d sigma at sigma = 1.3, M = 2000.
SHUFFLE_GRID = _pld.Grid(size=2**16, stages=1)


def _refuse_replace_one(neighboring):
    check_choice("neighboring", neighboring, NEIGHBORING)
    if neighboring == "replace_one":
        raise NotImplementedError(
            "neighboring='replace_one': replace-one adjacency with fixed-size shuffled batches is not supported: the add/remove "
            "analysis does not apply, and Chua et al. (2024, 'How private are DP-SGD implementations?') "
            "show lower bounds far above Poisson there (eps >= 4.06 at sigma = 1, 100 steps, "
            "delta = 1e-5). jaxdp has no bound for it that it can prove sound; use add/remove adjacency "
            "(the default) or Poisson subsampling."
        )


def _params(noise_multiplier, num_rounds, num_epochs):
    check_broadcast(noise_multiplier=noise_multiplier, num_rounds=num_rounds, num_epochs=num_epochs)
    s, ok1 = check("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    m, ok2 = check("num_rounds", num_rounds, lo=1.0)
    e, ok3 = check("num_epochs", num_epochs, lo=1.0, integer=True)
    return s, m, e, ok1 & ok2 & ok3


Bracket = _pld.Bracket


# ------------------------------------------------------------------------------------------------
# rigorous closed-form envelope: every exact number is checked against it (and falls back to it)
# ------------------------------------------------------------------------------------------------
#
# For E epochs of M rounds at noise sigma (mu = sqrt(E) / sigma), in both directions:
#   G_mu <= f <= G_{mu / sqrt(M)}   (post-processing: knowing the round is the plain Gaussian;
#                                    the linear test on the sum of the coordinates),
#   f >= 1 - a - TV_up             (TV_up: mechanisms.shuffled.gap_envelope, incl. chi^2).
# A certified or exact value that crosses a bound by more than the numerical tolerance is a
# detected failure; the entry points then return the bound on their side (sound, documented in
# docs/soundness.md); within the tolerance the value is moved onto the bound, which only brings
# it closer to the truth.  NaN from the numerical law (outside its validated domain, e.g.
# sigma < SIGMA_MIN, or an unresolved table) is replaced by the same bounds.

_EPS_TOL = 1e-7  # eps / delta: certified brackets vs closed-form Gaussian values (bisection accuracy)


def _curve_env(a, s, m, e):
    return _exact.curve_envelope(a, 1.0 / s, m, e)


def _sound_curve(lo, up, a, s, m, e):
    """(lower, upper) of a curve bracket after the envelope check (shapes broadcast)."""
    floor, ceil = _curve_env(a, s, m, e)
    bad = ~jnp.isfinite(lo) | (lo > ceil + _exact.ENVELOPE_TOL)
    lo = jnp.where(bad, floor, jnp.clip(lo, floor, ceil))
    upb = ~jnp.isfinite(up) | (up < floor - _exact.ENVELOPE_TOL)
    up = jnp.where(bad | upb, ceil, jnp.clip(up, floor, ceil))
    return lo, up


def _sound_gap(lo, up, s, m, e):
    g_lo, g_up = _exact.gap_envelope(1.0 / s, m, e)
    bad = ~jnp.isfinite(up) | (up < g_lo - _exact.ENVELOPE_TOL)
    up = jnp.where(bad, g_up, jnp.clip(up, g_lo, g_up))
    lo = jnp.where(bad | ~jnp.isfinite(lo), g_lo, jnp.clip(lo, g_lo, g_up))
    return lo, up


def _gauss_eps(d, mu):
    return jnp.maximum(_tf.gaussian_epsilon(d, mu), 0.0)


def _sound_eps(lo, up, d, s, m, e):
    """eps(delta), worse direction: eps_{G_{mu/sqrt M}} <= eps <= eps_{G_mu}, and 0 when delta >= TV_up."""
    mu = jnp.sqrt(e) / s
    e_lo = _gauss_eps(d, mu / jnp.sqrt(m))
    _, tv_up = _exact.gap_envelope(1.0 / s, m, e)
    e_up = jnp.where(d >= tv_up, 0.0, _gauss_eps(d, mu))
    tol = _EPS_TOL * (1.0 + e_lo)
    bad = ~jnp.isfinite(up) | (up < e_lo - tol)
    up = jnp.where(bad, e_up, jnp.clip(up, e_lo, jnp.maximum(e_up, e_lo)))
    lo = jnp.where(bad | ~jnp.isfinite(lo), e_lo, jnp.clip(lo, e_lo, jnp.maximum(e_up, e_lo)))
    return lo, up


def _sound_delta(lo, up, x, s, m, e):
    """delta(eps), worse direction: delta_{G_{mu/sqrt M}} <= delta <= delta_{G_mu} (and <= TV_up for eps >= 0)."""
    mu = jnp.sqrt(e) / s
    d_lo = jnp.clip(_tf.gaussian_delta_unchecked(x, mu / jnp.sqrt(m)), 0.0, 1.0)
    _, tv_up = _exact.gap_envelope(1.0 / s, m, e)
    # delta(eps) <= delta(0) = TV only for eps >= 0 (delta is non-increasing in eps)
    d_g = jnp.clip(_tf.gaussian_delta_unchecked(x, mu), 0.0, 1.0)
    d_up = jnp.maximum(jnp.where(x >= 0.0, jnp.minimum(d_g, tv_up), d_g), d_lo)
    bad = ~jnp.isfinite(up) | (up < d_lo - _exact.ENVELOPE_TOL)
    up = jnp.where(bad, d_up, jnp.clip(up, d_lo, d_up))
    lo = jnp.where(bad | ~jnp.isfinite(lo), d_lo, jnp.clip(lo, d_lo, d_up))
    return lo, up


# ------------------------------------------------------------------------------------------------
# multi-epoch exact accounting through the PLD engine
# ------------------------------------------------------------------------------------------------


def _plds(sigma, m, epochs, directions, grid):
    # jaxdp.account's composition of E shuffled epochs: one tabulated law for both directions, one
    # traced composition (and conversion, :func:`jaxdp.core.pld.map_directions`) for every direction
    event = _events.SelfComposed(_events.Shuffled(_events.Gaussian(sigma), m), epochs)
    return _accountant.composed_plds(event, grid=grid, directions=directions)


def _direction(plds, i):
    """The PLD of direction ``i`` (0: remove, 1: add) of a :func:`_plds` stack."""
    return jax.tree_util.tree_map(lambda x: x[i], plds)


def _masked(ok, s, m, e):
    """Broadcast parameters, invalid entries replaced by a valid point (their results are NaN-ed)."""
    s, m, e, ok = jnp.broadcast_arrays(s, m, e, ok)
    return jnp.where(ok, s, 1.0), jnp.where(ok, m, 2.0), jnp.where(ok, e, 1.0)


@functools.partial(jit, static_argnames=("grid",))
def _pld_core(s, m, e, grid):
    """Both directions' certified E-epoch PLDs per parameter entry: the one expensive program.

    eps(delta), delta(eps), the gap and the E-epoch curves are small programs over its output, so
    the law and the FFT composition are compiled once per grid for all of them (compiling them into
    each conversion cost ~8 s of XLA time per conversion on a CI core)."""
    return broadcast_map(lambda s_, m_, e_: _plds(s_, m_, e_, ("remove", "add"), grid), s, m, e, batch_size=4)


# eps(delta) and delta(eps): the PLD conversion, the M = 1 closed form (the Gaussian mechanism,
# exact), the envelope check, and the value a masked (invalid) entry is evaluated at
_CONVERSIONS = {
    "epsilon": (lambda p, v: p.epsilon_upper(v), lambda p, v: p.epsilon_lower(_pld.lower_bound_delta(v)),
                lambda v, mu: _tf.gaussian_epsilon(v, mu), lambda *a: _sound_eps(*a), 1e-5),
    "delta": (lambda p, v: p.delta_upper(v), lambda p, v: p.delta_lower(v),
              lambda v, mu: _tf.gaussian_delta_unchecked(v, mu), lambda *a: _sound_delta(*a), 1.0),
}


@functools.partial(jit, static_argnames=("which",))
def _conversion_core(plds, v, s, m, e, ok, which):
    upper, lower, gauss, sound, fill = _CONVERSIONS[which]

    def one(ps, v_, s_, m_, e_):
        g = gauss(v_, jnp.sqrt(e_) / s_)
        ups, los = _pld.map_directions(lambda p: (upper(p, v_), lower(p, v_)), ps)
        up, lo = jnp.max(ups), jnp.max(los)
        one_round = m_ == 1.0
        lo, up = sound(lo, up, v_, s_, jnp.where(one_round, 2.0, m_), e_)
        lo, up = jnp.where(one_round, g, lo), jnp.where(one_round, g, up)
        if which == "epsilon":  # eps >= 0 by convention
            lo, up = jnp.maximum(lo, 0.0), jnp.maximum(up, 0.0)
        return lo, up

    v, ok = jnp.broadcast_arrays(v, ok)
    lo, up = map_with(one, plds, s.shape, jnp.where(ok, v, fill), s, m, e)
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


_ARG_RANGE = {"delta": dict(lo=0.0, hi=1.0, lo_open=True, hi_open=True), "epsilon": {}}


def _conversion_at(grid, which, v, s, m, e, ok):
    """eps(delta) or delta(eps) brackets on one fixed ``grid`` (``which``: the quantity returned)."""
    s1, m1, e1 = _masked(ok, s, m, e)
    # concrete calls trace each program once per machine (jaxdp._tracecache)
    plds = _tracecache.call(_pld_core, (s1, m1, e1), grid=grid)
    return _tracecache.call(_conversion_core, (plds, v, s1, m1, e1, ok), which=which)


def _conversion(arg, value, noise_multiplier, num_rounds, num_epochs, neighboring, grid, accuracy):
    """eps(delta) (``arg="delta"``) or delta(eps) (``arg="epsilon"``) as a certified bracket, at a
    fixed ``grid`` or on the grids that ``accuracy`` asks for (:mod:`jaxdp.core.accuracy`)."""
    _refuse_replace_one(neighboring)
    grid, accuracy = _acc.resolve(grid, accuracy)
    check_broadcast(**{arg: value}, noise_multiplier=noise_multiplier, num_rounds=num_rounds, num_epochs=num_epochs)
    v, okv = check(arg, value, **_ARG_RANGE[arg])
    s, m, e, ok = _params(noise_multiplier, num_rounds, num_epochs)
    which = "epsilon" if arg == "delta" else "delta"
    if grid is not None:
        lo, up = _conversion_at(grid, which, v, s, m, e, ok & okv)
    else:
        # the first rung on the parameters as given (one PLD per parameter set, shared by every
        # value of the other argument); refined per entry only where wider than asked, and only
        # for concrete input (traced: the first rung, unchecked)
        lo, up = _conversion_at(_acc.LADDER[_acc.first_rung(accuracy)], which, v, s, m, e, ok & okv)
        if not any(is_traced(x) for x in (v, s, m, e)):
            lo, up = _acc.refine(lambda g, *a: _conversion_at(g, which, *a, np.ones(np.shape(a[0]), bool)),
                                 (v, s, m, e), accuracy, first=(lo, up))
            lo, up = jnp.asarray(lo), jnp.asarray(up)
    return Bracket(lower=lo, upper=up, value=up)




def epsilon_for_delta_bracket(delta, *, noise_multiplier, num_rounds, num_epochs=1, neighboring="add_remove", grid=None,
                              accuracy=None) -> Bracket:
    """Certified bracket on eps(delta) after ``num_epochs`` shuffled epochs (worse direction)."""
    return _conversion("delta", delta, noise_multiplier, num_rounds, num_epochs, neighboring, grid, accuracy)


def epsilon_for_delta(delta, *, noise_multiplier, num_rounds, num_epochs=1, neighboring="add_remove", grid=None, accuracy=None):
    r"""Certified upper bound on :math:`\varepsilon(\delta)` (worse of add and remove) for E epochs of M rounds."""
    return _conversion("delta", delta, noise_multiplier, num_rounds, num_epochs, neighboring, grid, accuracy).upper


def delta_for_epsilon_bracket(epsilon, *, noise_multiplier, num_rounds, num_epochs=1, neighboring="add_remove", grid=None,
                              accuracy=None) -> Bracket:
    """Certified bracket on delta(eps) after ``num_epochs`` shuffled epochs (worse direction)."""
    return _conversion("epsilon", epsilon, noise_multiplier, num_rounds, num_epochs, neighboring, grid, accuracy)


def delta_for_epsilon(epsilon, *, noise_multiplier, num_rounds, num_epochs=1, neighboring="add_remove", grid=None, accuracy=None):
    r"""Certified upper bound on :math:`\delta(\varepsilon)` (worse direction)."""
    return _conversion("epsilon", epsilon, noise_multiplier, num_rounds, num_epochs, neighboring, grid, accuracy).upper


for _f in (epsilon_for_delta_bracket, epsilon_for_delta, delta_for_epsilon_bracket, delta_for_epsilon):
    _acc.document(_f)
del _f


# ------------------------------------------------------------------------------------------------
# trade-off curves and gaps
# ------------------------------------------------------------------------------------------------


def _multi(num_epochs):
    """False when the epochs are known (not traced) to be 1: the PLD path is then not compiled."""
    if is_traced(num_epochs):
        return True
    return not bool(np.all(np.asarray(num_epochs) == 1))


def _single(num_epochs):
    """False when the epochs are known (not traced) to be all above 1: the single-epoch law's
    program is then not compiled."""
    if is_traced(num_epochs):
        return True
    return bool(np.any(np.asarray(num_epochs) == 1))


@functools.partial(jit, static_argnames=("reverse", "single"))
def _tradeoff_exact_core(a, plds, s, m, e, ok, reverse, single=True):
    """Pessimistic (lower) and optimistic (upper) ends of the exact curve, shape params + a.shape.
    ``plds``: the output of :func:`_pld_core` (None when every entry is known to be one epoch);
    ``single=False``: no entry is one epoch, so the single-epoch law is not compiled."""

    def one(ps, s_, m_, e_):
        # several epochs: certified PLD bracket (under jit computed for E = 1 too, then discarded)
        if ps is not None:
            p = _direction(ps, 1 if reverse else 0)
            lo, up = p.tradeoff_lower(a), p.tradeoff_upper(a)
        if single:  # single epoch: the exact law directly, -/+ its propagated cdf error
            f_lo, f_up = _exact.tradeoff_ends(a, s_, m_, reverse=reverse)
            if ps is None:
                lo, up = f_lo, f_up
            lo = jnp.where(e_ == 1.0, f_lo, lo)
            up = jnp.where(e_ == 1.0, f_up, up)
        g = _tf.gaussian(a, jnp.sqrt(e_) / s_)
        one_round = m_ == 1.0
        lo, up = _sound_curve(lo, up, a, s_, jnp.where(one_round, 2.0, m_), e_)
        return jnp.where(one_round, g, lo), jnp.where(one_round, g, up)

    lo, up = map_with(one, plds, s.shape, s, m, e, batch_size=4)
    okb = ok.reshape(ok.shape + (1,) * a.ndim)
    return nan_where_invalid(lo, okb), nan_where_invalid(up, okb)


def _reverse(direction, reverse):
    """``direction`` in :func:`jaxdp.account`'s words ("remove": T(P, Q), "add": T(Q, P)); ``reverse`` the older spelling."""
    if direction is None:
        return bool(reverse)
    if direction == "both":
        raise ValueError("direction='both' has no single shuffled curve here: the curve valid for both ordered pairs is "
                         "the convex hull of their minimum, which jaxdp.account(Shuffled(Gaussian(sigma), M)).tradeoff(a) "
                         "gives; use direction='remove' (T(P, Q)) or 'add' (T(Q, P))")
    check_choice("direction", direction, ("remove", "add"))
    if reverse and direction == "remove":
        raise ValueError("reverse=True contradicts direction='remove' (reverse=True is direction='add'); give one of them")
    return direction == "add"


def tradeoff_bracket(a, *, noise_multiplier, num_rounds, num_epochs=1, reverse=False, neighboring="add_remove", grid=SHUFFLE_GRID,
                     direction=None) -> Bracket:
    """Bracket on the exact E-epoch curve T(P, Q) (``direction="add"`` or ``reverse=True``: T(Q, P)); ``value`` = lower end."""
    _refuse_replace_one(neighboring)
    reverse = _reverse(direction, reverse)
    a, oka = check("a", a, lo=0.0, hi=1.0)
    s, m, e, ok = _params(noise_multiplier, num_rounds, num_epochs)
    if not _multi(num_epochs) and not any(is_traced(x) for x in (a, s, m)):
        # one epoch, concrete inputs: curves grouped by method (one Fourier line per pair, the
        # tabulated law only where the line's checks fail; M = 1 is exact there)
        s, m, ok = jnp.broadcast_arrays(s, m, ok)
        s1, m1 = jnp.where(ok, s, 1.0), jnp.where(ok, m, 2.0)
        f_lo, f_up = _exact.tradeoff_curve_ends(a, s1, m1, reverse=bool(reverse))
        ex = (Ellipsis,) + (None,) * a.ndim
        one_round = (m1 == 1.0)[ex]
        lo, up = _sound_curve(f_lo, f_up, a, s1[ex], jnp.where(one_round, 2.0, m1[ex]), 1.0)
        lo, up = jnp.where(one_round, f_lo, lo), jnp.where(one_round, f_up, up)
        okb = ok.reshape(ok.shape + (1,) * a.ndim)
        lo = nan_where_invalid(nan_where_invalid(lo, okb), oka)
        up = nan_where_invalid(nan_where_invalid(up, okb), oka)
        return Bracket(lower=lo, upper=up, value=lo)
    s1, m1, e1 = _masked(ok, s, m, e)
    plds = _tracecache.call(_pld_core, (s1, m1, e1), grid=grid) if _multi(num_epochs) else None
    lo, up = _tradeoff_exact_core(a, plds, s1, m1, e1, jnp.broadcast_to(ok, s1.shape), bool(reverse), _single(num_epochs))
    lo, up = nan_where_invalid(lo, oka), nan_where_invalid(up, oka)
    return Bracket(lower=lo, upper=up, value=lo)


def tradeoff(a, *, noise_multiplier, num_rounds, num_epochs=1, method="exact", reverse=False, neighboring="add_remove",
             direction=None):
    r"""Trade-off curve :math:`f = T(P, Q)^{\otimes E}` of E shuffled epochs at type I errors ``a``.

    ``method``: ``"exact"`` (pessimistic end of the certified bracket; for E = 1 the computed
    curve minus its propagated cdf error 1e-10 (1 + |slope|), within 1e-8 of the truth except in the
    steep tails),
    ``"berry_esseen"`` (the paper's lower bound on f), ``"linear_test"`` (upper bound on f),
    ``"clt"``, ``"edgeworth"`` (approximations).  Result shape: ``params.shape + a.shape`` for
    ``"exact"``, broadcast of all arguments otherwise.

    Example::

        >>> import jaxdp.shuffle as sh
        >>> float(sh.tradeoff(0.1, noise_multiplier=1.0, num_rounds=1000))  # doctest: +SKIP
    """
    _refuse_replace_one(neighboring)
    reverse = _reverse(direction, reverse)
    check_choice("method", method, METHODS)
    if method == "exact":
        return tradeoff_bracket(a, noise_multiplier=noise_multiplier, num_rounds=num_rounds, num_epochs=num_epochs, reverse=reverse).lower
    a_, oka = check("a", a, lo=0.0, hi=1.0)
    s, m, e, ok = _params(noise_multiplier, num_rounds, num_epochs)
    if reverse and method in ("berry_esseen",):
        # (1 - delta)^E - a is symmetric in the pair, so it bounds the reverse curve too
        pass
    if method == "berry_esseen":
        f = closed_form.tradeoff_berry_esseen(a_, s, m, e)
    elif method == "linear_test":
        f = closed_form.tradeoff_linear_test(a_, s, m, e)  # G_mu is symmetric
    elif method == "clt":
        f = asymptotics.tradeoff_clt(a_, s, m, e)
    else:
        if reverse:
            raise ValueError("method='edgeworth' is available for the forward curve T(P, Q) only (reverse=False)")
        f = asymptotics.tradeoff_edgeworth(a_, s, m, e)
    return nan_where_invalid(f, ok & oka)


@functools.partial(jit, static_argnames=("law", "single"))
def _gap_exact_core(plds, s, m, e, ok, law=True, single=True):
    # law=False: the numerical law is known to be unresolved (sigma < SIGMA_MIN), so its NaN is
    # not computed; the envelope below then gives the same value as the full program, which
    # costs a minute to compile.  plds: the output of _pld_core, or None (one epoch, or law=False);
    # single=False: no entry is one epoch, so the single-epoch law is not compiled
    def one(ps, s_, m_, e_):
        # one epoch: the computed TV -/+ the claimed accuracy of single-epoch values
        lo1, up1 = _exact.tv_gap_ends(s_, m_) if (law and single) else (jnp.nan * s_, jnp.nan * s_)
        if ps is not None:  # the gap is TV, the same in both directions
            p = _direction(ps, 0)
            lo, up = p.delta_lower(0.0), p.delta_upper(0.0)
            lo, up = jnp.where(e_ == 1.0, lo1, lo), jnp.where(e_ == 1.0, up1, up)
        else:
            lo, up = lo1, up1
        g = 2.0 * jax.scipy.special.ndtr(jnp.sqrt(e_) / s_ / 2.0) - 1.0
        one_round = m_ == 1.0
        lo, up = _sound_gap(lo, up, s_, jnp.where(one_round, 2.0, m_), e_)
        return jnp.where(one_round, g, lo), jnp.where(one_round, g, up)

    lo, up = map_with(one, plds, s.shape, s, m, e, batch_size=4)
    return nan_where_invalid(lo, ok), nan_where_invalid(up, ok)


def _gap(s, m, e, ok, grid, multi=True, law=True, single=True):
    s1, m1, e1 = _masked(ok, s, m, e)
    plds = _tracecache.call(_pld_core, (s1, m1, e1), grid=grid) if (multi and law) else None
    return _gap_exact_core(plds, s1, m1, e1, jnp.broadcast_to(ok, s1.shape), law, single)


def delta_gap_bracket(*, noise_multiplier, num_rounds, num_epochs=1, neighboring="add_remove", grid=SHUFFLE_GRID) -> Bracket:
    """Bracket on the exact gap sup_a (1 - a - f(a)) (= TV; the same for both directions)."""
    _refuse_replace_one(neighboring)
    s, m, e, ok = _params(noise_multiplier, num_rounds, num_epochs)
    lo, up = _gap(s, m, e, ok, grid, _multi(num_epochs), not _below_law_domain(s), _single(num_epochs))
    return Bracket(lower=lo, upper=up, value=up)


def _below_law_domain(s):
    """Concrete noise multipliers all below the numerical law's domain (it would return NaN)."""
    return not is_traced(s) and bool(np.all(np.asarray(s) < _exact.SIGMA_MIN))


def delta_gap_envelope(*, noise_multiplier, num_rounds, num_epochs=1):
    r"""Rigorous upper bound on the gap without the numerical law (cheap, any sigma > 0).

    The bound the exact method falls back to where its law is not resolved (sigma < 0.3): the
    plain Gaussian mechanism (post-processing: knowing the round) and the chi^2 bound, whichever
    is smaller (:func:`jaxdp.mechanisms.shuffled.gap_envelope`); the Gaussian itself at M = 1.
    """
    s, m, e, ok = _params(noise_multiplier, num_rounds, num_epochs)
    return _gap(s, m, e, ok, SHUFFLE_GRID, False, False, _single(num_epochs))[1]


def delta_gap(*, noise_multiplier, num_rounds, num_epochs=1, method="exact", neighboring="add_remove"):
    r"""The gap :math:`\sup_a (1 - a - f(a))` of E epochs: the delta of :math:`f \ge 1 - a - \delta`.

    ``"exact"``: certified upper end (for E = 1 the computed TV plus its claimed accuracy 1e-8,
    ``ENVELOPE_TOL``); ``"berry_esseen"``:
    :math:`1 - (1 - \delta_{BE})^E` (upper bound, NaN outside the regime); ``"linear_test"``:
    :math:`2\Phi(\sqrt E/(2\sigma\sqrt M)) - 1` (lower bound); ``"clt"``, ``"edgeworth"``: approximations.
    """
    _refuse_replace_one(neighboring)
    check_choice("method", method, METHODS)
    if method == "exact":
        return delta_gap_bracket(noise_multiplier=noise_multiplier, num_rounds=num_rounds, num_epochs=num_epochs).upper
    s, m, e, ok = _params(noise_multiplier, num_rounds, num_epochs)
    if method == "berry_esseen":
        d1 = closed_form.delta_berry_esseen(s, m)
        ok_r = s >= closed_form.regime_threshold(m)
        g = jnp.where(ok_r, closed_form.compose_delta(jnp.minimum(d1, 1.0), e), jnp.nan)
    elif method == "linear_test":
        g = closed_form.delta_linear_test(s, m, e)
    elif method == "clt":
        g = asymptotics.delta_gap_clt(s, m, e)
    else:
        g = asymptotics.delta_gap_edgeworth(s, m, e)
    return nan_where_invalid(g, ok)


# ------------------------------------------------------------------------------------------------
# planning
# ------------------------------------------------------------------------------------------------


def _gap_fn(method, multi, single):
    """``gap(m, (s, e))``, the certified gap of ``method``; ``multi``/``single``: which laws to compile."""
    if method == "exact":
        return lambda m, p: _gap(p[0], m, p[1], jnp.asarray(True), SHUFFLE_GRID, multi, True, single)[1]
    return lambda m, p: delta_gap(noise_multiplier=p[0], num_rounds=m, num_epochs=p[1], method=method)


def rounds_for_delta_real(delta, *, noise_multiplier, num_epochs=1, method="exact", max_rounds=1e12):
    """Real-valued M* solving gap(M) = delta (gap is non-increasing in M): the feasible end, to 1e-13 relative
    (:func:`jaxdp.roots.find_root` in log M)."""
    check_choice("method", method, ("exact", "berry_esseen", "clt", "edgeworth"))
    check_broadcast(delta=delta, noise_multiplier=noise_multiplier, num_epochs=num_epochs)
    d, okd = check("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    s, oks = check("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    e, oke = check("num_epochs", num_epochs, lo=1.0, integer=True)
    if method == "berry_esseen":
        m = closed_form.rounds_berry_esseen(d, s, e)
        return nan_where_invalid(m, okd & oks & oke)
    gap = _gap_fn(method, _multi(e), _single(e))

    @jit
    def solve(d, s, e):
        # the smallest feasible real M in [1, max_rounds], searched in log M; +inf if even
        # max_rounds is infeasible (the finder then reports INFEASIBLE and its x is NaN)
        r = find_root(gap, d, (s, e), decreasing=True, lower=1.0, upper=float(max_rounds), lower_limit=1.0,
                      upper_limit=float(max_rounds), log_scale=True, rtol=1e-13, max_steps=200)
        return jnp.where(r.result == INFEASIBLE, jnp.inf, r.x)

    out = jnp.vectorize(lambda d_, s_, e_: solve(d_, s_, e_))(d, s, e) if (d.ndim or s.ndim or e.ndim) else solve(d, s, e)
    return nan_where_invalid(out, okd & oks & oke)


def rounds_for_delta(delta, *, noise_multiplier, num_epochs=1, method="exact"):
    r"""Smallest number of rounds M with ``delta_gap <= delta`` (an integer, rounded up).

    ``method="berry_esseen"`` is the paper's planning formula
    :math:`M = (3 C \rho / (v^{3/2}\delta_1))^2`, :math:`\delta_1 = 1 - (1 - \delta)^{1/E}`;
    ``"exact"`` inverts the exact gap (for E = 1 from the exact law, for E > 1 the certified
    upper end), so the returned M is feasible.  ``+inf`` when no M <= 1e12 reaches the target.
    """
    m = rounds_for_delta_real(delta, noise_multiplier=noise_multiplier, num_epochs=num_epochs, method=method)
    # the gap is non-increasing in M, so rounding the feasible real M up stays feasible
    return jnp.ceil(m)


def samples_for_delta(delta, *, noise_multiplier, batch_size, num_epochs=1, method="exact"):
    """Samples N = batch_size x M needed for ``delta`` (the paper's N ~ 1.14e7 at sigma = 1, b = 10)."""
    b, okb = check("batch_size", batch_size, lo=1.0, integer=True)
    m = rounds_for_delta(delta, noise_multiplier=noise_multiplier, num_epochs=num_epochs, method=method)
    return nan_where_invalid(b * m, okb)


def regime(noise_multiplier, num_rounds):
    """Which band (sigma, M) is in: Berry-Esseen regime, the gap band, or the impossibility band."""
    return closed_form.regime(noise_multiplier, num_rounds)


__all__ = [
    "ADJACENCY",
    "METHODS",
    "Bracket",
    "ShuffledGaussian",
    "tradeoff",
    "tradeoff_bracket",
    "delta_gap",
    "delta_gap_bracket",
    "delta_gap_envelope",
    "epsilon_for_delta",
    "epsilon_for_delta_bracket",
    "delta_for_epsilon",
    "delta_for_epsilon_bracket",
    "rounds_for_delta",
    "rounds_for_delta_real",
    "samples_for_delta",
    "regime",
    "closed_form",
    "asymptotics",
]
