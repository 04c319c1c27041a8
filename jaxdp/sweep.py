"""Large parameter sweeps of any jaxdp function, sharded over every device and host.

:func:`sweep` evaluates ``fn(**point)`` on every point of a grid.  The grid is cut into chunks
(memory stays bounded); each chunk is laid out along a 1-D device mesh with
``NamedSharding(mesh, P("points"))`` and evaluated by one jitted ``vmap`` of ``fn``, so XLA runs it
on all local devices at once.  With several processes (hosts) started with
``jax.distributed.initialize`` the mesh spans ``jax.devices()`` of every process: each process
feeds its own slice of every chunk (``jax.make_array_from_process_local_data``) and the results
are gathered back to every process.  On one CPU it simply runs the chunks.

Example::

    >>> import numpy as np, jaxdp
    >>> from jaxdp.sweep import sweep, grid
    >>> pts = grid(noise_multiplier=np.linspace(0.8, 2, 4), sampling_probability=[0.01], num_steps=[1000])
    >>> res = sweep(lambda **kw: jaxdp.poisson.epsilon_for_delta(1e-5, **kw), pts, progress=False)  # doctest: +SKIP
    >>> res["value"].shape  # doctest: +SKIP
    (4,)
"""

from __future__ import annotations

import csv
import functools
import sys
import time
from typing import Callable, Mapping

import jax
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from ._config import jit
from . import _config  # noqa: F401


def grid(**axes) -> dict:
    """Cartesian product of 1-D axes, as a dict of flat float64 arrays (one entry per point)."""
    if not axes:
        raise ValueError("grid needs at least one axis, e.g. grid(noise_multiplier=[1, 2])")
    names = list(axes)
    vals = []
    for k in names:
        v = np.asarray(axes[k], dtype=np.float64).reshape(-1)
        if v.size == 0:
            raise ValueError(f"axis {k!r} is empty")
        vals.append(v)
    mesh = np.meshgrid(*vals, indexing="ij")
    return {k: m.reshape(-1) for k, m in zip(names, mesh)}


def _mesh():
    devs = np.array(jax.devices())
    return Mesh(devs, ("points",))


@functools.lru_cache(maxsize=32)
def _runner(fn, names, sharded, batch_size):
    """The jitted program for ``fn`` (cached: a second sweep of the same ``fn`` does not compile
    again).

    ``batch_size`` None: one ``vmap`` over the chunk (sharded by ``jit``); an integer: a ``lax.map``
    over vmapped batches of that many points on each device (``shard_map``), which keeps the
    working set of PLD-sized functions in cache (the accountants' own array calls do the same).
    """
    one = lambda *xs: fn(**dict(zip(names, xs)))  # noqa: E731
    if batch_size is None:
        local = jax.vmap(one)
    else:
        local = lambda *cols: lax.map(lambda xs: one(*xs), cols, batch_size=batch_size)  # noqa: E731
    if not sharded:
        return jit(local), None
    mesh = _mesh()
    spec = NamedSharding(mesh, P("points"))
    if batch_size is not None:
        # (check_vma off: loops inside jaxdp start from constant carries, which the varying-axes
        # check rejects; every point is computed independently, so nothing needs the check)
        local = jax.shard_map(local, mesh=mesh, in_specs=(P("points"),) * len(names), out_specs=P("points"),
                              check_vma=False)
    return jit(local, in_shardings=(spec,) * len(names), out_shardings=spec), spec


def _progress(done, total, t0, stream):
    frac = done / total
    bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
    rate = done / max(time.time() - t0, 1e-9)
    eta = (total - done) / max(rate, 1e-9)
    stream.write(f"\r[{bar}] {done}/{total} points  {rate:,.0f}/s  eta {eta:,.0f}s")
    if done >= total:
        stream.write("\n")
    stream.flush()


