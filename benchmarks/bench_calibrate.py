"""Side-by-side: jaxdp batched calibration vs dp_accounting's calibrate_dp_mechanism loop.

    python benchmarks/bench_calibrate.py                 # 32 targets, dp_accounting on all 32
    python benchmarks/bench_calibrate.py --dp-subset 8   # dp_accounting on every 4th target (time scaled)

Poisson-subsampled Gaussian, q = 0.01, T = 1000, delta = 1e-5, eps on a geometric grid in [0.5, 8].
Prints both timings (jaxdp cold = with compilation, warm = compiled), the ratio, the largest
relative sigma difference and whether every jaxdp sigma is feasible (certified eps <= target,
and dp_accounting's eps <= target).
"""

import argparse
import time

import numpy as np

import jax.numpy as jnp
import jaxdp  # noqa: F401
from jaxdp import calibrate as cal


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--dp-subset", type=int, default=None)
    ap.add_argument("--q", type=float, default=0.01)
    ap.add_argument("--steps", type=int, default=1000)
    a = ap.parse_args()
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant as pa

    eps = np.geomspace(0.5, 8.0, a.n)
    q, T, delta = a.q, a.steps, 1e-5
    t0 = time.time()
    sol = cal.poisson_noise_multiplier(jnp.asarray(eps), delta, sampling_probability=q, num_steps=T)
    sol.value.block_until_ready()
    cold = time.time() - t0
    t0 = time.time()
    sol = cal.poisson_noise_multiplier(jnp.asarray(eps) * (1 + 1e-9), delta, sampling_probability=q, num_steps=T)
    sol.value.block_until_ready()
    warm = time.time() - t0
    sig = np.asarray(sol.value)

    idx = np.arange(a.n) if a.dp_subset is None else np.linspace(0, a.n - 1, a.dp_subset).round().astype(int)

    def ev(s):
        return dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), T)

    t0 = time.time()
    ref = {}
    for i in idx:
        ref[i] = dp_accounting.calibrate_dp_mechanism(pa.PLDAccountant, ev, float(eps[i]), delta)
    dp_time = (time.time() - t0) * a.n / len(idx)
    rel = max(abs(sig[i] / ref[i] - 1) for i in idx)
    feas_dp = all(pa.PLDAccountant().compose(ev(float(sig[i]))).get_epsilon(delta) <= eps[i] for i in idx)
    feas_cert = bool((np.asarray(sol.stats["residual"]) <= 0).all())
    print(f"targets={a.n} q={q} T={T} delta={delta}; dp_accounting on {len(idx)} targets"
          + ("" if len(idx) == a.n else f" (time scaled x{a.n / len(idx):.1f})"))
    print(f"jaxdp cold (incl. compile) {cold:.1f}s, warm {warm:.1f}s; dp_accounting {dp_time:.1f}s")
    print(f"ratio dp_accounting/jaxdp: warm {dp_time / warm:.1f}x, cold {dp_time / cold:.1f}x")
    print(f"max |sigma/sigma_dp - 1| = {rel:.2e}; feasible (certified) {feas_cert}; feasible (dp_accounting eps) {feas_dp}")
    print(f"solver steps max {int(np.max(sol.stats['num_steps']))}, expansions max {int(np.max(sol.stats['num_expand']))}")


if __name__ == "__main__":
    main()
