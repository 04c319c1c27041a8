"""Build the notebooks from the cell sources below: ``python notebooks/_build.py`` (outputs cleared) or
``python notebooks/_build.py --execute [--full] [NAME ...]`` (run and store deterministic outputs: no
timings, paths or execution counts; figures embedded as PNG at most 900 px wide).

Every notebook reads ``JAXDP_NOTEBOOK_FAST`` (default "1": the small CI variant; "0": the long one)
and saves its figures under ``notebooks/figures/``.
"""
import os
import nbformat as nbf

HERE = os.path.dirname(os.path.abspath(__file__))
SETUP = '''import os
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import jax, jax.numpy as jnp
import jaxdp
FAST = os.environ.get("JAXDP_NOTEBOOK_FAST", "1") != "0"
FIG = os.path.join(os.getcwd(), "figures")
os.makedirs(FIG, exist_ok=True)
from IPython.display import Image, display

def show(fig, name, dpi=110):
    """Save a figure under figures/ and show it inline (a PNG at most 900 px wide)."""
    path = os.path.join(FIG, name)
    if fig is not None:
        fig.savefig(path, dpi=dpi); plt.close(fig)
    from PIL import Image as PILImage
    import io
    im = PILImage.open(path); im.thumbnail((900, 900))
    buf = io.BytesIO(); im.convert("RGB").quantize(128).save(buf, format="PNG", optimize=True)
    display(Image(data=buf.getvalue(), format="png"))


def plain_log_ticks(ax, ticks, axis="x"):
    """Log axis labelled only at the given values, as plain numbers (no crowded minor labels)."""
    from matplotlib.ticker import FixedLocator, FixedFormatter, NullLocator
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(ticks)); a.set_major_formatter(FixedFormatter([f"{t:g}" for t in ticks]))
    a.set_minor_locator(NullLocator())

print("fast variant" if FAST else "full variant")'''


def nb(cells, name):
    book = nbf.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, src in cells:
        book.cells.append(nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src))
    nbf.write(book, os.path.join(HERE, name))


