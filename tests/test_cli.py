"""The ``jaxdp`` command.

Fast tests: --help of every subcommand, 50 random malformed invocations (one-line error, exit 2),
every subcommand's table / --json / --plot path with the numeric layer stubbed, and the real
``jaxdp plan`` default (the paper's example; one compile of the exact single-epoch search).
Slow tests (``-m slow``): every subcommand end to end with the real accountants.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import jaxdp.core.accuracy
from jaxdp import cli

SUBCOMMANDS = ("plan", "shuffle", "poisson", "compare", "calibrate", "rpp")


from tests._cli_util import _no_persistent_cache, run  # noqa: F401,E402  (autouse fixture)


# ------------------------------------------------------------------------------------------------
# help and malformed input
# ------------------------------------------------------------------------------------------------


def test_top_level_help(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for s in SUBCOMMANDS:
        assert s in out


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_subcommand_help_lists_json_and_plot(sub, capsys):
    code, out, err = run([sub, "--help"], capsys)
    assert code == 0 and err == ""
    assert "--json" in out and "--plot" in out


def _malformed(rng):
    """One random malformed invocation (never reaches a numeric computation)."""
    bad_num = rng.choice(["abc", "nan", "inf", "-inf", "", "1e", "0x", "1,2,", ",", "--", "1..2", "None"])
    kinds = [
        lambda: [rng.choice(["plna", "shufle", "poison", "comp", "x", "-x", "help!", "PLAN"])],
        lambda: ["plan", "--sigma", rng.choice(["-1", "0", bad_num])],
        lambda: ["plan", "--delta", rng.choice(["0", "1", "1.5", "-0.1", bad_num])],
        lambda: ["plan", "--epochs", rng.choice(["0", "1.5", "-3", "1e7", bad_num])],
        lambda: ["plan", "--batch-size", rng.choice(["0", "2.5", bad_num])],
        lambda: ["plan", "--sigma"],
        lambda: ["plan", rng.choice(["--sigmaa", "--foo", "-z", "extra"]), "1"],
        lambda: ["shuffle", "--rounds", rng.choice(["0", "1.5", "1e13", "-5", bad_num])],
        lambda: ["shuffle", "--sigma", rng.choice(["0", "-2", bad_num])],
        lambda: ["shuffle", "--delta", rng.choice(["0", "1", "0.1,2", bad_num])],
        lambda: ["shuffle", "--plot", rng.choice(["out.txt", "noext", "/no/such/dir/x.png"])],
        lambda: ["poisson", "--q", rng.choice(["0", "1.1", "-0.5", bad_num])],
        lambda: ["poisson", "--steps", rng.choice(["0", "2.5", bad_num])],
        lambda: ["poisson", "--epsilon", rng.choice(["-1", bad_num])],
        lambda: ["compare", "--rounds", rng.choice(["0", "10,0", "1.5", bad_num])],
        lambda: ["compare", "--epochs", rng.choice(["0", "1,-1", bad_num])],
        lambda: ["compare", "--delta", rng.choice(["0", "2", bad_num])],
        lambda: ["calibrate"],
        lambda: ["calibrate", "--epsilon", "1"],  # Poisson without --q
        lambda: ["calibrate", "--epsilon", "1", "--sampling", "shuffle"],  # no --rounds
        lambda: ["calibrate", "--epsilon", "1", "--sampling", rng.choice(["both", "shuffled", "x"])],
        lambda: ["calibrate", "--epsilon", rng.choice(["0", "-1", bad_num]), "--q", "0.01"],
        lambda: ["calibrate", "--delta-gap", "0.01"],  # no --sigma
        lambda: ["calibrate", "--delta-gap", "0.01", "--sigma", "1", "--epsilon", "1"],
        lambda: ["calibrate", "--delta-gap", "0.01", "--sigma", "1", "--method", rng.choice(["linear_test", "foo"])],
        lambda: ["calibrate", "--epsilon", "1", "--sampling", "shuffle", "--rounds", "100", "--q", "0.1"],
        lambda: ["rpp", "--alpha", rng.choice(["1", "0.5", "-inf", bad_num])],
        lambda: ["rpp", "--kind", rng.choice(["raw", "median", ""])],
        lambda: ["rpp", "--secret", "sex"],
        lambda: ["rpp", "--csv", "/no/such/file.csv", "--secret", "s", "--query", "q", "--values", "a,b"],
        lambda: ["rpp", "--csv", "/no/such/file.csv"],
        lambda: ["rpp", "--csv", "x.csv", "--secret", "s", "--query", "q", "--values", rng.choice(["a", "a,b,c", ",b"])],
        lambda: [rng.choice(SUBCOMMANDS), "--json", "--plot"],
        lambda: ["--version", "x"] if rng.random() < 0.5 else ["--json"],
    ]
    return rng.choice(kinds)()


def test_fifty_random_malformed_invocations(capsys):
    rng = random.Random(20260506)
    seen = set()
    for _ in range(50):
        argv = _malformed(rng)
        seen.add(tuple(argv))
        code, out, err = run(argv, capsys)
        assert code == 2, (argv, code, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, (argv, err)
        assert "error" in lines[0] and "Traceback" not in err, (argv, err)
        assert out == "", (argv, out)
    assert len(seen) >= 30  # genuinely varied


def test_installed_entry_point_one_line_errors():
    exe = [sys.executable, "-c", "import sys; from jaxdp.cli import main; sys.exit(main())"]
    for argv in (["plan", "--sigma", "-1"], ["nope"], ["shuffle", "--rounds", "abc"]):
        p = subprocess.run(exe + argv, capture_output=True, text=True, timeout=120)
        assert p.returncode == 2
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
        assert p.stdout == ""


def test_json_is_strict_and_cleans_non_finite():
    s = json.dumps(cli.clean({"a": np.array([1.0, np.nan, np.inf]), "b": np.float64(2), "c": np.int32(3)}), allow_nan=False)
    assert json.loads(s) == {"a": [1.0, None, "inf"], "b": 2.0, "c": 3}


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXDP_CACHE_DIR", str(tmp_path))
    assert cli.cache_dir() == str(tmp_path)
    monkeypatch.setenv("JAXDP_CACHE_DIR", "off")
    assert cli.cache_dir() is None
    monkeypatch.delenv("JAXDP_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cli.cache_dir() == os.path.join(str(tmp_path), "jaxdp", "jax")


# ------------------------------------------------------------------------------------------------
# every subcommand with the numeric layer stubbed (fast): table, --json, --plot
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def stubs(monkeypatch):
    from jaxdp.cli import _compute as cc

    def curves(n, keys, val=0.5):
        return {k: np.full(n, val) for k in keys}

    tk = ["tradeoff_exact", "tradeoff_exact_reverse", "tradeoff_berry_esseen", "tradeoff_linear_test", "tradeoff_clt",
          "tradeoff_edgeworth"]

    def shuffle_report(sigma, rounds, epochs, deltas, accuracy):
        na, nc = len(cc.TABLE_A), len(cc.CURVE_A)
        ca = np.asarray(cc.CURVE_A)
        return dict(gap_exact=0.005, gap_exact_lower=0.005, gap_berry_esseen=np.nan, gap_linear_test=0.004, gap_clt=0.0052,
                    gap_edgeworth=0.0053, eps_lower=np.full(len(deltas), 0.03), eps=np.full(len(deltas), 0.031), mu_clt=0.013,
                    accuracy=accuracy, eps_width=0.0322, table=curves(na, tk), curve={k: np.clip(1 - ca - 0.01, 0, 1) for k in tk},
                    table_a=np.asarray(cc.TABLE_A), curve_a=ca)

    def poisson_report(sigma, q, steps, deltas, epsilons, accuracy):
        ca = np.asarray(cc.CURVE_A)
        return dict(grid=jaxdp.core.accuracy.LADDER[1], accuracy=accuracy, widest=0.0098,
                    eps_lower=np.full(len(deltas), 0.9), eps=np.full(len(deltas), 1.0), delta_lower=np.full(len(epsilons), 1e-6),
                    delta=np.full(len(epsilons), 2e-6), mu_bu=0.1, mu_drs=0.13, table=np.full(len(cc.TABLE_A), 0.5),
                    curve=np.clip(1 - ca - 0.02, 0, 1), table_a=np.asarray(cc.TABLE_A), curve_a=ca)

    def compare(d, s, m, e):
        n = len(np.atleast_1d(s))
        return dict(eps_shuffle=np.full(n, 0.9), eps_shuffle_lower=np.full(n, 0.89), eps_poisson=np.full(n, 1.0),
                    eps_poisson_lower=np.full(n, 0.99), mu_shuffle_clt=np.full(n, 0.1), mu_poisson_bu=np.full(n, 0.1),
                    mu_poisson_drs=np.full(n, 0.13), clt_ratio=np.full(n, 1.3))

    def plan(d, s, e):
        n = len(np.atleast_1d(s))
        return dict(rounds_exact=np.full(n, 2730.0), gap_at_rounds=np.full(n, 0.00999), gap_at_rounds_minus_1=np.full(n, 0.01001),
                    rounds_closed_form=np.full(n, 1138053.0), rounds_clt=np.full(n, 2735.0), iterations=np.full(n, 4))

    def gap_curve(sigma, ms, epochs=1):
        ms = np.asarray(ms, float)
        g = 0.5 / np.sqrt(ms)
        return dict(exact=g, berry_esseen=10 * g, clt=g, linear_test=0.5 * g)

    for name, fn in dict(shuffle_report=shuffle_report, poisson_report=poisson_report, compare=compare, plan=plan,
                         gap_curve=gap_curve).items():
        monkeypatch.setattr(cc, name, fn)

    import jaxdp.calibrate as cal

    class Sol:
        def __init__(self, v):
            self.value = v

    monkeypatch.setattr(cal, "poisson_noise_multiplier", lambda e, d, **k: Sol(1.0 / np.asarray(e)), raising=False)
    monkeypatch.setattr(cal, "shuffle_noise_multiplier", lambda e, d, **k: Sol(0.9 / np.asarray(e)), raising=False)
    return cc


STUBBED = [
    ["plan"],
    ["plan", "--sigma", "0.8,1,2", "--delta", "0.001", "-b", "64"],
    ["shuffle", "--sigma", "1", "--rounds", "10000", "--delta", "1e-5,1e-6"],
    ["poisson", "--q", "0.01", "--epochs", "3"],
    ["poisson", "--q", "0.01", "--steps", "100", "--epsilon", "0.5,1", "--accuracy", "0.001"],
    ["compare", "--sigma", "1,2", "--rounds", "100,1000", "--epochs", "1,2"],
    ["calibrate", "--epsilon", "0.5,1,2,4,8", "--q", "0.01", "--steps", "1000"],
    ["calibrate", "--epsilon", "1,2", "--sampling", "shuffle", "--rounds", "1000"],
]


@pytest.mark.parametrize("argv", STUBBED, ids=lambda a: " ".join(a))
def test_subcommand_table_json_plot_stubbed(argv, stubs, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "n/a" in out or any(ch.isdigit() for ch in out)
    code, out, err = run(argv + ["--json"], capsys)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["command"] == argv[0]
    png = tmp_path / "fig.png"
    code, out, err = run(argv + ["--plot", str(png)], capsys)
    assert code == 0, err
    assert png.exists() and png.stat().st_size > 5000
    assert f"wrote {png}" in out


def test_accuracy_default_is_the_librarys():
    from jaxdp.cli import _args

    assert _args.DEFAULT_ACCURACY == jaxdp.core.accuracy.DEFAULT_ACCURACY


def test_poisson_grid_line_says_whether_accuracy_was_met(stubs, capsys):
    code, out, _ = run(["poisson", "--q", "0.01"], capsys)
    assert code == 0 and "PLD grid 2^16 cells, one stage: brackets at most 0.0098 wide (relative), --accuracy 0.01" in out
    assert "delta (certified)" not in out  # delta(eps) only when --epsilon asks for it
    code, out, _ = run(["poisson", "--q", "0.01", "--epsilon", "1", "--accuracy", "0.001"], capsys)
    assert code == 0 and "the last tried: widest bracket 0.0098 (relative) > --accuracy 0.001" in out
    assert "delta (certified)" in out
    p = json.loads(run(["poisson", "--q", "0.01", "--json"], capsys)[1])
    assert (p["accuracy"], p["bracket_width"], p["grid_cells"], p["grid_stages"]) == (0.01, 0.0098, 2**16, 1)


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_poisson_report_climbs_the_ladder(monkeypatch):
    """The CLI's refinement on a ladder of two small grids (cheap to compile), real numbers: a target
    the first rung misses is met on the second, and each reported end is the tighter of the two
    rungs' (both sound): max of the lower ends, min of the upper ends, max of the curve's lower bounds."""
    from jaxdp.cli import _compute as cc
    from jaxdp.core import accuracy
    from jaxdp.core.pld import Grid

    ladder = (Grid(size=2**10, stages=1), Grid(size=2**12, stages=1))
    monkeypatch.setattr(accuracy, "LADDER", ladder)
    monkeypatch.setattr(accuracy, "REFERENCE_WIDTHS", (0.0, 0.0))  # always start at the coarsest
    args = (1.0, 0.01, 100, [1e-5], [1.0])
    r0 = cc.poisson_report(*args, accuracy=0.99)  # met on the first rung: nothing else computed
    assert r0["grid"] == ladder[0] and r0["widest"] <= 0.99
    calls = []
    real = cc._tracecache.call
    monkeypatch.setattr(cc._tracecache, "call", lambda f, a, **k: calls.append(k.get("grid")) or real(f, a, **k))
    target = 0.9 * r0["widest"]
    r = cc.poisson_report(*args, accuracy=target)
    assert calls == [ladder[0], ladder[1]] and r["grid"] == ladder[1] and r["widest"] <= target
    monkeypatch.setattr(accuracy, "LADDER", ladder[1:])
    r1 = cc.poisson_report(*args, accuracy=0.99)  # the second rung alone
    for lo, up in (("eps_lower", "eps"), ("delta_lower", "delta")):
        assert r[lo] == max(r0[lo], r1[lo]) and r[up] == min(r0[up], r1[up]) and r[lo] <= r[up]
    np.testing.assert_array_equal(r["table"], np.maximum(r0["table"], r1["table"]))


def test_shuffle_refines_only_eps_brackets_wider_than_asked_and_never_below_the_law(monkeypatch):
    """jaxdp shuffle's --accuracy: the report's eps brackets (its first rung) go to the library's
    refinement only where too wide, and not below the exact law's domain (the envelope there, which
    no grid narrows); stubbed, so nothing is compiled (the refinement itself: tests/core/test_accuracy.py)."""
    from jaxdp.cli import _compute as cc

    calls = []

    def refine(at, args, accuracy, first=None):
        calls.append((args[0].tolist(), accuracy))
        return np.maximum(first[0], 0.95), np.minimum(first[1], 1.0)

    monkeypatch.setattr(cc._acc, "refine", refine)
    lo, up = np.array([0.9, 0.99]), np.array([1.0, 1.0])
    assert cc._refined_eps(1.0, 100, 2, [1e-5, 1e-6], lo, up, 0.5) == (lo, up) and calls == []  # met
    assert cc._refined_eps(0.2, 100, 2, [1e-5, 1e-6], lo, up, 0.01) == (lo, up) and calls == []  # below the law
    l2, u2 = cc._refined_eps(1.0, 100, 2, [1e-5, 1e-6], lo, up, 0.01)
    assert calls == [([1e-5, 1e-6], 0.01)]
    np.testing.assert_array_equal(l2, [0.95, 0.99])


def test_rpp_uci_stubbed(monkeypatch, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    exp = pytest.importorskip("jaxdp.pufferfish.experiments")

    def compute_tables(alphas, epsilons, pairs=None):
        rows = []
        for q in ("age", "chol"):
            for a in alphas:
                for e in epsilons:
                    r = dict(dataset="adult", secret="sex", query=q, query_kind="RAW", alpha=a, epsilon=e, W1=1.0, W2=2.0,
                             Winf=10.0, n=100)
                    for k in ("song", "pierquin", "theorem1", "tight", "exact"):
                        r["b_" + k] = 10.0 / e if k == "song" else 3.0 / e
                    for k in ("pierquin", "theorem2", "exact"):
                        r["sigma2_" + k] = 5.0
                    rows.append(r)
        return rows, {"claim1": 1.0, "grid_seconds": 0.1, "grid_cells": len(rows)}

    monkeypatch.setattr(exp, "compute_tables", compute_tables)
    code, out, err = run(["rpp", "--alpha", "2,10,inf", "--epsilon", "1,2"], capsys)
    assert code == 0, err
    assert "adult" in out and "claim1" in out
    code, out, _ = run(["rpp", "--json"], capsys)
    assert json.loads(out)["source"] == "uci"
    png = tmp_path / "rpp.png"
    assert run(["rpp", "--plot", str(png)], capsys)[0] == 0 and png.exists()


def test_rpp_csv_errors_are_one_line(tmp_path, capsys):
    f = tmp_path / "d.csv"
    f.write_text("sex,age\nM,30\nF,40\nM,35\n")
    for argv, frag in ((["--secret", "gender", "--query", "age", "--values", "M,F"], "column 'gender'"),
                       (["--secret", "sex", "--query", "age", "--values", "M,X"], "sex == 'X'")):
        code, out, err = run(["rpp", "--csv", str(f)] + argv, capsys)
        assert code == 2 and frag in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------------
# real numbers
# ------------------------------------------------------------------------------------------------


def test_plan_default_is_the_papers_example(capsys):
    """``jaxdp plan``: closed form M ~ 1.14e6, N ~ 1.14e7; exact M = smallest M with gap <= 0.01 (~2.7e3)."""
    code, out, err = run(["plan", "--json"], capsys)
    assert code == 0, err
    c = json.loads(out)["cases"][0]
    assert c["noise_multiplier"] == 1.0 and c["delta"] == 0.01 and c["num_epochs"] == 1 and c["batch_size"] == 10
    assert c["closed_form"]["rounds"] == pytest.approx(1.138e6, rel=2e-3)
    assert c["closed_form"]["samples"] == pytest.approx(1.138e7, rel=2e-3)
    ex = c["exact"]
    assert 2600 <= ex["rounds"] <= 2800 and ex["samples"] == 10 * ex["rounds"]
    assert ex["gap_at_rounds"] <= 0.01 < ex["gap_at_rounds_minus_1"]
    # the printed table shows both side by side
    code, out, _ = run(["plan"], capsys)
    assert code == 0 and "1.138e+06" in out and "1.138e+07" in out and f"{int(ex['rounds']):,}" in out


def test_plan_exact_matches_direct_gap():
    """The integer search returns the smallest feasible M, checked against the gap's certified upper
    end (tv_gap + 1e-8, what shuffle.delta_gap returns) at M and M - 1."""
    from jaxdp.cli import _compute as cc
    from jaxdp.mechanisms import shuffled

    r = cc.plan([0.01], [1.0], [1.0])
    m = float(r["rounds_exact"][0])
    g = np.asarray(shuffled.tv_gap_ends(np.array([1.0, 1.0]), np.array([m, m - 1]))[1])
    np.testing.assert_allclose(g, np.asarray(shuffled.tv_gap(np.array([1.0, 1.0]), np.array([m, m - 1]))) + 1e-8, rtol=1e-12)
    assert g[0] <= 0.01 < g[1]
    np.testing.assert_allclose([r["gap_at_rounds"][0], r["gap_at_rounds_minus_1"][0]], g, rtol=1e-10)


@pytest.mark.slow
def test_shuffle_real(capsys, tmp_path):
    png = tmp_path / "s.png"
    code, out, err = run(["shuffle", "--sigma", "1", "--rounds", "10000", "--json", "--plot", str(png)], capsys)
    assert code == 0, err
    p = json.loads(out)
    assert p["gap"]["exact"] == pytest.approx(0.005228, abs=2e-5)
    assert p["epsilon"][0]["upper"] == pytest.approx(0.037247, rel=2e-3)
    assert png.exists()


@pytest.mark.slow
def test_poisson_and_compare_real(capsys):
    code, out, err = run(["poisson", "--sigma", "1", "--q", "0.01", "--steps", "1000", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["epsilon"][0]["upper"] == pytest.approx(1.828, abs=2e-3)
    code, out, err = run(["compare", "--sigma", "1", "--rounds", "10000", "--json"], capsys)
    assert code == 0, err
    c = json.loads(out)["cases"][0]
    assert c["eps_shuffle"] == pytest.approx(0.037247, rel=2e-3)
    assert c["eps_poisson"] == pytest.approx(0.038017, rel=2e-3)
    assert c["mu_ratio_drs_over_bu"] == pytest.approx(1.3046, abs=1e-3)


@pytest.mark.slow
def test_calibrate_real(capsys):
    code, out, err = run(["calibrate", "--epsilon", "1", "--q", "0.01", "--steps", "1000", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["table"][0]["noise_multiplier"] == pytest.approx(1.415, abs=2e-3)


@pytest.mark.slow
def test_rpp_csv_real(tmp_path, capsys):
    f = tmp_path / "d.csv"
    f.write_text("s,x\na,0\nb,1\n")
    code, out, err = run(["rpp", "--csv", str(f), "--secret", "s", "--query", "x", "--values", "a,b", "--alpha", "2",
                          "--epsilon", "1", "--json"], capsys)
    assert code == 0, err
    row = json.loads(out)["table"][0]
    assert row["b_theorem1"] == pytest.approx(2.0, rel=1e-6)  # spec pufferfish.md section 5
    assert row["b_tight"] == pytest.approx(0.715333, rel=1e-4)
