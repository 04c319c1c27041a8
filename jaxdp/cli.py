"""The ``jaxdp`` command: plan, account, compare and calibrate DP-SGD with shuffling; RPP tables.

Subcommands (``jaxdp SUBCOMMAND --help`` for each): ``plan``, ``shuffle``, ``poisson``, ``compare``,
``calibrate``, ``rpp``.  Every subcommand prints a human-readable table by default, JSON with
``--json`` and writes a figure with ``--plot FILE.png``.  Bad input gives a one-line message on
stderr and exit code 2 (never a traceback).  Reference: ``docs/cli.md``.

JAX is imported only after the arguments are parsed (``--help`` and input errors are instant).
Compiled programs are kept in a persistent cache (``$JAXDP_CACHE_DIR``, default
``~/.cache/jaxdp/jax``; ``--no-cache`` or ``JAXDP_CACHE_DIR=off`` disables it), so only the first
run of each command pays for compilation.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

PROG = "jaxdp"


class CLIError(Exception):
    """A user error detected after parsing: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``jaxdp plan: error: ...``) and exit code 2."""

    def error(self, message):  # noqa: D401
        msg = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {msg} (see '{self.prog} --help')\n")


# ------------------------------------------------------------------------------------------------
# argument types (validated before JAX is imported)
# ------------------------------------------------------------------------------------------------


def _number(text, what):
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{what}: {text!r} must be finite")
    return x


def _ranged(what, lo=None, hi=None, lo_open=False, hi_open=False, integer=False):
    def conv(text):
        x = _number(text, what)
        if integer and x != int(x):
            raise argparse.ArgumentTypeError(f"{what}: {text!r} must be a whole number")
        bad = (lo is not None and (x < lo or (lo_open and x == lo))) or (hi is not None and (x > hi or (hi_open and x == hi)))
        if bad:
            left = "(" if lo_open else "["
            right = ")" if (hi_open or hi is None) else "]"
            rng = f"{left}{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}{right}"
            raise argparse.ArgumentTypeError(f"{what}: {text!r} is outside {rng}")
        return int(x) if integer else x

    conv.__name__ = what
    return conv


def _list_of(conv, what):
    def parse(text):
        parts = [p for p in str(text).replace(";", ",").split(",")]
        if not parts or any(not p.strip() for p in parts):
            raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a comma-separated list of numbers")
        if len(parts) > 10000:
            raise argparse.ArgumentTypeError(f"{what}: at most 10000 values")
        return [conv(p.strip()) for p in parts]

    parse.__name__ = what
    return parse


SIGMA = _ranged("noise multiplier", lo=0.0, lo_open=True)
DELTA = _ranged("delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
EPS = _ranged("epsilon", lo=0.0, lo_open=True)
EPS0 = _ranged("epsilon", lo=0.0)
ROUNDS = _ranged("rounds", lo=1.0, hi=1e12, integer=True)
EPOCHS = _ranged("epochs", lo=1.0, hi=1e6, integer=True)
BATCH = _ranged("batch size", lo=1.0, hi=1e9, integer=True)
PROB = _ranged("sampling probability", lo=0.0, hi=1.0, lo_open=True)
STEPS = _ranged("steps", lo=1.0, hi=1e12, integer=True)
ALPHA = _ranged("alpha", lo=1.0, lo_open=True)


def _alpha(text):
    if str(text).strip().lower() in ("inf", "infinity"):
        return float("inf")
    return ALPHA(text)


def _plot_path(text):
    path = str(text)
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".png", ".pdf", ".svg"):
        raise argparse.ArgumentTypeError(f"--plot: {path!r} must end in .png, .pdf or .svg")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"--plot: directory {parent!r} does not exist")
    return path


# ------------------------------------------------------------------------------------------------
# output helpers
# ------------------------------------------------------------------------------------------------


def _clean(x):
    """JSON-safe: numpy -> Python, NaN -> null, +-inf -> "inf"/"-inf"."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return _clean(x.tolist())
    if isinstance(x, (np.floating, float)):
        x = float(x)
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