SHUFFLING = [
    ("md", "# DP-SGD with random shuffling: the paper's numbers, exact vs closed form vs Edgeworth vs CLT\n\n"
           "van Dijk & Ertan (arXiv 2605.06259). One epoch of M shuffled rounds with noise multiplier sigma is the test "
           "P = N(0, I_M) vs Q = mean_j N(e_j/sigma, I_M) (add/remove one example). `jaxdp.shuffle` gives the exact "
           "curve, the paper's closed-form (Berry-Esseen) bound and the CLT / Edgeworth approximations."),
    ("code", SETUP + '''
import jaxdp.shuffle as sh
from jaxdp.shuffle import closed_form as cf, asymptotics as asy
from jaxdp.mechanisms import shuffled'''),
    ("md", "## 1. The paper's planning numbers (closed form, delta = 0.01)"),
    ("code", '''sigmas = np.array([0.7, 1.0, 1.5, 2.0, 3.0])
M_be = np.asarray(cf.rounds_berry_esseen(0.01, sigmas))
for s, v, r, m in zip(sigmas, np.asarray(cf.variance(sigmas)), np.asarray(cf.rho(sigmas)), M_be):
    print(f"sigma = {s:3.1f}  v = {v:8.5g}  rho = {r:8.5g}  M = {m:9.3g}")
m1 = float(cf.rounds_berry_esseen(0.01, 1.0)); m100 = float(cf.rounds_berry_esseen(0.01, 1.0, 100))
print(f"sigma = 1, E = 1:   M = {m1:.4g}, N = 10 M = {10 * m1:.4g}   (paper: 1.14e6, 1.14e7)")
print(f"sigma = 1, E = 100: M = {m100:.4g}, N = {10 * m100:.4g}  (paper: N ~ 1e11)")
assert abs(m1 / 1.138e6 - 1) < 2e-3 and abs(m100 / 1.127e10 - 1) < 2e-3'''),
    ("md", "## 2. The exact gap vs M: one vectorised call\n\nThe gap sup_a(1 - a - f(a)) is the delta of "
           "f(a) >= 1 - a - delta. The exact curve reaches 0.01 near M ~ 2.7e3, about 400x fewer rounds than the "
           "closed form needs (`jaxdp plan` finds the smallest integer M)."),
    ("code", '''Ms = np.unique(np.round(np.logspace(1, 6.5, 14 if FAST else 40)))
g_exact = np.asarray(shuffled.tv_gap(1.0, Ms))
print(f"exact gap on {Ms.size} values of M")
g_be = np.asarray(cf.delta_berry_esseen(1.0, Ms)); g_lin = np.asarray(cf.delta_linear_test(1.0, Ms))
g_clt = np.asarray(asy.delta_gap_clt(1.0, Ms)); g_ew = np.asarray(asy.delta_gap_edgeworth(1.0, Ms))
M_cross = float(np.exp(np.interp(np.log(0.01), np.log(g_exact[::-1]), np.log(Ms[::-1]))))
print(f"exact gap = 0.01 near M = {M_cross:.0f} (spec: ~2.7e3); closed form: {m1:.4g} -> ratio {m1 / M_cross:.0f}x")
for m, ge, gc, gw in list(zip(Ms, g_exact, g_clt, g_ew))[::3]:
    print(f"M = {m:9.0f}  exact {ge:.6f}  CLT {gc:.6f} (rel err {gc / ge - 1:+.1e})  Edgeworth {gw:.6f} ({gw / ge - 1:+.1e})")
assert 2400 < M_cross < 3000
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.loglog(Ms, g_exact, "o-", label="exact", ms=3)
ax.loglog(Ms, np.where(np.isfinite(g_be), np.minimum(g_be, 1.0), np.nan), label="closed form (Berry-Esseen, upper bound; capped at 1)")
ax.loglog(Ms, g_clt, "--", label="CLT"); ax.loglog(Ms, g_ew, ":", label="Edgeworth")
ax.loglog(Ms, g_lin, label="linear test (lower bound)")
ax.axhline(0.01, color="k", lw=1, ls="--"); ax.set_xlabel("rounds per epoch M"); ax.set_ylabel("gap")
ax.set_title("sigma = 1, one epoch"); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
fig.tight_layout(); show(fig, "shuffling_gap_vs_M.png")'''),
    ("md", "## 3. Trade-off curves: exact (both directions) vs closed form vs CLT vs Edgeworth"),
    ("code", '''a = np.concatenate([np.logspace(-6, -2, 20), np.linspace(0.0125, 1, 60)])
M0 = 1000.0
f_ex = np.asarray(shuffled.tradeoff(a, 1.0, M0)); f_rev = np.asarray(shuffled.tradeoff_reverse(a, 1.0, M0))
f_be = np.asarray(cf.tradeoff_berry_esseen(a, 1.0, M0)); f_clt = np.asarray(asy.tradeoff_clt(a, 1.0, M0))
f_ew = np.asarray(asy.tradeoff_edgeworth(a, 1.0, M0))
print("max |Edgeworth - exact| =", np.nanmax(np.abs(f_ew - f_ex)), "  max |CLT - exact| =", np.nanmax(np.abs(f_clt - f_ex)))
print("closed form below exact everywhere:", bool(np.all(np.nan_to_num(f_be, nan=0) <= f_ex + 1e-9)))
fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
styles = [("exact T(P,Q)", f_ex, dict(color="C0", lw=2)), ("exact T(Q,P)", f_rev, dict(color="C1", ls="--", marker="x", ms=4, markevery=6)),
          ("CLT", f_clt, dict(color="C3", ls="-.", marker="s", ms=3, markevery=7)),
          ("Edgeworth", f_ew, dict(color="C4", ls=":", marker="^", ms=3, markevery=5)),
          ("closed form (lower bound on f)", f_be, dict(color="C2"))]
ax = axes[0]
ax.plot(a, 1 - a, color="0.6", ls=":", label="1 - a (no privacy loss)")
for lab, y, kw in styles:
    ax.plot(a, y, label=lab, **kw)
ax.set_xlabel("type I error a"); ax.set_ylabel("type II error f(a)"); ax.set_title(f"trade-off curves, sigma = 1, M = {M0:.0f}")
ax.legend(fontsize=8, loc="upper right")
ax = axes[1]   # the differences are invisible on the left: plot 1 - a - f(a) (the gap at each a), log scales
for lab, y, kw in styles:
    ax.plot(a, np.where(1 - a - y > 0, 1 - a - y, np.nan), label=lab, **kw)
ax.set_xscale("log"); ax.set_yscale("log"); ax.set_ylim(1e-6, 1)
ax.set_xlabel("type I error a"); ax.set_ylabel("1 - a - f(a)"); ax.set_title("distance below 1 - a (log scales)")
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8, loc="lower right")
fig.tight_layout(); show(fig, "shuffling_tradeoff.png")'''),
    ("md", "## 4. Epochs\n\nThe closed form composes as f_{0,delta}^E = f_{0,1-(1-delta)^E} (linear in E); the CLT "
           "gap grows like sqrt(E). The exact multi-epoch curve (certified PLD) runs in the full variant "
           "(`JAXDP_NOTEBOOK_FAST=0`) or with `jaxdp shuffle --epochs E`."),
    ("code", '''E = np.array([1, 2, 5, 10, 20, 50, 100]); M1 = 1e4
g_be_E = np.asarray(sh.delta_gap(noise_multiplier=1.0, num_rounds=M1, num_epochs=E, method="berry_esseen"))
g_clt_E = np.asarray(sh.delta_gap(noise_multiplier=1.0, num_rounds=M1, num_epochs=E, method="clt"))
g_ex_E = np.full(E.shape, np.nan)
if not FAST:
    g_ex_E = np.asarray(sh.delta_gap(noise_multiplier=1.0, num_rounds=M1, num_epochs=E))
for e, b, c, x in zip(E, g_be_E, g_clt_E, g_ex_E):
    print(f"E = {e:4d}  closed form {b:.4g}  CLT {c:.4g}  exact {x:.4g}")
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(E, g_be_E, "o-", label="closed form (composed)"); ax.loglog(E, g_clt_E, "s--", label="CLT")
if not FAST: ax.loglog(E, g_ex_E, "^-", label="exact (PLD)")
ax.loglog(E, g_clt_E[0] * np.sqrt(E), ":", color="0.5", label="sqrt(E) growth")
ax.set_xlabel("epochs E"); ax.set_ylabel("gap"); ax.set_title("sigma = 1, M = 1e4"); ax.legend(fontsize=8)
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout(); show(fig, "shuffling_epochs.png")'''),
    ("md", "## 5. Poisson subsampling at q = 1/M, T = E M\n\nCLT: mu_P (Bu et al.; equal to the shuffle CLT mu) and "
           "mu_U (Dong-Roth-Su); the ratio tends to sqrt(2) as sigma -> 0 and to 1 as sigma -> inf. Exact (certified) "
           "eps of both: full variant or `jaxdp compare`."),
    ("code", '''s_grid = np.logspace(-0.5, 1, 40)
ratio = np.asarray(asy.clt_ratio(s_grid))
print("mu_U/mu_P at sigma = 1, 2:", np.round(np.asarray(asy.clt_ratio(np.array([1.0, 2.0]))), 4), "(spec 1.3046, 1.1775)")
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogx(s_grid, ratio); ax.axhline(np.sqrt(2), ls=":", color="0.5"); ax.axhline(1, ls=":", color="0.5")
ax.set_xlabel("sigma"); ax.set_ylabel("mu_U / mu_P"); ax.set_title("Poisson CLT mus (Dong-Roth-Su / Bu et al.)")
fig.tight_layout(); show(fig, "shuffling_poisson_clt_ratio.png")
if not FAST:
    import jaxdp.poisson as po
    es = float(sh.epsilon_for_delta(1e-5, noise_multiplier=1.0, num_rounds=1e4))
    ep = float(po.epsilon_for_delta(1e-5, noise_multiplier=1.0, sampling_probability=1e-4, num_steps=1e4))
    print(f"sigma = 1, M = 1e4, delta = 1e-5: eps shuffle {es:.6f} (spec 0.037247), Poisson {ep:.6f} (spec 0.038017)")'''),
    ("md", "## 6. Four samplers at matching settings\n\nM rounds per epoch, E epochs, T = E M steps, each example used "
           "E times (in expectation for Poisson): reshuffling every epoch (`SelfComposed(Shuffled(g, M), E)`), "
           "balls-in-bins, where each example keeps one of M bins for the whole run (`BallsInBins(g, T, M)`), random "
           "allocation of E of the T steps (`RandomAllocation(g, E, T)`) and Poisson at q = 1/M "
           "(`SelfComposed(PoissonSampled(1/M, g), T)`), g = `Gaussian(sigma)`. Every number is the upper end of "
           "`jaxdp.account(event).epsilon(delta)`; `jaxdp compare --all-samplers` prints the same table. Over E whole "
           "cycles balls-in-bins is exactly one shuffled epoch of M rounds at sigma / sqrt(E) (`docs/interop.md`), so "
           "fixing the bins costs much more than reshuffling. For k-of-t jaxdp accounts the decomposition bound, which "
           "at k = E, t = E M is E shuffled epochs of M rounds: the same number as reshuffling, an upper bound on the "
           "k-of-t mechanism."),
    ("code", '''from jaxdp.events import BallsInBins, Gaussian, PoissonSampled, RandomAllocation, SelfComposed, Shuffled
delta = 1e-5
cases = [(1.0, 100, 2), (2.0, 10, 10)]   # (sigma, M, E), T = E M
names = ["reshuffled", "balls-in-bins", "k-of-t", "Poisson"]

def samplers(s, M, E):
    g = Gaussian(s)
    return [SelfComposed(Shuffled(g, M), E), BallsInBins(g, E * M, M), RandomAllocation(g, E, E * M),
            SelfComposed(PoissonSampled(1 / M, g), E * M)]

eps = np.array([[float(jaxdp.account(ev).epsilon(delta).upper) for ev in samplers(*c)] for c in cases])
print(f"certified eps at delta = {delta:g} (upper end, worse of add/remove)")
print(f"{'sigma':>5} {'M':>4} {'E':>3} {'T':>4} " + "".join(f"{n:>15}" for n in names))
for (s, M, E), row in zip(cases, eps):
    print(f"{s:5g} {M:4d} {E:3d} {E * M:4d} " + "".join(f"{v:15.5g}" for v in row))
for (s, M, E), row in zip(cases, eps):   # balls-in-bins = one epoch at sigma / sqrt(E); k-of-t's bound = reshuffled
    one = float(jaxdp.account(Shuffled(Gaussian(s / np.sqrt(E)), M)).epsilon(delta).upper)
    assert abs(row[1] / one - 1) < 1e-6 and abs(row[2] / row[0] - 1) < 1e-6 and row[1] > row[3] > row[0]
fig, ax = plt.subplots(figsize=(8, 4))
x, w = np.arange(len(cases)), 0.2
for i, (name, colour) in enumerate(zip(names, ["C0", "C3", "C2", "C1"])):
    bars = ax.bar(x + (i - 1.5) * w, eps[:, i], w, label=name, color=colour, hatch="//" if name == "k-of-t" else None,
                  edgecolor="white")
    ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=2)
ax.set_xticks(x); ax.set_xticklabels([f"sigma = {s:g}, M = {M}, E = {E}" for s, M, E in cases])
ax.set_ylabel(f"certified epsilon at delta = {delta:g}"); ax.set_ylim(0, 1.15 * eps.max())
ax.set_title("four samplers at matching settings (T = E M steps)"); ax.grid(True, axis="y", alpha=0.3)
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
fig.tight_layout(); show(fig, "shuffling_samplers.png")'''),
]

