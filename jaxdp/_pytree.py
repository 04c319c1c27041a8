"""Frozen dataclasses as JAX pytrees: the one way jaxdp describes mechanisms, events and results.

Shared by every layer (mechanisms, the PLD engine, events, solvers), so it lives below all of them.
"""

from __future__ import annotations

import dataclasses

import jax


def pytree_dataclass(cls=None, *, static=()):
    """Frozen dataclass whose fields are pytree leaves, except those named in ``static``."""

    def wrap(c):
        c = dataclasses.dataclass(frozen=True)(c)
        names = [f.name for f in dataclasses.fields(c)]
        data = [n for n in names if n not in static]
        meta = [n for n in names if n in static]
        return jax.tree_util.register_dataclass(c, data_fields=data, meta_fields=meta)

    return wrap if cls is None else wrap(cls)
