r"""jaxdp as an Opacus 1.6 accountant (needs ``pip install jaxdp[opacus]``: opacus and torch).

* :class:`JaxdpOpacusAccountant` is an ``opacus.accountants.IAccountant`` whose ``get_epsilon`` is
  the pessimistic (upper) end of jaxdp's certified bracket for the recorded history.
* :func:`register` registers it under the name ``"jaxdp"`` (:data:`MECHANISM`) in Opacus' accountant
  registry, so ``PrivacyEngine(accountant="jaxdp")``, ``PrivacyEngine.make_private_with_epsilon``
  and ``opacus.accountants.utils.get_noise_multiplier(..., accountant="jaxdp")`` use it.  Opacus has
  no plugin convention for accountants (its registry is filled by ``register_accountant`` calls), so
  importing this module registers nothing: call :func:`register` once.
* :func:`to_jaxdp_event` converts an Opacus history to the :mod:`jaxdp.events` tree accounted.

**What is accounted.**  An Opacus history is a list of ``(noise_multiplier, sample_rate, num_steps)``:
``num_steps`` DP-SGD steps, each the Gaussian mechanism (noise std ``noise_multiplier`` x the clipping
norm) on a Poisson sample of rate ``sample_rate`` -- the assumption Opacus' own ``RDPAccountant`` and
``PRVAccountant`` make.  It becomes ``Composed([SelfComposed(PoissonSampled(q, Gaussian(sigma)), n),
...])`` (equal ``(sigma, q)`` entries merged into one count).

**Adjacency: add/remove one example** (Opacus' relation for Poisson sampling).  jaxdp composes both
directions (remove, add) and reports the worse, so the number is a certified bound for the
add-or-remove relation; it does not cover replace-one, and jaxdp has no replace-one law for Poisson
sampling.

**Bad input** raises ``ValueError`` naming the argument (``noise_multiplier``, ``sample_rate``,
``num_steps``, ``history[i]``, ``delta``, ``mechanism``), never a number: a noise multiplier that is
not a finite number > 0 (a zero noise multiplier is non-private training, with no finite epsilon), a
sample rate outside (0, 1], a step count that is not an integer >= 0.

Example::

    >>> from jaxdp.interop.opacus import register
    >>> register()  # doctest: +SKIP
    >>> engine = opacus.PrivacyEngine(accountant="jaxdp")  # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Dict, List, Tuple

from opacus.accountants import IAccountant, create_accountant, register_accountant

from .. import events as ev
from ..accountant import account

#: the name under which :func:`register` puts the accountant in Opacus' registry
MECHANISM = "jaxdp"
#: Opacus accountants whose histories record the same run (Poisson-subsampled Gaussian steps as
#: ``(noise_multiplier, sample_rate, num_steps)``): their ``state_dict`` can be re-accounted by jaxdp
SAME_HISTORY = (MECHANISM, "rdp", "prv", "gdp")
_NOTHING = ev.Composed(())
_CACHE_SIZE = 64


def _real(name: str, x) -> float:
    """``x`` as a float, or ``ValueError`` naming ``name`` (bools and strings are not numbers here)."""
    if isinstance(x, (bool, str, bytes)):
        raise ValueError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {type(x).__name__} {x!r}") from None
    if math.isnan(v):
        raise ValueError(f"{name} must be a number, got nan")
    return v


def _noise_multiplier(x, where: str = "") -> float:
    s = _real(where + "noise_multiplier", x)
    if not (0.0 < s < math.inf):
        raise ValueError(f"{where}noise_multiplier must be a finite number > 0 (0 is non-private "
                         f"training: it has no finite epsilon), got {x!r}")
    return s


def _sample_rate(x, where: str = "") -> float:
    q = _real(where + "sample_rate", x)
    if not (0.0 < q <= 1.0):
        raise ValueError(f"{where}sample_rate must be in (0, 1] (a Poisson sampling probability), got {x!r}")
    return q


def _num_steps(x, where: str = "") -> int:
    n = _real(where + "num_steps", x)
    if not (0.0 <= n < math.inf and n == round(n)):
        raise ValueError(f"{where}num_steps must be an integer >= 0, got {x!r}")
    return int(round(n))


def _entries(history) -> Dict[Tuple[float, float], int]:
    """``{(sigma, q): total steps}`` of an Opacus history, validated (zero-step entries dropped)."""
    if isinstance(history, (str, bytes)) or not hasattr(history, "__iter__"):
        raise ValueError(f"history must be a list of (noise_multiplier, sample_rate, num_steps), "
                         f"got {type(history).__name__}")
    counts: Dict[Tuple[float, float], int] = {}
    for i, entry in enumerate(history):
        where = f"history[{i}]."
        try:
            sigma, q, n = entry
        except (TypeError, ValueError):
            raise ValueError(f"history[{i}] must be a (noise_multiplier, sample_rate, num_steps) "
                             f"triple, got {entry!r}") from None
        key = (_noise_multiplier(sigma, where), _sample_rate(q, where))
        k = _num_steps(n, where)
        if k:
            counts[key] = counts.get(key, 0) + k
    return counts


def to_jaxdp_event(history):
    """The :mod:`jaxdp.events` tree of an Opacus history (``Composed(())`` if it runs nothing).

    Each ``(noise_multiplier, sample_rate, num_steps)`` is ``num_steps`` Poisson-subsampled Gaussian
    steps; equal ``(noise_multiplier, sample_rate)`` entries are merged into one count.  Raises
    ``ValueError`` naming ``history[i].<field>`` for a bad entry.
    """
    parts = tuple(ev.SelfComposed(ev.PoissonSampled(q, ev.Gaussian(s)), n) for (s, q), n in _entries(history).items())
    if not parts:
        return _NOTHING
    return parts[0] if len(parts) == 1 else ev.Composed(parts)


class JaxdpOpacusAccountant(IAccountant):
    """An Opacus ``IAccountant`` reporting jaxdp's certified eps (add/remove adjacency, Poisson sampling).

    ``step`` records like Opacus' ``RDPAccountant`` (a step equal to the last entry increments its
    count); ``history`` may also be assigned directly (``get_noise_multiplier`` does), it is read and
    validated at each ``get_epsilon``.  Results are cached per (history, delta), so repeated queries
    cost nothing.

    Args:
      grid: a static :class:`jaxdp.core.pld.Grid`, or ``None`` for :func:`jaxdp.account`'s default
        (Opacus' ``create_accountant`` passes nothing).
    """

    def __init__(self, grid=None):
        super().__init__()
        self.history: List[Tuple[float, float, int]] = []
        self.grid = grid
        self._cache: Dict[object, float] = {}

    def step(self, *, noise_multiplier: float, sample_rate: float):
        """Record one optimisation step; ``ValueError`` naming the argument if it is invalid."""
        s, q = _noise_multiplier(noise_multiplier), _sample_rate(sample_rate)
        if self.history and tuple(self.history[-1][:2]) == (s, q):
            self.history[-1] = (s, q, self.history[-1][2] + 1)
        else:
            self.history.append((s, q, 1))

    def jaxdp_event(self):
        """The :mod:`jaxdp.events` tree of the history (:func:`to_jaxdp_event`)."""
        return to_jaxdp_event(self.history)

    def get_epsilon(self, delta: float, *args, **kwargs) -> float:
        """Certified upper bound on the smallest eps with delta(eps) <= ``delta`` (0 if nothing ran).

        Extra arguments are ignored, as Opacus' own accountants ignore those meant for others
        (``PrivacyEngine.make_private_with_epsilon`` forwards its keyword arguments here).
        """
        d = _real("delta", delta)
        if not 0.0 < d < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        event = self.jaxdp_event()
        if event == _NOTHING:
            return 0.0
        key = (event, d)
        if key not in self._cache:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = float(account(event, neighboring="add_remove", grid=self.grid).epsilon(d).value)
        return self._cache[key]

    def __len__(self) -> int:
        """The number of optimisation steps recorded (``IAccountant``'s contract; Opacus' RDP and PRV
        accountants return the number of history entries instead: both are 0 exactly when nothing ran)."""
        return sum(_entries(self.history).values())

    @classmethod
    def mechanism(cls) -> str:
        return MECHANISM

    def load_state_dict(self, state_dict):
        """Load a ``state_dict`` of this accountant or of Opacus' ``rdp``, ``prv`` or ``gdp`` accountant
        (same history format): a checkpoint can be re-accounted by jaxdp.  Other mechanisms and bad
        histories raise ``ValueError`` naming them."""
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ValueError("state_dict must be a non-empty mapping with keys 'history' and 'mechanism', "
                             f"got {state_dict!r}")
        mech = state_dict["mechanism"]
        if mech not in SAME_HISTORY:
            raise ValueError(f"mechanism must be one of {list(SAME_HISTORY)!r} (accountants recording "
                             f"Poisson-subsampled Gaussian steps), got {mech!r}")
        _entries(state_dict["history"])
        self.history = [tuple(e) for e in state_dict["history"]]


def register(force: bool = False):
    """Register :class:`JaxdpOpacusAccountant` in Opacus' registry as ``"jaxdp"``; returns the class.

    Idempotent.  If another class holds the name, raises ``ValueError`` unless ``force``.
    """
    try:
        register_accountant(MECHANISM, JaxdpOpacusAccountant, force=force)
    except ValueError:  # the name is taken: by this class (a second call) or by another one
        held = type(create_accountant(MECHANISM))
        if held is not JaxdpOpacusAccountant:
            raise ValueError(f"Opacus' accountant name {MECHANISM!r} is already held by {held.__qualname__}; "
                             "pass force=True to replace it") from None
    return JaxdpOpacusAccountant


__all__ = ["MECHANISM", "SAME_HISTORY", "JaxdpOpacusAccountant", "register", "to_jaxdp_event"]