def _g(x, digits=4):
    """Compact number: NaN -> n/a, inf -> inf, integers with separators, else %.{digits}g."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def _int(x):
    x = float(x)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "> 1e12" if x > 0 else "-inf"
    if x >= 1e7:
        return f"{x:.4g}"
    return f"{int(round(x)):,}"


def _table(headers, rows, align=None):
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or ["<"] + [">"] * (len(headers) - 1)
    out = []
    for k, r in enumerate(cells):
        out.append("  ".join(f"{c:{a}{wi}}" for c, a, wi in zip(r, align, w)).rstrip())
        if k == 0:
            out.append("  ".join("-" * wi for wi in w))
    return "\n".join(out)


class Progress:
    """A minimal progress bar on stderr (only when stderr is a terminal and not ``--quiet``)."""

    def __init__(self, total, desc, enabled=True):
        self.total, self.desc, self.n = max(int(total), 1), desc, 0
        self.enabled = enabled and sys.stderr.isatty()
        self.t0 = time.time()
        self._draw()

    def _draw(self):
        if not self.enabled:
            return
        width = 28
        k = int(width * self.n / self.total)
        sys.stderr.write(f"\r{self.desc} [{'#' * k}{'.' * (width - k)}] {self.n}/{self.total} {time.time() - self.t0:5.1f}s")
        sys.stderr.flush()

    def update(self, n=1):
        self.n = min(self.n + n, self.total)
        self._draw()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _note(args, msg):
    if not getattr(args, "quiet", False) and not getattr(args, "json", False):
        print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def cache_dir():
    """Persistent compilation cache directory (``None`` when disabled)."""
    env = os.environ.get("JAXDP_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in ("", "0", "off", "none", "false") else env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxdp", "jax")


def _setup_jax(args):
    """Import JAX (float64 via jaxdp) and enable the persistent compilation cache."""
    import jax

    import jaxdp  # noqa: F401  (float64)

    path = None if getattr(args, "no_cache", False) else cache_dir()
    if path:
        try:
            os.makedirs(path, exist_ok=True)
            jax.config.update("jax_compilation_cache_dir", path)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        except Exception:  # an unwritable cache only costs time
            pass
    return jax


def _emit(args, payload, text):
    if args.json:
        print(json.dumps(_clean(payload), indent=2, allow_nan=False))
    else:
        print(text)


def _plotted(args, path):
    if path and not args.json:
        print(f"wrote {path}")


# ------------------------------------------------------------------------------------------------
# plan
# ------------------------------------------------------------------------------------------------


def cmd_plan(args):
    import numpy as np

    if args.epochs > 1:
        _note(args, f"exact planning over {args.epochs} epochs uses the certified PLD engine; the first run compiles for 1-3 minutes")
    _setup_jax(args)
    from . import _cli_compute as cc

    sig = np.asarray(args.sigma, float)
    n = sig.size
    t0 = time.time()
    r = cc.plan(np.full(n, args.delta), sig, np.full(n, float(args.epochs)))
    elapsed = time.time() - t0
    b = args.batch_size
    rows, cases = [], []
    for i in range(n):
        mc, me = float(r["rounds_closed_form"][i]), float(r["rounds_exact"][i])
        cases.append(dict(
            noise_multiplier=float(sig[i]), delta=args.delta, num_epochs=args.epochs, batch_size=b,
            closed_form=dict(method="berry_esseen (C = 0.56)", rounds=mc, samples=mc * b),
            exact=dict(rounds=me, samples=me * b, gap_at_rounds=float(r["gap_at_rounds"][i]),
                       gap_at_rounds_minus_1=float(r["gap_at_rounds_minus_1"][i]),
                       certified=bool(args.epochs > 1)),
            clt_approximation=dict(rounds=float(r["rounds_clt"][i])),
            closed_form_over_exact=mc / me if me > 0 else float("nan"),
        ))
        rows.append([_g(sig[i]), _g(args.delta), args.epochs, f"{b:,}", _g(mc), _g(mc * b), _int(me), _int(me * b),
                     f"{mc / me:,.0f}x" if math.isfinite(me) and math.isfinite(mc) else "n/a"])
    head = ["sigma", "delta", "E", "b", "M closed form", "N closed form", "M exact", "N exact", "ratio"]
    lines = [
        "Shuffled DP-SGD planning: rounds per epoch M and samples N = b*M for f(a) >= 1 - a - delta",
        "(add/remove one example; closed form = Berry-Esseen bound, C = 0.56; exact = smallest M whose",
        " exact gap sup_a(1 - a - f(a)) is <= delta" + (", certified PLD upper end over E epochs)" if args.epochs > 1 else ")"),
        "",
        _table(head, rows),
        "",
    ]
    for c in cases:
        e = c["exact"]
        if math.isfinite(e["rounds"]):
            m1 = f" < {_g(e['gap_at_rounds_minus_1'], 6)} at M - 1" if e["rounds"] > 1 else " (M = 1 is the Gaussian mechanism)"
            lines.append(f"check sigma = {_g(c['noise_multiplier'])}: exact gap at M = {_int(e['rounds'])} is "
                         f"{_g(e['gap_at_rounds'], 6)} <= {_g(args.delta)}{m1}")
        else:
            lines.append(f"sigma = {_g(c['noise_multiplier'])}: no M <= 1e12 reaches delta = {_g(args.delta)}"
                         if math.isinf(e["rounds"]) else f"sigma = {_g(c['noise_multiplier'])}: exact search failed (n/a)")
    lines.append(f"(computed in {elapsed:.1f} s)")
    path = None
    if args.plot:
        from . import plotting

        c = cases[0]
        me, mc = c["exact"]["rounds"], c["closed_form"]["rounds"]
        hi = max(mc if math.isfinite(mc) else 1e7, me if math.isfinite(me) else 1e7) * 3
        ms = np.unique(np.round(np.logspace(0.5, math.log10(hi), 33)))
        _note(args, "computing the gap curve for the plot")
        curves = cc.gap_curve(c["noise_multiplier"], ms, args.epochs)
        path = plotting.gap_vs_rounds(
            args.plot, ms,
            {"exact": curves["exact"], "closed form (Berry-Esseen, upper bound)": curves["berry_esseen"],
             "CLT (approximation)": curves["clt"], "linear test (lower bound)": curves["linear_test"]},
            delta=args.delta, marks={"exact": (me, c["exact"]["gap_at_rounds"]), "closed form": (mc, args.delta)},
            title=f"sigma = {_g(c['noise_multiplier'])}, E = {args.epochs}: gap vs rounds per epoch")
    _emit(args, dict(command="plan", cases=cases, seconds=elapsed, plot=path), "\n".join(lines))
    _plotted(args, path)
    return 0


# ------------------------------------------------------------------------------------------------
# shuffle
# ------------------------------------------------------------------------------------------------


def cmd_shuffle(args):
    if args.epochs > 1:
        _note(args, "multi-epoch curves use the certified PLD engine; the first run compiles for 1-3 minutes")
    else:
        _note(args, "first run compiles the exact accountant (about a minute; cached afterwards)")
    _setup_jax(args)
    from . import _cli_compute as cc
    from .shuffle import closed_form as cf

    t0 = time.time()
    r = cc.shuffle_report(args.sigma, args.rounds, args.epochs, args.delta)
    reg = cf.regime(args.sigma, float(args.rounds))
    regime = str(reg.name)
    elapsed = time.time() - t0
    gaps = [["exact" + (" (certified upper end)" if args.epochs > 1 else " (error <= 1e-8)"), _g(r["gap_exact"], 6), "tight"],
            ["closed form (Berry-Esseen)", _g(r["gap_berry_esseen"], 6), "upper bound" + ("" if regime == "berry_esseen" else " (n/a outside its regime)")],
            ["linear test", _g(r["gap_linear_test"], 6), "lower bound"],
            ["CLT", _g(r["gap_clt"], 6), "approximation"],
            ["Edgeworth", _g(r["gap_edgeworth"], 6), "approximation"]]
    eps_rows = [[_g(d), _g(lo, 6), _g(up, 6)] for d, lo, up in zip(args.delta, r["eps_lower"], r["eps"])]
    t = r["table"]
    tr = [[_g(a), _g(f1, 6), _g(f2, 6), _g(f3, 6), _g(f4, 6), _g(f5, 6)] for a, f1, f2, f3, f4, f5 in zip(
        r["table_a"], t["tradeoff_exact"], t["tradeoff_exact_reverse"], t["tradeoff_berry_esseen"], t["tradeoff_clt"],
        t["tradeoff_edgeworth"])]
    text = "\n".join([
        f"Shuffled DP-SGD: sigma = {_g(args.sigma)}, M = {args.rounds:,} rounds/epoch, E = {args.epochs} epoch(s)",
        "(add/remove one example; adversary sees every round)",
        f"regime: {regime}   CLT mu = {_g(r['mu_clt'], 6)}",
        "",
        "gap sup_a (1 - a - f(a))  [the delta of f(a) >= 1 - a - delta]",
        _table(["method", "gap", "kind"], gaps, ["<", ">", "<"]),
        "",
        "(epsilon, delta): certified bracket, worse of add/remove",
        _table(["delta", "eps lower", "eps (certified)"], eps_rows),
        "",
        "trade-off curve f(a) = T(P, Q) (reverse = T(Q, P))",
        _table(["a", "exact", "exact reverse", "Berry-Esseen", "CLT", "Edgeworth"], tr),
        f"(computed in {elapsed:.1f} s)",
    ])
    path = None
    if args.plot:
        from . import plotting

        c = r["curve"]
        path = plotting.tradeoff_curves(
            args.plot, r["curve_a"],
            {"exact T(P,Q)": c["tradeoff_exact"], "exact T(Q,P)": c["tradeoff_exact_reverse"],
             "Berry-Esseen (lower bound)": c["tradeoff_berry_esseen"], "linear test (upper bound)": c["tradeoff_linear_test"],
             "CLT": c["tradeoff_clt"], "Edgeworth": c["tradeoff_edgeworth"]},
            title=f"shuffled: sigma = {_g(args.sigma)}, M = {args.rounds:,}, E = {args.epochs}",
            styles={"CLT": dict(ls="--"), "Edgeworth": dict(ls="-."), "linear test (upper bound)": dict(ls=":")})
    payload = dict(command="shuffle", noise_multiplier=args.sigma, num_rounds=args.rounds, num_epochs=args.epochs,
                   regime=regime, mu_clt=r["mu_clt"],
                   gap=dict(exact=r["gap_exact"], exact_lower=r["gap_exact_lower"], berry_esseen=r["gap_berry_esseen"],
                            linear_test=r["gap_linear_test"], clt=r["gap_clt"], edgeworth=r["gap_edgeworth"]),
                   epsilon=[dict(delta=d, lower=lo, upper=up) for d, lo, up in zip(args.delta, r["eps_lower"], r["eps"])],
                   tradeoff=dict(a=r["table_a"], **{k.replace("tradeoff_", ""): v for k, v in t.items()}),
                   seconds=elapsed, plot=path)
    _emit(args, payload, text)
    _plotted(args, path)
    return 0


# ------------------------------------------------------------------------------------------------
# poisson
# ------------------------------------------------------------------------------------------------


def cmd_poisson(args):
    q = args.q
    steps = args.steps if args.steps is not None else args.epochs * math.ceil(1.0 / q)
    _note(args, "first run compiles the Poisson PLD accountant (about a minute; cached afterwards)")
    _setup_jax(args)
    from . import _cli_compute as cc

    t0 = time.time()
    r = cc.poisson_report(args.sigma, q, steps, args.delta, args.epsilon)
    elapsed = time.time() - t0
    text = "\n".join([
        f"Poisson-subsampled Gaussian: sigma = {_g(args.sigma)}, q = {_g(q)}, T = {steps:,} steps",
        "(add/remove one example; certified PLD brackets, worse of the two directions)",
        f"CLT mu: Bu et al. {_g(r['mu_bu'], 6)}   Dong-Roth-Su {_g(r['mu_drs'], 6)}",
        "",
        _table(["delta", "eps lower", "eps (certified)"], [[_g(d), _g(a, 6), _g(b, 6)] for d, a, b in zip(args.delta, r["eps_lower"], r["eps"])]),
        "",
        _table(["epsilon", "delta lower", "delta (certified)"], [[_g(e), _g(a, 6), _g(b, 6)] for e, a, b in zip(args.epsilon, r["delta_lower"], r["delta"])]),
        "",
        _table(["a", "f(a) (certified lower end)"], [[_g(a), _g(f, 6)] for a, f in zip(r["table_a"], r["table"])]),
        f"(computed in {elapsed:.1f} s)",
    ])
    path = None
    if args.plot:
        from . import plotting

        path = plotting.tradeoff_curves(args.plot, r["curve_a"], {"Poisson (certified)": r["curve"]},
                                        title=f"Poisson: sigma = {_g(args.sigma)}, q = {_g(q)}, T = {steps:,}")
    payload = dict(command="poisson", noise_multiplier=args.sigma, sampling_probability=q, num_steps=steps,
                   mu_clt_bu=r["mu_bu"], mu_clt_dong_roth_su=r["mu_drs"],
                   epsilon=[dict(delta=d, lower=a, upper=b) for d, a, b in zip(args.delta, r["eps_lower"], r["eps"])],
                   delta=[dict(epsilon=e, lower=a, upper=b) for e, a, b in zip(args.epsilon, r["delta_lower"], r["delta"])],
                   tradeoff=dict(a=r["table_a"], f=r["table"]), seconds=elapsed, plot=path)
    _emit(args, payload, text)
    _plotted(args, path)
    return 0


# ------------------------------------------------------------------------------------------------
# compare
# ------------------------------------------------------------------------------------------------

_CHUNK = 4


def _chunked(args, fn, cols, desc):
    """Run ``fn`` on fixed-size chunks (padded: one compiled signature) with a progress bar."""
    import numpy as np

    n = len(cols[0])
    out = {}
    bar = Progress(math.ceil(n / _CHUNK), desc, enabled=not args.quiet) if n > _CHUNK else None
    for i in range(0, n, _CHUNK):
        part = [np.asarray(c[i:i + _CHUNK], float) for c in cols]
        k = len(part[0])
        if n > _CHUNK and k < _CHUNK:
            part = [np.concatenate([p, np.repeat(p[-1:], _CHUNK - k)]) for p in part]
        res = fn(*part)
        for key, v in res.items():
            out.setdefault(key, []).append(np.asarray(v)[:k])
        if bar:
            bar.update()
    if bar:
        bar.close()
    return {k: np.concatenate(v) for k, v in out.items()}


def cmd_compare(args):
    import itertools

    cases = list(itertools.product(args.sigma, args.rounds, args.epochs))
    if any(e > 1 for _, _, e in cases):
        _note(args, "multi-epoch shuffling uses the certified PLD engine; the first run compiles for 1-3 minutes")
    else:
        _note(args, "first run compiles the shuffle and Poisson accountants (1-3 minutes; cached afterwards)")
    _setup_jax(args)
    from . import _cli_compute as cc

    t0 = time.time()
    cols = [[args.delta] * len(cases), [c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases]]
    r = _chunked(args, lambda d, s, m, e: cc.compare(d, s, m, e), cols, "compare")
    elapsed = time.time() - t0
    rows, items = [], []
    for i, (s, m, e) in enumerate(cases):
        es, ep = r["eps_shuffle"][i], r["eps_poisson"][i]
        items.append(dict(noise_multiplier=s, num_rounds=m, num_epochs=e, sampling_probability=1.0 / m, num_steps=e * m,
                          delta=args.delta, eps_shuffle=es, eps_shuffle_lower=r["eps_shuffle_lower"][i], eps_poisson=ep,
                          eps_poisson_lower=r["eps_poisson_lower"][i], eps_ratio=es / ep,
                          mu_shuffle_clt=r["mu_shuffle_clt"][i], mu_poisson_bu=r["mu_poisson_bu"][i],
                          mu_poisson_dong_roth_su=r["mu_poisson_drs"][i], mu_ratio_drs_over_bu=r["clt_ratio"][i]))
        rows.append([_g(s), f"{m:,}", e, _g(1.0 / m), f"{e * m:,}", _g(es, 5), _g(ep, 5), _g(es / ep, 4),
                     _g(r["mu_poisson_bu"][i], 4), _g(r["mu_poisson_drs"][i], 4), _g(r["clt_ratio"][i], 4)])
    text = "\n".join([
        f"Shuffling vs Poisson subsampling at matching settings (q = 1/M, T = E*M), delta = {_g(args.delta)}",
        "(certified eps, worse of add/remove; CLT mus: mu_P (Bu et al.; = shuffle CLT mu) and mu_U (Dong-Roth-Su))",
        "",
        _table(["sigma", "M", "E", "q", "T", "eps shuffle", "eps Poisson", "shuf/Pois", "mu_P", "mu_U", "mu_U/mu_P"], rows),
        f"(computed in {elapsed:.1f} s)",
    ])
    path = None
    if args.plot:
        from . import plotting

        labels = [f"s={_g(s)}\nM={m:,}\nE={e}" for s, m, e in cases]
        path = plotting.bars(args.plot, labels, {"shuffling (exact)": r["eps_shuffle"], "Poisson (exact)": r["eps_poisson"]},
                             ylabel=f"epsilon at delta = {_g(args.delta)}", title="shuffling vs Poisson subsampling")
    _emit(args, dict(command="compare", cases=items, seconds=elapsed, plot=path), text)
    _plotted(args, path)
    return 0


# ------------------------------------------------------------------------------------------------
# calibrate
# ------------------------------------------------------------------------------------------------


def _import(name, what):
    import importlib

    try:
        return importlib.import_module(name)
    except Exception as e:  # another engineer's module may be unfinished
        raise CLIError(f"{what} is unavailable in this installation ({name}: {type(e).__name__}: {e})") from None


def cmd_calibrate(args):
    import numpy as np

    if args.delta_gap is not None:
        if args.epsilon is not None:
            raise CLIError("give either --delta-gap (solve for rounds) or --epsilon (solve for sigma), not both")
        return _calibrate_rounds(args)
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
    _note(args, "first run compiles the calibration solver (1-3 minutes; cached afterwards)")
    _setup_jax(args)
    cal = _import("jaxdp.calibrate", "calibration (jaxdp.calibrate)")
    eps = [float(e) for e in args.epsilon]
    t0 = time.time()
    if args.sampling == "poisson":
        steps = args.steps if args.steps is not None else args.epochs * math.ceil(1.0 / args.q)

        def fn(e):
            return {"sigma": cal.poisson_noise_multiplier(e, np.full_like(e, args.delta), sampling_probability=args.q,
                                                          num_steps=steps, throw=False).value}
        setting = dict(sampling="poisson", sampling_probability=args.q, num_steps=steps)
    else:
        def fn(e):
            return {"sigma": cal.shuffle_noise_multiplier(e, np.full_like(e, args.delta), num_rounds=args.rounds,
                                                          num_epochs=args.epochs, throw=False).value}
        setting = dict(sampling="shuffle", num_rounds=args.rounds, num_epochs=args.epochs)
    r = _chunked(args, fn, [eps], "calibrate")
    elapsed = time.time() - t0
    sig = r["sigma"]
    rows = [[_g(e), _g(s, 6)] for e, s in zip(eps, sig)]
    desc = (f"Poisson, q = {_g(args.q)}, T = {setting['num_steps']:,} steps" if args.sampling == "poisson"
            else f"shuffling, M = {args.rounds:,} rounds/epoch, E = {args.epochs}")
    text = "\n".join([
        f"Smallest noise multiplier sigma with certified eps(delta = {_g(args.delta)}) <= epsilon ({desc})",
        "",
        _table(["epsilon", "sigma"], rows),
        "(n/a: infeasible within the solver's sigma range)" if np.any(~np.isfinite(sig)) else "",
        f"(computed in {elapsed:.1f} s)",
    ])
    path = None
    if args.plot:
        from . import plotting

        path = plotting.lines(args.plot, eps, {desc: sig}, xlabel="epsilon", ylabel="noise multiplier sigma",
                              title=f"noise table at delta = {_g(args.delta)}", logx=True, logy=True)
    payload = dict(command="calibrate", target="noise_multiplier", delta=args.delta, **setting,
                   table=[dict(epsilon=e, noise_multiplier=s) for e, s in zip(eps, sig)], seconds=elapsed, plot=path)
    _emit(args, payload, text)
    _plotted(args, path)
    return 0


def _calibrate_rounds(args):
    import numpy as np

    if args.sigma is None:
        raise CLIError("--delta-gap needs --sigma (the noise multiplier)")
    if args.q is not None or args.steps is not None or args.rounds is not None:
        raise CLIError("--delta-gap solves for the rounds M: do not give --q, --steps or --rounds")
    _setup_jax(args)
    from . import _cli_compute as cc

    sig = np.asarray(args.sigma, float)
    t0 = time.time()
    if args.method == "exact":
        r = cc.plan(np.full(sig.size, args.delta_gap), sig, np.full(sig.size, float(args.epochs)))
        m = r["rounds_exact"]
    else:
        cal = _import("jaxdp.calibrate", "calibration (jaxdp.calibrate)")
        m, _ = cal.rounds(delta_gap=np.full(sig.size, args.delta_gap), noise_multiplier=sig, num_epochs=args.epochs,
                          method=args.method)
        m = np.asarray(m)
    elapsed = time.time() - t0
    rows = [[_g(s), _int(mm)] for s, mm in zip(sig, m)]
    text = "\n".join([
        f"Smallest rounds per epoch M with {args.method} gap <= {_g(args.delta_gap)} over E = {args.epochs} epoch(s)",
        "", _table(["sigma", "M"], rows), f"(computed in {elapsed:.1f} s)"])
    path = None
    if args.plot:
        from . import plotting

        path = plotting.lines(args.plot, sig, {f"{args.method}, gap = {_g(args.delta_gap)}": m}, xlabel="noise multiplier sigma",
                              ylabel="rounds per epoch M", logy=True, title="rounds needed")
    payload = dict(command="calibrate", target="rounds", delta_gap=args.delta_gap, num_epochs=args.epochs, method=args.method,
                   table=[dict(noise_multiplier=s, rounds=mm) for s, mm in zip(sig, m)], seconds=elapsed, plot=path)
    _emit(args, payload, text)
    _plotted(args, path)
    return 0


# ------------------------------------------------------------------------------------------------
# rpp
# ------------------------------------------------------------------------------------------------


def _read_csv(path, secret, query, values):
    import csv

    import numpy as np

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
    laws = []
    for v in values:
        xs = []
        for r in rows:
            if (r.get(secret) or "").strip() == v:
                try:
                    x = float(r[query])
                except (TypeError, ValueError):
                    continue
                if math.isfinite(x):
                    xs.append(x)
        if not xs:
            raise CLIError(f"--csv: no numeric {query!r} values in rows with {secret} == {v!r}")
        vals, cnt = np.unique(np.asarray(xs), return_counts=True)
        laws.append((vals, cnt / cnt.sum(), len(xs)))
    return laws


def cmd_rpp(args):
    import numpy as np

    alphas, epss = args.alpha, args.epsilon
    if args.csv is None:
        if args.secret or args.query or args.values:
            raise CLIError("--secret/--query/--values need --csv FILE (without --csv the UCI experiments run)")
        _note(args, "running the UCI grid (first run compiles for a few minutes; cached afterwards)")
        _setup_jax(args)
        exp = _import("jaxdp.pufferfish.experiments", "the UCI experiments (jaxdp.pufferfish.experiments)")
        t0 = time.time()
        with np.errstate(invalid="ignore", divide="ignore"):
            rows, summary = exp.compute_tables(alphas=tuple(alphas), epsilons=tuple(epss))
        elapsed = time.time() - t0
        sel = [r for r in rows if r["query_kind"] == args.kind]
        head = ["dataset", "secret", "query", "alpha", "eps", "W1", "Winf", "b Song", "b Pierquin", "b Thm1", "b tight",
                "b exact", "s2 Pierquin", "s2 Thm2", "s2 exact"]
        body = [[r["dataset"], r["secret"], r["query"], _g(r["alpha"]), _g(r["epsilon"]), _g(r["W1"]), _g(r["Winf"]),
                 _g(r["b_song"]), _g(r["b_pierquin"]), _g(r["b_theorem1"]), _g(r["b_tight"]), _g(r["b_exact"]),
                 _g(r["sigma2_pierquin"]), _g(r["sigma2_theorem2"]), _g(r["sigma2_exact"])] for r in sel]
        text = "\n".join([
            f"Renyi Pufferfish calibration on UCI data ({args.kind} queries): Laplace scale b and Gaussian variance s2",
            "(alpha-Wasserstein conditions vs the W_inf baselines of Song et al. / Pierquin et al.)", "",
            _table(head, body, ["<", "<", "<"] + [">"] * 12), "",
            "claims (fraction of grid cells where they hold): " + ", ".join(
                f"{k} {_g(v)}" for k, v in summary.items() if k not in ("grid_seconds", "grid_cells")),
            f"(computed in {elapsed:.1f} s)"])
        path = None
        if args.plot:
            from . import plotting

            keys = sorted({(r["dataset"], r["query"], r["secret"]) for r in sel})
            e0 = epss[0]
            series = {}
            fin = sorted({r["alpha"] for r in sel if math.isfinite(r["alpha"])})
            for k in keys:
                by_a = {r["alpha"]: r for r in sel if (r["dataset"], r["query"], r["secret"]) == k and r["epsilon"] == e0}
                series[f"{k[0]}:{k[1]}|{k[2]}"] = [by_a[a]["b_tight"] / by_a[a]["b_song"] for a in fin]
            path = plotting.lines(args.plot, fin, series, xlabel="alpha", ylabel="b (tight alpha-W) / b (W_inf, Song)",
                                  title=f"Laplace noise relative to the W_inf baseline, eps = {_g(e0)} ({args.kind})", logx=True)
        payload = dict(command="rpp", source="uci", kind=args.kind, summary=summary, rows=sel, seconds=elapsed, plot=path)
        _emit(args, payload, text)
        _plotted(args, path)
        return 0
    # user CSV
    if not (args.secret and args.query and args.values):
        raise CLIError("--csv needs --secret COLUMN, --query COLUMN and --values A,B")
    vals = [v.strip() for v in args.values.split(",")]
    if len(vals) != 2 or not all(vals):
        raise CLIError(f"--values: {args.values!r} must be two comma-separated secret values, e.g. Male,Female")
    (xi, wi, ni), (xj, wj, nj) = _read_csv(args.csv, args.secret, args.query, vals)
    _setup_jax(args)
    pf = _import("jaxdp.pufferfish", "Renyi Pufferfish calibration (jaxdp.pufferfish)")
    A, E = np.meshgrid(np.asarray(alphas, float), np.asarray(epss, float), indexing="ij")
    t0 = time.time()
    out = {}
    for meth in ("theorem1", "tight", "pierquin", "song"):
        out["b_" + meth] = np.asarray(pf.calibrate_laplace(xi, xj, weights_i=wi, weights_j=wj, alpha=A.ravel(),
                                                           epsilon=E.ravel(), method=meth))
    for meth in ("theorem2", "pierquin"):
        out["sigma2_" + meth] = np.asarray(pf.calibrate_gaussian(xi, xj, weights_i=wi, weights_j=wj, alpha=A.ravel(),
                                                                 epsilon=E.ravel(), method=meth)) ** 2
    elapsed = time.time() - t0
    keys = list(out)
    items = [dict(alpha=a, epsilon=e, **{k: out[k][i] for k in keys}) for i, (a, e) in enumerate(zip(A.ravel(), E.ravel()))]
    body = [[_g(it["alpha"]), _g(it["epsilon"])] + [_g(it[k]) for k in keys] for it in items]
    text = "\n".join([
        f"Renyi Pufferfish calibration for {args.query!r} given {args.secret} = {vals[0]!r} (n = {ni}) vs {vals[1]!r} (n = {nj})",
        "(b: Laplace scale; s2: Gaussian variance; theorem1/tight/theorem2 = alpha-Wasserstein conditions,"
        " pierquin/song = W_inf baselines)", "",
        _table(["alpha", "eps"] + [k.replace("sigma2_", "s2 ").replace("b_", "b ") for k in keys], body),
        f"(computed in {elapsed:.1f} s)"])
    path = None
    if args.plot:
        from . import plotting

        sel = E.ravel() == epss[0]
        fin = np.isfinite(A.ravel()) & sel
        path = plotting.lines(args.plot, A.ravel()[fin], {k: out[k][fin] for k in keys}, xlabel="alpha", ylabel="noise",
                              title=f"RPP noise at eps = {_g(epss[0])}", logx=True, logy=True)
    payload = dict(command="rpp", source="csv", file=args.csv, secret=args.secret, values=vals, query=args.query,
                   n_i=ni, n_j=nj, table=items, seconds=elapsed, plot=path)
    _emit(args, payload, text)
    _plotted(args, path)
    return 0


# ------------------------------------------------------------------------------------------------
# parser
# ------------------------------------------------------------------------------------------------

EPILOG = ("Numbers are for add/remove adjacency. Lists are comma-separated (--sigma 0.8,1,2). "
          "Compiled programs are cached in $JAXDP_CACHE_DIR (default ~/.cache/jaxdp/jax).")


def build_parser():
    common = _Parser(add_help=False)
    g = common.add_argument_group("output")
    g.add_argument("--json", action="store_true", help="print JSON (for scripts) instead of tables")
    g.add_argument("--plot", metavar="FILE.png", type=_plot_path, help="write a figure (.png, .pdf or .svg)")
    g.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    g.add_argument("--no-cache", action="store_true", help="do not use the persistent JAX compilation cache")

    p = _Parser(prog=PROG, description="Differentially private accounting for DP-SGD with shuffling (f-DP), "
                "Poisson subsampling and Renyi Pufferfish privacy.", epilog=EPILOG)
    from . import __version__ as _v  # cheap: jaxdp/__init__ must stay importable without side effects

    p.add_argument("--version", action="version", version=f"{PROG} {_v}")
    sub = p.add_subparsers(dest="cmd", metavar="SUBCOMMAND")

    s = sub.add_parser("plan", parents=[common], help="rounds M and samples N for a target delta: closed form vs exact",
                       description="Rounds per epoch M (and samples N = b*M) needed for f(a) >= 1 - a - delta after E "
                       "shuffled epochs: the paper's closed form (Berry-Esseen) next to the exact requirement.",
                       epilog="Default: the paper's example sigma = 1, delta = 0.01, E = 1, b = 10.")
    s.add_argument("--sigma", type=_list_of(SIGMA, "sigma list"), default=[1.0], help="noise multiplier(s) (default 1)")
    s.add_argument("--delta", type=DELTA, default=0.01, help="target gap delta in (0, 1) (default 0.01)")
    s.add_argument("--epochs", "-E", type=EPOCHS, default=1, help="epochs E (default 1)")
    s.add_argument("--batch-size", "-b", type=BATCH, default=10, help="batch size b, N = b*M (default 10)")
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("shuffle", parents=[common], help="trade-off curve, gap and (eps, delta) of shuffled DP-SGD",
                       description="Exact trade-off curve, gap sup_a(1 - a - f(a)) and certified eps(delta) of E epochs "
                       "of M shuffled rounds, with the closed-form bounds and the CLT/Edgeworth approximations.")
    s.add_argument("--sigma", type=SIGMA, default=1.0, help="noise multiplier (default 1)")
    s.add_argument("--rounds", "-M", type=ROUNDS, default=10000, help="rounds per epoch M (default 10000)")
    s.add_argument("--epochs", "-E", type=EPOCHS, default=1, help="epochs E (default 1)")
    s.add_argument("--delta", type=_list_of(DELTA, "delta list"), default=[1e-5], help="delta(s) for eps (default 1e-5)")
    s.set_defaults(func=cmd_shuffle)

    s = sub.add_parser("poisson", parents=[common], help="(eps, delta) and trade-off curve of Poisson-subsampled DP-SGD",
                       description="Certified eps(delta), delta(eps) and trade-off curve of T Poisson-subsampled Gaussian "
                       "steps (rate q), with the Bu et al. and Dong-Roth-Su CLT mus.")
    s.add_argument("--sigma", type=SIGMA, default=1.0, help="noise multiplier (default 1)")
    s.add_argument("--q", "--sampling-probability", dest="q", type=PROB, default=1e-3, help="sampling probability q (default 1e-3)")
    s.add_argument("--steps", "-T", type=STEPS, default=None, help="steps T (default E * ceil(1/q))")
    s.add_argument("--epochs", "-E", type=EPOCHS, default=1, help="epochs, T = E * ceil(1/q) when --steps is absent (default 1)")
    s.add_argument("--delta", type=_list_of(DELTA, "delta list"), default=[1e-5], help="delta(s) for eps (default 1e-5)")
    s.add_argument("--epsilon", type=_list_of(EPS0, "epsilon list"), default=[1.0], help="epsilon(s) for delta (default 1)")
    s.set_defaults(func=cmd_poisson)

    s = sub.add_parser("compare", parents=[common], help="shuffling vs Poisson at matching settings (q = 1/M, T = E*M)",
                       description="Certified eps of shuffling (M rounds, E epochs) and of Poisson subsampling at "
                       "q = 1/M, T = E*M, with the two CLT mus (Bu et al., Dong-Roth-Su) and their ratio. "
                       "Lists give the grid sigma x M x E.")
    s.add_argument("--sigma", type=_list_of(SIGMA, "sigma list"), default=[1.0], help="noise multiplier(s) (default 1)")
    s.add_argument("--rounds", "-M", type=_list_of(ROUNDS, "rounds list"), default=[10000], help="rounds per epoch M (default 10000)")
    s.add_argument("--epochs", "-E", type=_list_of(EPOCHS, "epochs list"), default=[1], help="epochs E (default 1)")
    s.add_argument("--delta", type=DELTA, default=1e-5, help="delta (default 1e-5)")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("calibrate", parents=[common], help="noise multiplier for (eps, delta), or rounds for a gap",
                       description="With --epsilon: the smallest noise multiplier with certified eps(delta) <= epsilon "
                       "(a noise table for a list of epsilons), for Poisson (--q, --steps/--epochs) or shuffling "
                       "(--rounds, --epochs). With --delta-gap and --sigma: the smallest rounds per epoch M.")
    s.add_argument("--epsilon", type=_list_of(EPS, "epsilon list"), default=None, help="target epsilon(s)")
    s.add_argument("--delta", type=DELTA, default=1e-5, help="delta (default 1e-5)")
    s.add_argument("--sampling", choices=("poisson", "shuffle"), default="poisson", help="subsampling scheme (default poisson)")
    s.add_argument("--q", "--sampling-probability", dest="q", type=PROB, default=None, help="Poisson sampling probability")
    s.add_argument("--steps", "-T", type=STEPS, default=None, help="Poisson steps (default E * ceil(1/q))")
    s.add_argument("--rounds", "-M", type=ROUNDS, default=None, help="shuffling: rounds per epoch M")
    s.add_argument("--epochs", "-E", type=EPOCHS, default=1, help="epochs E (default 1)")
    s.add_argument("--delta-gap", type=DELTA, default=None, help="solve for rounds M with gap <= this (needs --sigma)")
    s.add_argument("--sigma", type=_list_of(SIGMA, "sigma list"), default=None, help="noise multiplier(s) for --delta-gap")
    s.add_argument("--method", choices=("exact", "berry_esseen", "clt", "edgeworth"), default="exact",
                   help="gap used with --delta-gap (default exact)")
    s.set_defaults(func=cmd_calibrate)

    s = sub.add_parser("rpp", parents=[common], help="Renyi Pufferfish noise on the UCI data sets or your CSV",
                       description="alpha-Wasserstein Renyi Pufferfish calibration. Without --csv: the UCI Adult / Heart "
                       "Disease / Student Performance experiments. With --csv FILE --secret COL --values A,B --query COL: "
                       "the noise protecting the secret COL in {A, B} for releases of the numeric column --query.")
    s.add_argument("--alpha", type=_list_of(_alpha, "alpha list"), default=[2.0, 5.0, 10.0, float("inf")],
                   help="Renyi orders (> 1, 'inf' allowed; default 2,5,10,inf)")
    s.add_argument("--epsilon", type=_list_of(EPS, "epsilon list"), default=[1.0], help="epsilon(s) (default 1)")
    s.add_argument("--kind", choices=("RAW", "MEAN"), default="RAW", help="UCI: raw value or mean query (default RAW)")
    s.add_argument("--csv", metavar="FILE", default=None, help="your data (CSV with a header row)")
    s.add_argument("--secret", metavar="COLUMN", default=None, help="CSV column holding the secret")
    s.add_argument("--values", metavar="A,B", default=None, help="the two secret values to protect")
    s.add_argument("--query", metavar="COLUMN", default=None, help="numeric CSV column that is released")
    s.set_defaults(func=cmd_rpp)
    return p


def main(argv=None) -> int:
    """Entry point of the ``jaxdp`` command; returns the exit code (0 ok, 2 bad input, 1 internal error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help / --version (0) and usage errors (2)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    if not getattr(args, "cmd", None):
        print(f"{PROG}: error: choose a subcommand: plan, shuffle, poisson, compare, calibrate, rpp (see '{PROG} --help')",
              file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, NotImplementedError) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"{PROG} {args.cmd}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - never a traceback for users; JAXDP_DEBUG=1 shows it
        if os.environ.get("JAXDP_DEBUG"):
            raise
        msg = " ".join(str(e).split())[:500]
        print(f"{PROG} {args.cmd}: internal error: {type(e).__name__}: {msg} (set JAXDP_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
