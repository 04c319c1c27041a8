"""Run a small sweep and save it; used by test_sweep.py in subprocesses (sharded / multi-process)."""

import os
import sys

import numpy as np


def main():
    mode, out = sys.argv[1], sys.argv[2]
    import jax

    if mode == "multi":
        pid, port = int(sys.argv[3]), sys.argv[4]
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    import jaxdp
    from jaxdp.core import tradeoff as tf
    from jaxdp.sweep import grid, sweep

    pts = grid(mu=np.linspace(0.1, 3.0, 37), eps=np.array([0.0, 0.5, 1.0]))

    def fn(mu, eps):
        return tf.gaussian_delta(eps, mu) + 0.0 * tf.gaussian_epsilon(1e-5, mu)

    res = sweep(fn, pts, chunk_size=16, sharded=(mode != "plain"), progress=False)
    # the batched program (lax.map over vmapped batches; shard_map when sharded)
    resb = sweep(fn, pts, chunk_size=16, batch_size=3, sharded=(mode != "plain"), progress=False)
    if jax.process_index() == 0:
        np.save(out, res["value"])
        np.save(out[:-4] + "_batched.npy", resb["value"])
    print("devices", jax.device_count(), "processes", jax.process_count(), file=sys.stderr)
    _ = jaxdp, os


if __name__ == "__main__":
    main()
