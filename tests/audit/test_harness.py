"""The audit harness's --fast variant runs end to end in CI and finds no violation."""

import json

import pytest

from jaxdp.audit import harness


def test_rdp_tradeoff_conversion_sane():
    # eps -> 0 forces f(a) -> 1 - a; large eps allows f(a) -> 0
    assert abs(harness.rdp_tradeoff(0.1, 2.0, 1e-9) - 0.9) < 1e-3
    assert harness.rdp_tradeoff(0.5, 2.0, 50.0) < 1e-6
    vals = [harness.rdp_tradeoff(a, 2.0, 1.0) for a in (0.01, 0.1, 0.3, 0.6)]
    assert all(x >= y for x, y in zip(vals, vals[1:]))


@pytest.mark.acceptance
def test_fast_audit_runs_and_passes(tmp_path):
    rc = harness.main(["--fast", "--out", str(tmp_path)])
    md = (tmp_path / "audit_report.md").read_text()
    data = json.loads((tmp_path / "audit_report.json").read_text())
    assert rc == 0, md
    assert len(data["points"]) == 15 and "Violations: 0 of 15" in md
    # the LR attack is near-optimal on the exact accountants: within 0.03 of the curve
    for p in data["points"]:
        if p["setting"].startswith("DP-SGD"):
            assert abs(p["gap"]) < 0.03, p
