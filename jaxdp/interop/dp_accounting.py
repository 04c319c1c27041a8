r"""jaxdp as a Google ``dp_accounting`` accountant (needs ``pip install jaxdp[dp_accounting]``).

* :func:`from_dp_accounting` converts a ``DpEvent`` tree to a :mod:`jaxdp.events` tree:
  ``GaussianDpEvent``, ``LaplaceDpEvent``, ``PoissonSampledDpEvent`` (of a
  Gaussian or Laplace), ``SelfComposedDpEvent``, ``ComposedDpEvent``, ``NoOpDpEvent`` (runs
  nothing), ``NonPrivateDpEvent`` (any mechanism: ``EpsilonDelta(0, 1)``, so eps = inf for every
  delta < 1), and ``EpsilonDeltaDpEvent`` / ``RandomAllocationDpEvent`` where the installed dp_accounting
  has them (0.6.0 has neither).
  A noise multiplier of 0 is non-private and a sampling probability of 0 runs nothing, as in
  dp_accounting's ``PLDAccountant``.
* :class:`JaxdpAccountant` is a ``dp_accounting.PrivacyAccountant``: ``compose`` only records
  events (identical ones are merged into one count), and ``get_epsilon`` / ``get_delta`` build the
  composed certified PLD once per query set, so a 1000-step schedule of single ``compose`` calls
  costs one build.  The numbers reported are the pessimistic ends of jaxdp's certified brackets,
  computed alone (no lower end: a smaller program to compile), on :data:`DEFAULT_GRID` unless a
  grid is given.

Neighbouring relations: ``ADD_OR_REMOVE_ONE`` and ``REPLACE_ONE`` (where jaxdp has a sound law under
it: the Gaussian with sensitivity 2, ``EpsilonDelta``); an event without one gives
``CompositionErrorDetails`` naming it (``compose`` then raises dp_accounting's
``UnsupportedEventError``).  ``REPLACE_SPECIAL`` is refused when the accountant is made.

Example::

    >>> import dp_accounting
    >>> from jaxdp.interop.dp_accounting import JaxdpAccountant
    >>> acc = JaxdpAccountant()
    >>> _ = acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 1000)
    >>> eps = acc.get_epsilon(1e-5)  # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Dict

import dp_accounting
from dp_accounting import dp_event

from .. import events as ev
from ..accountant import account
from ..core.pld import Grid

NeighborRel = dp_accounting.NeighboringRelation
_RELATIONS = {NeighborRel.ADD_OR_REMOVE_ONE: "add_remove", NeighborRel.REPLACE_ONE: "replace_one"}

#: what a non-private step is to jaxdp: an (eps = 0, delta = 1) guarantee, i.e. none
NON_PRIVATE = ev.EpsilonDelta(0.0, 1.0)
_NOTHING = ev.Composed(())

#: The adapter's grid when none is given: one stage of 2^16 cells (``jaxdp.events.SHUFFLED_GRID``'s
#: size), unless an event type registers its own default.  dp_accounting's callers make a fresh
#: accountant per evaluation (``calibrate_dp_mechanism``, jax_privacy's calibration) and read one
#: number from it, the certified upper end.  This grid gives it close to ``jaxdp.account``'s
#: two-stage default grid at typical DP-SGD settings, in under a tenth of the time per call, but
#: more pessimistic for long compositions at tiny delta (11% above it at q = 1e-4, 1e5 steps,
#: delta = 1e-12): pass ``grid=jaxdp.core.pld.DEFAULT_GRID`` there (docs/interop.md).
DEFAULT_GRID = Grid(size=2**16)


class ConversionError(ValueError):
    """A ``DpEvent`` that jaxdp cannot account soundly; ``invalid_event`` is the offending sub-event."""

    def __init__(self, invalid_event, message: str):
        self.invalid_event = invalid_event
        super().__init__(f"{message} (event: {invalid_event})")
        self.message = message


class _Absent:
    """Stands for a DpEvent class the installed dp_accounting does not have (nothing is one)."""


def _optional_type(name):
    """A DpEvent class that only some dp_accounting versions have (0.6.0 has neither of ours)."""
    return getattr(dp_event, name, _Absent)


def _leaf(event):
    """The jaxdp event of a leaf ``DpEvent`` (no Composed / SelfComposed)."""
    if isinstance(event, dp_event.NoOpDpEvent):
        return _NOTHING
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return NON_PRIVATE
    if isinstance(event, dp_event.GaussianDpEvent):
        return NON_PRIVATE if event.noise_multiplier == 0 else ev.Gaussian(float(event.noise_multiplier))
    if isinstance(event, dp_event.LaplaceDpEvent):
        return NON_PRIVATE if event.noise_multiplier == 0 else ev.Laplace(float(event.noise_multiplier))
    if isinstance(event, _optional_type("EpsilonDeltaDpEvent")):
        return ev.EpsilonDelta(float(event.epsilon), float(event.delta))
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        if not isinstance(event.event, (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent)):
            raise ConversionError(event, "the subevent of a PoissonSampledDpEvent must be a GaussianDpEvent "
                                  f"or LaplaceDpEvent, found {type(event.event).__name__}")
        if event.sampling_probability == 0:
            return _NOTHING
        inner = _leaf(event.event)
        return NON_PRIVATE if inner == NON_PRIVATE else ev.PoissonSampled(float(event.sampling_probability), inner)
    if isinstance(event, _optional_type("RandomAllocationDpEvent")):
        if not isinstance(event.event, dp_event.GaussianDpEvent) or event.event.noise_multiplier == 0:
            raise ConversionError(event, "jaxdp accounts random allocation of a GaussianDpEvent with "
                                  "noise_multiplier > 0 only")
        return ev.RandomAllocation(_leaf(event.event), int(event.num_selected), int(event.num_steps))
    raise ConversionError(event, f"jaxdp has no law for {type(event).__name__}")


def _leaves(event, count: int, out: Dict[object, int], neighboring: str):
    """Accumulate ``{jaxdp leaf event: count}`` of ``event`` run ``count`` times (merging equal leaves)."""
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _leaves(event.event, count * int(event.count), out, neighboring)
    if isinstance(event, dp_event.ComposedDpEvent):
        for e in event.events:
            _leaves(e, count, out, neighboring)
        return out
    if not isinstance(event, dp_event.DpEvent):
        raise ConversionError(event, f"expected a dp_accounting DpEvent, got {type(event).__name__}")
    leaf = _leaf(event)
    if leaf == _NOTHING:
        return out
    try:  # the relation and the numbers, checked on the leaf so the error names this sub-event
        ev.components(leaf, neighboring)
    except (ev.UnsupportedEventError, ValueError, TypeError) as e:
        raise ConversionError(event, str(e)) from None
    if count:  # (supports() asks with count 0: checked, nothing recorded)
        out[leaf] = out.get(leaf, 0) + count
    return out


def _assemble(counts: Dict[object, int]):
    parts = tuple(e if k == 1 else ev.SelfComposed(e, k) for e, k in counts.items())
    return parts[0] if len(parts) == 1 else ev.Composed(parts)


def from_dp_accounting(event, *, neighboring: str = "add_remove"):
    """The :mod:`jaxdp.events` tree of a dp_accounting ``DpEvent`` (equal leaves merged into counts).

    Raises :class:`ConversionError` (a ``ValueError``) naming the first sub-event jaxdp cannot
    account soundly under ``neighboring`` (``"add_remove"`` or ``"replace_one"``).
    """
    if neighboring not in ev.NEIGHBORING:
        raise ValueError(f"neighboring must be one of {list(ev.NEIGHBORING)!r}, got {neighboring!r}")
    return _assemble(_leaves(event, 1, {}, neighboring))


class JaxdpAccountant(dp_accounting.PrivacyAccountant):
    """A ``dp_accounting.PrivacyAccountant`` whose numbers are jaxdp's certified upper bounds.

    Args:
      neighboring_relation: ``ADD_OR_REMOVE_ONE`` (both directions, the worse is reported) or
        ``REPLACE_ONE``.
      grid: a static :class:`jaxdp.core.pld.Grid`, or ``None`` for :data:`DEFAULT_GRID` (or the
        default grid of an event type that registers one, e.g. shuffled events).
    """

    def __init__(self, neighboring_relation: NeighborRel = NeighborRel.ADD_OR_REMOVE_ONE, grid=None):
        if neighboring_relation not in _RELATIONS:
            raise ValueError(
                "neighboring_relation must be NeighboringRelation.ADD_OR_REMOVE_ONE or REPLACE_ONE "
                f"(jaxdp has no laws under {neighboring_relation}), got {neighboring_relation!r}")
        super().__init__(neighboring_relation)
        self._neighboring = _RELATIONS[neighboring_relation]
        self._grid = grid
        self._counts: Dict[object, int] = {}
        self._account = None  # the jaxdp Account of the ledger, built at the first query

    def _maybe_compose(self, event, count: int, do_compose: bool):
        try:
            counts = _leaves(event, int(count), {}, self._neighboring)
        except ConversionError as e:
            return self.CompositionErrorDetails(invalid_event=e.invalid_event, error_message=e.message)
        if do_compose:
            for leaf, k in counts.items():
                self._counts[leaf] = self._counts.get(leaf, 0) + k
            self._account = None
        return None

    def jaxdp_event(self):
        """The jaxdp event of everything composed so far (``Composed(())`` if nothing)."""
        return _assemble(self._counts) if self._counts else _NOTHING

    def _acc(self):
        if self._account is None:
            event = self.jaxdp_event()
            grid = self._grid if self._grid is not None else (ev.default_grid(event) or DEFAULT_GRID)
            self._account = account(event, neighboring=self._neighboring, grid=grid)
        return self._account

    def _non_private(self) -> bool:
        return NON_PRIVATE in self._counts

    def get_epsilon(self, target_delta: float) -> float:
        """Certified upper bound on the smallest eps with delta(eps) <= ``target_delta``."""
        if self._non_private():
            return math.inf
        return float(self._acc().epsilon_upper(target_delta))

    def get_delta(self, target_epsilon: float) -> float:
        """Certified upper bound on delta(``target_epsilon``)."""
        if self._non_private():
            return 1.0
        return float(self._acc().delta_upper(target_epsilon))


__all__ = ["ConversionError", "DEFAULT_GRID", "JaxdpAccountant", "NON_PRIVATE", "from_dp_accounting"]
