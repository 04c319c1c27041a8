"""``jaxdp compare --all-samplers``: reshuffling, balls-in-bins, k-of-t and Poisson side by side.

The expected values are ``jaxdp.account(event).epsilon(delta)`` of the four events built here from
their definitions (issue 17; docs/interop.md), not from the CLI's own builder: E epochs of
``Shuffled(Gaussian(sigma), M)``, ``BallsInBins(Gaussian(sigma), E*M, M)``,
``RandomAllocation(Gaussian(sigma), E, E*M)`` and E*M steps of ``PoissonSampled(1/M, Gaussian(sigma))``.
"""

import json
import math

import numpy as np
import pytest

import jaxdp
from jaxdp.events import BallsInBins, Gaussian, PoissonSampled, RandomAllocation, SelfComposed, Shuffled

from tests._cli_util import _no_persistent_cache, run  # noqa: F401  (autouse fixture)

SAMPLERS = ("reshuffled", "balls_in_bins", "k_of_t", "poisson")
SIGMA, M, E, DELTA = 1.0, 100, 2, 1e-5


def _expected(sigma, m, e, delta):
    g = Gaussian(sigma)
    events = dict(reshuffled=SelfComposed(Shuffled(g, m), e), balls_in_bins=BallsInBins(g, e * m, m),
                  k_of_t=RandomAllocation(g, e, e * m), poisson=SelfComposed(PoissonSampled(1.0 / m, g), e * m))
    return {k: jaxdp.account(ev).epsilon(delta) for k, ev in events.items()}


# acceptance step: it compiles the four samplers' default-grid programs (~110 s of the README suite on
# a CI core); docs/cli.md's console block runs the same command in the README suite
@pytest.mark.acceptance
def test_all_samplers_equal_account_of_the_events(capsys):
    code, out, err = run(["compare", "--sigma", "1", "--rounds", str(M), "--epochs", str(E), "--delta", "1e-5",
                          "--all-samplers", "--json", "--quiet"], capsys)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["command"] == "compare" and payload["plot"] is None
    assert set(payload["samplers"]) == set(SAMPLERS)
    (case,) = payload["cases"]
    keys = {"noise_multiplier", "num_rounds", "num_epochs", "num_steps", "sampling_probability", "delta"}
    keys |= {f"eps_{k}{end}" for k in SAMPLERS for end in ("", "_lower")}
    assert set(case) == keys  # no null, so no *_reason
    assert (case["num_steps"], case["sampling_probability"]) == (E * M, 1.0 / M)
    exp = _expected(SIGMA, M, E, DELTA)
    for k in SAMPLERS:
        assert case[f"eps_{k}"] == pytest.approx(float(exp[k].upper), rel=1e-12, abs=0), k
        assert case[f"eps_{k}_lower"] == pytest.approx(float(exp[k].lower), rel=1e-12, abs=0), k
        assert case[f"eps_{k}_lower"] <= case[f"eps_{k}"]
    # how they compare (docs/interop.md): balls-in-bins over E cycles is one epoch at sigma/sqrt(E),
    # worse than reshuffling; k-of-t's bound is E epochs of 1 of M steps, reshuffling's composition
    one = jaxdp.account(Shuffled(Gaussian(SIGMA / math.sqrt(E)), M)).epsilon(DELTA)
    assert case["eps_balls_in_bins"] == pytest.approx(float(one.upper), rel=1e-6)
    assert case["eps_balls_in_bins"] > case["eps_reshuffled"]
    assert case["eps_k_of_t"] == pytest.approx(case["eps_reshuffled"], rel=1e-6)
    assert case["eps_poisson"] > case["eps_reshuffled"]

    # the text shows the same upper ends (5 significant digits) within 100 columns
    code, out, err = run(["compare", "--sigma", "1", "--rounds", str(M), "--epochs", str(E), "--all-samplers", "--quiet"],
                         capsys)
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 100
    row = next(line for line in out.splitlines() if line.startswith("1 "))
    assert row.split()[4:] == [f"{case[f'eps_{k}']:.5g}" for k in SAMPLERS]


@pytest.fixture
def stub_samplers(monkeypatch):
    """Fake values (NaN where the shuffled law is out of range) so table, JSON and plot run without JAX."""
    from jaxdp.cli import _compute as cc

    def samplers(delta, cases, progress=None):
        out = {}
        for k, v in zip(SAMPLERS, (0.8, 2.1, 0.8, 0.9)):
            ok = [k == "poisson" or s / math.sqrt(e if k == "balls_in_bins" else 1) >= 0.3 for s, m, e in cases]
            out[f"eps_{k}"] = np.where(ok, v, np.nan)
            out[f"eps_{k}_lower"] = np.where(ok, v - 0.01, np.nan)
            for _ in cases:
                if progress is not None:
                    progress.update()
        return out

    monkeypatch.setattr(cc, "samplers", samplers)


def test_all_samplers_na_footnotes_json_reasons_plot_stubbed(stub_samplers, capsys, tmp_path):
    argv = ["compare", "--sigma", "0.2,0.5,1", "--rounds", "100,10000", "--epochs", "1,4", "--all-samplers", "--quiet"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "n/a [1]" in out and "[1] jaxdp's shuffled law is resolved for noise >= 0.3" in out
    code, out, err = run(argv + ["--json"], capsys)
    cases = json.loads(out)["cases"]
    assert len(cases) == 12
    bad = [c for c in cases if c["eps_balls_in_bins"] is None]
    assert {(c["noise_multiplier"], c["num_epochs"]) for c in bad} == {(0.2, 1), (0.2, 4), (0.5, 4)}
    assert all("sigma/sqrt(E)" in c["eps_balls_in_bins_reason"] for c in bad)
    assert all(c["eps_poisson"] == 0.9 and "eps_poisson_reason" not in c for c in cases)
    pytest.importorskip("matplotlib")
    png = tmp_path / "four.png"
    code, out, err = run(argv + ["--plot", str(png)], capsys)
    assert code == 0, err
    assert png.exists() and png.stat().st_size > 5000 and f"wrote {png}" in out
