"""Broadcast numeric arguments and map a scalar function over them in bounded-memory chunks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def broadcast_map(fn, *args, batch_size: int = 16):
    """``fn`` maps scalars to a pytree of scalars (or fixed-shape arrays); apply it elementwise.

    Arguments are broadcast together; a scalar call runs ``fn`` directly, larger ones use
    ``lax.map`` with ``batch_size`` (vmapped chunks), so memory stays bounded for PLD-sized work.
    """
    return map_with(lambda _, *xs: fn(*xs), None, (), *args, batch_size=batch_size)


def map_with(fn, tree, tree_shape, *args, batch_size: int = 16):
    """``fn(entry, *scalars)`` for each entry of ``args`` broadcast with ``tree_shape``.

    ``tree``'s leaves have shape ``tree_shape + trailing`` (e.g. a batch of PLDs computed once per
    parameter entry); they are broadcast to the arguments' shape, so a conversion at many values
    reuses one computed tree per parameter entry instead of recomputing it.
    """
    arrs = jnp.broadcast_arrays(*[jnp.asarray(a) for a in args], jnp.zeros(tree_shape))[:-1]
    shape = arrs[0].shape
    lead = len(tree_shape)

    def bcast(x):
        x = jnp.asarray(x)
        x = x.reshape((1,) * (len(shape) - lead) + x.shape)
        return jnp.broadcast_to(x, shape + x.shape[len(shape):])

    tree = jax.tree_util.tree_map(bcast, tree)
    if shape == ():
        return fn(tree, *arrs)
    n = arrs[0].size
    flat_t = jax.tree_util.tree_map(lambda x: x.reshape((n,) + x.shape[len(shape):]), tree)
    flat = tuple(a.reshape(-1) for a in arrs)
    out = lax.map(lambda xs: fn(xs[0], *xs[1]), (flat_t, flat), batch_size=min(batch_size, n))
    return jax.tree_util.tree_map(lambda o: o.reshape(shape + o.shape[1:]), out)
