r"""End-to-end privacy audit by simulation: run the mechanisms, attack them, compare with the accountant.

Run::

    python -m jaxdp.audit.harness [--fast] [--out DIR]

writes ``DIR/audit_report.md`` (and ``audit_report.json``) and exits 1 if any audited point falls
below the reported trade-off curve beyond its confidence interval.

What is simulated (nothing is taken from the accountant's own model):

* **DP-SGD, Poisson sampling** and **DP-SGD, shuffled batches** on a tiny linear model
  (squared loss, d = 3, n ordinary examples whose third feature is 0, learning rate 0.05) with a
  *canary* example ``x = (0, 0, 5), y = 10`` present (world 1) or absent (world 0).  Every step
  computes per-example gradients at the current parameters, clips them to L2 norm C = 1, sums the
  sampled ones (Poisson: each example independently with probability q; shuffled: a fresh random
  permutation per epoch cut into M batches, the canary added to a uniformly random batch), adds
  N(0, sigma^2 C^2 I) noise, releases the noisy sum and takes a gradient step.  The adversary sees
  every released sum (the white-box threat model of the accountants), rebuilds the parameter
  trajectory from them, computes the canary's clipped gradient g_t at each step, and projects the
  release on g_t / |g_t|: the other examples contribute 0 to that direction (their third feature
  is 0), so x_t = <release_t, g_t/|g_t|> / (sigma C) is N(b_t |g_t| / (sigma C), 1) with b_t the
  canary's inclusion indicator.  The attack is the likelihood-ratio (Neyman-Pearson) test on
  (x_t): Poisson ``sum_t log(1 - q + q exp(s_t x_t - s_t^2/2))``, shuffled
  ``sum_epochs log(mean_j exp(s_j x_j - s_j^2/2))``, with s_t = |g_t| / (sigma C).
  Reported curve: :func:`jaxdp.poisson.tradeoff` (direction "both") and :func:`jaxdp.shuffle.tradeoff`
  (exact, forward T(P, Q): P = canary absent).
* **Renyi Pufferfish** noisy queries on the shipped UCI data: the target's record is drawn from the
  empirical conditional law of the query given secret s_i (world 0) or s_j (world 1), released with
  the Laplace / Gaussian noise calibrated by :func:`jaxdp.pufferfish.calibrate_laplace` /
  :func:`~jaxdp.pufferfish.calibrate_gaussian` for (alpha, eps)-RPP; the attack is the exact
  likelihood-ratio test between the two noisy mixtures.  Reported curve: the tight conversion of a
  Renyi bound to hypothesis testing by data processing on the test's binary outcome (Balle, Barthe,
  Gaboardi, Hsu, Sato 2020, "Hypothesis testing interpretations and Renyi differential privacy",
  AISTATS; also Zhu, Dong, Wang 2022): any test with type I error a and type II error b satisfies
  D_alpha(Bern(1-b) || Bern(a)) <= eps and D_alpha(Bern(a) || Bern(1-b)) <= eps (RPP bounds both
  directions), so b >= f_RDP(a) := min{b in [0, 1-a] : both hold} (bisection; both binary
  divergences decrease in b on [0, 1 - a]).

Statistics.  Thresholds are the empirical (1 - a)-quantiles of the world-0 statistic on a separate
calibration run (a in TARGET_FPRS), so the evaluation counts are binomial given the threshold.  FPR
and FNR get exact one-sided Clopper-Pearson bounds (:func:`jaxdp.audit.montecarlo.clopper_pearson`)
at level beta each (default beta = 1e-3 / (2 x points), Bonferroni over the whole report).  A point
**violates** the reported curve f when FNR_upper < f(FPR_upper): since f is non-increasing, the
true point (FPR, FNR) then has FNR < f(FPR) with probability >= 1 - 2 beta.  ``gap`` =
FNR_hat - f(FPR_hat) shows how tight the attack is (near 0 for an optimal attack on a tight
accountant; negative values within the intervals are sampling noise).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _config  # noqa: F401  (float64)
from jaxdp.audit.montecarlo import clopper_pearson

TARGET_FPRS = (0.01, 0.05, 0.1, 0.25, 0.5)
CLIP = 1.0
LR = 0.05
D = 3
CANARY_X = jnp.array([0.0, 0.0, 5.0])
CANARY_Y = 10.0


# --------------------------------------------------------------------------------------------
# DP-SGD on a tiny linear model
# --------------------------------------------------------------------------------------------


def _dataset(n, seed=0):
    rng = np.random.default_rng(seed)
    x = np.zeros((n, D))
    x[:, :2] = rng.normal(size=(n, 2))
    y = x[:, :2] @ np.array([1.0, -2.0]) + 0.1 * rng.normal(size=n)
    return jnp.asarray(x), jnp.asarray(y)


def _clipped_grads(w, x, y):
    r = x @ w - y
    g = r[:, None] * x
    nrm = jnp.linalg.norm(g, axis=1, keepdims=True)
    return g * jnp.minimum(1.0, CLIP / jnp.maximum(nrm, 1e-300))


def _canary_grad(w):
    g = _clipped_grads(w, CANARY_X[None], jnp.array([CANARY_Y]))[0]
    c = jnp.linalg.norm(g)
    return g / jnp.maximum(c, 1e-300), c


def _poisson_run(key, canary, x, y, sigma, q, steps):
    """One DP-SGD run with Poisson sampling; returns the adversary's LR statistic."""
    n = x.shape[0]

    def step(carry, k):
        w, stat = carry
        k1, k2, k3 = jax.random.split(k, 3)
        inc = jax.random.bernoulli(k1, q, (n,))
        total = jnp.sum(jnp.where(inc[:, None], _clipped_grads(w, x, y), 0.0), axis=0)
        u, c = _canary_grad(w)
        b = canary & jax.random.bernoulli(k2, q)
        g_c = _clipped_grads(w, CANARY_X[None], jnp.array([CANARY_Y]))[0]
        release = total + jnp.where(b, g_c, 0.0) + sigma * CLIP * jax.random.normal(k3, (D,))
        # adversary
        xt = jnp.dot(release, u) / (sigma * CLIP)
        s = c / (sigma * CLIP)
        stat = stat + jnp.log1p(q * jnp.expm1(s * xt - 0.5 * s * s))
        w = w - LR * release / (q * (n + 1))
        return (w, stat), None

    (w, stat), _ = jax.lax.scan(step, (jnp.zeros(D), 0.0), jax.random.split(key, steps))
    return stat


