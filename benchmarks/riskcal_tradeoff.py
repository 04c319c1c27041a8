"""jaxdp's Poisson trade-off bracket vs riskcal's ``get_beta_from_pld`` (issue 2).

Run:  python benchmarks/riskcal_tradeoff.py  (writes benchmarks/results/riskcal.md)

What riskcal computes (riskcal 1.5.1, ``riskcal/analysis/conversions.py`` and ``_plrv.py``): from a
dp_accounting PLD it takes Y = the remove-direction loss (``pld._pmf_remove``, law under
mu_upper) and X = minus the add-direction loss (``pld._pmf_add`` reversed, standing in for the
law of the remove loss under mu_lower), each pmf renormalised to ``1 - infinity_mass``, and
returns the Neyman-Pearson curve T(mu_lower, mu_upper) of that pair; for a non-symmetric PLD it
symmetrises it by Dong, Roth & Su's Definition F.1 (conv(min(f, f^-1))), i.e. the curve that
holds for add/remove adjacency in both orders.  That is jaxdp's ``direction="both"``.  Its
discretisation is whatever the PLD has; riskcal's own DP-SGD helpers build it as here
(``from_gaussian_mechanism(..., sampling_prob=q)`` with dp_accounting's defaults: pessimistic,
connect-the-dots, interval ``grid_step=1e-4``, then ``self_compose(T)``).

Per setting: riskcal's beta at 50 alphas from the PLD at intervals 1e-4 (riskcal's default) and
2e-5; jaxdp's bracket [lower, upper] at the default grid (2^18).  err_dpa = max over alphas of
|beta(1e-4) - beta(2e-5)| estimates dp_accounting's discretisation error at 1e-4.  Pass: for
every alpha, lower - err_dpa <= beta_riskcal(1e-4) <= upper + err_dpa.

The table also reports the excess mass of dp_accounting's composed add-direction pmf
(sum of probabilities + infinity mass - 1), which riskcal's renormalisation spreads over the
curve: see the notes written below the table.
"""

import os
import sys
import time
import warnings

import numpy as np

import jaxdp
from jaxdp.core import tradeoff as jtf

warnings.filterwarnings("ignore", category=DeprecationWarning)
from dp_accounting.pld import privacy_loss_distribution as pldlib  # noqa: E402
from riskcal.analysis import get_beta_from_pld  # noqa: E402

SETTINGS = [(1.0, 1.0, 1), (0.1, 2.0, 100), (0.01, 1.0, 1000), (0.001, 0.8, 10000)]  # (q, sigma, T)
ALPHAS = np.linspace(0.0, 1.0, 52)[1:-1]  # 50 type I errors in (0, 1)
INTERVALS = (1e-4, 2e-5)


def dpa_pld(q, sigma, T, interval):
    p = pldlib.from_gaussian_mechanism(
        standard_deviation=sigma, sampling_prob=q, pessimistic_estimate=True,
        value_discretization_interval=interval,
    )
    return p.self_compose(int(T))


def add_excess(p):
    d = p._pmf_add.to_dense_pmf()
    return float(np.sum(d._probs) + d._infinity_mass - 1.0)


def riskcal_side(q, sigma, T, interval):
    t0 = time.time()
    p = dpa_pld(q, sigma, T, interval)
    t1 = time.time()
    beta = np.asarray(get_beta_from_pld(p, alpha=ALPHAS))
    t2 = time.time()
    return beta, t1 - t0, t2 - t1, add_excess(p), bool(p._symmetric)


def jaxdp_bracket(q, sigma, T, direction="both"):
    br = jaxdp.poisson.tradeoff_bracket(
        ALPHAS, noise_multiplier=sigma, sampling_probability=q, num_steps=T, direction=direction
    )
    return np.asarray(br.lower), np.asarray(br.upper)


def outside(beta, lo, up):
    """Largest distance of beta outside [lo, up] (0 when contained)."""
    return float(np.max(np.maximum(np.maximum(lo - beta, beta - up), 0.0)))


