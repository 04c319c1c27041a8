"""``jaxdp poisson``: certified (eps, delta) and trade-off curve of Poisson-subsampled DP-SGD."""

from __future__ import annotations

import math

from . import _args as A
from ._format import Footnotes, emit, num, table, with_reasons
from ._runtime import setup_jax, working

NAME = "poisson"


def add_parser(sub, common):
    s = sub.add_parser(NAME, parents=[common], help="(eps, delta) and trade-off curve of Poisson-subsampled DP-SGD",
                       description="Certified eps(delta), delta(eps) and trade-off curve of T Poisson-subsampled Gaussian "
                       "steps (rate q), with the Bu et al. and Dong-Roth-Su CLT mus.")
    s.add_argument("--sigma", type=A.SIGMA, default=1.0, help="noise multiplier (default 1)")
    s.add_argument("--q", "--sampling-probability", dest="q", type=A.PROB, default=1e-3,
                   help="sampling probability q (default 1e-3)")
    s.add_argument("--steps", "-T", type=A.STEPS, default=None, help="steps T (default E * ceil(1/q))")
    s.add_argument("--epochs", "-E", type=A.EPOCHS, default=1, help="epochs, T = E * ceil(1/q) when --steps is absent (default 1)")
    s.add_argument("--delta", type=A.list_of(A.DELTA, "delta list"), default=[1e-5], help="delta(s) for eps (default 1e-5)")
    s.add_argument("--epsilon", type=A.list_of(A.EPS0, "epsilon list"), default=[],
                   help="epsilon(s) for delta(eps) (default none: delta(eps) brackets need a finer grid than eps(delta) "
                   "for the same --accuracy, so they are computed only when asked for)")
    s.add_argument("--accuracy", type=A.ACCURACY, default=A.DEFAULT_ACCURACY,
                   help="largest relative width (upper - lower) / upper of the certified brackets; the PLD grid is "
                   f"chosen for it, coarse first (default {A.DEFAULT_ACCURACY:g})")
    s.set_defaults(func=run)
    return s


def steps_of(args):
    return args.steps if args.steps is not None else args.epochs * math.ceil(1.0 / args.q)


def grid_line(r):
    """Which grid the brackets come from and whether it met ``--accuracy``."""
    g = r["grid"]
    where = f"PLD grid 2^{g.size.bit_length() - 1} cells, {'one stage' if g.num_stages() == 1 else 'two stages'}"
    if r["widest"] <= r["accuracy"]:
        return f"{where}: brackets at most {num(r['widest'], 2)} wide (relative), --accuracy {num(r['accuracy'])}"
    return (f"{where}, the last tried: widest bracket {num(r['widest'], 2)} (relative) > --accuracy "
            f"{num(r['accuracy'])}; the upper ends are still sound")


def run(args):
    q, steps = args.q, steps_of(args)
    setup_jax(args)
    from . import _compute as cc

    with working(args, "Poisson PLD accountant"):
        r = cc.poisson_report(args.sigma, q, steps, args.delta, args.epsilon, args.accuracy)
    why = (f"the certified Poisson PLD bracket returned no value at sigma = {num(args.sigma)}, q = {num(q)}, "
           f"T = {steps:,}; try fewer steps or a larger sigma")
    notes = Footnotes()
    lines = [
        f"Poisson-subsampled Gaussian: sigma = {num(args.sigma)}, q = {num(q)}, T = {steps:,} steps",
        "(add/remove one example; certified PLD brackets, worse of the two directions)",
        grid_line(r),
        f"CLT mu (approximations): Bu et al. {num(r['mu_bu'], 6)}   Dong-Roth-Su {num(r['mu_drs'], 6)}",
        "",
        table(["delta", "eps lower", "eps (certified)"],
              [[num(d), notes.cell(a, why, 6), notes.cell(b, why, 6)] for d, a, b in zip(args.delta, r["eps_lower"], r["eps"])]),
        "",
        table(["a", "f(a) (certified lower bound)"], [[num(a), notes.cell(f, why, 6)] for a, f in zip(r["table_a"], r["table"])]),
    ]
    if args.epsilon:
        lines[-1:-1] = [table(["epsilon", "delta lower", "delta (certified)"],
                              [[num(e), notes.cell(a, why, 6), notes.cell(b, why, 6)]
                               for e, a, b in zip(args.epsilon, r["delta_lower"], r["delta"])]), ""]
    lines += [""] + notes.lines() if notes.reasons else []
    path = None
    if args.plot:
        from .. import plotting

        path = plotting.tradeoff_curves(args.plot, r["curve_a"], {"Poisson (certified lower bound)": r["curve"]},
                                        title=f"Poisson: sigma = {num(args.sigma)}, q = {num(q)}, T = {steps:,}",
                                        gap_panel=True)
    bracket = dict(lower=why, upper=why)
    payload = dict(command="poisson", noise_multiplier=args.sigma, sampling_probability=q, num_steps=steps,
                   accuracy=r["accuracy"], bracket_width=r["widest"], grid_cells=r["grid"].size,
                   grid_stages=r["grid"].num_stages(), mu_clt_bu=r["mu_bu"], mu_clt_dong_roth_su=r["mu_drs"],
                   epsilon=[with_reasons(dict(delta=d, lower=a, upper=b), bracket)
                            for d, a, b in zip(args.delta, r["eps_lower"], r["eps"])],
                   delta=[with_reasons(dict(epsilon=e, lower=a, upper=b), bracket)
                          for e, a, b in zip(args.epsilon, r["delta_lower"], r["delta"])],
                   tradeoff=with_reasons(dict(a=r["table_a"], f=r["table"], f_kind="certified lower bound"), dict(f=why)),
                   plot=path)
    emit(args, payload, "\n".join(lines))
    return 0
