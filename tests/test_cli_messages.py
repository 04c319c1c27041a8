"""Honest messages of the ``jaxdp`` command (issue 19), with the numeric layer stubbed (fast).

Each test pins one message rule: progress notes only when slow, XLA's compile alarm filtered,
every n/a footnoted (and its reason in --json), approximations outside their domain reported as
n/a (outside ...), truthful kinds, the regime explained, plan check lines with separating digits,
an honest plan JSON, subcommand-level errors with suggestions, tables within 100 columns.
"""

from __future__ import annotations

import json
import os
import re
import time

import numpy as np
import pytest

import jaxdp.core.accuracy
from jaxdp import cli
from jaxdp.cli import _format, _runtime
from jaxdp.cli import _compute as cc


from tests._cli_util import _no_persistent_cache, run  # noqa: F401,E402  (autouse fixture)


def _shuffle_stub(exact=0.005, edgeworth=0.0053, clt=0.0052, be=np.nan):
    tk = ["tradeoff_exact", "tradeoff_exact_reverse", "tradeoff_berry_esseen", "tradeoff_linear_test", "tradeoff_clt",
          "tradeoff_edgeworth"]

    def shuffle_report(sigma, rounds, epochs, deltas, accuracy):
        na, ca = len(cc.TABLE_A), np.asarray(cc.CURVE_A)
        table = {k: np.full(na, 0.5) for k in tk}
        curve = {k: np.clip(1 - ca - 0.01, 0, 1) for k in tk}
        for part, n in ((table, na), (curve, ca.size)):
            if np.isnan(exact):
                part["tradeoff_exact"] = part["tradeoff_exact_reverse"] = np.full(n, np.nan)
            if edgeworth == 0.0:
                part["tradeoff_edgeworth"] = np.zeros(n)
        return dict(gap_exact=exact, gap_exact_lower=exact, gap_berry_esseen=be, gap_linear_test=0.004, gap_clt=clt,
                    gap_edgeworth=edgeworth, eps_lower=np.full(len(deltas), 0.03), eps=np.full(len(deltas), 0.031),
                    mu_clt=0.013, accuracy=accuracy, eps_width=0.0322, table=table, curve=curve, table_a=np.asarray(cc.TABLE_A),
                    curve_a=ca)

    return shuffle_report


# ------------------------------------------------------------------------------------------------
# progress notes and the XLA alarm
# ------------------------------------------------------------------------------------------------


def test_fast_run_prints_no_compile_note(monkeypatch, capsys):
    monkeypatch.setattr(cc, "shuffle_report", _shuffle_stub())
    code, out, err = run(["shuffle"], capsys)
    assert code == 0
    assert err == ""  # nothing like "first run compiles ... (cached afterwards)" on a fast run


def test_slow_computation_gets_a_note(monkeypatch, capsys):
    monkeypatch.setattr(_runtime, "NOTE_AFTER_S", 0.05)

    class Args:
        quiet = False

    with _runtime.working(Args(), "test computation"):
        time.sleep(0.3)
    err = capsys.readouterr().err
    assert "jaxdp: test computation: working" in err and "done in" in err
    Args.quiet = True
    with _runtime.working(Args(), "test computation"):
        time.sleep(0.3)
    assert capsys.readouterr().err == ""


def test_xla_slow_compile_alarm_is_filtered(capfd):
    class Args:
        quiet = True

    alarm = ("E1203 07:00:00.000000 1 slow_operation_alarm.cc:73] \n********************************\n"
             "[Compiling module jit_x] Very slow compile? If you want to file a bug, run with envvar "
             "XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.\n********************************\n")
    with _runtime.working(Args(), "x"):
        os.write(2, alarm.encode())
        os.write(2, b"a genuine message\n")
    err = capfd.readouterr().err
    assert "Very slow compile" not in err and "slow_operation_alarm" not in err and "****" not in err
    assert "a genuine message" in err


