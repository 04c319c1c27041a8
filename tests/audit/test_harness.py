"""The audit harness's --fast variant runs end to end in CI and finds no violation."""

import json
import pathlib
import sys

import pytest

from jaxdp.audit import harness

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import _mddoctest as md  # noqa: E402

RESULTS = pathlib.Path(md.ROOT) / "benchmarks" / "results"


def test_rdp_tradeoff_conversion_sane():
    # eps -> 0 forces f(a) -> 1 - a; large eps allows f(a) -> 0
    assert abs(harness.rdp_tradeoff(0.1, 2.0, 1e-9) - 0.9) < 1e-3
    assert harness.rdp_tradeoff(0.5, 2.0, 50.0) < 1e-6
    vals = [harness.rdp_tradeoff(a, 2.0, 1.0) for a in (0.01, 0.1, 0.3, 0.6)]
    assert all(x >= y for x, y in zip(vals, vals[1:]))


@pytest.mark.acceptance
def test_fast_audit_runs_and_passes(tmp_path):
    rc = harness.main(["--fast", "--out", str(tmp_path)])
    report = md_text(tmp_path)
    data = json.loads((tmp_path / "audit_report.json").read_text())
    assert rc == 0, report
    assert len(data["points"]) == 15 and "Violations: 0 of 15" in report
    # the LR attack is near-optimal on the exact accountants: within 0.03 of the curve
    for p in data["points"]:
        if p["setting"].startswith("DP-SGD"):
            assert abs(p["gap"]) < 0.03, p
    # the seeded simulation reproduces the report recorded in benchmarks/ and quoted by docs/audit.md
    errors = md.compare((RESULTS / "audit_fast.md").read_text(), report)
    assert not errors, "\n".join(errors[:20])


def md_text(md_path):
    return (md_path / "audit_report.md").read_text()


@pytest.mark.acceptance  # 10 settings at 200 000 runs per world: minutes
def test_full_audit_reproduces_the_recorded_report(tmp_path):
    """docs/audit.md's full table: the seeded run's report equals benchmarks/results/audit_full.md at
    its printed precision, and the doc's reading of it (largest gaps) holds."""
    rc = harness.main(["--out", str(tmp_path)])
    data = json.loads((tmp_path / "audit_report.json").read_text())
    assert rc == 0
    errors = md.compare((RESULTS / "audit_full.md").read_text(), md_text(tmp_path))
    assert not errors, "\n".join(errors[:20])
    dp = max(abs(p["gap"]) for p in data["points"] if p["setting"].startswith("DP-SGD"))
    pf = max(abs(p["gap"]) for p in data["points"] if p["setting"].startswith("Pufferfish"))
    assert dp < 0.03
    assert not md.doc_quotes("docs/audit.md", "audit-full-reading", [dp, pf], inputs=[0.03, 0.5, 10, 0.01, 0.05, 0.1])