def _shuffle_run(key, canary, x, y, sigma, rounds, epochs):
    """One DP-SGD run with shuffled batches (M rounds per epoch); returns the LR statistic."""
    n = x.shape[0]
    bsz = n // rounds

    def epoch(carry, k):
        w, stat = carry
        kp, kc, kn = jax.random.split(k, 3)
        perm = jax.random.permutation(kp, n)
        slot = jax.random.randint(kc, (), 0, rounds)
        noise = jax.random.normal(kn, (rounds, D))

        def rnd(c2, j):
            w, terms = c2
            idx = jax.lax.dynamic_slice(perm, (j * bsz,), (bsz,))
            total = jnp.sum(_clipped_grads(w, x[idx], y[idx]), axis=0)
            u, c = _canary_grad(w)
            g_c = _clipped_grads(w, CANARY_X[None], jnp.array([CANARY_Y]))[0]
            release = total + jnp.where(canary & (slot == j), g_c, 0.0) + sigma * CLIP * noise[j]
            xt = jnp.dot(release, u) / (sigma * CLIP)
            s = c / (sigma * CLIP)
            w = w - LR * release / bsz
            return (w, terms.at[j].set(s * xt - 0.5 * s * s)), None

        (w, terms), _ = jax.lax.scan(rnd, (w, jnp.zeros(rounds)), jnp.arange(rounds))
        stat = stat + jax.scipy.special.logsumexp(terms) - jnp.log(rounds)
        return (w, stat), None

    (w, stat), _ = jax.lax.scan(epoch, (jnp.zeros(D), 0.0), jax.random.split(key, epochs))
    return stat


