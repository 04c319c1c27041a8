"""Frozen dataclasses as JAX pytrees: the one way jaxdp describes mechanisms, events and results.

Shared by every layer (mechanisms, the PLD engine, events, solvers), so it lives below all of them.

Why not ``jax.tree_util.register_dataclass``: in jax 0.10.2 the treedefs of two dataclasses
registered that way with the same field names compare *equal* (``==``) even when their types
differ, although their hashes differ.  ``jax.jit`` keys its compiled programs on the treedef, so a
hash-table probe that meets the other type's entry returns that type's program: in
``tests/test_pytree.py`` 79 of 400 such classes got another class's result, and CI once returned
``SelfComposed(Gaussian(2.0), 10)``'s epsilon for ``SelfComposed(Laplace(2.0), 10)``.  A custom
node (``register_pytree_with_keys``) compares its type, so each event type gets its own program.
"""

from __future__ import annotations

import dataclasses

import jax
from jax.tree_util import GetAttrKey


def register(c, data, meta):
    """Register the dataclass ``c`` as a pytree node: ``data`` fields are leaves, ``meta`` static."""

    def flatten_with_keys(x):
        return [(GetAttrKey(n), getattr(x, n)) for n in data], tuple(getattr(x, n) for n in meta)

    def flatten(x):
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten(aux, children):
        # through the constructor, as register_dataclass does (its __post_init__ normalises)
        return c(**dict(zip(data, children)), **dict(zip(meta, aux)))

    jax.tree_util.register_pytree_with_keys(c, flatten_with_keys, unflatten, flatten)
    return c


def pytree_dataclass(cls=None, *, static=()):
    """Frozen dataclass whose fields are pytree leaves, except those named in ``static``."""

    def wrap(c):
        c = dataclasses.dataclass(frozen=True)(c)
        names = [f.name for f in dataclasses.fields(c)]
        return register(c, [n for n in names if n not in static], [n for n in names if n in static])

    return wrap if cls is None else wrap(cls)
