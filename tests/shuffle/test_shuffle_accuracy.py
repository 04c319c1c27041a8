"""accuracy= for the shuffled eps(delta) / delta(eps) entry points (issue 18).

The numbers are the entry points' own certified brackets at fixed grids (grid=), so each check is
against the same certified computation run another way (one grid at a time)."""

import warnings

import numpy as np
import pytest

import jaxdp.shuffle as sh
from jaxdp.core import accuracy as acc
from jaxdp.core.pld import Grid

P = dict(noise_multiplier=1.0, num_rounds=100, num_epochs=10)


def test_grid_and_accuracy_exclude_each_other_and_accuracy_is_checked():
    with pytest.raises(ValueError, match="either grid= .* or accuracy="):
        sh.epsilon_for_delta(1e-5, grid=sh.SHUFFLE_GRID, accuracy=1e-2, **P)
    for bad in (0.0, 1.0, -1e-3, float("nan")):
        with pytest.raises(ValueError, match=r"accuracy must lie in \(0, 1\)"):
            sh.delta_for_epsilon(1.0, accuracy=bad, **P)


def test_the_default_is_the_first_rung_which_is_the_shuffle_grid():
    # one compiled program serves grid=SHUFFLE_GRID and the default accuracy's first rung
    assert acc.LADDER[acc.first_rung(acc.DEFAULT_ACCURACY)] == sh.SHUFFLE_GRID
    b = sh.epsilon_for_delta_bracket(1e-5, **P)
    fixed = sh.epsilon_for_delta_bracket(1e-5, grid=sh.SHUFFLE_GRID, **P)
    assert float(b.lower) == float(fixed.lower) and float(b.upper) == float(fixed.upper)
    assert (float(b.upper) - float(b.lower)) / float(b.upper) <= acc.DEFAULT_ACCURACY


@pytest.mark.acceptance  # README suite budget (issue 18): two shuffled PLD programs (two grids), ~15 s of XLA
def test_a_tighter_accuracy_refines_on_the_next_rung(monkeypatch):
    # a two-rung ladder of small grids, so that the coarse one is too wide for the target
    coarse, fine = Grid(size=2**10, stages=1), Grid(size=2**12, stages=1)
    monkeypatch.setattr(acc, "LADDER", (coarse, fine))
    monkeypatch.setattr(acc, "REFERENCE_WIDTHS", (0.0, 0.0))
    deltas = np.array([1e-3, 1e-5])
    b0 = sh.epsilon_for_delta_bracket(deltas, grid=coarse, **P)
    b1 = sh.epsilon_for_delta_bracket(deltas, grid=fine, **P)
    w0 = (np.asarray(b0.upper) - np.asarray(b0.lower)) / np.asarray(b0.upper)
    target = float(np.max(w0)) / 2  # wider than asked on the coarse rung, at least for one delta
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        b = sh.epsilon_for_delta_bracket(deltas, accuracy=target, **P)
    wide = w0 > target
    # refined entries: the tighter end of each rung's sound bracket; the others: the coarse rung's
    np.testing.assert_array_equal(np.asarray(b.upper), np.where(wide, np.minimum(b0.upper, b1.upper), b0.upper))
    np.testing.assert_array_equal(np.asarray(b.lower), np.where(wide, np.maximum(b0.lower, b1.lower), b0.lower))
    assert np.asarray(b.value).tolist() == np.asarray(b.upper).tolist()
    d = sh.delta_for_epsilon(1.0, accuracy=target, **P)
    assert float(d) <= float(sh.delta_for_epsilon(1.0, grid=coarse, **P))
