"""Two-stage composition (Grid.stages) and delta-relative tails for eps(delta).

References: the Gaussian closed form (q = 1: T Gaussian steps compose to G_mu with
mu = sqrt(T) / sigma, eps(delta) by jaxdp.core.tradeoff.gaussian_epsilon), the one-stage engine
(both brackets are certified, so each must contain the other's truth), and the issue-2 acceptance
(bracket width <= 1% at the default grid).
"""

import math

import jax
import numpy as np
import pytest

from jaxdp import poisson
from jaxdp.core import pld, tradeoff as tf
from jaxdp.mechanisms import Gaussian

ONE = pld.Grid(stages=1)
TWO = pld.Grid(stages=2)


def test_auto_stages():
    assert pld.Grid().num_stages() == 2
    assert pld.Grid(size=2**16).num_stages() == 1
    assert pld.Grid(size=2**14, stages=2).num_stages() == 2


def test_fine_stage_size_and_output_shape():
    assert pld.Grid().fine_points() == 2**19
    assert pld.Grid(size=2**12, fine_factor=1).fine_points() == 2**12
    for bad in (0, 1.5, "2"):
        with pytest.raises(ValueError, match="fine_factor"):
            pld.Grid(size=2**12, stages=2, fine_factor=bad).fine_points()
    g = pld.Grid(size=2**12, stages=2, fine_factor=4)
    # one stage (T = 1) and two stages (T = 10^4) return PLDs of one shape: fine_points() cells
    comp = jax.jit(lambda T: pld.self_compose(Gaussian(2.0), T, "remove", g))
    for T in (1, 10000):
        P = comp(T)
        assert P.pmf.shape == (4 * 2**12,)
        mu = math.sqrt(T) / 2.0
        exact = float(tf.gaussian_epsilon(1e-5, mu))
        assert float(P.epsilon_lower(1e-5)) <= exact <= float(P.epsilon_upper(1e-5))


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_gaussian_closed_form_in_two_stage_bracket():
    sigma, T = 50.0, 10000
    P = jax.jit(lambda s: pld.self_compose(Gaussian(s), T, "remove", TWO))(sigma)
    assert float(P.steps_fine) == T and 1 < float(P.steps) < T  # the two-stage path ran
    mu = math.sqrt(T) / sigma
    for d in [1e-5, 1e-8]:
        exact = float(tf.gaussian_epsilon(d, mu))
        lo, up = float(P.epsilon_lower(d)), float(P.epsilon_upper(d))
        assert lo <= exact <= up, (lo, exact, up)
        assert up - lo <= 2e-3 * exact
    eps = np.array([0.0, 0.5 * mu, mu, 2 * mu])
    from scipy import stats

    exact_d = stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps + stats.norm.logcdf(-eps / mu - mu / 2))
    assert np.all(np.asarray(P.delta_lower(eps)) <= exact_d + 1e-12)
    assert np.all(exact_d <= np.asarray(P.delta_upper(eps)) + 1e-12)


# (q, T, sigma, delta): three issue-2 points whose bracket was > 1% with one stage, and the two
# that stayed > 1% (1.38%, 2.22%) until the fine stage had 2 * size points and the split
# preferred fewer blocks (benchmarks/results/poisson_accuracy.md: 0.74%, 0.77%)
POINTS = np.array(
    [
        (0.01, 100000, 20.0, 1e-8),
        (1e-3, 100000, 5.0, 1e-8),
        (1e-4, 10000, 1.0, 1e-5),
        (1e-4, 100000, 0.5, 1e-5),
        (3e-4, 30000, 0.8, 1e-8),
    ]
)


def _bracket(grid):
    q, T, s, d = POINTS.T
    b = poisson.epsilon_for_delta_bracket(d, noise_multiplier=s, sampling_probability=q, num_steps=T, grid=grid)
    return np.asarray(b.lower), np.asarray(b.upper)


@pytest.mark.acceptance
def test_default_grid_bracket_within_one_percent_and_agrees_with_one_stage():
    lo2, up2 = _bracket(pld.DEFAULT_GRID)
    assert np.all((up2 - lo2) / up2 <= 0.01), (lo2, up2)
    lo1, up1 = _bracket(ONE)
    # both are certified brackets of the same number
    assert np.all(lo2 <= up1) and np.all(lo1 <= up2), (lo1, up1, lo2, up2)
    # the two-stage upper end is at least as good, up to the 1e-3 delta budget of the tails
    assert np.all(up2 <= up1 * (1 + 1e-3))