def single_step_note(q, sigma):
    """Where the add-pmf excess comes from: one step, before composition."""
    from scipy.stats import norm

    parts = []
    for iv in INTERVALS:
        d = pldlib.from_gaussian_mechanism(
            standard_deviation=sigma, sampling_prob=q, pessimistic_estimate=True, value_discretization_interval=iv
        )._pmf_add.to_dense_pmf()
        losses = (d._lower_loss + np.arange(len(d._probs))) * iv
        parts.append(
            f"total mass - 1 = {np.sum(d._probs) + d._infinity_mass - 1.0:.1e}, mass below loss -5 = "
            f"{np.sum(d._probs[losses < -5]):.1e} at interval {iv:g}"
        )
    # exact: add loss = -log(1 - q + q exp((2x - 1) / (2 sigma^2))), x ~ N(0, sigma^2); < -5 iff x > x5
    x5 = sigma**2 * np.log((np.exp(5.0) - 1.0 + q) / q) + 0.5
    exact = norm.sf(x5 / sigma)
    return (
        f"* Where the add excess comes from (sigma = {sigma:g}, q = {q:g}, one step): dp_accounting's "
        f"add-direction pmf has {'; '.join(parts)}; the exact mass below loss -5 is {exact:.1e}.  The "
        "excess grows like 1/interval^2 and linearly in T under `self_compose` (column 'add excess').  "
        "dp_accounting's eps/delta at eps >= 0 are blind to it (losses below eps do not enter delta), "
        "but riskcal uses the add pmf as the law of the loss under the null hypothesis and renormalises "
        "it, so its curve moves by an amount of the order of that excess: at 2e-5 it leaves jaxdp's "
        "certified bracket upwards (an optimistic, unsound value) where the excess is large.  err_dpa "
        "(riskcal at 1e-4 minus riskcal at 2e-5) is therefore dominated by this artefact, not by "
        "discretisation, on those settings; at riskcal's default 1e-4 the excess is 25x smaller and the "
        "curve lies inside jaxdp's bracket or within err_dpa of it (column 'outside (1e-4)').\n"
    )


