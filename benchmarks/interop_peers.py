"""jaxdp next to its peers in one run (issue 17): jax_privacy's PLD, its Monte Carlo, pld-accounting 2.0.

Run:  python benchmarks/interop_peers.py [--mc-samples N] [--only 1|2|3|4] > benchmarks/results/interop_peers.md

Four comparisons, printed as markdown tables (progress on stderr):

1. A two-phase DP-SGD schedule through jax_privacy 2.0 (``DpsgdTrainingAccountant``: 300 steps at
   sigma 1.0, q = 0.01, then 200 at sigma 1.5, q = 0.02, delta 1e-5) with
   ``JaxdpAccountantConfig()`` (jaxdp's default grid) and with jax_privacy's own
   ``PldAccountantConfig()`` (dp_accounting's PLD, its default discretisation): eps of both, the
   relative gap, and the time of a first and a second call of each (the ratio is PLD / jaxdp).
2. Balls-in-bins (``jaxdp.BallsInBins``) against jax_privacy's Monte Carlo accountant for
   ``batch_selection.BallsInBinsSampling`` (``jax_privacy.experimental.monte_carlo``: privacy-loss
   samples of the dominating pair, ``c_col = [1]`` i.e. DP-SGD, both directions).  MC's eps is the
   root of its delta estimate ``delta_from_epsilon_and_samples(eps, samples) = delta``; its 99%
   interval inverts a Chernoff-KL interval of that estimate (the tail bound jax_privacy itself uses).  jax_privacy's formal Monte Carlo verification (``get_base_delta``) needs far more
   samples at delta 1e-5 (``minimum_samples_to_calibrate``, printed); it is not run here.
3. Random allocation, sigma 2, k = 10 of t = 100 steps, delta 1e-6, against pld-accounting 2.0
   (import ``PLD_accounting``) at its defaults: ``gaussian_allocation_epsilon_range`` (its adaptive
   entry point, default ``epsilon_accuracy``) and ``gaussian_allocation_epsilon_configurable`` with
   ``AllocationSchemeConfig()`` (loss step 1e-2, tail 1e-12, GEOM), upper bound (DOMINATES).  Cold:
   whole-process wall time (``/usr/bin/time -f %e``) of one ``python -c`` call each, jaxdp with its
   persistent compilation cache off (``JAXDP_CACHE_DIR=off``) so it compiles from nothing.  Warm: the
   second call in this process.
4. dp_accounting's ``calibrate_dp_mechanism`` (Poisson q = 0.1, 100 steps, eps 2, delta 1e-5,
   tol 1e-4) with ``JaxdpAccountant()`` (default grid) and with dp_accounting's ``PLDAccountant``
   (its default discretisation): sigma of both, sigma_jaxdp checked by ``PLDAccountant``, and the
   time of a first and a second calibration of each in this process (ratio PLD / jaxdp).

This process also runs with ``JAXDP_CACHE_DIR=off``, so every jaxdp "first call" includes compilation.
Times are wall-clock on whatever machine runs it (the header prints the CPU count).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time

os.environ["JAXDP_CACHE_DIR"] = "off"
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402

import jax  # noqa: E402

import jaxdp  # noqa: E402
from jaxdp.events import Gaussian  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def timed(f):
    t = time.perf_counter()
    v = f()
    return v, time.perf_counter() - t


# --------------------------------------------------------------------------- 1. two-phase schedule
def two_phase():
    from jax_privacy import accounting
    from jaxdp.interop.jax_privacy import JaxdpAccountantConfig

    params = accounting.DpParams(noise_multipliers=[(0, 1.0), (300, 1.5)], batch_size=[(0, 100), (300, 200)],
                                 num_samples=10_000, delta=1e-5)

    def run(cfg):
        return accounting.DpsgdTrainingAccountant(dp_accountant_config=cfg).compute_epsilon(500, params)

    out = {}
    for name, cfg in (("jaxdp", JaxdpAccountantConfig()), ("pld", accounting.PldAccountantConfig())):
        e1, t1 = timed(lambda: run(cfg))
        e2, t2 = timed(lambda: run(cfg))
        assert e1 == e2
        out[name] = (e1, t1, t2)
        log(f"two-phase {name}: eps {e1:.6f}, first {t1:.3f} s, second {t2:.3f} s")
    (ej, tj1, tj2), (ep, tp1, tp2) = out["jaxdp"], out["pld"]
    print("## 1. Two-phase schedule through jax_privacy 2.0 (`DpsgdTrainingAccountant`)\n")
    print("300 steps at sigma 1.0, q = 0.01, then 200 at sigma 1.5, q = 0.02; delta 1e-5; 10,000 examples.\n")
    print("| accountant config | eps | first call (s) | second call (s) |")
    print("|---|---|---|---|")
    print(f"| `JaxdpAccountantConfig()` | {ej:.6f} | {tj1:.3f} | {tj2:.3f} |")
    print(f"| `PldAccountantConfig()` | {ep:.6f} | {tp1:.3f} | {tp2:.3f} |")
    print(f"\nrelative gap (jaxdp - PLD) / PLD: {(ej - ep) / ep:+.2e} (acceptance: within 1%); "
          f"time ratio PLD / jaxdp: first call {tp1 / tj1:.2f}x, second call {tp2 / tj2:.2f}x\n")


# --------------------------------------------------------------------------- 2. balls-in-bins vs MC
ALPHA = 0.005  # each side: a 99% two-sided interval


def _kl(a, b):
    from scipy.special import rel_entr

    return rel_entr(a, b) + rel_entr(1 - a, 1 - b)


def _chernoff_interval(dhat, n):
    """Chernoff-KL 99% interval of the mean of n i.i.d. [0, 1] variables whose sample mean is dhat.

    P(sample mean <= a) <= exp(-n kl(a, mu)) for a < mu (and symmetrically), for any [0, 1]-valued
    variables; jax_privacy's own tail bound (``delta_calculation._hoeffding_bound``) is this one.
    """
    t = np.log(1 / ALPHA) / n
    up = 1.0 if _kl(dhat, 1 - 1e-300) <= t else scipy.optimize.brentq(lambda d: _kl(dhat, d) - t, dhat, 1 - 1e-300)
    lo = 0.0 if dhat == 0 or _kl(dhat, 0.0) <= t else scipy.optimize.brentq(lambda d: _kl(dhat, d) - t, 0.0, dhat)
    return lo, up


def mc_eps(losses, delta):
    """Point estimate and 99% (Chernoff-KL) interval of eps(delta) from privacy-loss samples.

    eps is the root of delta_hat(eps) = delta (jax_privacy's ``delta_from_epsilon_and_samples``);
    the upper end of the interval is the root of upper_99(delta_hat(eps)) = delta, the lower end of
    lower_99(delta_hat(eps)) = delta (both non-increasing in eps).  inf: the samples cannot bound it.
    """
    from jax_privacy.experimental.monte_carlo import delta_calculation as dc

    n, hi = losses.size, float(losses.max()) + 1.0

    def root(g):
        if g(0.0) <= 0:
            return 0.0
        if g(hi) > 0:
            return float("inf")
        return scipy.optimize.brentq(g, 0.0, hi, xtol=1e-7)

    dhat = lambda e: float(dc.delta_from_epsilon_and_samples(e, losses))  # noqa: E731
    point = root(lambda e: dhat(e) - delta)
    lo = root(lambda e: _chernoff_interval(dhat(e), n)[0] - delta)
    up = root(lambda e: _chernoff_interval(dhat(e), n)[1] - delta)
    return point, lo, up


def mc_losses(sigma, steps, cycle, n, positive, seed, chunk=10_000):
    from jax_privacy import batch_selection
    from jax_privacy.experimental.monte_carlo import sample_generation as sg

    strat = batch_selection.BallsInBinsSampling(iterations=steps, cycle_length=cycle)
    seeds = np.random.SeedSequence(seed).spawn((n + chunk - 1) // chunk)
    parts = []
    for i, s in enumerate(seeds):
        m = min(chunk, n - i * chunk)
        loss, _ = sg.get_privacy_loss_sample(strat, sigma, np.array([1.0]), seed=np.random.default_rng(s),
                                             positive_sample=positive, num_samples=m)
        parts.append(np.asarray(loss))
    return np.concatenate(parts)


def balls_in_bins(settings):
    from jax_privacy.experimental.monte_carlo import delta_calculation as dc

    rows = []
    for sigma, steps, cycle, delta, n_with, n_without in settings:
        ev = jaxdp.BallsInBins(Gaussian(sigma), steps, cycle)
        b1, tj1 = timed(lambda: jax.block_until_ready(jaxdp.account(ev).epsilon(delta)))
        b2, tj2 = timed(lambda: jax.block_until_ready(jaxdp.account(ev).epsilon(delta)))
        log(f"bib {sigma},{steps},{cycle}: jaxdp [{float(b1.lower):.5f}, {float(b1.upper):.5f}] first {tj1:.2f} s second {tj2:.4f} s")
        res = {}
        for d, positive, n in (("with", True, n_with), ("without", False, n_without)):
            losses, tm = timed(lambda: mc_losses(sigma, steps, cycle, n, positive, seed=17 + positive))
            (pt, lo, up), ti = timed(lambda: mc_eps(losses, delta))
            res[d] = (pt, lo, up, tm + ti, n)
            log(f"bib {sigma},{steps},{cycle}: MC sample from {d} example: eps {pt:.5f} 99% [{lo:.5f}, {up:.5f}], {tm + ti:.1f} s")
        rows.append((sigma, steps, cycle, delta, b1, tj1, tj2, res))
    print("## 2. Balls-in-bins: jaxdp vs jax_privacy's Monte Carlo accountant (`BallsInBinsSampling`)\n")
    print("MC: privacy-loss samples (`get_privacy_loss_sample`, c_col = [1]; the number per direction is in "
          "each cell), from the law with the example (loss ln Q/P, jax_privacy's default direction) and from "
          "the law without it; eps is the root of `delta_from_epsilon_and_samples(eps, samples) = delta`; the "
          "interval inverts a 99% Chernoff-KL interval of the delta estimate (valid for [0, 1] variables); "
          "inf: too few samples to bound it.  jaxdp: `jaxdp.account(BallsInBins(Gaussian(sigma), T, c)).epsilon(delta)` "
          "(c divides T here, so exact up to the certified bracket).\n")
    print("| sigma | T | c | delta | jaxdp bracket [lower, upper] | jaxdp first / second call (s) "
          "| MC eps, sample with example [99%] | MC eps, sample without [99%] | MC time (s, both) | jaxdp upper vs MC |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for sigma, steps, cycle, delta, b, tj1, tj2, res in rows:
        w, wo = res["with"], res["without"]
        mc_pt, mc_up = max(w[0], wo[0]), max(w[2], wo[2])
        mc_lo = max(w[1], wo[1])
        u = float(b.upper)
        verdict = ("inside MC's 99% interval" if mc_lo <= u <= mc_up else
                   ("below MC's interval" if u < mc_lo else "ABOVE MC's interval"))
        print(f"| {sigma} | {steps} | {cycle} | {delta:g} | [{float(b.lower):.5f}, {u:.5f}] | {tj1:.2f} / {tj2:.4f} "
              f"| {w[0]:.4f} [{w[1]:.4f}, {w[2]:.4f}] ({w[4]:,}) | {wo[0]:.4f} [{wo[1]:.4f}, {wo[2]:.4f}] ({wo[4]:,}) "
              f"| {w[3]:.1f} + {wo[3]:.1f} "
              f"| {verdict} (MC max over directions {mc_pt:.4f}, up {mc_up:.4f}) |")
    for d in sorted({s[3] for s in settings}):
        need = dc.minimum_samples_to_calibrate(0.5 * d, d)
        w = rows[0][7]["with"]
        print(f"\njax_privacy's formal MC verification at delta {d:g} (`minimum_samples_to_calibrate(base_delta="
              f"{0.5 * d:g}, target_delta={d:g})`) needs {need:,} samples per direction; at the sampling rate "
              f"measured above for the first setting that is about {need / w[4] * w[3]:,.0f} s per direction.")
    print()


# --------------------------------------------------------------------------- 3. random allocation vs pld-accounting
RA = dict(sigma=2.0, k=10, t=100, delta=1e-6)
ONE_LINERS = {
    "jaxdp": ("import jaxdp; from jaxdp.events import Gaussian; "
              "print(float(jaxdp.account(jaxdp.RandomAllocation(Gaussian(2.0), 10, 100)).epsilon(1e-6).value))"),
    "pld-accounting range": ("from PLD_accounting import gaussian_allocation_epsilon_range as f; "
                             "print(f(delta=1e-6, sigma=2.0, num_steps=100, num_selected=10))"),
    "pld-accounting configurable": ("from PLD_accounting import AllocationSchemeConfig as C, PrivacyParams as P, "
                                    "gaussian_allocation_epsilon_configurable as f; "
                                    "print(f(params=P(sigma=2.0, num_steps=100, num_selected=10, delta=1e-6), config=C()))"),
}


def cold(name):
    env = dict(os.environ, JAXDP_CACHE_DIR="off")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    r = subprocess.run(["/usr/bin/time", "-f", "WALL %e", sys.executable, "-c", ONE_LINERS[name]],
                       capture_output=True, text=True, env=env, check=True)
    wall = float([ln for ln in r.stderr.splitlines() if ln.startswith("WALL ")][-1].split()[1])
    log(f"cold {name}: {r.stdout.strip()} in {wall:.2f} s")
    return r.stdout.strip(), wall


def random_allocation():
    from PLD_accounting import AllocationSchemeConfig, PrivacyParams
    from PLD_accounting import gaussian_allocation_epsilon_configurable as eps_conf
    from PLD_accounting import gaussian_allocation_epsilon_range as eps_range

    colds = {name: cold(name) for name in ONE_LINERS}
    ev = jaxdp.RandomAllocation(Gaussian(RA["sigma"]), RA["k"], RA["t"])
    calls = {
        "jaxdp": lambda: jax.block_until_ready(jaxdp.account(ev).epsilon(RA["delta"])),
        "pld-accounting range": lambda: eps_range(delta=RA["delta"], sigma=RA["sigma"], num_steps=RA["t"], num_selected=RA["k"]),
        "pld-accounting configurable": lambda: eps_conf(
            params=PrivacyParams(sigma=RA["sigma"], num_steps=RA["t"], num_selected=RA["k"], delta=RA["delta"]),
            config=AllocationSchemeConfig()),
    }
    warm = {}
    for name, f in calls.items():
        v1, t1 = timed(f)
        v2, t2 = timed(f)
        warm[name] = (v2, t1, t2)
        log(f"in-process {name}: {v2} first {t1:.3f} s second {t2:.4f} s")
    b = warm["jaxdp"][0]
    up_range, lo_range = warm["pld-accounting range"][0]
    up_conf = warm["pld-accounting configurable"][0]
    tj_cold, tj_warm = colds["jaxdp"][1], warm["jaxdp"][2]
    print("## 3. Random allocation, sigma 2, k = 10 of t = 100, delta 1e-6: jaxdp vs pld-accounting 2.0\n")
    print("| accountant | eps | cold: whole process (s) | in-process first call (s) | warm: second call (s) "
          "| cold ratio peer / jaxdp | warm ratio peer / jaxdp |")
    print("|---|---|---|---|---|---|---|")
    print(f"| jaxdp `account(RandomAllocation(Gaussian(2), 10, 100))` | [{float(b.lower):.5f}, {float(b.upper):.5f}] "
          f"| {tj_cold:.2f} | {warm['jaxdp'][1]:.3f} | {tj_warm:.4f} | 1 | 1 |")
    for name, shown in (("pld-accounting range", f"upper {up_range:.5f}, lower {lo_range:.5f}"),
                        ("pld-accounting configurable", f"upper {up_conf:.5f}")):
        c, (_, t1, t2) = colds[name][1], warm[name]
        print(f"| {name} (defaults) | {shown} | {c:.2f} | {t1:.3f} | {t2:.4f} | {c / tj_cold:.2f}x | {t2 / tj_warm:.2f}x |")
    u = float(b.upper)
    print(f"\njaxdp's certified upper {u:.5f} {'<=' if u <= up_conf else '>'} pld-accounting's default upper "
          f"{up_conf:.5f} (`configurable`) and {'<=' if u <= up_range else '>'} {up_range:.5f} (`range`); "
          f"{'inside' if lo_range <= u <= up_range else 'outside'} the `range` interval "
          f"[{lo_range:.5f}, {up_range:.5f}].  Acceptance asks cold ratio >= 10x and warm >= 50x.\n")


def calibration():
    from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent, mechanism_calibration
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from jaxdp.interop.dp_accounting import JaxdpAccountant

    def event(sigma):
        return SelfComposedDpEvent(PoissonSampledDpEvent(0.1, GaussianDpEvent(sigma)), 100)

    kw = dict(target_epsilon=2.0, target_delta=1e-5, tol=1e-4)
    rows = {}
    for name, make in (("jaxdp `JaxdpAccountant()`", JaxdpAccountant), ("dp_accounting `PLDAccountant`", PLDAccountant)):
        t = []
        for _ in range(2):
            t0 = time.perf_counter()
            sigma = mechanism_calibration.calibrate_dp_mechanism(make, event, **kw)
            t.append(time.perf_counter() - t0)
        rows[name] = (sigma, t)
        log(f"calibration {name}: sigma {sigma} in {t}")
    (sj, tj), (sd, td) = rows.values()
    check = PLDAccountant().compose(event(sj)).get_epsilon(1e-5)
    print("## 4. `calibrate_dp_mechanism` with `JaxdpAccountant` vs dp_accounting's `PLDAccountant`\n")
    print("Poisson q = 0.1, 100 steps, target eps 2 at delta 1e-5, tol 1e-4 (dp_accounting's bisection).\n")
    print("| accountant | sigma | first calibration (s) | second calibration (s) |")
    print("|---|---|---|---|")
    for name, (sigma, t) in rows.items():
        print(f"| {name} | {sigma:.6f} | {t[0]:.2f} | {t[1]:.2f} |")
    print(f"\nrelative difference (jaxdp - PLD) / PLD: {(sj - sd) / sd:+.2e} (acceptance: within 0.5%); "
          f"eps of sigma_jaxdp by `PLDAccountant`: {check:.6f} (target 2: {'feasible' if check <= 2.0 else 'NOT feasible'}); "
          f"time ratio PLD / jaxdp: first calibration {td[0] / tj[0]:.2f}x, second {td[1] / tj[1]:.2f}x\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mc-samples", type=int, default=2_000_000, help="MC samples from the law with the example "
                    "(the worse direction here); a tenth as many from the other; half for the second setting")
    ap.add_argument("--only", choices=("1", "2", "3", "4"), default=None)
    a = ap.parse_args()
    import jax_privacy
    import dp_accounting
    from importlib.metadata import version

    print("# jaxdp next to jax_privacy, its Monte Carlo and pld-accounting (benchmarks/interop_peers.py)\n")
    print(f"jaxdp {jaxdp.__version__}, jax {jax.__version__}, jax_privacy {version('jax_privacy')}, "
          f"dp_accounting {version('dp_accounting')}, pld-accounting {version('PLD_accounting')}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible, backend {jax.default_backend()}; "
          f"JAXDP_CACHE_DIR=off (jaxdp compiles in every process).  Started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n")
    del jax_privacy, dp_accounting
    if a.only in (None, "1"):
        two_phase()
    if a.only in (None, "2"):
        n = a.mc_samples
        balls_in_bins([(1.0, 1000, 100, 1e-5, n, n // 10), (2.0, 100, 10, 1e-5, n // 2, n // 20)])
    if a.only in (None, "3"):
        random_allocation()
    if a.only in (None, "4"):
        calibration()


if __name__ == "__main__":
    main()
