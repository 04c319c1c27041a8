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
    arrs = jnp.broadcast_arrays(*[jnp.asarray(a) for a in args])
    shape = arrs[0].shape
    if shape == ():
        return fn(*arrs)
    flat = [a.reshape(-1) for a in arrs]
    out = lax.map(lambda xs: fn(*xs), tuple(flat), batch_size=min(batch_size, flat[0].shape[0]))
    return jax.tree_util.tree_map(lambda o: o.reshape(shape + o.shape[1:]), out)
