"""``jaxdp compare``: shuffling vs Poisson subsampling at matching settings (q = 1/M, T = E*M);
``--all-samplers``: reshuffling, balls-in-bins, k-of-t random allocation and Poisson side by side."""

from __future__ import annotations

import itertools
import math

from . import _args as A
from ._format import Footnotes, emit, num, table, with_reasons
from ._runtime import Progress, chunked, setup_jax, working

NAME = "compare"

WHY = "the certified PLD bracket returned no value at these settings"


def add_parser(sub, common):
    s = sub.add_parser(NAME, parents=[common], help="shuffling vs Poisson at matching settings (q = 1/M, T = E*M)",
                       description="Certified eps of shuffling (M rounds, E epochs) and of Poisson subsampling at "
                       "q = 1/M, T = E*M, with the two CLT mus (Bu et al., Dong-Roth-Su) and their ratio. "
                       "Lists give the grid sigma x M x E.")
    s.add_argument("--sigma", type=A.list_of(A.SIGMA, "sigma list"), default=[1.0], help="noise multiplier(s) (default 1)")
    s.add_argument("--rounds", "-M", type=A.list_of(A.ROUNDS, "rounds list"), default=[10000],
                   help="rounds per epoch M (default 10000)")
    s.add_argument("--epochs", "-E", type=A.list_of(A.EPOCHS, "epochs list"), default=[1], help="epochs E (default 1)")
    s.add_argument("--delta", type=A.DELTA, default=1e-5, help="delta (default 1e-5)")
    s.add_argument("--all-samplers", action="store_true",
                   help="four samplers side by side: E reshuffled epochs, balls-in-bins (cycle M, bins fixed for the "
                   "run), random allocation of E of T steps, Poisson (each accounted by jaxdp.account)")
    s.set_defaults(func=run)
    return s


def _item(args, r, i, s, m, e):
    es, ep = r["eps_shuffle"][i], r["eps_poisson"][i]
    item = dict(noise_multiplier=s, num_rounds=m, num_epochs=e, sampling_probability=1.0 / m, num_steps=e * m,
                delta=args.delta, eps_shuffle=es, eps_shuffle_lower=r["eps_shuffle_lower"][i], eps_poisson=ep,
                eps_poisson_lower=r["eps_poisson_lower"][i], eps_ratio=es / ep,
                mu_shuffle_clt=r["mu_shuffle_clt"][i], mu_poisson_bu=r["mu_poisson_bu"][i],
                mu_poisson_dong_roth_su=r["mu_poisson_drs"][i], mu_ratio_drs_over_bu=r["clt_ratio"][i])
    return with_reasons(item, {k: WHY for k in ("eps_shuffle", "eps_shuffle_lower", "eps_poisson", "eps_poisson_lower",
                                                "eps_ratio")})


def run(args):
    cases = list(itertools.product(args.sigma, args.rounds, args.epochs))
    setup_jax(args)
    if args.all_samplers:
        return run_samplers(args, cases)
    from . import _compute as cc

    cols = [[args.delta] * len(cases), [c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases]]
    with working(args, "shuffle and Poisson accountants"):
        r = chunked(args, cc.compare, cols, "compare")
    notes = Footnotes()
    items = [_item(args, r, i, s, m, e) for i, (s, m, e) in enumerate(cases)]
    rows = [[num(s), f"{m:,}", e, num(1.0 / m), f"{e * m:,}", notes.cell(it["eps_shuffle"], WHY, 5),
             notes.cell(it["eps_poisson"], WHY, 5), notes.cell(it["eps_ratio"], WHY, 4), num(it["mu_poisson_bu"], 4),
             num(it["mu_poisson_dong_roth_su"], 4), num(it["mu_ratio_drs_over_bu"], 4)]
            for it, (s, m, e) in zip(items, cases)]
    text = "\n".join([
        f"Shuffling vs Poisson subsampling at matching settings (q = 1/M, T = E*M), delta = {num(args.delta)}",
        "(certified eps, worse of add/remove; CLT mus (approximations): mu_P (Bu et al.; = shuffle CLT mu)",
        " and mu_U (Dong-Roth-Su))",
        "",
        table(["sigma", "M", "E", "q", "T", "eps shuffle", "eps Poisson", "shuf/Pois", "mu_P", "mu_U", "mu_U/mu_P"], rows,
              keep=3, wide=args.wide),
    ] + ([""] + notes.lines() if notes.reasons else []))
    path = None
    if args.plot:
        from .. import plotting

        labels = [f"s={num(s)}\nM={m:,}\nE={e}" for s, m, e in cases]
        path = plotting.bars(args.plot, labels, {"shuffling (certified)": r["eps_shuffle"], "Poisson (certified)": r["eps_poisson"]},
                             ylabel=f"epsilon at delta = {num(args.delta)}", title="shuffling vs Poisson subsampling")
    emit(args, dict(command="compare", cases=items, plot=path), text)
    return 0