def test_native_log_level_lowered_only_when_unset(monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    _runtime.quiet_native_logs()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    _runtime.quiet_native_logs()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


# ------------------------------------------------------------------------------------------------
# n/a, domains, kinds, regime
# ------------------------------------------------------------------------------------------------


def _footnotes_cover_every_na(out):
    marks = set()
    for line in out.splitlines():
        if line.startswith("["):
            continue
        assert "n/a" not in line.replace("n/a [", "") or "n/a (" in line, line  # every n/a carries a mark
        marks.update(int(t.split("]")[0]) for t in line.split("n/a [")[1:])
    for k in marks:
        assert f"\n[{k}] " in out, (k, out)


def test_exact_na_below_sigma_range_is_footnoted(monkeypatch, capsys):
    monkeypatch.setattr(cc, "shuffle_report", _shuffle_stub(exact=np.nan))
    code, out, _ = run(["shuffle", "--sigma", "0.2", "--rounds", "5"], capsys)
    assert code == 0
    _footnotes_cover_every_na(out)
    assert "[0.3, 50]" in out and "sigma = 0.2" in out
    payload = json.loads(run(["shuffle", "--sigma", "0.2", "--rounds", "5", "--json"], capsys)[1])
    assert payload["gap"]["exact"] is None and "[0.3, 50]" in payload["gap"]["exact_reason"]
    assert "[0.3, 50]" in payload["tradeoff"]["exact_reason"]
    assert "sqrt(3/ln M)" in payload["gap"]["berry_esseen_reason"]


def test_approximation_outside_domain_is_not_a_number(monkeypatch, capsys):
    monkeypatch.setattr(cc, "shuffle_report", _shuffle_stub(edgeworth=0.0, clt=1.0))
    code, out, _ = run(["shuffle", "--sigma", "0.3", "--rounds", "5"], capsys)
    assert code == 0
    row = next(ln for ln in out.splitlines() if ln.startswith("Edgeworth"))
    assert "n/a" in row and " 0 " not in row + " "
    assert "outside the CLT/Edgeworth domain" in out
    _footnotes_cover_every_na(out)
    p = json.loads(run(["shuffle", "--sigma", "0.3", "--rounds", "5", "--json"], capsys)[1])
    assert p["gap"]["edgeworth"] is None and p["gap"]["clt"] is None
    assert "outside" in p["gap"]["edgeworth_reason"] and all(v is None for v in p["tradeoff"]["edgeworth"])


def test_clipped_edgeworth_is_outside_even_at_large_m(monkeypatch, capsys):
    monkeypatch.setattr(cc, "shuffle_report", _shuffle_stub(edgeworth=0.0))
    p = json.loads(run(["shuffle", "--json"], capsys)[1])
    assert p["gap"]["edgeworth"] is None and p["gap"]["clt"] == pytest.approx(0.0052)


def test_multi_epoch_kind_is_not_tight(monkeypatch, capsys):
    monkeypatch.setattr(cc, "shuffle_report", _shuffle_stub())
    code, out, _ = run(["shuffle", "--epochs", "3"], capsys)
    assert code == 0 and "tight" not in out
    assert "certified upper bound" in out and "certified lower bound" in out
    p = json.loads(run(["shuffle", "--epochs", "3", "--json"], capsys)[1])
    assert p["gap_kind"]["exact"].startswith("certified upper bound")
    assert p["gap_kind"]["berry_esseen"] == "upper bound" and p["gap_kind"]["clt"] == "approximation"


@pytest.mark.parametrize("sigma,rounds,name,words", [("0.2", "5", "impossible", "1/sqrt(2 ln M)"),
                                                     ("1", "10000", "berry_esseen", "sqrt(3/ln M)"),
                                                     ("0.45", "10000", "gap", "neither closed form")])
def test_regime_is_explained(monkeypatch, capsys, sigma, rounds, name, words):
    monkeypatch.setattr(cc, "shuffle_report", _shuffle_stub())
    code, out, _ = run(["shuffle", "--sigma", sigma, "--rounds", rounds], capsys)
    assert code == 0 and f"regime: {name} (" in out and words in out
    p = json.loads(run(["shuffle", "--sigma", sigma, "--rounds", rounds, "--json"], capsys)[1])
    assert p["regime"] == name and words in p["regime_explanation"]


# ------------------------------------------------------------------------------------------------
# plan
# ------------------------------------------------------------------------------------------------


def test_separating_digits():
    assert _format.separating([0.000999999, 0.001, 0.0010001]) == ["0.000999999", "0.001", "0.0010001"]
    g, d, g1 = _format.separating([0.00999864, 0.01, 0.0100005])
    assert len({g, d, g1}) == 3 and float(g) <= float(d) < float(g1)


def _plan_stub(gap, gap1, rounds=2730.0):
    def plan(d, s, e):
        n = len(np.atleast_1d(s))
        return dict(rounds_exact=np.full(n, rounds), gap_at_rounds=np.full(n, gap), gap_at_rounds_minus_1=np.full(n, gap1),
                    rounds_closed_form=np.full(n, 1138053.0), rounds_clt=np.full(n, 2735.0), iterations=np.full(n, 4))

    return plan


def test_plan_check_line_shows_the_inequality(monkeypatch, capsys):
    monkeypatch.setattr(cc, "plan", _plan_stub(0.000999999, 0.00100002))
    code, out, _ = run(["plan", "--delta", "0.001"], capsys)
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("check"))
    nums = [float(t) for t in line.replace("<=", " ").replace("<", " ").split() if t[0].isdigit() and "." in t]
    assert nums[0] <= nums[1] < nums[2], line


