"""``jaxdp.calibrate.event_parameter``: the generic calibration of any event family (issue 16, item 3).

Expected values come from elsewhere: dp_accounting's own calibration (``calibrate_dp_mechanism``
with its ``PLDAccountant``) for a Poisson-subsampled Gaussian, and otherwise the definition itself
(the answer is feasible by ``jaxdp.account`` and the next value past it is not).  Grids are small
one-stage grids: these tests check the search, not the accountant's accuracy.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdp import account, calibrate
from jaxdp.core.pld import Grid
from jaxdp.events import (Composed, Gaussian, Laplace, PoissonSampled, SelfComposed, Shuffled,
                          UnsupportedEventError)

GRID = Grid(size=2**14)


def poisson_1000(s, q):
    return SelfComposed(PoissonSampled(q, Gaussian(s)), 1000)


def schedule(s, _):
    # two phases whose noise is scaled together: no preset and no closed form covers it
    return Composed((SelfComposed(PoissonSampled(0.01, Gaussian(s)), 500),
                     SelfComposed(PoissonSampled(0.02, Gaussian(1.5 * s)), 300)))


def laplace_count(k, b):
    return SelfComposed(Laplace(b), k)


def eps_of(event, delta):
    return float(account(event, grid=GRID).epsilon(delta).value)


@pytest.mark.acceptance  # README suite budget (issue 18): agreement with a peer (dp_accounting / Monte Carlo) at the default grids, 15-25 s of XLA
def test_poisson_sigma_matches_dp_accounting_calibration():
    mc = pytest.importorskip("dp_accounting.mechanism_calibration")
    import dp_accounting
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    sol = calibrate.event_parameter(poisson_1000, epsilon=1.0, delta=1e-5, params=0.01, decreasing=True,
                                    lower=0.5, upper=2.0, grid=GRID)
    assert int(sol.result) == calibrate.SUCCESSFUL
    s = float(sol.value)
    ref = mc.calibrate_dp_mechanism(
        PLDAccountant, lambda x: dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(x)), 1000),
        target_epsilon=1.0, target_delta=1e-5, tol=1e-6)
    assert s == pytest.approx(ref, rel=2e-3)
    # feasible by the accountant a user reads, and the smallest such sigma (to the solver's rtol)
    assert eps_of(poisson_1000(s, 0.01), 1e-5) <= 1.0 < eps_of(poisson_1000(s * (1 - 1e-6), 0.01), 1e-5)


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_schedule_and_integer_count_are_extreme_feasible_values():
    sol = calibrate.event_parameter(schedule, epsilon=2.0, delta=1e-5, decreasing=True, lower=0.5, upper=2.0,
                                    grid=GRID)
    s = float(sol.value)
    assert eps_of(schedule(s, None), 1e-5) <= 2.0 < eps_of(schedule(s * (1 - 1e-6), None), 1e-5)
    # the largest number of Laplace releases at scale 2 within eps 5 (pure DP would allow 10)
    sk = calibrate.event_parameter(laplace_count, epsilon=5.0, delta=1e-6, params=2.0, decreasing=False,
                                   lower=1, upper=4, lower_limit=1, upper_limit=1e6, integer=True, grid=GRID)
    k = int(sk.value)
    assert k >= 10 and float(sk.value) == k
    assert eps_of(laplace_count(k, 2.0), 1e-6) <= 5.0 < eps_of(laplace_count(k + 1, 2.0), 1e-6)


def test_failures_are_errors_never_numbers():
    kw = dict(delta=1e-5, params=0.01, decreasing=True, lower=0.5, upper=2.0, grid=GRID)
    with pytest.raises(ValueError, match="epsilon must be in"):
        calibrate.event_parameter(poisson_1000, epsilon=-1.0, **kw)
    with pytest.raises(ValueError, match="delta must be in"):
        calibrate.event_parameter(poisson_1000, epsilon=1.0, **dict(kw, delta=1.0))
    with pytest.raises(ValueError, match="lower must be in"):
        calibrate.event_parameter(poisson_1000, epsilon=1.0, **dict(kw, lower=-1.0))
    with pytest.raises(TypeError, match="build must be a callable"):
        calibrate.event_parameter(Gaussian(1.0), epsilon=1.0, **kw)
    with pytest.raises(ValueError, match="neighboring"):
        calibrate.event_parameter(poisson_1000, epsilon=1.0, neighboring="swap", **kw)
    # replace-one shuffling has no sound law here: named, not a number
    with pytest.raises(UnsupportedEventError, match="Shuffled"):
        calibrate.event_parameter(lambda s, _: Shuffled(Gaussian(s), 10), epsilon=1.0, delta=1e-5,
                                  decreasing=True, lower=0.5, upper=2.0, neighboring="replace_one")
    # no sigma <= 1e4 meets eps 1e-9: an error eagerly, NaN with the INFEASIBLE code otherwise
    inf_kw = dict(kw, upper_limit=1e4)
    with pytest.raises(calibrate.CalibrationError, match="infeasible"):
        calibrate.event_parameter(poisson_1000, epsilon=1e-9, **inf_kw)
    sol = calibrate.event_parameter(poisson_1000, epsilon=1e-9, throw=False, **inf_kw)
    assert int(sol.result) == calibrate.INFEASIBLE and np.isnan(float(sol.value))


@pytest.mark.acceptance
def test_implicit_gradients_match_finite_differences():
    def sig(e, d, q):
        return calibrate.event_parameter(poisson_1000, epsilon=e, delta=d, params=q, decreasing=True, lower=0.5,
                                         upper=2.0, grid=GRID, rtol=1e-12).value

    x0 = (1.0, 1e-5, 0.01)
    grads = jax.grad(sig, argnums=(0, 1, 2))(*x0)
    # steps small against the lattice kinks of the discretised eps, large against the solver's rtol
    for i, rel in enumerate((1e-5, 1e-4, 1e-5)):
        h = rel * x0[i]
        up = list(x0); up[i] += h
        dn = list(x0); dn[i] -= h
        fd = (sig(*up) - sig(*dn)) / (2 * h)
        np.testing.assert_allclose(grads[i], fd, rtol=1e-4, err_msg=f"argument {i}")
    # under jit the same number up to float rounding, and NaN (not a number that looks like an
    # answer) for a bad epsilon.  The user's jit compiles with the user's XLA options, the eager
    # call with jaxdp's (jaxdp._config.COMPILER_OPTIONS), so eps carries different rounding and the
    # root moves by it: measured 7.9e-12 relative (CI, 2026-12-05), asserted at 1e-10
    jitted = jax.jit(sig)
    assert float(jitted(*x0)) == pytest.approx(float(sig(*x0)), rel=1e-10)
    assert np.isnan(float(jitted(jnp.float64(-1.0), 1e-5, 0.01)))