RPP = [
    ("md", "# alpha-Wasserstein Renyi Pufferfish privacy on three UCI data sets\n\n"
           "Secret: a sensitive attribute of one individual (sex, race, address); released: a numeric attribute "
           "(RAW) or a mean over n people (MEAN). `jaxdp.pufferfish.experiments` computes every method on every "
           "pair in one compiled call. The alpha-W conditions (Theorem 1 / tight / Theorem 2) need much less noise "
           "than the W_inf baselines (Song et al., Pierquin et al.)."),
    ("code", SETUP + '''
from jaxdp.pufferfish import experiments as ex'''),
    ("code", '''alphas = (2.0, 5.0, 10.0, 50.0, float("inf")) if FAST else ex.ALPHAS
epsilons = (1.0,) if FAST else ex.EPSILONS
with np.errstate(invalid="ignore", divide="ignore"):
    rows, summary = ex.compute_tables(alphas=alphas, epsilons=epsilons)
print(f"{len(rows)} rows")
for k, v in summary.items():
    print(f"{k}: {v:.4g}")'''),
    ("code", '''from IPython.display import Markdown, display
display(Markdown(ex.markdown_table(rows, epsilon=1.0, kind="RAW")))'''),
    ("code", '''raw = [r for r in rows if r["query_kind"] == "RAW" and r["epsilon"] == 1.0 and np.isfinite(r["alpha"])]
keys = sorted({(r["dataset"], r["query"], r["secret"]) for r in raw})
methods = [("song", "o", "W_inf (Song)"), ("pierquin", "s", "W_inf (Pierquin)"), ("theorem1", "^", "alpha-W Theorem 1"),
           ("tight", "D", "alpha-W tight"), ("exact", "v", "exact Renyi")]
ncol = 4; nrow = -(-len(keys) // ncol)
fig, axes = plt.subplots(nrow, ncol, figsize=(12, 2.6 * nrow), squeeze=False)
for ax, key in zip(axes.flat, keys):
    sel = sorted([r for r in raw if (r["dataset"], r["query"], r["secret"]) == key], key=lambda r: r["alpha"])
    al = [r["alpha"] for r in sel]
    for c, (m, mk, lab) in enumerate(methods):
        ax.plot(al, [r["b_" + m] for r in sel], marker=mk, ms=4, color=f"C{c}", label=lab)
    ax.set_xscale("log"); plain_log_ticks(ax, sorted(set(al)))
    ax.set_title(f"{key[0]}: {key[1]} | {key[2]}", fontsize=9); ax.set_ylim(0, None)
for ax in axes.flat[len(keys):]:
    ax.axis("off")
for ax in axes[:, 0]: ax.set_ylabel("Laplace scale b")
for ax in axes[-1, :]: ax.set_xlabel("alpha")
handles, labels = axes.flat[0].get_legend_handles_labels()
(axes.flat[-1] if len(keys) < axes.size else fig).legend(handles, labels, loc="center", fontsize=9)
fig.suptitle("Laplace noise for (alpha, eps = 1)-RPP, RAW queries (lower is better)")
fig.tight_layout(); show(fig, "rpp_uci_alpha.png")
ratio = np.array([r["b_tight"] / r["b_song"] for r in raw])
print(f"Laplace scale, tight alpha-W / W_inf baseline: median {np.median(ratio):.3g}, max {ratio.max():.3g}")
fig, ax = plt.subplots(figsize=(9, 4.2))
cmap = plt.get_cmap("tab20")
for k, key in enumerate(keys):
    sel = sorted([r for r in raw if (r["dataset"], r["query"], r["secret"]) == key], key=lambda r: r["alpha"])
    ax.plot([r["alpha"] for r in sel], [r["b_tight"] / r["b_song"] for r in sel], marker="osD^v<>ph*X"[k % 11], ms=5,
            color=cmap(k % 20), label=f"{key[0]}: {key[1]} | {key[2]}")
ax.set_xscale("log"); plain_log_ticks(ax, sorted({r["alpha"] for r in raw}))
ax.set_xlabel("alpha"); ax.set_ylabel("b (tight alpha-W) / b (W_inf)"); ax.set_ylim(0, 1.05)
ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
ax.set_title("RAW queries, eps = 1: noise relative to the W_inf baseline"); ax.grid(True, alpha=0.3)
fig.tight_layout(); show(fig, "rpp_uci_ratio.png")'''),
]

