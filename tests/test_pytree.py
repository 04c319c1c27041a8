"""Each pytree_dataclass type gets its own jit program (a jax 0.10.2 treedef-equality bug, see
jaxdp/_pytree.py).  Reference: the class's own factor, known by construction."""

from __future__ import annotations

import pytest
import jax
import numpy as np

import jaxdp
from jaxdp._pytree import pytree_dataclass
from jaxdp.events import Gaussian, Laplace, SelfComposed


def _classes(n):
    out = []
    for i in range(n):
        c = type(f"K{i}", (), {"__annotations__": {"x": float}, "factor": float(i)})
        out.append(pytree_dataclass(c))
    return out


def test_distinct_types_have_distinct_treedefs():
    a = jax.tree_util.tree_structure(SelfComposed(Gaussian(2.0), 10))
    b = jax.tree_util.tree_structure(SelfComposed(Laplace(2.0), 10))
    assert a != b


@pytest.mark.acceptance  # README suite budget (issue 18): property check over many compiled shapes, 15-40 s of XLA
def test_jit_never_hands_one_type_another_types_program():
    # register_dataclass: ~20% of 400 same-field classes got another class's result (jax 0.10.2)
    classes = _classes(400)
    f = jax.jit(lambda e: e.x * type(e).factor)
    got = np.array([float(f(c(1.0))) for c in classes])
    np.testing.assert_array_equal(got, np.arange(400.0))


def test_static_fields_and_key_paths_survive():
    from jaxdp.events import RandomAllocation

    e = RandomAllocation(Gaussian(2.0), num_selected=2, num_steps=6)
    leaves, tree = jax.tree_util.tree_flatten(e)
    assert jax.tree_util.tree_unflatten(tree, leaves) == e
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(e)[0]]
    assert paths == [".event.noise_multiplier"]
    b = jaxdp.account(SelfComposed(Laplace(2.0), 3)).epsilon(1e-5)
    assert np.isfinite(float(b.upper))
