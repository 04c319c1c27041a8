"""``jaxdp plan``: rounds per epoch M (and samples N = b*M) for a target gap, closed form vs exact."""

from __future__ import annotations

import math

from . import _args as A
from ._format import Footnotes, emit, integer, num, separating, table
from ._runtime import setup_jax, working

NAME = "plan"

EXACT_RANGE = (0.3, 50.0)


def add_parser(sub, common):
    s = sub.add_parser(NAME, parents=[common], help="rounds M and samples N for a target delta: closed form vs exact",
                       description="Rounds per epoch M (and samples N = b*M) needed for f(a) >= 1 - a - delta after E "
                       "shuffled epochs: the paper's closed form (Berry-Esseen) next to the exact requirement.",
                       epilog="Default: the paper's example sigma = 1, delta = 0.01, E = 1, b = 10.")
    s.add_argument("--sigma", type=A.list_of(A.SIGMA, "sigma list"), default=[1.0], help="noise multiplier(s) (default 1)")
    s.add_argument("--delta", type=A.DELTA, default=0.01, help="target gap delta in (0, 1) (default 0.01)")
    s.add_argument("--epochs", "-E", type=A.EPOCHS, default=1, help="epochs E (default 1)")
    s.add_argument("--batch-size", "-b", type=A.BATCH, default=10, help="batch size b, N = b*M (default 10)")
    s.set_defaults(func=run)
    return s


def exact_kind(epochs):
    return "certified upper end (exact law + 1e-8)" if epochs == 1 else "certified upper bound (PLD bracket)"


def _case(args, r, i, sigma):
    b = args.batch_size
    mc, me = float(r["rounds_closed_form"][i]), float(r["rounds_exact"][i])
    return dict(
        noise_multiplier=sigma, delta=args.delta, num_epochs=args.epochs, batch_size=b,
        closed_form=dict(method="berry_esseen (C = 0.56)", kind="upper bound", rounds=mc, samples=mc * b),
        exact=dict(rounds=me, samples=me * b, gap_kind=exact_kind(args.epochs),
                   gap_at_rounds=float(r["gap_at_rounds"][i]), gap_at_rounds_minus_1=float(r["gap_at_rounds_minus_1"][i]),
                   check="gap_at_rounds <= delta < gap_at_rounds_minus_1: M is the smallest feasible number of rounds"),
        clt_approximation=dict(rounds=float(r["rounds_clt"][i])),
        closed_form_over_exact=mc / me if me > 0 else float("nan"),
    )


def _na_reason(c):
    """Why the exact search has no answer for case ``c`` (None when it has one)."""
    e, s = c["exact"], c["noise_multiplier"]
    if math.isfinite(e["rounds"]):
        return None
    lo, hi = EXACT_RANGE
    if c["num_epochs"] == 1 and not lo <= s <= hi:
        return (f"the exact single-epoch accountant covers sigma in [{lo:g}, {hi:g}] (sigma = {num(s)}); "
                "use the closed form (an upper bound)")
    if math.isinf(e["rounds"]):
        return f"no M <= 1e12 reaches delta = {num(c['delta'])} at sigma = {num(s)}"
    return f"the exact search did not converge at sigma = {num(s)}; use the closed form (an upper bound)"


def _check_line(c):
    e, d = c["exact"], c["delta"]
    if not math.isfinite(e["rounds"]):
        return None
    if e["rounds"] <= 1:
        g, dd = separating([e["gap_at_rounds"], d])
        return f"check sigma = {num(c['noise_multiplier'])}: gap at M = 1 is {g} <= {dd} (M = 1 is the Gaussian mechanism)"
    g, dd, g1 = separating([e["gap_at_rounds"], d, e["gap_at_rounds_minus_1"]])
    return (f"check sigma = {num(c['noise_multiplier'])}: gap at M = {integer(e['rounds'])} is {g} <= {dd} "
            f"< {g1} at M - 1")


def _text(args, cases):
    notes = Footnotes()
    rows = []
    for c in cases:
        mc, me, b = c["closed_form"]["rounds"], c["exact"]["rounds"], c["batch_size"]
        why = _na_reason(c)
        ex = [integer(me), integer(me * b)] if why is None else [f"n/a {notes.mark(why)}"] * 2
        ratio = f"{mc / me:,.0f}x" if why is None and math.isfinite(mc) else f"n/a {notes.mark(why or 'no closed form')}"
        rows.append([num(c["noise_multiplier"]), num(args.delta), args.epochs, f"{b:,}", num(mc), num(mc * b)] + ex + [ratio])
    head = ["sigma", "delta", "E", "b", "M closed form", "N closed form", "M exact", "N exact", "ratio"]
    lines = [
        "Shuffled DP-SGD planning: rounds per epoch M and samples N = b*M for f(a) >= 1 - a - delta",
        "(add/remove one example; closed form = Berry-Esseen upper bound, C = 0.56; exact = smallest M whose",
        " gap sup_a(1 - a - f(a)) is <= delta; the gap: " + exact_kind(args.epochs) + ")",
        "",
        table(head, rows, wide=args.wide),
    ]
    checks = [ln for ln in map(_check_line, cases) if ln]
    return "\n".join(lines + notes.lines() + ([""] + checks if checks else []))


def _plot(args, c):
    import numpy as np

    from .. import plotting
    from . import _compute as cc

    me, mc = c["exact"]["rounds"], c["closed_form"]["rounds"]
    hi = max(mc if math.isfinite(mc) else 1e7, me if math.isfinite(me) else 1e7) * 3
    ms = np.unique(np.round(np.logspace(0.5, math.log10(hi), 33)))
    with working(args, "gap curve for the plot"):
        curves = cc.gap_curve(c["noise_multiplier"], ms, args.epochs)
    return plotting.gap_vs_rounds(
        args.plot, ms,
        {"exact": curves["exact"], "closed form (Berry-Esseen, upper bound)": curves["berry_esseen"],
         "CLT (approximation)": curves["clt"], "linear test (lower bound)": curves["linear_test"]},
        delta=args.delta, marks={"exact": (me, c["exact"]["gap_at_rounds"]), "closed form": (mc, args.delta)},
        bounds=("closed form (Berry-Esseen, upper bound)", "linear test (lower bound)"),
        title=f"sigma = {num(c['noise_multiplier'])}, E = {args.epochs}: gap vs rounds per epoch")


def run(args):
    import numpy as np

    setup_jax(args)
    from . import _compute as cc

    sig = np.asarray(args.sigma, float)
    n = sig.size
    with working(args, "exact planning"):
        r = cc.plan(np.full(n, args.delta), sig, np.full(n, float(args.epochs)))
    cases = [_case(args, r, i, float(sig[i])) for i in range(n)]
    for c in cases:
        why = _na_reason(c)
        if why:
            c["exact"]["rounds_reason"] = why
    path = _plot(args, cases[0]) if args.plot else None
    emit(args, dict(command="plan", cases=cases, plot=path), _text(args, cases))
    return 0
