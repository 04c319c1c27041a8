"""``jaxdp shuffle``: trade-off curve, gap and (eps, delta) of E epochs of M shuffled rounds.

Every ``n/a`` printed here carries a footnote saying why (which range, which method, what to use
instead), and the JSON carries the same reason next to the null.  The CLT and Edgeworth
approximations are expansions in the skewness of the per-round likelihood ratio
U = exp(Z/sigma - 1/(2 sigma^2)) (lognormal); where skewness(U)/sqrt(M) > 1 they are outside
their domain and are reported as ``n/a`` instead of the clipped numbers (0 or 1) they return.
"""

from __future__ import annotations

import math

from . import _args as A
from ._format import Footnotes, emit, num, table, with_reasons, wrap
from ._runtime import setup_jax, working

NAME = "shuffle"

#: sigma range of the exact single-epoch accountant (jaxdp.mechanisms.shuffled)
EXACT_RANGE = (0.3, 50.0)
APPROX = ("clt", "edgeworth")


def add_parser(sub, common):
    s = sub.add_parser(NAME, parents=[common], help="trade-off curve, gap and (eps, delta) of shuffled DP-SGD",
                       description="Exact trade-off curve, gap sup_a(1 - a - f(a)) and certified eps(delta) of E epochs "
                       "of M shuffled rounds, with the closed-form bounds and the CLT/Edgeworth approximations.")
    s.add_argument("--sigma", type=A.SIGMA, default=1.0, help="noise multiplier (default 1)")
    s.add_argument("--rounds", "-M", type=A.ROUNDS, default=10000, help="rounds per epoch M (default 10000)")
    s.add_argument("--epochs", "-E", type=A.EPOCHS, default=1, help="epochs E (default 1)")
    s.add_argument("--delta", type=A.list_of(A.DELTA, "delta list"), default=[1e-5], help="delta(s) for eps (default 1e-5)")
    s.add_argument("--accuracy", type=A.ACCURACY, default=A.DEFAULT_ACCURACY,
                   help="largest relative width (upper - lower) / upper of the certified eps brackets; the PLD grid is "
                   f"chosen for it, coarse first (default {A.DEFAULT_ACCURACY:g})")
    s.set_defaults(func=run)
    return s


def skewness_over_sqrt_m(sigma, rounds):
    """Skewness of the lognormal per-round likelihood ratio divided by sqrt(M) (inf on overflow)."""
    s2 = 1.0 / sigma**2
    if s2 > 700:
        return math.inf
    w = math.expm1(s2)
    return (w + 3.0) * math.sqrt(w) / math.sqrt(rounds)


def kinds(epochs):
    """Truthful label of each method's gap (an upper/lower bound on the gap or an approximation)."""
    return dict(exact="exact law + 1e-8 (upper)" if epochs == 1 else "certified upper bound (PLD)",
                exact_lower="exact law - 1e-8 (lower)" if epochs == 1 else "certified lower bound (PLD)",
                berry_esseen="upper bound", linear_test="lower bound", clt="approximation", edgeworth="approximation")


def reasons(args, r):
    """Why each quantity would be n/a (used only where it is)."""
    s, m, e = args.sigma, args.rounds, args.epochs
    lo, hi = EXACT_RANGE
    if e == 1 and not lo <= s <= hi:
        exact = (f"exact single-epoch values hold for sigma in [{lo:g}, {hi:g}] (sigma = {num(s)}); "
                 "use the certified eps bracket and the linear-test lower bound")
    else:
        exact = "the certified PLD engine returned no value at these settings; use the bounds"
    thr = math.sqrt(3.0 / math.log(m)) if m > 1 else math.inf
    be = (f"Berry-Esseen bound holds only for sigma >= sqrt(3/ln M) = {num(thr)} (sigma = {num(s)}); "
          "use the exact value or the linear-test lower bound" if m > 1 else "Berry-Esseen bound needs M >= 2; use the exact value")
    k = skewness_over_sqrt_m(s, m)
    approx = (f"outside the CLT/Edgeworth domain: skewness(U)/sqrt(M) = {num(k, 3)} > 1 (they need many rounds "
              "relative to the likelihood ratio's skewness); use the exact value or the bounds")
    return dict(exact=exact, exact_lower=exact, exact_reverse=exact, berry_esseen=be, clt=approx, edgeworth=approx,
                linear_test="the linear-test bound returned no value at these settings",
                eps="the certified PLD bracket returned no value at these settings")


