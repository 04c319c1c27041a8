"""``jaxdp rpp``: alpha-Wasserstein Renyi Pufferfish noise on the UCI data sets or on a CSV file."""

from __future__ import annotations

import math
import os

from . import _args as A
from ._format import Footnotes, emit, num, table, wrap
from ._runtime import CLIError, import_module, setup_jax, working

NAME = "rpp"

UCI_COLS = [("W1", "W1"), ("Winf", "Winf"), ("b_song", "b Song"), ("b_pierquin", "b Pierquin"), ("b_theorem1", "b Thm1"),
            ("b_tight", "b tight"), ("b_exact", "b exact"), ("sigma2_pierquin", "s2 Pierquin"),
            ("sigma2_theorem2", "s2 Thm2"), ("sigma2_exact", "s2 exact")]
WHY = "no finite noise: the calibration condition has no solution at this (alpha, eps) for this method"


def add_parser(sub, common):
    s = sub.add_parser(NAME, parents=[common], help="Renyi Pufferfish noise on the UCI data sets or your CSV",
                       description="alpha-Wasserstein Renyi Pufferfish calibration. Without --csv: the UCI Adult / Heart "
                       "Disease / Student Performance experiments. With --csv FILE --secret COL --values A,B --query COL: "
                       "the noise protecting the secret COL in {A, B} for releases of the numeric column --query.")
    s.add_argument("--alpha", type=A.list_of(A.alpha, "alpha list"), default=[2.0, 5.0, 10.0, float("inf")],
                   help="Renyi orders (> 1, 'inf' allowed; default 2,5,10,inf)")
    s.add_argument("--epsilon", type=A.list_of(A.EPS, "epsilon list"), default=[1.0], help="epsilon(s) (default 1)")
    s.add_argument("--kind", choices=("RAW", "MEAN"), default="RAW", help="UCI: raw value or mean query (default RAW)")
    s.add_argument("--csv", metavar="FILE", default=None, help="your data (CSV with a header row)")
    s.add_argument("--secret", metavar="COLUMN", default=None, help="CSV column holding the secret")
    s.add_argument("--values", metavar="A,B", default=None, help="the two secret values to protect")
    s.add_argument("--query", metavar="COLUMN", default=None, help="numeric CSV column that is released")
    s.set_defaults(func=run)
    return s


def _law(rows, secret, query, value):
    """Distinct finite values of ``query`` in rows with ``secret == value``, their weights and count."""
    import numpy as np

    xs = []
    for r in rows:
        if (r.get(secret) or "").strip() == value:
            try:
                x = float(r[query])
            except (TypeError, ValueError):
                continue
            if math.isfinite(x):
                xs.append(x)
    if not xs:
        raise CLIError(f"--csv: no numeric {query!r} values in rows with {secret} == {value!r}")
    vals, cnt = np.unique(np.asarray(xs), return_counts=True)
    return vals, cnt / cnt.sum(), len(xs)


def read_csv(path, secret, query, values):
    """The two conditional laws of ``query`` given ``secret`` in ``values`` (one-line errors)."""
    import csv

    if not os.path.isfile(path):
        raise CLIError(f"--csv: no such file {path!r}")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise CLIError(f"--csv: cannot read {path!r}: {e}") from None
    if not rows:
        raise CLIError(f"--csv: {path!r} has no data rows")
    cols = list(rows[0].keys())
    for c in (secret, query):
        if c not in cols:
            raise CLIError(f"--csv: column {c!r} not in {path!r} (columns: {', '.join(map(str, cols))})")
    return [_law(rows, secret, query, v) for v in values]


def _uci_plot(args, sel):
    from .. import plotting

    e0 = args.epsilon[0]
    keys = sorted({(r["dataset"], r["query"], r["secret"]) for r in sel})
    fin = sorted({r["alpha"] for r in sel if math.isfinite(r["alpha"])})
    series = {}
    for k in keys:
        by_a = {r["alpha"]: r for r in sel if (r["dataset"], r["query"], r["secret"]) == k and r["epsilon"] == e0}
        series[f"{k[0]}:{k[1]}|{k[2]}"] = [by_a[a]["b_tight"] / by_a[a]["b_song"] for a in fin]
    return plotting.lines(args.plot, fin, series, xlabel="alpha", ylabel="b (tight alpha-W) / b (W_inf, Song)",
                          title=f"Laplace noise ratio b_tight / b_Song vs alpha, eps = {num(e0)} ({args.kind})", logx=True)


