"""accuracy= instead of grid= (issue 18): the grid ladder, its refinement rule, and the Poisson defaults."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdp.poisson as po
from jaxdp.core import accuracy as acc
from jaxdp.core.pld import Grid

Q = dict(noise_multiplier=1.0, sampling_probability=0.01, num_steps=1000)
# dp_accounting 0.6.0 at q = 0.01, sigma = 1, T = 1000, delta = 1e-5 (tests/test_poisson.py's
# header): optimistic 1.818237 at a 2e-5 grid, pessimistic 1.828244 at its default grid; the truth
# lies between them (dp_accounting's two estimates bracket it)
DPA_OPTIMISTIC, DPA_PESSIMISTIC = 1.818237, 1.828244


def test_default_eps_meets_the_default_accuracy_and_brackets_dp_accounting():
    b = po.epsilon_for_delta_bracket(1e-5, **Q)
    lo, up = float(b.lower), float(b.upper)
    assert (up - lo) / up <= acc.DEFAULT_ACCURACY
    # sound and honest against an independent computation: dp_accounting's bracket overlaps ours,
    # and our pessimistic end lies within the stated accuracy of its pessimistic estimate
    assert lo <= DPA_PESSIMISTIC and up >= DPA_OPTIMISTIC
    assert abs(up - DPA_PESSIMISTIC) / up <= acc.DEFAULT_ACCURACY
    assert float(po.epsilon_for_delta(1e-5, **Q)) == up


def test_reference_widths_are_the_ladders_own():
    """The constants that pick the first rung are recomputed (first two rungs; the 2^18 and 2^20
    rungs by benchmarks/accuracy_ladder.py)."""
    for i in (0, 1):
        b = po.epsilon_for_delta_bracket(1e-5, grid=acc.LADDER[i], **Q)
        w = float((b.upper - b.lower) / b.upper)
        assert w == pytest.approx(acc.REFERENCE_WIDTHS[i], rel=0.02), i


def test_traced_calls_use_the_first_rung_unchecked():
    f = jax.jit(lambda s: po.epsilon_for_delta(1e-5, noise_multiplier=s, sampling_probability=0.01, num_steps=1000))
    fixed = po.epsilon_for_delta(1e-5, grid=acc.LADDER[acc.first_rung(acc.DEFAULT_ACCURACY)], **Q)
    assert float(f(1.0)) == pytest.approx(float(fixed), rel=1e-12)


def test_grid_and_accuracy_exclude_each_other_and_accuracy_is_checked():
    with pytest.raises(ValueError, match="either grid= .* or accuracy="):
        po.epsilon_for_delta(1e-5, grid=Grid(size=2**12, stages=1), accuracy=1e-2, **Q)
    for bad in (0.0, 1.0, -1e-3, float("nan")):
        with pytest.raises(ValueError, match=r"accuracy must lie in \(0, 1\)"):
            po.delta_for_epsilon(1.0, accuracy=bad, **Q)
    with pytest.raises(TypeError, match="accuracy"):
        po.epsilon_for_delta(1e-5, accuracy="1%", **Q)


# ---- the refinement rule, on a synthetic bracket (no PLD compiled) --------------------------------

def _fake(widths_at):
    """A bracket function whose relative width is ``widths_at(size, x)``; records its calls."""
    calls = []

    def bracket_at(grid, x):
        x = np.asarray(x)
        calls.append((grid.size, x.shape))
        up = np.ones_like(x)
        return up - widths_at(grid.size, x), up

    return bracket_at, calls


def test_refine_recomputes_only_what_is_too_wide():
    # width 0.05 at 2^16 for x > 0.5 (refined), 0.001 elsewhere; 2^18 meets everything
    bracket_at, calls = _fake(lambda n, x: np.where((x > 0.5) & (n < 2**18), 0.05, 0.001))
    x = np.linspace(0.0, 1.0, 10)
    lo, up = acc.refine(bracket_at, (x,), 1e-2)
    assert np.all((up - lo) / up <= 1e-2)
    # first rung: the whole batch; then the 5 values over 0.5, padded to a power of two (8)
    assert calls == [(2**16, (10,)), (2**18, (8,))]


def test_refine_stops_when_a_finer_grid_does_not_help_and_warns():
    bracket_at, calls = _fake(lambda n, x: np.full_like(x, 0.5))
    with pytest.warns(RuntimeWarning, match="wider than accuracy=0.01"):
        lo, up = acc.refine(bracket_at, (np.array(0.3),), 1e-2)
    assert [c[0] for c in calls] == [2**16, 2**18] and lo.shape == ()
    assert float((up - lo) / up) == 0.5


def test_refine_keeps_the_tighter_end_of_each_rung_and_leaves_invalid_values():
    def bracket_at(grid, x):
        x = np.asarray(x, np.float64)
        if grid.size == 2**16:
            return np.where(np.isnan(x), np.nan, 0.5), np.where(np.isnan(x), np.nan, 1.0)
        return np.full_like(x, 0.45), np.full_like(x, 0.999)  # looser lower end, tighter upper
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, up = acc.refine(bracket_at, (np.array([0.1, np.nan]),), 1e-2)
    assert lo[0] == 0.5 and up[0] == 0.999
    assert np.isnan(lo[1]) and np.isnan(up[1])


def test_first_rung_follows_the_reference_widths():
    assert acc.LADDER[acc.first_rung(1e-2)].size == 2**16
    assert acc.LADDER[acc.first_rung(5e-2)].size == 2**14
    assert acc.LADDER[acc.first_rung(1e-3)].size == 2**18
    assert acc.first_rung(1e-9) == len(acc.LADDER) - 1


def test_the_default_path_returns_exactly_the_first_rungs_bracket():
    """Through the trace cache (when the run's compilation cache is on) or not: the same program."""
    b = po.epsilon_for_delta_bracket(1e-5, **Q)
    fixed = po.epsilon_for_delta_bracket(1e-5, grid=acc.LADDER[1], **Q)
    assert float(b.lower) == float(fixed.lower) and float(b.upper) == float(fixed.upper)


def test_refine_takes_a_first_rung_computed_by_the_caller():
    # the caller's first-rung bracket (here of shape () for 3 values: one parameter set shared by
    # all) is broadcast, not recomputed; only the too-wide values go to the next rung
    bracket_at, calls = _fake(lambda n, x: np.where(n < 2**18, 0.05, 0.001))
    lo, up = acc.refine(bracket_at, (np.array([0.1, 0.2, 0.3]),), 1e-2, first=(np.array(0.5), np.array(1.0)))
    assert calls == [(2**18, (3,))]  # all 3 (a bucket never exceeds the batch); no 2^16 call
    np.testing.assert_array_equal(up, 1.0)
    np.testing.assert_array_equal(lo, 0.999)  # the tighter lower end of the finer rung