def mask_approximations(args, r):
    """NaN for the CLT/Edgeworth outputs outside their domain (the library clips them to 0 or 1)."""
    import numpy as np

    out = skewness_over_sqrt_m(args.sigma, args.rounds) > 1.0
    for k in APPROX:
        g = float(r["gap_" + k])
        if out or (k == "edgeworth" and not 0.0 < g < 1.0):
            r["gap_" + k] = float("nan")
            for part in ("table", "curve"):
                r[part]["tradeoff_" + k] = np.full_like(np.asarray(r[part]["tradeoff_" + k], float), np.nan)
    return r


def regime_text(args, reg):
    """The regime's name and what it means at these settings."""
    s, m = args.sigma, args.rounds
    name = str(reg.name)
    lo, hi = float(reg.sigma_max_impossible), float(reg.sigma_min_berry_esseen)
    scope = "" if args.epochs == 1 else " (single-epoch classification)"
    if m == 1:
        return name, "M = 1 is the Gaussian mechanism: no shuffling closed form applies" + scope
    if name == "berry_esseen":
        why = f"sigma >= sqrt(3/ln M) = {num(hi)}: the Berry-Esseen closed form is a valid upper bound on the gap"
    elif name == "impossible":
        why = (f"sigma < 1/sqrt(2 ln M) = {num(lo)}: shuffling cannot hide one example in M = {m:,} rounds; "
               f"the single-epoch gap is at least {num(float(reg.tv_lower_bound))} (Ertan-van Dijk impossibility bound)")
    else:
        why = (f"1/sqrt(2 ln M) = {num(lo)} <= sigma < sqrt(3/ln M) = {num(hi)}: neither closed form applies; "
               "the exact value is the reference")
    return name, why + scope


def _gap_rows(args, r, notes, why):
    kd = kinds(args.epochs)
    names = dict(exact="exact" if args.epochs == 1 else "certified upper end", berry_esseen="closed form (Berry-Esseen)",
                 linear_test="linear test", clt="CLT", edgeworth="Edgeworth")
    if args.epochs > 1:
        names = dict(exact=names["exact"], exact_lower="certified lower end", **{k: v for k, v in names.items() if k != "exact"})
    rows = []
    for k, label in names.items():
        x = r["gap_" + k if k != "exact_lower" else "gap_exact_lower"]
        rows.append([label, notes.cell(x, why[k], 6), kd[k]])
    return rows


def _tradeoff_cell(notes, x, why, key, args):
    """A trade-off value; a Berry-Esseen lower bound of 0 is flagged as vacuous (true but uninformative)."""
    if key == "berry_esseen" and x == 0.0:
        return f"0 {notes.mark('vacuous: the Berry-Esseen bound only gives f(a) >= 0 here (true, but no information); use the exact value')}"
    return notes.cell(x, why, 6)


def _accuracy_line(args, r):
    """Said only when an eps bracket stayed wider than ``--accuracy`` (the table shows both ends)."""
    if not r["eps_width"] > r["accuracy"]:
        return []
    where = ("the closed-form envelope below the exact law's domain, which no grid narrows"
             if args.sigma < EXACT_RANGE[0] else "the finest grid tried")
    return [wrap(f"widest eps bracket {num(r['eps_width'], 2)} (relative) > --accuracy {num(r['accuracy'])} "
                 f"on {where}; the upper ends are still sound")]