CALIB = [
    ("md", "# Calibration and gradient-based tuning\n\n`jaxdp.calibrate.noise_multiplier` returns the smallest "
           "noise multiplier with certified eps(delta) <= epsilon; it is differentiable (implicit-function theorem), "
           "so the noise can be tuned with gradients while the privacy constraint stays exact."),
    ("code", SETUP + '''
import jaxdp.calibrate as cal'''),
    ("md", "## 1. A noise table (Poisson, q = 0.01, T = 1000 steps, delta = 1e-5) in one batched solve"),
    ("code", '''eps = np.array([0.5, 1.0, 2.0, 4.0]) if FAST else np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0])
sig = np.asarray(cal.noise_multiplier(epsilon=eps, delta=1e-5, sampling_probability=0.01, num_steps=1000))
for e, s in zip(eps, sig):
    print(f"eps = {e:5.2f}  sigma* = {s:.4f}")
assert abs(sig[list(eps).index(1.0)] - 1.415) < 2e-3   # documented value'''),
    ("md", "## 2. Gradients of the calibrated noise"),
    ("code", '''dsig = jax.grad(lambda e: cal.noise_multiplier(epsilon=e, delta=1e-5, sampling_probability=0.01, num_steps=1000))
g = float(dsig(1.0))
h = 1e-4
fd = (float(cal.noise_multiplier(epsilon=1.0 + h, delta=1e-5, sampling_probability=0.01, num_steps=1000))
      - float(cal.noise_multiplier(epsilon=1.0 - h, delta=1e-5, sampling_probability=0.01, num_steps=1000))) / (2 * h)
print(f"d sigma*/d eps at eps = 1: IFT {g:.5f}, central difference {fd:.5f}")'''),
    ("md", "## 3. Gradient-based tuning of the batch size at fixed (eps, delta)\n\nN = 10,000 examples, E = 1 epoch "
           "(T = N/b steps, q = b/N). Proxy utility: std of the noise in the mean gradient per step, averaged over the "
           "run, U(b) = sigma*(q) / (b sqrt(T)) + 1/T. Adam on log b; every iterate is feasible because sigma* is "
           "recalibrated exactly."),
    ("code", '''N, E_, delta = 10_000, 1, 1e-5
steps = 1000  # T held fixed during the gradient steps (integer); q carries the gradient

def utility(logb):
    b = jnp.exp(logb)
    q = b / N
    s = cal.poisson_noise_multiplier(1.0, delta, sampling_probability=q, num_steps=steps).value
    return s / (b * jnp.sqrt(steps)) + 1.0 / steps

import optax
opt = optax.adam(0.3); logb = jnp.log(10.0); st = opt.init(logb)
vg = jax.value_and_grad(utility)
hist = []
for k in range(3 if FAST else 12):
    u, gr = vg(logb)
    hist.append((float(jnp.exp(logb)), float(u)))
    upd, st = opt.update(gr, st); logb = optax.apply_updates(logb, upd)
    print(f"step {k}: b = {hist[-1][0]:7.2f}  U = {hist[-1][1]:.5f}  dU/dlog b = {float(gr):+.4f}")
fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
ax[0].plot(eps, sig, "o-"); ax[0].set_xscale("log"); ax[0].set_yscale("log"); ax[0].set_xlabel("epsilon"); ax[0].set_ylabel("sigma*")
plain_log_ticks(ax[0], list(eps)); plain_log_ticks(ax[0], [float(f"{v:.3g}") for v in sig], axis="y"); ax[0].grid(True, alpha=0.3)
ax[0].set_title("noise table (Poisson, q = 0.01, T = 1000)")
ax[1].plot([h[0] for h in hist], [h[1] for h in hist], "o-"); ax[1].set_xlabel("batch size b"); ax[1].set_ylabel("U")
ax[1].set_title("Adam on log b (feasible iterates)")
fig.tight_layout(); show(fig, "calibration.png")'''),
]

