"""The on-disk cache of traced programs (jaxdp._tracecache): same values, traced once, rebuilt when bad."""

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdp import _config, _tracecache


@functools.partial(_config.jit, static_argnames=("scale",))
def _affine(x, y, *, scale):
    return jnp.sin(x) * scale + y, jnp.sum(y)


@pytest.fixture
def traces(tmp_path, monkeypatch):
    monkeypatch.setattr(_tracecache, "directory", lambda: str(tmp_path))
    monkeypatch.setattr(_tracecache, "_CALLS", {})
    return tmp_path


def _args():
    return np.linspace(0.0, 1.0, 5), np.arange(5.0)


def test_same_values_as_the_program_itself_and_one_entry_per_setting(traces):
    x, y = _args()
    got = _tracecache.call(_affine, (x, y), scale=2.0)
    want = _affine(x, y, scale=2.0)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert len(os.listdir(traces)) == 1
    _tracecache.call(_affine, (x, y), scale=3.0)  # another static setting: another entry
    _tracecache.call(_affine, (x[:3], y[:3]), scale=2.0)  # another shape: another entry
    assert len(os.listdir(traces)) == 3


def test_a_new_process_loads_instead_of_tracing(traces, monkeypatch):
    x, y = _args()
    first = _tracecache.call(_affine, (x, y), scale=2.0)
    monkeypatch.setattr(_tracecache, "_CALLS", {})  # what a new process starts with

    def refuse(*a, **k):
        raise AssertionError("traced again although the entry is on disk")

    monkeypatch.setattr(jax.export, "export", refuse)
    again = _tracecache.call(_affine, (x, y), scale=2.0)
    np.testing.assert_array_equal(np.asarray(first[0]), np.asarray(again[0]))


def test_a_damaged_entry_is_rebuilt(traces, monkeypatch):
    x, y = _args()
    _tracecache.call(_affine, (x, y), scale=2.0)
    (entry,) = traces.iterdir()
    entry.write_bytes(b"not a pickle")
    monkeypatch.setattr(_tracecache, "_CALLS", {})
    got = _tracecache.call(_affine, (x, y), scale=2.0)
    np.testing.assert_array_equal(np.asarray(got[1]), 10.0)
    assert entry.read_bytes() != b"not a pickle"


def test_traced_arguments_and_a_switched_off_cache_call_the_program_directly(traces, monkeypatch):
    x, y = _args()
    out = jax.jit(lambda a: _tracecache.call(_affine, (a, y), scale=2.0)[0])(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(x) * 2.0 + y)
    monkeypatch.setattr(_tracecache, "directory", lambda: None)
    _tracecache.call(_affine, (x, y), scale=5.0)
    assert not list(traces.iterdir())