def test_plan_json_is_self_explanatory(monkeypatch, capsys):
    monkeypatch.setattr(cc, "plan", _plan_stub(0.00999, 0.01001))
    c = json.loads(run(["plan", "--json"], capsys)[1])["cases"][0]
    assert "certified" not in c["exact"]
    assert c["exact"]["gap_kind"] == "certified upper end (exact law + 1e-8)" and "gap_at_rounds <= delta" in c["exact"]["check"]
    c = json.loads(run(["plan", "--epochs", "2", "--json"], capsys)[1])["cases"][0]
    assert c["exact"]["gap_kind"].startswith("certified upper bound")


def test_plan_na_is_explained(monkeypatch, capsys):
    monkeypatch.setattr(cc, "plan", _plan_stub(np.nan, np.nan, rounds=np.inf))
    code, out, _ = run(["plan", "--sigma", "0.2"], capsys)
    assert code == 0
    _footnotes_cover_every_na(out)
    assert "[0.3, 50]" in out
    c = json.loads(run(["plan", "--sigma", "0.2", "--json"], capsys)[1])["cases"][0]
    assert "[0.3, 50]" in c["exact"]["rounds_reason"]


# ------------------------------------------------------------------------------------------------
# errors and widths
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv,prefix,hint", [(["shuffle", "--rouns", "5"], "jaxdp shuffle: error:", "did you mean --rounds?"),
                                              (["plan", "--sigmaa", "1"], "jaxdp plan: error:", "did you mean --sigma?"),
                                              (["poisson", "--epsilom=1"], "jaxdp poisson: error:", "did you mean --epsilon?"),
                                              (["shufle"], "jaxdp: error:", "did you mean shuffle?")])
