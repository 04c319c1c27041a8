"""The UCI experiments (``python -m jaxdp.pufferfish.experiments``) run on their whole grid and
reproduce the recorded tables that docs/pufferfish.md quotes.

Expected values: ``benchmarks/results/pufferfish_experiments.md``, the command's own output file
(``pufferfish_tables.md``) recorded when the docs were written; the comparison is at the printed
precision (four significant digits), the grid's wall time aside.  The claim fractions that
docs/pufferfish.md states in prose are checked against the run's summary here as well.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import _mddoctest as md  # noqa: E402

RECORDED = pathlib.Path(md.ROOT) / "benchmarks" / "results" / "pufferfish_experiments.md"


def _stable(text):
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith("- grid_seconds"))


@pytest.mark.acceptance  # the whole 11 x 48 grid, every method: minutes on 2 cores
def test_full_grid_reproduces_the_recorded_tables(tmp_path, monkeypatch):
    from jaxdp.pufferfish import experiments as exp

    monkeypatch.chdir(tmp_path)
    assert exp.main(["--out", "out/pufferfish"]) in (0, None)
    got = (tmp_path / "out" / "pufferfish" / "pufferfish_tables.md").read_text()
    errors = md.compare(_stable(RECORDED.read_text()), _stable(got))
    assert not errors, "\n".join(errors[:20])

    s = {ln[2:].split(": ")[0]: float(ln.split(": ")[1]) for ln in got.splitlines() if ln.startswith("- ")}
    pct = lambda k: 100 * s[k]  # noqa: E731
    claims = [pct("claim1_laplace_tight<=pierquin<=song"), s["median_b_tight/b_pierquin"],
              pct("claim1_gaussian_theorem2<=pierquin"), s["median_sigma2_theorem2/sigma2_pierquin"],
              pct("claim2_sigma2_theorem2<2b^2_theorem1"), pct("claim2_same_for_alpha<=3_eps<=1"),
              pct("claim2_exact_sigma2<2b^2_exact"), pct("claim3_theorem1_b(1.5)>b(2)>b(3)"),
              pct("claim3_theorem1_b_max_at_alpha=1.5"), pct("note3_tight_b_nondecreasing_in_alpha")]
    assert not md.doc_quotes("docs/pufferfish.md", "pufferfish-claims", np.unique(claims),
                             inputs=[1.5, 2, 3, 5.6, 5])
    exact = [pct("exact_laplace<=all_sufficient"), pct("exact_gaussian<=all_sufficient"),
             pct("exact_laplace<0.999*tight"), pct("exact_gaussian<0.999*theorem2")]
    assert not md.doc_quotes("docs/pufferfish.md", "pufferfish-exact", np.unique(exact), inputs=[0.1])