def main(out="benchmarks/results/riskcal.md"):
    # jaxdp: compile once (parameters are traced), then time each setting warm
    t0 = time.time()
    jaxdp_bracket(*SETTINGS[0])
    t_compile = time.time() - t0
    rows, notes, ok_all, worst = [], [], True, 0.0
    for q, s, T in SETTINGS:
        t0 = time.time()
        lo, up = jaxdp_bracket(q, s, T)
        t_jax = time.time() - t0
        rc = {}
        for iv in INTERVALS:
            rc[iv] = riskcal_side(q, s, T, iv)
        b1, b2 = rc[1e-4][0], rc[2e-5][0]
        err = float(np.max(np.abs(b1 - b2)))
        dev = float(np.max(np.abs(b1 - lo)))
        out1, out2 = outside(b1, lo, up), outside(b2, lo, up)
        width = float(np.max(up - lo))
        ok = bool(np.all((b1 >= lo - err) & (b1 <= up + err)))
        ok_all &= ok
        worst = max(worst, dev)
        rows.append(
            f"| {q:g} | {s:g} | {T} | {'yes' if rc[1e-4][4] else 'no'} | {dev:.2e} | {out1:.2e} | {width:.2e} | {err:.2e} | "
            f"{out2:.2e} | {rc[1e-4][3]:.1e} / {rc[2e-5][3]:.1e} | {t_jax:.2f} | "
            f"{rc[1e-4][1]:.2f} + {rc[1e-4][2]:.2f} | {rc[2e-5][1]:.2f} + {rc[2e-5][2]:.2f} | {'ok' if ok else 'FAIL'} |"
        )
        print(rows[-1], flush=True)
        if q == 1.0 and T == 1:
            g = np.asarray(jtf.gaussian(ALPHAS, 1.0 / s))
            notes.append(
                f"* q = 1, T = 1 is the plain Gaussian mechanism, closed form G_(1/sigma): "
                f"max |riskcal(1e-4) - G| = {np.max(np.abs(b1 - g)):.2e}, "
                f"max |riskcal(2e-5) - G| = {np.max(np.abs(b2 - g)):.2e}, "
                f"G - jaxdp lower in [{np.min(g - lo):.2e}, {np.max(g - lo):.2e}], "
                f"jaxdp upper - G in [{np.min(up - g):.2e}, {np.max(up - g):.2e}]."
            )
        if out2 > err / 2 and out2 > 0:
            i = int(np.argmax(np.maximum(lo - b2, b2 - up)))
            notes.append(
                f"* (q, sigma, T) = ({q:g}, {s:g}, {T}): riskcal at the *finer* interval 2e-5 leaves jaxdp's "
                f"certified bracket by {out2:.2e} (alpha = {ALPHAS[i]:.4f}: riskcal {b2[i]:.6f}, "
                f"jaxdp [{lo[i]:.6f}, {up[i]:.6f}]; riskcal at 1e-4: {b1[i]:.6f})."
            )
    # direction check at one non-symmetric setting: riskcal is neither one-direction curve
    q, s, T = SETTINGS[1]
    b1 = riskcal_side(q, s, T, 1e-4)[0]
    dirs = []
    for d in ("remove", "add", "both"):
        lo_d, up_d = jaxdp_bracket(q, s, T, direction=d)
        dirs.append(f"`{d}`: {outside(b1, lo_d, up_d):.2e}")
    with open(out, "w") as f:
        f.write("# Trade-off curves: jaxdp vs riskcal's `get_beta_from_pld`\n\n")
        f.write(
            "Command: `python benchmarks/riskcal_tradeoff.py` (riskcal 1.5.1 on dp_accounting 0.6.0; "
            "jaxdp `poisson.tradeoff_bracket(direction=\"both\")` at the default grid 2^18; "
            "50 alphas = linspace(0, 1, 52)[1:-1]).  Machine: 2 shared cores under load from other jobs "
            "(timings inflated).\n\n"
        )
        f.write(
            "riskcal input: `from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=True, "
            "value_discretization_interval=iv).self_compose(T)` (connect-the-dots, as riskcal's own "
            "`get_beta_for_dpsgd` builds it; iv = 1e-4 is riskcal's default).  riskcal returns the "
            "add/remove-symmetrised curve conv(min(f, f^-1)) (Dong, Roth & Su, Def. F.1), i.e. jaxdp's "
            "`direction=\"both\"`.\n\n"
        )
        f.write(
            "Columns: max dev = max |beta_riskcal(1e-4) - jaxdp lower| (jaxdp's reported, pessimistic "
            "value); outside = how far beta_riskcal leaves [jaxdp lower, jaxdp upper] (0 = contained); "
            "width = max bracket width; err_dpa = max |beta_riskcal(1e-4) - beta_riskcal(2e-5)|; "
            "add excess = dp_accounting's composed add-direction pmf mass + infinity mass - 1 at 1e-4 / 2e-5; "
            "times in seconds (jaxdp: warm call, compile once "
            f"{t_compile:.1f} s; riskcal: dp_accounting PLD build and composition + `get_beta_from_pld`).  "
            "Pass: lower - err_dpa <= beta_riskcal(1e-4) <= upper + err_dpa at every alpha.\n\n"
        )
        f.write(
            "| q | sigma | T | symmetric PLD | max dev | outside (1e-4) | width | err_dpa | outside (2e-5) | "
            "add excess | jaxdp s | riskcal 1e-4 s | riskcal 2e-5 s | pass |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
        f.write("\n".join(rows) + "\n\n")
        f.write(f"All pass: {ok_all}; worst max |beta_riskcal - jaxdp lower| = {worst:.2e}.\n\n")
        f.write(
            f"Direction check at (q, sigma, T) = ({q:g}, {s:g}, {T}): distance of riskcal(1e-4) outside "
            f"jaxdp's bracket for each direction: {', '.join(dirs)}.\n\n"
        )
        f.write("Notes:\n\n" + "\n".join(notes) + "\n")
        f.write(single_step_note(*SETTINGS[-1][:2]))
    print("all ok", ok_all, "worst", worst)
    return ok_all


if __name__ == "__main__":
    sys.exit(0 if main(*sys.argv[1:]) else 1)