# ------------------------------------------------------------------------------------------------
# --all-samplers
# ------------------------------------------------------------------------------------------------

#: column heading and event of each sampler (M rounds per epoch, E epochs, T = E*M steps; the events of
#: jaxdp.cli._compute.sampler_events)
SAMPLERS = dict(
    reshuffled=("reshuffled", "E epochs of Shuffled(Gaussian(sigma), M): a new permutation every epoch"),
    balls_in_bins=("balls-in-bins", "BallsInBins(Gaussian(sigma), T, M): each example keeps one of M bins (exact)"),
    k_of_t=("k-of-t", "RandomAllocation(Gaussian(sigma), E, T): jaxdp's bound, E epochs of 1 of M steps"),
    poisson=("Poisson", "T steps of PoissonSampled(1/M, Gaussian(sigma))"),
)


def _sampler_why(key, s, e):
    """Why a sampler's eps would be n/a: below SIGMA_MIN the shuffled law has no value."""
    from ..mechanisms.shuffled import SIGMA_MIN

    noise = s / math.sqrt(e) if key == "balls_in_bins" else s
    if key != "poisson" and noise < SIGMA_MIN:
        return (f"jaxdp's shuffled law is resolved for noise >= {SIGMA_MIN:g} only (reshuffled and k-of-t run it at "
                "noise sigma, balls-in-bins at sigma/sqrt(E))")
    return WHY


def _sampler_item(args, r, i, s, m, e):
    item = dict(noise_multiplier=s, num_rounds=m, num_epochs=e, num_steps=e * m, sampling_probability=1.0 / m,
                delta=args.delta)
    why = {}
    for k in SAMPLERS:
        for end in ("", "_lower"):
            item[f"eps_{k}{end}"] = r[f"eps_{k}{end}"][i]
            why[f"eps_{k}{end}"] = _sampler_why(k, s, e)
    return with_reasons(item, why)


def run_samplers(args, cases):
    """The four samplers at matching settings: certified eps (upper end) of each, by jaxdp.account."""
    from . import _compute as cc

    bar = Progress(len(cases), "compare", enabled=not args.quiet) if len(cases) > 1 else None
    with working(args, "four sampler accountants"):
        r = cc.samplers(args.delta, cases, bar)
    if bar:
        bar.close()
    notes = Footnotes()
    items = [_sampler_item(args, r, i, s, m, e) for i, (s, m, e) in enumerate(cases)]
    rows = [[num(s), f"{m:,}", e, f"{e * m:,}"] + [notes.cell(it[f"eps_{k}"], _sampler_why(k, s, e), 5) for k in SAMPLERS]
            for it, (s, m, e) in zip(items, cases)]
    text = "\n".join([
        f"Four samplers at matching settings (M rounds/epoch, E epochs, T = E*M steps), delta = {num(args.delta)}",
        "(certified eps: upper end, worse of add/remove, jaxdp.account of each event)",
    ] + [f"  {name:<14} {what}" for name, what in SAMPLERS.values()] + [
        "",
        table(["sigma", "M", "E", "T"] + [name for name, _ in SAMPLERS.values()], rows, keep=3, wide=args.wide),
    ] + ([""] + notes.lines() if notes.reasons else []))
    path = None
    if args.plot:
        from .. import plotting

        labels = [f"s={num(s)}\nM={m:,}\nE={e}" for s, m, e in cases]
        path = plotting.bars(args.plot, labels, {name: r[f"eps_{k}"] for k, (name, _) in SAMPLERS.items()},
                             ylabel=f"certified epsilon at delta = {num(args.delta)}", title="four samplers at matching settings")
    emit(args, dict(command="compare", samplers={k: what for k, (_, what) in SAMPLERS.items()}, cases=items, plot=path), text)
    return 0