def _uci(args):
    import numpy as np

    setup_jax(args)
    exp = import_module("jaxdp.pufferfish.experiments", "the UCI experiments (jaxdp.pufferfish.experiments)")
    with working(args, "UCI grid"), np.errstate(invalid="ignore", divide="ignore"):
        rows, summary = exp.compute_tables(alphas=tuple(args.alpha), epsilons=tuple(args.epsilon))
    sel = [r for r in rows if r["query_kind"] == args.kind]
    notes = Footnotes()
    body = [[r["dataset"], r["secret"], r["query"], num(r["alpha"]), num(r["epsilon"])]
            + [notes.cell(r[k], WHY) for k, _ in UCI_COLS] for r in sel]
    head = ["dataset", "secret", "query", "alpha", "eps"] + [h for _, h in UCI_COLS]
    text = "\n".join([
        f"Renyi Pufferfish calibration on UCI data ({args.kind} queries): Laplace scale b and Gaussian variance s2",
        "(alpha-Wasserstein conditions vs the W_inf baselines of Song et al. / Pierquin et al.)", "",
        table(head, body, ["<", "<", "<"] + [">"] * 12, keep=5, wide=args.wide), "",
        wrap("claims (fraction of grid cells where they hold): " + ", ".join(
            f"{k} {num(v)}" for k, v in summary.items() if k not in ("grid_seconds", "grid_cells")))] + notes.lines())
    path = _uci_plot(args, sel) if args.plot else None
    emit(args, dict(command="rpp", source="uci", kind=args.kind, summary=summary, rows=sel, plot=path), text)
    return 0


def _csv_values(args):
    if not (args.secret and args.query and args.values):
        raise CLIError("--csv needs --secret COLUMN, --query COLUMN and --values A,B")
    vals = [v.strip() for v in args.values.split(",")]
    if len(vals) != 2 or not all(vals):
        raise CLIError(f"--values: {args.values!r} must be two comma-separated secret values, e.g. Male,Female")
    return vals


def _csv(args):
    import numpy as np

    vals = _csv_values(args)
    (xi, wi, ni), (xj, wj, nj) = read_csv(args.csv, args.secret, args.query, vals)
    setup_jax(args)
    pf = import_module("jaxdp.pufferfish", "Renyi Pufferfish calibration (jaxdp.pufferfish)")
    al, ep = np.meshgrid(np.asarray(args.alpha, float), np.asarray(args.epsilon, float), indexing="ij")
    al, ep = al.ravel(), ep.ravel()
    out = {}
    kw = dict(weights_i=wi, weights_j=wj, alpha=al, epsilon=ep)
    with working(args, "Pufferfish calibration"):
        for meth in ("theorem1", "tight", "pierquin", "song"):
            out["b_" + meth] = np.asarray(pf.calibrate_laplace(xi, xj, method=meth, **kw))
        for meth in ("theorem2", "pierquin"):
            out["sigma2_" + meth] = np.asarray(pf.calibrate_gaussian(xi, xj, method=meth, **kw)) ** 2
    keys = list(out)
    items = [dict(alpha=a, epsilon=e, **{k: out[k][i] for k in keys}) for i, (a, e) in enumerate(zip(al, ep))]
    notes = Footnotes()
    body = [[num(it["alpha"]), num(it["epsilon"])] + [notes.cell(it[k], WHY) for k in keys] for it in items]
    text = "\n".join([
        wrap(f"Renyi Pufferfish calibration for {args.query!r} given {args.secret} = {vals[0]!r} (n = {ni}) vs {vals[1]!r} "
             f"(n = {nj})"),
        wrap("(b: Laplace scale; s2: Gaussian variance; theorem1/tight/theorem2 = alpha-Wasserstein conditions, "
             "pierquin/song = W_inf baselines)", " "), "",
        table(["alpha", "eps"] + [k.replace("sigma2_", "s2 ").replace("b_", "b ") for k in keys], body, keep=2,
              wide=args.wide)] + notes.lines())
    path = None
    if args.plot:
        from .. import plotting

        fin = np.isfinite(al) & (ep == args.epsilon[0])
        path = plotting.lines(args.plot, al[fin], {k: out[k][fin] for k in keys}, xlabel="alpha",
                              ylabel="noise (b: Laplace scale, s2: Gaussian variance)",
                              title=f"RPP noise vs alpha at eps = {num(args.epsilon[0])}", logx=True, logy=True)
    payload = dict(command="rpp", source="csv", file=args.csv, secret=args.secret, values=vals, query=args.query,
                   n_i=ni, n_j=nj, table=items, plot=path)
    emit(args, payload, text)
    return 0


def run(args):
    if args.csv is None:
        if args.secret or args.query or args.values:
            raise CLIError("--secret/--query/--values need --csv FILE (without --csv the UCI experiments run)")
        return _uci(args)
    return _csv(args)