def _text(args, r, regime, notes, why):
    gaps = _gap_rows(args, r, notes, why)
    eps_rows = [[num(d), notes.cell(lo, why["eps"], 6), notes.cell(up, why["eps"], 6)]
                for d, lo, up in zip(args.delta, r["eps_lower"], r["eps"])]
    t = r["table"]
    cols = [("tradeoff_exact", "exact"), ("tradeoff_exact_reverse", "exact_reverse"), ("tradeoff_berry_esseen", "berry_esseen"),
            ("tradeoff_clt", "clt"), ("tradeoff_edgeworth", "edgeworth")]
    tr = [[num(a)] + [_tradeoff_cell(notes, t[c][i], why[k], k, args) for c, k in cols] for i, a in enumerate(r["table_a"])]
    exact_f = "exact law, certified lower end" if args.epochs == 1 else "certified lower bound on f"
    return "\n".join([
        f"Shuffled DP-SGD: sigma = {num(args.sigma)}, M = {args.rounds:,} rounds/epoch, E = {args.epochs} epoch(s)",
        "(add/remove one example; adversary sees every round)",
        wrap(f"regime: {regime[0]} ({regime[1]})"),
        f"CLT mu = {num(r['mu_clt'], 6)}",
        "",
        "gap sup_a (1 - a - f(a))  [the delta of f(a) >= 1 - a - delta]",
        table(["method", "gap", "kind"], gaps, ["<", ">", "<"], wide=args.wide),
        "",
        "(epsilon, delta): certified bracket, worse of add/remove",
        table(["delta", "eps lower", "eps (certified)"], eps_rows, wide=args.wide),
    ] + _accuracy_line(args, r) + [
        "",
        wrap(f"trade-off curve f(a) = T(P, Q), reverse = T(Q, P); exact: {exact_f}; Berry-Esseen: lower bound on f; "
             "CLT, Edgeworth: approximations", ""),
        table(["a", "exact", "exact reverse", "Berry-Esseen", "CLT", "Edgeworth"], tr, wide=args.wide),
    ] + ([""] + notes.lines() if notes.reasons else []))


def _payload(args, r, regime, why, path):
    kd = kinds(args.epochs)
    gap = with_reasons({k: r["gap_" + k] for k in ("exact", "exact_lower", "berry_esseen", "linear_test", "clt", "edgeworth")},
                       why)
    trade = with_reasons(dict(a=r["table_a"], **{k.replace("tradeoff_", ""): v for k, v in r["table"].items()}), why)
    eps = [with_reasons(dict(delta=d, lower=lo, upper=up), dict(lower=why["eps"], upper=why["eps"]))
           for d, lo, up in zip(args.delta, r["eps_lower"], r["eps"])]
    return dict(command="shuffle", noise_multiplier=args.sigma, num_rounds=args.rounds, num_epochs=args.epochs,
                regime=regime[0], regime_explanation=regime[1], mu_clt=r["mu_clt"], gap=gap, gap_kind=kd,
                epsilon=eps, accuracy=r["accuracy"], eps_bracket_width=r["eps_width"], tradeoff=trade, plot=path)


def _plot(args, r):
    from .. import plotting

    c = r["curve"]
    return plotting.tradeoff_curves(
        args.plot, r["curve_a"],
        {"exact T(P,Q)": c["tradeoff_exact"], "exact T(Q,P)": c["tradeoff_exact_reverse"],
         "Berry-Esseen (lower bound)": c["tradeoff_berry_esseen"], "linear test (upper bound)": c["tradeoff_linear_test"],
         "CLT": c["tradeoff_clt"], "Edgeworth": c["tradeoff_edgeworth"]},
        title=f"shuffled: sigma = {num(args.sigma)}, M = {args.rounds:,}, E = {args.epochs}",
        styles={"CLT": dict(ls="--"), "Edgeworth": dict(ls="-."), "linear test (upper bound)": dict(ls=":")},
        gap_panel=True)


def run(args):
    setup_jax(args)
    from ..shuffle import closed_form as cf
    from . import _compute as cc

    what = "certified multi-epoch accountant" if args.epochs > 1 else "exact shuffle accountant"
    with working(args, what):
        r = cc.shuffle_report(args.sigma, args.rounds, args.epochs, args.delta, args.accuracy)
    r = mask_approximations(args, r)
    regime = regime_text(args, cf.regime(args.sigma, float(args.rounds)))
    why = reasons(args, r)
    notes = Footnotes()
    text = _text(args, r, regime, notes, why)
    path = _plot(args, r) if args.plot else None
    emit(args, _payload(args, r, regime, why, path), text)
    return 0
