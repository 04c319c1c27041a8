"""What a mechanism is, for jaxdp: plain data describing a dominating pair.

Every mechanism is a frozen dataclass registered as a JAX pytree (its numbers are leaves, so
``jit``/``vmap``/``grad`` work over them).  It describes, for each adjacency *direction*, an
ordered pair of output laws (A, B) -- "A" is the law on the dataset that contains the differing
example for ``"remove"`` and the law on the dataset without it for ``"add"`` (the convention of
dp_accounting's ``NeighborRel.ADD_OR_REMOVE_ONE``).

The one thing the core needs from a mechanism is the law of its privacy loss
``L = log dA/dB`` under both A and B, through survival functions:

    privacy_loss_sf(x, direction) -> (A(L > x), B(L > x))

for an array ``x`` of loss values (``x = +inf`` gives the mass of ``L = +inf`` under A), and a
placement hint

    privacy_loss_range(direction, tail) -> (lo, hi)

with ``A(L < lo) <~ tail`` and ``A(L > hi) <~ tail`` (used only to place grids: mass outside is
always accounted pessimistically by the PLD engine, so a loose hint costs accuracy, never
soundness).

From these two, :mod:`jaxdp.core.pld` builds certified privacy-loss distributions
(connect-the-dots discretisation), composes them by FFT, and converts to delta(eps), eps(delta)
and trade-off curves T(B, A) (type II error of testing B against A).  The hockey-stick divergence
is delta(eps) = A(L > eps) - e^eps B(L > eps).
"""

from __future__ import annotations

from typing import Protocol, Tuple

import jax

from .._pytree import pytree_dataclass

__all__ = ["DIRECTIONS", "Mechanism", "pytree_dataclass"]

DIRECTIONS = ("remove", "add")


class Mechanism(Protocol):
    """What the PLD engine calls on a mechanism, and nothing else.

    ``prepare()`` returns the mechanism ready for repeated evaluation (e.g. with its law tabulated
    once); a mechanism with nothing to precompute returns itself.
    """

    def prepare(self) -> "Mechanism": ...

    def privacy_loss_sf(self, x, direction: str) -> Tuple[jax.Array, jax.Array]: ...

    def privacy_loss_range(self, direction: str, tail: float) -> Tuple[jax.Array, jax.Array]: ...

    def gdp_mu(self) -> jax.Array:
        """A mu with f >= G_mu in both directions (a mu-GDP certificate), ``inf`` if none is known.

        Used only to clip the *optimistic* ends of certified brackets to a closed form that holds
        for the truth (G_mu composes exactly: k steps are sqrt(k) mu-GDP), never the reported value.
        """
        ...
