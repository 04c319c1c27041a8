"""``jaxdp calibrate``: the noise multiplier for a target (eps, delta), or the rounds for a target gap."""

from __future__ import annotations

import math

from . import _args as A
from ._format import Footnotes, emit, integer, num, table, with_reasons, wrap
from ._runtime import CLIError, chunked, import_module, setup_jax, working

NAME = "calibrate"


def add_parser(sub, common):
    s = sub.add_parser(NAME, parents=[common], help="noise multiplier for (eps, delta), or rounds for a gap",
                       description="With --epsilon: the smallest noise multiplier with certified eps(delta) <= epsilon "
                       "(a noise table for a list of epsilons), for Poisson (--q, --steps/--epochs) or shuffling "
                       "(--rounds, --epochs). With --delta-gap and --sigma: the smallest rounds per epoch M.")
    s.add_argument("--epsilon", type=A.list_of(A.EPS, "epsilon list"), default=None, help="target epsilon(s)")
    s.add_argument("--delta", type=A.DELTA, default=1e-5, help="delta (default 1e-5)")
    s.add_argument("--sampling", choices=("poisson", "shuffle"), default="poisson", help="subsampling scheme (default poisson)")
    s.add_argument("--q", "--sampling-probability", dest="q", type=A.PROB, default=None, help="Poisson sampling probability")
    s.add_argument("--steps", "-T", type=A.STEPS, default=None, help="Poisson steps (default E * ceil(1/q))")
    s.add_argument("--rounds", "-M", type=A.ROUNDS, default=None, help="shuffling: rounds per epoch M")
    s.add_argument("--epochs", "-E", type=A.EPOCHS, default=1, help="epochs E (default 1)")
    s.add_argument("--delta-gap", type=A.DELTA, default=None, help="solve for rounds M with gap <= this (needs --sigma)")
    s.add_argument("--sigma", type=A.list_of(A.SIGMA, "sigma list"), default=None, help="noise multiplier(s) for --delta-gap")
    s.add_argument("--method", choices=("exact", "berry_esseen", "clt", "edgeworth"), default="exact",
                   help="gap used with --delta-gap (default exact)")
    s.set_defaults(func=run)
    return s


def _check(args):
    """Refuse inconsistent combinations (before JAX is imported)."""
    if args.delta_gap is not None:
        if args.epsilon is not None:
            raise CLIError("give either --delta-gap (solve for rounds) or --epsilon (solve for sigma), not both")
        if args.sigma is None:
            raise CLIError("--delta-gap needs --sigma (the noise multiplier)")
        if args.q is not None or args.steps is not None or args.rounds is not None:
            raise CLIError("--delta-gap solves for the rounds M: do not give --q, --steps or --rounds")
        return
    if args.epsilon is None:
        raise CLIError("give --epsilon (solve for the noise multiplier) or --delta-gap with --sigma (solve for rounds)")
    if args.sampling == "poisson":
        if args.q is None:
            raise CLIError("--sampling poisson needs --q (sampling probability)")
        if args.rounds is not None:
            raise CLIError("--rounds applies to --sampling shuffle; use --q and --steps/--epochs for Poisson")
    else:
        if args.rounds is None:
            raise CLIError("--sampling shuffle needs --rounds (rounds per epoch M)")
        if args.q is not None or args.steps is not None:
            raise CLIError("--q/--steps apply to --sampling poisson; use --rounds and --epochs for shuffling")


def _plot(args, x, series, **kw):
    if not args.plot:
        return None
    from .. import plotting

    return plotting.lines(args.plot, x, series, **kw)


def _noise(args):
    import numpy as np

    cal = import_module("jaxdp.calibrate", "calibration (jaxdp.calibrate)")
    eps = [float(e) for e in args.epsilon]
    if args.sampling == "poisson":
        steps = args.steps if args.steps is not None else args.epochs * math.ceil(1.0 / args.q)
        setting = dict(sampling="poisson", sampling_probability=args.q, num_steps=steps)
        desc = f"Poisson, q = {num(args.q)}, T = {steps:,} steps"

        def fn(e):
            return {"sigma": cal.poisson_noise_multiplier(e, np.full_like(e, args.delta), sampling_probability=args.q,
                                                          num_steps=steps, throw=False).value}
    else:
        setting = dict(sampling="shuffle", num_rounds=args.rounds, num_epochs=args.epochs)
        desc = f"shuffling, M = {args.rounds:,} rounds/epoch, E = {args.epochs}"

        def fn(e):
            return {"sigma": cal.shuffle_noise_multiplier(e, np.full_like(e, args.delta), num_rounds=args.rounds,
                                                          num_epochs=args.epochs, throw=False).value}
    with working(args, "calibration solver"):
        sig = chunked(args, fn, [eps], "calibrate")["sigma"]
    why = "infeasible within the solver's sigma range: no noise multiplier it searches reaches this epsilon"
    notes = Footnotes()
    text = "\n".join([wrap(f"Smallest noise multiplier sigma with certified eps(delta = {num(args.delta)}) <= epsilon ({desc})"), "",
                      table(["epsilon", "sigma"], [[num(e), notes.cell(s, why, 6)] for e, s in zip(eps, sig)])]
                     + notes.lines())
    path = _plot(args, eps, {desc: sig}, xlabel="epsilon", ylabel="noise multiplier sigma",
                 title=f"noise table at delta = {num(args.delta)}", logx=True, logy=True)
    payload = dict(command="calibrate", target="noise_multiplier", delta=args.delta, **setting,
                   table=[with_reasons(dict(epsilon=e, noise_multiplier=s), dict(noise_multiplier=why)) for e, s in zip(eps, sig)],
                   plot=path)
    emit(args, payload, text)
    return 0


def _rounds(args):
    import numpy as np

    from . import _compute as cc

    sig = np.asarray(args.sigma, float)
    with working(args, "rounds search"):
        if args.method == "exact":
            m = cc.plan(np.full(sig.size, args.delta_gap), sig, np.full(sig.size, float(args.epochs)))["rounds_exact"]
        else:
            cal = import_module("jaxdp.calibrate", "calibration (jaxdp.calibrate)")
            m = np.asarray(cal.rounds(delta_gap=np.full(sig.size, args.delta_gap), noise_multiplier=sig,
                                      num_epochs=args.epochs, method=args.method)[0])
    why = (f"no M <= 1e12 found with {args.method} gap <= {num(args.delta_gap)} (outside the method's range, "
           "e.g. the exact single-epoch accountant covers sigma in [0.3, 50])")
    notes = Footnotes()
    rows = [[num(s), integer(mm) if not math.isnan(mm) else f"n/a {notes.mark(why)}"] for s, mm in zip(sig, m)]
    text = "\n".join([wrap(f"Smallest rounds per epoch M with {args.method} gap <= {num(args.delta_gap)} over E = {args.epochs} "
                           "epoch(s)"), "", table(["sigma", "M"], rows)] + notes.lines())
    path = _plot(args, sig, {f"{args.method}, gap = {num(args.delta_gap)}": m}, xlabel="noise multiplier sigma",
                 ylabel="rounds per epoch M", logy=True, title="rounds needed")
    payload = dict(command="calibrate", target="rounds", delta_gap=args.delta_gap, num_epochs=args.epochs, method=args.method,
                   table=[with_reasons(dict(noise_multiplier=s, rounds=mm), dict(rounds=why)) for s, mm in zip(sig, m)],
                   plot=path)
    emit(args, payload, text)
    return 0


def run(args):
    _check(args)
    setup_jax(args)
    return _rounds(args) if args.delta_gap is not None else _noise(args)
