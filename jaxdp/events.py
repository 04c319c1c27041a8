r"""Events: frozen descriptions of what was run, mirroring dp_accounting's ``DpEvent`` algebra.

An event says *what* a training run or a release did; :func:`jaxdp.account` says what it costs.
Every event is a frozen dataclass registered as a JAX pytree whose numbers are leaves, so
``jit``, ``vmap`` and ``grad`` go through events (a noise schedule is a pytree of sigmas).

=====================================  ==================================================
event                                  meaning (add/remove adjacency unless stated)
=====================================  ==================================================
``Gaussian(noise_multiplier)``         sum + N(0, sigma^2) per coordinate, sensitivity 1
``Laplace(noise_multiplier)``          value + Lap(0, b), sensitivity 1, b = noise_multiplier
``EpsilonDelta(epsilon, delta)``       any (eps, delta)-DP mechanism (worst case)
``PoissonSampled(q, event)``           ``event`` on a Poisson sample of rate q
``Shuffled(event, num_rounds)``        one epoch of random shuffling: the example in one
                                       uniformly random round of ``num_rounds`` (Gaussian)
``RandomAllocation(event, k, t)``      the example in k of t steps, uniformly (Gaussian; an
                                       upper bound for k > 1, see ``docs/interop.md``)
``BallsInBins(event, T, c)``           one random bin of c for the whole run, used every
                                       c-th step over T steps (Gaussian)
``SelfComposed(event, count)``         ``count`` independent runs of ``event``
``Composed(events)``                   the runs of every event in ``events``
=====================================  ==================================================

A schedule of 500 steps at sigma = 1, q = 0.01, then 300 at sigma = 1.5, q = 0.02, plus one
Laplace release::

    Composed((SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 500),
              SelfComposed(PoissonSampled(0.02, Gaussian(1.5)), 300),
              Laplace(10.0)))

**Laws.**  The accountant flattens an event tree into ``(mechanism, count)`` components
(:func:`components`): ``Composed`` concatenates, ``SelfComposed`` multiplies counts, and every
other event is a *leaf* whose dominating pair (a mechanism of :mod:`jaxdp.mechanisms`) comes from a
registry keyed by the event's type (:func:`register_law`).  A new sampler is one event class plus
one mechanism file and one ``@register_law`` function; the accountant does not change.
``PoissonSampled`` dispatches again on its inner event (:func:`register_subsampled_law`): the
Gaussian has its closed form (:class:`~jaxdp.mechanisms.SubsampledGaussian`), any other leaf with a
law is subsampled by the exact combinator :class:`~jaxdp.mechanisms.PoissonSubsampled`.

**Neighbouring relations.**  ``"add_remove"`` (dp_accounting's ``ADD_OR_REMOVE_ONE``; both
directions are accounted, the worse is reported) and ``"replace_one"`` (``REPLACE_ONE``: the
Gaussian then has sensitivity 2, as in dp_accounting; ``EpsilonDelta`` states its guarantee for the
relation in use).  An event with no sound law under the relation raises
:class:`UnsupportedEventError` naming it and why (e.g. shuffling under replace-one).

**Bad numbers** (sigma <= 0, q outside (0, 1], a negative or fractional count, ...) raise
``ValueError`` naming the event's field and its range when concrete; traced, they make every result
NaN (the ``ok`` flags of :func:`components`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Dict, List, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _config  # noqa: F401  (float64)
from ._validate import check, is_traced
from .core.pld import Grid
from .mechanisms import gaussian as _gaussian
from ._pytree import pytree_dataclass
from .mechanisms.laplace import Laplace as _LaplaceMechanism
from .mechanisms.shuffled import ShuffledGaussian
from .mechanisms.subsampled import PoissonSubsampled

NEIGHBORING = ("add_remove", "replace_one")

#: The grid used for events containing ``Shuffled`` when ``account(..., grid=None)``: the shuffled
#: law is tabulated by its mechanism, so 2^16 cells keep brackets at ~1e-3 relative (the value of
#: ``jaxdp.shuffle.SHUFFLE_GRID``, so the two agree).
SHUFFLED_GRID = Grid(size=2**16, stages=1)


class UnsupportedEventError(NotImplementedError):
    """An event jaxdp cannot bound soundly (unknown, or unsupported under the neighbouring relation)."""

    def __init__(self, event, why: str):
        self.event = event
        super().__init__(f"{type(event).__name__}: {why} (event: {event!r})")


# ------------------------------------------------------------------------------------------------
# the events
# ------------------------------------------------------------------------------------------------


@pytree_dataclass
class Gaussian:
    """Gaussian noise of std ``noise_multiplier`` x sensitivity (dp_accounting ``GaussianDpEvent``)."""

    noise_multiplier: float


@pytree_dataclass
class Laplace:
    """Laplace noise of scale ``noise_multiplier`` x sensitivity (dp_accounting ``LaplaceDpEvent``)."""

    noise_multiplier: float


@pytree_dataclass
class EpsilonDelta:
    """A mechanism known only to be (epsilon, delta)-DP (dp_accounting ``EpsilonDeltaDpEvent``)."""

    epsilon: float
    delta: float


@pytree_dataclass
class PoissonSampled:
    """``event`` run on a Poisson sample: each example in with prob. ``sampling_probability``."""

    sampling_probability: float
    event: object


@pytree_dataclass
class Shuffled:
    """One epoch of random shuffling: the example sits in one uniformly random round of ``num_rounds``.

    Each round runs ``event`` (a :class:`Gaussian`) on its batch; the adversary sees every round
    (van Dijk & Ertan, arXiv:2605.06259; ``jaxdp.shuffle``).  Epochs that reshuffle are independent:
    ``SelfComposed(Shuffled(...), num_epochs)``.  Add/remove adjacency only.
    """

    event: object
    num_rounds: float


@pytree_dataclass(static=("num_selected", "num_steps"))
class RandomAllocation:
    """Random allocation: the example is used in ``num_selected`` (k) of ``num_steps`` (t) steps,
    chosen uniformly without replacement; each step runs ``event`` (a :class:`Gaussian`).

    Feldman & Shenfeld, arXiv:2502.08202 and arXiv:2602.17284 (dp_accounting's
    ``RandomAllocationDpEvent``).  k = 1 is exactly ``Shuffled(event, t)``.  For k > 1 jaxdp
    accounts the decomposition bound (``docs/interop.md``): with t = k m + r (0 <= r < k), the run
    is dominated by r allocations of 1 of m + 1 steps composed with k - r allocations of 1 of m
    steps (:meth:`decomposition`), so a reported bracket brackets *that bound*, not the mechanism.
    ``num_selected`` and ``num_steps`` are static Python integers (they fix the decomposition).
    Add/remove adjacency only.
    """

    event: object
    num_selected: int
    num_steps: int

    def __post_init__(self):
        _set_counts(self, "num_selected", "num_steps")

    def decomposition(self):
        """The dominating composition of 1-of-m allocations (``Shuffled`` epochs) jaxdp accounts."""
        m, r = divmod(self.num_steps, self.num_selected)
        parts = []
        for rounds, count in ((m, self.num_selected - r), (m + 1, r)):
            if count:
                one = Shuffled(self.event, rounds)
                parts.append(one if count == 1 else SelfComposed(one, count))
        return parts[0] if len(parts) == 1 else Composed(tuple(parts))


@pytree_dataclass(static=("num_steps", "cycle_length"))
class BallsInBins:
    """Balls-in-bins batching (jax_privacy ``BallsInBinsSampling``): the example gets one uniformly
    random bin b in {0, ..., c - 1} for the whole run and is used at every step i with
    i mod c = b, c = ``cycle_length``, over ``num_steps`` (T) steps of ``event`` (a :class:`Gaussian`).

    With T = E c this is exactly one shuffled epoch of c rounds at noise sigma / sqrt(E) (the
    per-bin sums of the E copies, over sqrt(E), are sufficient; ``docs/interop.md``).  When c does
    not divide T, the run is a post-processing of the run with ceil(T/c) full cycles (drop the
    last steps' outputs), whose exact law is accounted: an upper bound.  Add/remove adjacency only.
    """

    event: object
    num_steps: int
    cycle_length: int

    def __post_init__(self):
        _set_counts(self, "cycle_length", "num_steps")

    @property
    def num_cycles(self) -> int:
        """ceil(T / c): the full cycles whose run dominates this one (exact when c divides T)."""
        return -(-self.num_steps // self.cycle_length)


def _set_counts(event, part, whole):
    """Validate two static counts of a sampler event with ``part <= whole`` and store them as ints."""
    cls = type(event).__name__
    p = _static_positive_int(f"{cls}.{part}", getattr(event, part))
    w = _static_positive_int(f"{cls}.{whole}", getattr(event, whole))
    if p > w:
        raise ValueError(f"{cls}.{part} must be an integer in [1, {whole} = {w}], got {p}")
    object.__setattr__(event, part, p)
    object.__setattr__(event, whole, w)


def _static_positive_int(name, x) -> int:
    if isinstance(x, (bool, np.bool_, str, bytes)) or is_traced(x):
        raise TypeError(f"{name} must be a concrete positive integer (a static setting), got {type(x).__name__}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a positive integer, got {type(x).__name__}") from None
    if not (np.isfinite(v) and v >= 1 and v == round(v)):
        raise ValueError(f"{name} must be an integer in [1, inf), got {x!r}")
    return int(round(v))


@pytree_dataclass
class SelfComposed:
    """``count`` independent runs of ``event`` (dp_accounting ``SelfComposedDpEvent``)."""

    event: object
    count: int


@pytree_dataclass
class Composed:
    """The runs of every event in ``events`` (dp_accounting ``ComposedDpEvent``); ``()`` runs nothing."""

    events: tuple

    def __post_init__(self):
        if isinstance(self.events, list):
            object.__setattr__(self, "events", tuple(self.events))


# ------------------------------------------------------------------------------------------------
# the registry: event type -> dominating pair
# ------------------------------------------------------------------------------------------------

# builder(event, neighboring) -> (mechanism, ok); ok is False (traced) where a number is invalid
_LAWS: Dict[type, Callable] = {}
_GRIDS: Dict[type, Grid] = {}
_SUBSAMPLED: Dict[type, Callable] = {}


def register_law(event_type: type, *, grid: Optional[Grid] = None):
    """Register ``builder(event, neighboring) -> (mechanism, ok)`` as the law of ``event_type``.

    The builder validates the event's numbers with :func:`jaxdp._validate.check` (names like
    ``"Gaussian.noise_multiplier"``), replaces invalid ones by safe stand-ins, and raises
    :class:`UnsupportedEventError` when the event has no sound law under ``neighboring``.
    ``grid``: the default grid of :func:`jaxdp.account` for events containing this type.
    """

    def wrap(builder):
        _LAWS[event_type] = builder
        if grid is not None:
            _GRIDS[event_type] = grid
        return builder

    return wrap


def register_subsampled_law(inner_type: type):
    """Register ``builder(inner_event, q, neighboring) -> (mechanism, ok)`` for ``PoissonSampled(q, inner)``.

    Inner types without one use :class:`~jaxdp.mechanisms.PoissonSubsampled` on the inner law.
    """

    def wrap(builder):
        _SUBSAMPLED[inner_type] = builder
        return builder

    return wrap


def _num(event, field, safe, **rng):
    x, ok = check(f"{type(event).__name__}.{field}", getattr(event, field), **rng)
    return jnp.where(ok, x, safe), ok


_POSITIVE = dict(lo=0.0, lo_open=True)


def _refuse_replace_one(event, neighboring, why):
    if neighboring == "replace_one":
        raise UnsupportedEventError(event, "neighboring='replace_one' is not supported " + why)


@register_law(Gaussian)
def _gaussian_law(event, neighboring):
    s, ok = _num(event, "noise_multiplier", 1.0, **_POSITIVE)
    # replace-one moves a clipped sum by up to 2 (dp_accounting: sensitivity 2 under REPLACE_ONE)
    return _gaussian.Gaussian(s / 2.0 if neighboring == "replace_one" else s), ok


@register_law(Laplace)
def _laplace_law(event, neighboring):
    _refuse_replace_one(event, neighboring, "for Laplace (as in dp_accounting): its "
                        "replace-one sensitivity is 1 for counts and 2 for clipped sums; the law is symmetric, so "
                        "account Laplace(noise_multiplier / sensitivity) under add_remove instead")
    b, ok = _num(event, "noise_multiplier", 1.0, **_POSITIVE)
    return _LaplaceMechanism(b), ok


@register_law(EpsilonDelta)
def _epsilon_delta_law(event, neighboring):
    e, ok1 = _num(event, "epsilon", 1.0, lo=0.0)
    d, ok2 = _num(event, "delta", 0.0, lo=0.0, hi=1.0)
    return _gaussian.EpsilonDelta(e, d), ok1 & ok2


@register_law(PoissonSampled)
def _poisson_law(event, neighboring):
    _refuse_replace_one(event, neighboring, "for Poisson sampling: jaxdp's subsampled laws "
                        "are the add/remove dominating pairs (Zhu, Dong & Wang 2022); use add_remove")
    inner = event.event
    if isinstance(inner, (Composed, SelfComposed)) or type(inner) not in _LAWS:
        raise UnsupportedEventError(
            event,
            f"the subsampled event must be a single mechanism with a privacy-loss law "
            f"({', '.join(sorted(t.__name__ for t in _LAWS if t is not PoissonSampled))}), got "
            f"{type(inner).__name__}; compose PoissonSampled events instead of sampling a composition",
        )
    q, ok = _num(event, "sampling_probability", 0.5, lo=0.0, hi=1.0, lo_open=True)
    special = _SUBSAMPLED.get(type(inner))
    if special is not None:
        m, ok_in = special(inner, q, neighboring)
    else:
        m_in, ok_in = law(inner, neighboring)
        m = PoissonSubsampled(m_in, q)
    return m, ok & ok_in


@register_subsampled_law(Gaussian)
def _subsampled_gaussian_law(inner, q, neighboring):
    s, ok = _num(inner, "noise_multiplier", 1.0, **_POSITIVE)
    return _gaussian.SubsampledGaussian(noise_multiplier=s, sampling_probability=q), ok


def _require_shuffled_gaussian(event, neighboring):
    """The shuffled law (and the samplers reduced to it) exists for a Gaussian under add/remove only."""
    if neighboring == "replace_one":
        raise UnsupportedEventError(
            event,
            "neighboring='replace_one' is not supported for shuffling: the add/remove analysis does "
            "not apply to fixed-size shuffled batches, and Chua et al. (2024) show lower bounds far "
            "above Poisson there (eps >= 4.06 at sigma = 1, 100 steps, delta = 1e-5); jaxdp has no "
            "bound it can prove sound",
        )
    if not isinstance(event.event, Gaussian):
        raise UnsupportedEventError(
            event, f"the shuffled law is known for a Gaussian inner event only, got {type(event.event).__name__}"
        )


@register_law(Shuffled, grid=SHUFFLED_GRID)
def _shuffled_law(event, neighboring):
    _require_shuffled_gaussian(event, neighboring)
    s, ok1 = _num(event.event, "noise_multiplier", 1.0, **_POSITIVE)
    m, ok2 = _num(event, "num_rounds", 2.0, lo=1.0)
    return ShuffledGaussian(noise_multiplier=s, num_rounds=m), ok1 & ok2


@register_law(BallsInBins, grid=SHUFFLED_GRID)
def _balls_in_bins_law(event, neighboring):
    _require_shuffled_gaussian(event, neighboring)
    s, ok = _num(event.event, "noise_multiplier", 1.0, **_POSITIVE)
    # E full cycles: the per-bin sums over sqrt(E) are sufficient, one epoch at sigma / sqrt(E);
    # a partial last cycle is dominated by completing it (docs/interop.md)
    e = float(event.num_cycles)
    return ShuffledGaussian(noise_multiplier=s / jnp.sqrt(e), num_rounds=jnp.asarray(float(event.cycle_length))), ok


# RandomAllocation has no single law: it flattens into its decomposition (see _flatten below)
_GRIDS[RandomAllocation] = SHUFFLED_GRID


def law(event, neighboring: str = "add_remove"):
    """``(mechanism, ok)``: the dominating pair of a leaf event (see :func:`register_law`)."""
    builder = _LAWS.get(type(event))
    if builder is None:
        raise UnsupportedEventError(
            event,
            "no privacy-loss law is registered for this type (events: "
            f"{', '.join(sorted(t.__name__ for t in _LAWS))}, SelfComposed, Composed)",
        )
    return builder(event, neighboring)


# ------------------------------------------------------------------------------------------------
# flattening
# ------------------------------------------------------------------------------------------------


@functools.singledispatch
def _flatten(event, neighboring) -> List[Tuple[object, jax.Array, jax.Array]]:
    m, ok = law(event, neighboring)
    return [(m, jnp.ones((), jnp.int64), ok)]


@_flatten.register
def _(event: SelfComposed, neighboring):
    k, ok = check("SelfComposed.count", event.count, lo=0.0, integer=True)
    k = jnp.where(ok, k, 1).astype(jnp.int64)
    return [(m, c * k, o & ok) for m, c, o in _flatten(event.event, neighboring)]


@_flatten.register
def _(event: RandomAllocation, neighboring):
    _require_shuffled_gaussian(event, neighboring)
    return _flatten(event.decomposition(), neighboring)


@_flatten.register
def _(event: Composed, neighboring):
    if not isinstance(event.events, tuple):
        raise TypeError(f"Composed.events must be a tuple (or list) of events, got {type(event.events).__name__}")
    return [c for e in event.events for c in _flatten(e, neighboring)]


def components(event, neighboring: str = "add_remove"):
    """Flatten ``event`` into ``[(mechanism, count, ok), ...]`` (one entry per leaf event).

    ``count`` is an int64 scalar (traced where the event's counts are); ``ok`` is False wherever a
    number of that leaf (or of an enclosing ``SelfComposed``) is invalid.
    """
    if neighboring not in NEIGHBORING:
        raise ValueError(f"neighboring must be one of {list(NEIGHBORING)!r}, got {neighboring!r}")
    return _flatten(event, neighboring)


def supports(event, neighboring: str = "add_remove") -> bool:
    """Whether :func:`jaxdp.account` can bound ``event`` soundly under ``neighboring`` (structure only)."""
    try:
        # traced leaves: the structure is checked, the numbers are not
        jax.eval_shape(lambda e: [c for _, c, _ in components(e, neighboring)], event)
    except (UnsupportedEventError, TypeError):
        return False
    return True


def default_grid(event) -> Optional[Grid]:
    """The registered default grid of the first event type in the tree that has one (``None``: none)."""
    if type(event) in _GRIDS:
        return _GRIDS[type(event)]
    if isinstance(event, tuple):
        children = event
    elif dataclasses.is_dataclass(event):
        children = tuple(getattr(event, f.name) for f in dataclasses.fields(event))
    else:
        return None
    for c in children:
        g = default_grid(c)
        if g is not None:
            return g
    return None


__all__ = [
    "NEIGHBORING",
    "SHUFFLED_GRID",
    "UnsupportedEventError",
    "Gaussian",
    "Laplace",
    "EpsilonDelta",
    "PoissonSampled",
    "Shuffled",
    "RandomAllocation",
    "BallsInBins",
    "SelfComposed",
    "Composed",
    "register_law",
    "register_subsampled_law",
    "law",
    "components",
    "supports",
    "default_grid",
]