def sweep(
    fn: Callable,
    points: Mapping[str, np.ndarray],
    *,
    chunk_size: int = 1024,
    batch_size: int | None = None,
    sharded: bool = True,
    progress: bool = True,
    out_npz: str | None = None,
    out_csv: str | None = None,
) -> dict:
    """Evaluate ``fn(**point)`` for every point; returns ``dict(points..., value=...)`` as numpy.

    ``fn`` must map scalar keyword arguments to a scalar (or a fixed-shape array / pytree of them);
    it is vmapped.  ``chunk_size`` points are evaluated per step (rounded up to a multiple of the
    global device count).  ``sharded=False`` evaluates on the default device only (the reference
    the tests compare with).  Results are identical either way: every point is computed by the
    same program.

    ``batch_size`` (optional): evaluate each device's share of a chunk as a ``lax.map`` over vmapped
    batches of this many points instead of one ``vmap``; for PLD-sized functions (e.g. Poisson
    eps(delta)) 16 is 1.4x faster on CPU; the chunk is then rounded up to a multiple of
    ``batch_size`` times the device count.  A second call with the same ``fn`` object reuses the
    compiled program.
    """
    names = list(points)
    if not names:
        raise ValueError("points is empty: pass e.g. grid(noise_multiplier=[...])")
    cols = [np.asarray(points[k], dtype=np.float64).reshape(-1) for k in names]
    n = cols[0].shape[0]
    if n == 0:
        raise ValueError("points has no entries")
    if any(c.shape[0] != n for c in cols):
        raise ValueError("every entry of points must have the same length (use jaxdp.sweep.grid)")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if batch_size is not None and (int(batch_size) != batch_size or batch_size < 1):
        raise ValueError(f"batch_size must be None or an integer >= 1, got {batch_size!r}")

    ndev = jax.device_count() if sharded else 1
    # every device's share a whole number of batches: each point is then computed by the same
    # vmapped batch program however the chunk is split (no remainder batch fused differently)
    per = ndev * (1 if batch_size is None else int(batch_size))
    chunk = int(np.ceil(chunk_size / per) * per)
    run, spec = _runner(fn, tuple(names), bool(sharded), batch_size)
    if sharded:
        nproc, pid = jax.process_count(), jax.process_index()
    else:
        nproc, pid = 1, 0

    outs = []
    t0 = time.time()
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        # pad the last chunk by repeating its last point (same program, results dropped)
        idx = np.minimum(np.arange(start, start + chunk), stop - 1)
        args = [c[idx] for c in cols]
        if sharded and nproc > 1:
            per = chunk // nproc
            args = [
                jax.make_array_from_process_local_data(spec, a[pid * per : (pid + 1) * per], (chunk,))
                for a in args
            ]
        res = run(*args)
        if sharded and nproc > 1:
            from jax.experimental import multihost_utils

            res = multihost_utils.process_allgather(res, tiled=True)
        res = jax.tree_util.tree_map(lambda r: np.asarray(r)[: stop - start], res)
        outs.append(res)
        if progress and pid == 0:
            _progress(stop, n, t0, sys.stderr)
    value = jax.tree_util.tree_map(lambda *rs: np.concatenate(rs, axis=0), *outs)
    result = {k: c for k, c in zip(names, cols)}
    result["value"] = value
    if pid == 0:
        if out_npz:
            flat = dict(result)
            if not isinstance(value, np.ndarray):
                flat.pop("value")
                for i, leaf in enumerate(jax.tree_util.tree_leaves(value)):
                    flat[f"value_{i}"] = leaf
            np.savez(out_npz, **flat)
        if out_csv:
            leaves = jax.tree_util.tree_leaves(value)
            with open(out_csv, "w", newline="") as f:
                w = csv.writer(f)
                vnames = ["value"] if len(leaves) == 1 else [f"value_{i}" for i in range(len(leaves))]
                w.writerow(names + vnames)
                for row in zip(*cols, *[np.asarray(l).reshape(n, -1)[:, 0] for l in leaves]):
                    w.writerow([repr(float(x)) for x in row])
    return result


__all__ = ["grid", "sweep"]