def test_mistyped_flag_is_answered_by_the_subcommand(argv, prefix, hint, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith(prefix) and hint in err and len(err.strip().splitlines()) == 1


def _rpp_stub(monkeypatch):
    exp = pytest.importorskip("jaxdp.pufferfish.experiments")

    def compute_tables(alphas, epsilons, pairs=None):
        rows = []
        for q in ("age", "hours-per-week"):
            for a in alphas:
                for e in epsilons:
                    r = dict(dataset="adult", secret="sex", query=q, query_kind="RAW", alpha=a, epsilon=e, W1=1.2345,
                             W2=2.0, Winf=10.0, n=100)
                    r.update({"b_" + k: 3.3333 / e for k in ("song", "pierquin", "theorem1", "tight", "exact")})
                    r.update({"sigma2_" + k: 5.5555 for k in ("pierquin", "theorem2", "exact")})
                    r["b_theorem1"] = float("nan")
                    rows.append(r)
        return rows, {"claim1": 1.0, "grid_seconds": 0.1, "grid_cells": len(rows)}

    monkeypatch.setattr(exp, "compute_tables", compute_tables)


def test_rpp_table_fits_100_columns_unless_wide(monkeypatch, capsys):
    _rpp_stub(monkeypatch)
    code, out, _ = run(["rpp"], capsys)
    assert code == 0 and max(map(len, out.splitlines())) <= 100
    assert out.count("dataset") >= 2  # split into column groups repeating the key columns
    _footnotes_cover_every_na(out)
    code, out, _ = run(["rpp", "--wide"], capsys)
    assert code == 0 and max(map(len, out.splitlines())) > 100


def test_table_split_keeps_every_column():
    rows = [[f"r{i}"] + [f"{j * 1000.5:.4f}" for j in range(20)] for i in range(3)]
    text = _format.table(["key"] + [f"column{j}" for j in range(20)], rows)
    assert max(map(len, text.splitlines())) <= 100
    for j in range(20):
        assert re.search(rf"\bcolumn{j}\b", text)


def test_vacuous_berry_esseen_zero_is_flagged(monkeypatch, capsys):
    stub = _shuffle_stub()

    def report(*a):
        r = stub(*a)
        r["table"]["tradeoff_berry_esseen"] = np.zeros(len(cc.TABLE_A))
        return r

    monkeypatch.setattr(cc, "shuffle_report", report)
    code, out, _ = run(["shuffle", "--epochs", "100"], capsys)
    assert code == 0 and "vacuous" in out
    rows = [ln for ln in out.splitlines() if ln[:1] == "0" and "." in ln.split()[0]]
    assert rows and all(" 0 [" in ln for ln in rows)
    assert max(map(len, out.splitlines())) <= 100


def test_reasons_only_beside_present_null_keys():
    out = _format.with_reasons({"a": float("nan"), "b": 1.0, "c": [1.0, float("nan")]}, {"a": "A", "b": "B", "c": "C", "d": "D"})
    assert out == {"a": float("nan") if False else out["a"], "b": 1.0, "c": out["c"], "a_reason": "A", "c_reason": "C"}


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["shuffle", "--sigma", "0.2", "--rounds", "5"], ["shuffle", "--sigma", "0.3", "--rounds", "5"],
                                  ["shuffle", "--epochs", "100"]])