TRAIN = [
    ("md", "# DP-SGD with shuffling inside a training loop\n\n`jaxdp.training.shuffled_dpsgd` is an optax "
           "transformation (per-example clipping + Gaussian noise + SGD); `epoch_batches` draws one permutation per "
           "epoch; the accountant state tracks the exact shuffled epsilon (and the Poisson number alongside) after "
           "every epoch. Small synthetic logistic regression here; `examples/train_adult.py` runs UCI Adult."),
    ("code", SETUP + '''
import optax
from jaxdp import training'''),
    ("code", '''key = jax.random.PRNGKey(0)
N, d = (2000, 8) if FAST else (20000, 20)
batch, epochs, sigma, clip, delta = 50, (2 if FAST else 5), 1.0, 1.0, 1e-5
kx, kw, kn = jax.random.split(key, 3)
X = jax.random.normal(kx, (N, d)); w_true = jax.random.normal(kw, (d,))
y = (X @ w_true + 0.5 * jax.random.normal(kn, (N,)) > 0).astype(jnp.float64)

def loss(w, x, t):
    z = x @ w
    return jnp.mean(jnp.logaddexp(0.0, z) - t * z)

per_example = jax.vmap(jax.grad(lambda w, x, t: loss(w, x[None], t[None])), in_axes=(None, 0, 0))
opt = training.shuffled_dpsgd(0.5, l2_norm_clip=clip, noise_multiplier=sigma, seed=1)

@jax.jit
def run_epoch(w, st, idx):
    def step(c, b):
        w, st = c
        g = per_example(w, X[b], y[b])
        upd, st = opt.update(g, st, w)
        return (optax.apply_updates(w, upd), st), loss(w, X[b], y[b])
    (w, st), ls = jax.lax.scan(step, (w, st), idx)
    return w, st, ls.mean()

w = jnp.zeros(d); st = opt.init(w)
acct = training.accountant_init(noise_multiplier=sigma, num_examples=N, batch_size=batch, delta=delta)
log = []
for e in range(epochs):
    idx = training.epoch_batches(jax.random.fold_in(key, e), N, batch)
    w, st, l = run_epoch(w, st, idx)
    acct = training.accountant_update(acct)
    acc = float(jnp.mean((X @ w > 0) == (y > 0.5)))
    log.append((e + 1, float(l), acc, float(acct.epsilon), float(acct.epsilon_poisson)))
    print(f"epoch {e + 1}: loss {l:.4f}  accuracy {acc:.3f}  eps shuffle {acct.epsilon:.4f}  eps Poisson {acct.epsilon_poisson:.4f}")'''),
    ("code", '''E = [r[0] for r in log]
fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
ax[0].plot(E, [r[2] for r in log], "o-"); ax[0].set_xlabel("epoch"); ax[0].set_ylabel("train accuracy")
ax[0].set_ylim(0.5, 1.0); ax[0].set_xticks(E); ax[1].set_xticks(E)
ax[1].plot(E, [r[3] for r in log], "o-", label="shuffling (exact)"); ax[1].plot(E, [r[4] for r in log], "s--", label="Poisson q = b/N")
ax[1].set_xlabel("epoch"); ax[1].set_ylabel(f"epsilon at delta = {delta:g}"); ax[1].legend()
fig.suptitle(f"DP-SGD, N = {N}, b = {batch}, sigma = {sigma}"); fig.tight_layout()
show(fig, "training.png")'''),
]

