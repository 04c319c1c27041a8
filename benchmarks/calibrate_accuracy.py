"""Poisson calibration vs dp_accounting at several (q, T): accuracy and feasibility (issue 5).

    python benchmarks/calibrate_accuracy.py        # writes benchmarks/results/calibrate_accuracy.md

For eps in {0.5, 1, 2, 4, 8}, delta = 1e-5 and (q, T) in PAIRS: jaxdp's stable entry point
``jaxdp.calibrate.noise_multiplier`` (one batched call over all 20 targets, certified PLD at the
default grid) against ``dp_accounting.calibrate_dp_mechanism(PLDAccountant, ...)`` (add/remove,
default interval 1e-4).  Feasibility: jaxdp's certified eps at its sigma (upper bound, default grid)
<= target, and dp_accounting's own eps at jaxdp's sigma.
"""

import os
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jaxdp  # noqa: E402
from jaxdp import calibrate as cal  # noqa: E402
from _dpa import dpa_epsilon  # noqa: E402

EPS = [0.5, 1.0, 2.0, 4.0, 8.0]
PAIRS = [(0.01, 1000), (0.1, 100), (0.05, 500), (0.002, 5000)]
DELTA = 1e-5


def main():
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant as pa

    e = np.array([x for _ in PAIRS for x in EPS])
    q = np.array([p[0] for p in PAIRS for _ in EPS])
    T = np.array([p[1] for p in PAIRS for _ in EPS])
    t0 = time.perf_counter()
    sig = np.asarray(cal.noise_multiplier(epsilon=jnp.asarray(e), delta=DELTA, sampling_probability=jnp.asarray(q),
                                          num_steps=jnp.asarray(T)))
    t_j = time.perf_counter() - t0
    cert = np.asarray(jaxdp.poisson.epsilon_for_delta(DELTA, noise_multiplier=jnp.asarray(sig),
                                                      sampling_probability=jnp.asarray(q), num_steps=jnp.asarray(T)))
    rows, t_d = [], 0.0
    for i in range(len(e)):
        def ev(s, i=i):
            return dp_accounting.PoissonSampledDpEvent(q[i], dp_accounting.GaussianDpEvent(s))

        def comp(s, i=i):
            return dp_accounting.SelfComposedDpEvent(ev(s), int(T[i]))

        t1 = time.perf_counter()
        sd = dp_accounting.calibrate_dp_mechanism(pa.PLDAccountant, comp, float(e[i]), DELTA)
        t_d += time.perf_counter() - t1
        e_dpa_at_j = dpa_epsilon(float(sig[i]), q[i], T[i], DELTA)
        rows.append((q[i], T[i], e[i], sig[i], sd, sig[i] / sd - 1, cert[i], e_dpa_at_j))
        print(rows[-1], flush=True)
    worst = max(abs(r[5]) for r in rows)
    out = ["# Poisson calibration vs dp_accounting at several (q, T)", "",
           "Command: `python benchmarks/calibrate_accuracy.py` (2-core CPU; " + time.strftime("%Y-%m-%d") + ")", "",
           f"jaxdp: one batched `jaxdp.calibrate.noise_multiplier` call for all {len(e)} targets, {t_j:.1f} s "
           f"including compilation; dp_accounting `calibrate_dp_mechanism` loop: {t_d:.1f} s.", "",
           f"Worst |sigma_jaxdp / sigma_dpa - 1| = {worst:.2e}; every jaxdp sigma certified feasible: "
           f"{all(r[6] <= r[2] for r in rows)}.", "",
           "| q | T | eps target | sigma jaxdp | sigma dp_accounting | rel. diff | jaxdp certified eps at its sigma | dp_accounting eps at jaxdp sigma |",
           "|---|---|---|---|---|---|---|---|"]
    out += [f"| {r[0]:g} | {r[1]} | {r[2]:g} | {r[3]:.6f} | {r[4]:.6f} | {r[5]:+.2e} | {r[6]:.6f} | {r[7]:.6f} |" for r in rows]
    text = "\n".join(out) + "\n"
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "calibrate_accuracy.md")
    with open(path, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