def _simulate(run, key, num, chunk=4096):
    """Statistics of ``num`` independent runs in each world: (stat_world0, stat_world1).

    ``run`` must be a jitted ``(keys, canary) -> stats`` (vmapped over keys): compiled once per setting.
    """
    out = []
    chunk = min(chunk, num)
    for canary, kk in ((False, jax.random.fold_in(key, 0)), (True, jax.random.fold_in(key, 1))):
        nchunks = -(-num // chunk)
        f = lambda ks: run(ks, jnp.asarray(canary))  # noqa: E731
        parts = [np.asarray(f(jax.random.split(jax.random.fold_in(kk, i), chunk))) for i in range(nchunks)]
        out.append(np.concatenate(parts)[:num])
    return out


# --------------------------------------------------------------------------------------------
# Pufferfish
# --------------------------------------------------------------------------------------------


def _mixture_logpdf(yv, atoms, weights, noise, scale):
    z = (yv[:, None] - atoms[None, :]) / scale
    if noise == "laplace":
        lp = -jnp.abs(z) - jnp.log(2 * scale)
    else:
        lp = -0.5 * z * z - jnp.log(scale * jnp.sqrt(2 * jnp.pi))
    return jax.scipy.special.logsumexp(lp + jnp.log(weights)[None, :], axis=1)


def _pufferfish_sim(key, num, xi, wi, xj, wj, noise, scale):
    xi, wi, xj, wj = (jnp.asarray(v, jnp.float64) for v in (xi, wi, xj, wj))
    out = []
    for world, (atoms, w) in enumerate(((xi, wi), (xj, wj))):
        k1, k2 = jax.random.split(jax.random.fold_in(key, world))
        xs = atoms[jax.random.choice(k1, atoms.shape[0], (num,), p=w)]
        z = jax.random.laplace(k2, (num,)) if noise == "laplace" else jax.random.normal(k2, (num,))
        yv = xs + scale * z
        stat = _mixture_logpdf(yv, xj, wj, noise, scale) - _mixture_logpdf(yv, xi, wi, noise, scale)
        out.append(np.asarray(stat))
    return out


def _binary_renyi(p, r, alpha):
    p, r = np.clip(p, 0.0, 1.0), np.clip(r, 1e-300, 1.0)
    if math.isinf(alpha):
        with np.errstate(divide="ignore"):
            return max(math.log(p / r) if p > 0 else -np.inf, math.log((1 - p) / max(1 - r, 1e-300)) if p < 1 else -np.inf)
    # log-domain: r**(1 - alpha) overflows Python floats for r ~ 1e-300 and alpha > 2.03
    terms = []
    if p > 0:
        terms.append(alpha * math.log(p) + (1 - alpha) * math.log(r))
    if p < 1:
        terms.append(alpha * math.log1p(-p) + (1 - alpha) * math.log(max(1 - r, 1e-300)))
    mx = max(terms)
    return (mx + math.log(sum(math.exp(t - mx) for t in terms))) / (alpha - 1)


def rdp_tradeoff(a, alpha, eps, iters=200):
    """Lower bound on the trade-off curve implied by D_alpha <= eps in both directions (binary data processing)."""
    a = float(a)
    ok = lambda b: (_binary_renyi(1 - b, a, alpha) <= eps) and (_binary_renyi(a, 1 - b, alpha) <= eps)  # noqa: E731
    if ok(0.0):
        return 0.0
    lo, hi = 0.0, 1.0 - a  # infeasible at lo, feasible at hi (equal laws)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return lo  # the largest infeasible b: a (slightly) pessimistic-for-us, i.e. sound, curve value


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    setting: str
    target_fpr: float
    fpr: float
    fpr_lo: float
    fpr_hi: float
    fnr: float
    fnr_lo: float
    fnr_hi: float
    curve_at_fpr: float
    curve_at_fpr_hi: float
    violation: bool

    @property
    def gap(self):
        return self.fnr - self.curve_at_fpr


def evaluate(setting, calib0, stat0, stat1, curve, beta):
    """Thresholds from ``calib0`` (world-0 calibration statistics), counts from fresh ``stat0``/``stat1``."""
    pts = []
    n0, n1 = stat0.size, stat1.size
    thr = np.quantile(calib0, 1 - np.array(TARGET_FPRS))
    k0 = np.sum(stat0[None, :] > thr[:, None], axis=1)
    k1 = np.sum(stat1[None, :] <= thr[:, None], axis=1)
    lo0, hi0 = (np.asarray(v) for v in clopper_pearson(k0, n0, beta))
    lo1, hi1 = (np.asarray(v) for v in clopper_pearson(k1, n1, beta))
    fpr, fnr = k0 / n0, k1 / n1
    fvals = np.asarray(curve(np.concatenate([fpr, hi0])), np.float64)  # one call: one compile
    for i, a in enumerate(TARGET_FPRS):
        args = (float(fpr[i]), float(lo0[i]), float(hi0[i]), float(fnr[i]), float(lo1[i]), float(hi1[i]))
        f_hat, f_hi = float(fvals[i]), float(fvals[len(TARGET_FPRS) + i])
        pts.append(Point(setting, a, *args, f_hat, f_hi, bool(args[5] < f_hi)))
    return pts


def _settings(fast):
    if fast:
        return dict(
            num=20_000,
            poisson=[dict(sigma=1.0, q=0.25, steps=8)],
            shuffle=[dict(sigma=1.5, rounds=4, epochs=1, batch=2)],
            pufferfish=[("heart", "sex", 1.0, 0.0, "chol", "laplace", 2.0, 1.0)],
        )
    return dict(
        num=200_000,
        poisson=[dict(sigma=1.0, q=0.25, steps=8), dict(sigma=0.8, q=0.1, steps=50), dict(sigma=2.0, q=1.0, steps=4)],
        shuffle=[dict(sigma=1.5, rounds=4, epochs=1, batch=2), dict(sigma=1.0, rounds=16, epochs=2, batch=2),
                 dict(sigma=2.0, rounds=8, epochs=4, batch=2)],
        pufferfish=[("heart", "sex", 1.0, 0.0, "chol", "laplace", 2.0, 1.0),
                    ("heart", "sex", 1.0, 0.0, "chol", "gaussian", 2.0, 1.0),
                    ("student", "address", "U", "R", "G3", "laplace", 10.0, 0.5),
                    ("adult", "sex", "Male", "Female", "hours-per-week", "gaussian", 5.0, 2.0)],
    )


def run_audit(fast=False, seed=0, confidence=0.999, log=print):
    import jaxdp.poisson as po
    import jaxdp.shuffle as sh
    import jaxdp.pufferfish as pf
    from jaxdp.pufferfish import datasets

    cfg = _settings(fast)
    num = cfg["num"]
    npts = len(TARGET_FPRS) * (len(cfg["poisson"]) + len(cfg["shuffle"]) + len(cfg["pufferfish"]))
    beta = (1 - confidence) / (2 * npts)
    key = jax.random.PRNGKey(seed)
    points = []
    def dpsgd(name, n_data, step, curve, salt):
        t0 = time.time()
        x, y = _dataset(n_data)
        run = jax.jit(jax.vmap(lambda k, c: step(k, c, x, y), in_axes=(0, None)))
        kk = jax.random.fold_in(key, salt)
        calib0, _ = _simulate(run, jax.random.fold_in(kk, 7), num)
        s0, s1 = _simulate(run, kk, num)
        pts = evaluate(name, calib0, s0, s1, curve, beta)
        log(f"{name}: {time.time() - t0:.1f}s")
        return pts

    for i, p in enumerate(cfg["poisson"]):
        points += dpsgd(
            f"DP-SGD Poisson: sigma={p['sigma']}, q={p['q']}, T={p['steps']}", 8,
            lambda k, c, x, y, p=p: _poisson_run(k, c, x, y, p["sigma"], p["q"], p["steps"]),
            lambda a, p=p: po.tradeoff(a, noise_multiplier=p["sigma"], sampling_probability=p["q"], num_steps=p["steps"]),
            100 + i)
    for i, p in enumerate(cfg["shuffle"]):
        points += dpsgd(
            f"DP-SGD shuffled: sigma={p['sigma']}, M={p['rounds']}, E={p['epochs']}, b={p['batch']}", p["rounds"] * p["batch"],
            lambda k, c, x, y, p=p: _shuffle_run(k, c, x, y, p["sigma"], p["rounds"], p["epochs"]),
            lambda a, p=p: sh.tradeoff(a, noise_multiplier=p["sigma"], num_rounds=p["rounds"], num_epochs=p["epochs"]),
            200 + i)
    cache = {}
    for i, (ds, sec, vi, vj, q, noise, alpha, eps) in enumerate(cfg["pufferfish"]):
        t0 = time.time()
        if ds not in cache:
            cache[ds] = datasets.LOADERS[ds]()
        xi, wi, xj, wj = datasets.conditional_laws(cache[ds], sec, vi, vj, q)
        cal = pf.calibrate_laplace if noise == "laplace" else pf.calibrate_gaussian
        scale = float(cal(xi, xj, weights_i=wi, weights_j=wj, alpha=alpha, epsilon=eps))
        kk = jax.random.fold_in(key, 300 + i)
        calib0, _ = _pufferfish_sim(jax.random.fold_in(kk, 7), num, xi, wi, xj, wj, noise, scale)
        s0, s1 = _pufferfish_sim(kk, num, xi, wi, xj, wj, noise, scale)
        curve = lambda a, alpha=alpha, eps=eps: [rdp_tradeoff(v, alpha, eps) for v in a]  # noqa: E731
        name = f"Pufferfish {noise}: {ds} {sec} {vi} vs {vj}, query {q}, alpha={alpha}, eps={eps} (scale={scale:.4g})"
        points += evaluate(name, calib0, s0, s1, curve, beta)
        log(f"{name}: {time.time() - t0:.1f}s")
    return points, dict(num=num, confidence=confidence, beta=beta, seed=seed, fast=fast)


def report_markdown(points, meta):
    lines = [
        "# Audit report (jaxdp.audit.harness)",
        "",
        f"{meta['num']} simulated runs per world and per calibration set; seed {meta['seed']}; "
        f"one-sided Clopper-Pearson bounds at beta = {meta['beta']:.3g} each "
        f"(family-wise confidence >= {meta['confidence']}).  `f(FPR_hi)` is the reported curve at the "
        "upper FPR bound; a violation is `FNR_hi < f(FPR_hi)`.",
        "",
        "| setting | target FPR | FPR [lo, hi] | FNR [lo, hi] | f(FPR) | f(FPR_hi) | gap FNR - f(FPR) | violation |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {p.setting} | {p.target_fpr:g} | {p.fpr:.4f} [{p.fpr_lo:.4f}, {p.fpr_hi:.4f}] | "
            f"{p.fnr:.4f} [{p.fnr_lo:.4f}, {p.fnr_hi:.4f}] | {p.curve_at_fpr:.4f} | {p.curve_at_fpr_hi:.4f} | "
            f"{p.gap:+.4f} | {'**YES**' if p.violation else 'no'} |"
        )
    nv = sum(p.violation for p in points)
    lines += ["", f"Violations: {nv} of {len(points)} points."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m jaxdp.audit.harness", description=__doc__.split("\n")[0])
    ap.add_argument("--fast", action="store_true", help="one small setting per mechanism (CI)")
    ap.add_argument("--out", default="out/audit", help="output directory (default out/audit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--confidence", type=float, default=0.999)
    args = ap.parse_args(argv)
    if not 0 < args.confidence < 1:
        ap.error("--confidence must be in (0, 1)")
    t0 = time.time()
    points, meta = run_audit(fast=args.fast, seed=args.seed, confidence=args.confidence,
                             log=lambda s: print(s, file=sys.stderr))
    meta["seconds"] = round(time.time() - t0, 1)
    os.makedirs(args.out, exist_ok=True)
    md = report_markdown(points, meta)
    with open(os.path.join(args.out, "audit_report.md"), "w") as fh:
        fh.write(md)
    with open(os.path.join(args.out, "audit_report.json"), "w") as fh:
        json.dump(dict(meta=meta, points=[dataclasses.asdict(p) | dict(gap=p.gap) for p in points]), fh, indent=1)
    print(md)
    return 1 if any(p.violation for p in points) else 0


if __name__ == "__main__":
    sys.exit(main())
