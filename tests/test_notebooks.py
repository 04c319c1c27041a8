"""Every notebook in notebooks/ runs top to bottom (small CI variant, JAXDP_NOTEBOOK_FAST=1) and saves its figures."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(ROOT.glob("*.ipynb"))
FIGURES = {
    "01_shuffling.ipynb": ["shuffling_gap_vs_M.png", "shuffling_tradeoff.png", "shuffling_epochs.png",
                           "shuffling_poisson_clt_ratio.png", "shuffling_samplers.png"],
    "02_rpp_uci.ipynb": ["rpp_uci_alpha.png", "rpp_uci_ratio.png"],
    "03_calibration_tuning.ipynb": ["calibration.png"],
    "04_dpsgd_training.ipynb": ["training.png"],
}


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("JAXDP_NOTEBOOK_FAST", os.environ.get("JAXDP_NOTEBOOK_FAST", "1"))
    for f in FIGURES.get(path.name, []):
        (ROOT / "figures" / f).unlink(missing_ok=True)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    for f in FIGURES.get(path.name, []):
        p = ROOT / "figures" / f
        assert p.exists() and p.stat().st_size > 5000, f


def test_every_notebook_is_listed():
    assert {p.name for p in NOTEBOOKS} == set(FIGURES)