BOOKS = {"01_shuffling.ipynb": SHUFFLING, "02_rpp_uci.ipynb": RPP, "03_calibration_tuning.ipynb": CALIB,
         "04_dpsgd_training.ipynb": TRAIN}


def execute(name, fast):
    """Run one notebook in place (cwd notebooks/) and keep only deterministic outputs."""
    import nbclient

    path = os.path.join(HERE, name)
    book = nbf.read(path, as_version=4)
    variant = ("the fast variant (`JAXDP_NOTEBOOK_FAST=1`, what CI runs)" if fast
               else "the full variant (`JAXDP_NOTEBOOK_FAST=0`)")
    book.cells.insert(1, nbf.v4.new_markdown_cell(
        f"*Outputs below are from {variant}, regenerated by `python notebooks/_build.py --execute"
        f"{'' if fast else ' --full'}`.*"))
    os.environ["JAXDP_NOTEBOOK_FAST"] = "1" if fast else "0"
    nbclient.NotebookClient(book, timeout=1800, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": HERE}}).execute()
    for i, cell in enumerate(book.cells):
        cell.metadata = {}
        cell["id"] = f"cell-{i}"
        if cell.cell_type == "code":
            cell.execution_count = None
            # stderr (warnings, compile notes) carries paths and timings: dropped
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
            for o in cell.outputs:
                if "execution_count" in o:
                    o.execution_count = None
                if o.output_type in ("display_data", "execute_result"):
                    o.metadata = {}
                    o.data = {k: v for k, v in o.data.items() if k in ("image/png", "text/markdown", "text/plain")}
                    if "image/png" in o.data:
                        o.data.pop("text/plain", None)
    book.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbf.write(book, path)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--execute", action="store_true", help="also run the notebooks and store their outputs")
    ap.add_argument("--full", action="store_true", help="with --execute: the full variant (JAXDP_NOTEBOOK_FAST=0)")
    ap.add_argument("names", nargs="*", help="notebooks to build (default: all)")
    a = ap.parse_args()
    for name, cells in BOOKS.items():
        if a.names and name not in a.names:
            continue
        nb(cells, name)
        if a.execute:
            execute(name, fast=not a.full)
            print(name, os.path.getsize(os.path.join(HERE, name)), "bytes")
