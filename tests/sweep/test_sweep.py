"""Sharded sweeps equal unsharded ones: 8 forced host devices, and two processes on localhost."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import jaxdp
from jaxdp.core import tradeoff as tf
from jaxdp.sweep import grid, sweep

HERE = os.path.dirname(__file__)
WORKER = os.path.join(HERE, "_worker.py")


def _run(args, env_extra, timeout=240):
    env = dict(os.environ)
    env.update(env_extra)
    return subprocess.Popen([sys.executable, WORKER, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_grid_and_sweep_match_direct_evaluation(tmp_path):
    pts = grid(mu=[0.5, 1.0, 2.0], eps=[0.0, 1.0])
    assert pts["mu"].shape == (6,)
    res = sweep(lambda mu, eps: tf.gaussian_delta(eps, mu), pts, chunk_size=4, progress=False,
                out_npz=str(tmp_path / "r.npz"), out_csv=str(tmp_path / "r.csv"))
    # eager evaluation fuses differently: equal to the last ulp only
    np.testing.assert_allclose(res["value"], np.asarray(tf.gaussian_delta(pts["eps"], pts["mu"])), rtol=1e-13)
    saved = np.load(tmp_path / "r.npz")
    np.testing.assert_array_equal(saved["value"], res["value"])
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0] == "mu,eps,value" and len(lines) == 7


def test_bad_input():
    with pytest.raises(ValueError, match="axis"):
        grid(mu=[])
    with pytest.raises(ValueError, match="same length"):
        sweep(lambda a, b: a + b, {"a": np.ones(3), "b": np.ones(2)}, progress=False)
    with pytest.raises(ValueError, match="batch_size"):
        sweep(lambda a: a, {"a": np.ones(3)}, batch_size=0, progress=False)


def test_second_sweep_reuses_the_compiled_program():
    calls = []

    def fn(a):
        calls.append(1)  # runs once per trace
        return 2.0 * a

    pts = {"a": np.arange(5.0)}
    r1 = sweep(fn, pts, chunk_size=4, batch_size=2, sharded=False, progress=False)
    n1 = len(calls)
    r2 = sweep(fn, pts, chunk_size=4, batch_size=2, sharded=False, progress=False)
    assert len(calls) == n1  # no new trace
    np.testing.assert_array_equal(r1["value"], 2.0 * np.arange(5.0))
    np.testing.assert_array_equal(r2["value"], r1["value"])


def test_eight_devices_identical_to_unsharded(tmp_path):
    flags = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    p1 = _run(["sharded", str(tmp_path / "s.npy")], flags)
    p2 = _run(["plain", str(tmp_path / "p.npy")], {"JAX_PLATFORMS": "cpu"})
    errs = []
    for p in (p1, p2):
        out, err = p.communicate(timeout=300)
        errs.append(err)
        assert p.returncode == 0, err[-2000:]
    assert "devices 8" in errs[0]
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), np.load(tmp_path / "p.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "s_batched.npy"), np.load(tmp_path / "p_batched.npy"))
    # batched and whole-chunk vmaps are the same per-point program, fused differently: last ulps
    np.testing.assert_allclose(np.load(tmp_path / "p_batched.npy"), np.load(tmp_path / "p.npy"), rtol=1e-13, atol=1e-300)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return str(port)


def test_two_process_multihost_identical_to_unsharded(tmp_path):
    port = _free_port()
    env = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    procs = [_run(["multi", str(tmp_path / "m.npy"), str(i), port], env) for i in range(2)]
    plain = _run(["plain", str(tmp_path / "p.npy")], {"JAX_PLATFORMS": "cpu"})
    errs = []
    for p in procs + [plain]:
        out, err = p.communicate(timeout=300)
        errs.append(err)
        assert p.returncode == 0, err[-3000:]
    assert "devices 4 processes 2" in errs[0]
    np.testing.assert_array_equal(np.load(tmp_path / "m.npy"), np.load(tmp_path / "p.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "m_batched.npy"), np.load(tmp_path / "p_batched.npy"))
    _ = jaxdp