def test_acceptance_commands_real(argv):
    """Issue 19 acceptance: no unexplained n/a, no 0 from an approximation outside its domain, no XLA alarm."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "jaxdp.cli", *argv], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "JAXDP_CACHE_DIR": os.environ.get("JAXDP_TEST_CACHE_DIR", "off")})
    assert p.returncode == 0, p.stderr
    assert "Very slow compile" not in p.stderr and "slow_operation_alarm" not in p.stderr
    assert "cached afterwards" not in p.stderr
    _footnotes_cover_every_na(p.stdout)
    for name in ("CLT", "Edgeworth"):
        row = next(ln for ln in p.stdout.splitlines() if ln.startswith(name + " ") and ln.split()[1] != "mu")
        value = row.split()[1]
        assert value == "n/a" or 0.0 < float(value) < 1.0, row
    assert "tight" not in p.stdout
    assert max(map(len, p.stdout.splitlines())) <= 100


def test_rpp_csv_lines_fit_100_columns(monkeypatch, capsys, tmp_path):
    import jaxdp.pufferfish as pf

    monkeypatch.setattr(pf, "calibrate_laplace", lambda xi, xj, method, alpha, **k: np.full(np.size(alpha), 2.0))
    monkeypatch.setattr(pf, "calibrate_gaussian", lambda xi, xj, method, alpha, **k: np.full(np.size(alpha), np.nan))
    f = tmp_path / "d.csv"
    f.write_text("sex,age\nM,30\nF,40\nM,35\n")
    code, out, _ = run(["rpp", "--csv", str(f), "--secret", "sex", "--values", "M,F", "--query", "age", "--alpha", "2"], capsys)
    assert code == 0 and max(map(len, out.splitlines())) <= 100
    _footnotes_cover_every_na(out)


@pytest.mark.parametrize("argv", [["calibrate", "--epsilon", "1,2", "--q", "0.01", "--steps", "1000"],
                                  ["calibrate", "--epsilon", "1,2", "--sampling", "shuffle", "--rounds", "100000", "--epochs", "20"],
                                  ["poisson"], ["compare", "--sigma", "0.8", "--rounds", "1000000"]])
def test_reports_fit_100_columns(argv, monkeypatch, capsys):
    import jaxdp.calibrate as cal

    class Sol:
        def __init__(self, v):
            self.value = v

    monkeypatch.setattr(cal, "poisson_noise_multiplier", lambda e, d, **k: Sol(np.where(np.asarray(e) > 1.5, np.nan, 1.0)))
    monkeypatch.setattr(cal, "shuffle_noise_multiplier", lambda e, d, **k: Sol(0.9 / np.asarray(e)))
    monkeypatch.setattr(cc, "poisson_report", lambda s, q, t, d, e, acc: dict(
        grid=jaxdp.core.accuracy.LADDER[1], accuracy=acc, widest=0.0, eps_lower=np.full(len(d), 0.9), eps=np.full(len(d), np.nan), delta_lower=np.full(len(e), 1e-6),
        delta=np.full(len(e), 2e-6), mu_bu=0.1, mu_drs=0.13, table=np.full(len(cc.TABLE_A), 0.5),
        curve=np.full(len(cc.CURVE_A), 0.5), table_a=np.asarray(cc.TABLE_A), curve_a=np.asarray(cc.CURVE_A)))
    monkeypatch.setattr(cc, "compare", lambda d, s, m, e: {k: np.full(len(s), 1.23456789) for k in (
        "eps_shuffle", "eps_shuffle_lower", "eps_poisson", "eps_poisson_lower", "mu_shuffle_clt", "mu_poisson_bu",
        "mu_poisson_drs", "clt_ratio")})
    code, out, _ = run(argv, capsys)
    assert code == 0 and max(map(len, out.splitlines())) <= 100
    _footnotes_cover_every_na(out)


def test_done_note_says_what_xla_did(monkeypatch):
    """The closing progress note reports compiles and persistent-cache loads as counted from JAX's
    monitoring events, and nothing of the kind when neither happened (a cached, fast path)."""
    from jaxdp.cli import _runtime as rt

    zero = dict(compiled=0, compiled_s=0.0, loaded=0, loaded_s=0.0)
    monkeypatch.setattr(rt, "_COMPILES", dict(zero, compiled=2, compiled_s=12.34, hit=False, listening=True))
    assert rt._done_note("x", 13.0, zero, True) == \
        "x: done in 13.0 s (12.3 s compiling 2 JAX programs; later runs load them from the persistent cache)"
    assert rt._done_note("x", 13.0, zero, False).endswith("(12.3 s compiling 2 JAX programs; the persistent cache is off)")
    monkeypatch.setattr(rt, "_COMPILES", dict(zero, loaded=1, loaded_s=3.9, hit=False, listening=True))
    assert rt._done_note("x", 8.7, zero, True) == "x: done in 8.7 s (3.9 s loading 1 compiled program from the persistent cache)"
    assert rt._done_note("x", 2.5, dict(zero, loaded=1, loaded_s=3.9), True) == "x: done in 2.5 s"
