"""Calibration: generic solver against closed forms, Poisson against dp_accounting, shuffle via a stand-in.

Reference sigmas: dp_accounting 0.4.x ``calibrate_dp_mechanism`` with ``PLDAccountant`` (default
discretisation) on ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` x T, delta = 1e-5
(computed once, see benchmarks/bench_calibrate.py which recomputes them side by side).
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

import jaxdp  # noqa: F401
import jaxdp.calibrate as cal
from jaxdp import poisson

EPS = np.array([0.5, 1.0, 2.0, 4.0, 8.0])
# dp_accounting calibrate_dp_mechanism, q = 0.01, T = 1000, delta = 1e-5
DP_ACCOUNTING_SIGMA = {0.5: 2.382252, 1.0: 1.414631, 2.0: 0.959103, 4.0: 0.734782, 8.0: 0.586261}


# ---- generic solver ----------------------------------------------------------------------------


def _inv(x, p):
    return p / x


def test_solve_closed_form_and_implicit_gradient():
    kw = dict(decreasing=True, lower=0.1, upper=1.0, lower_limit=1e-6, upper_limit=1e6, log_scale=True)
    sol = cal.solve(_inv, 2.0, 3.0, **kw)
    assert int(sol.result) == cal.SUCCESSFUL
    assert float(sol.value) >= 1.5 and float(sol.value) == pytest.approx(1.5, rel=1e-9)
    assert float(sol.stats["residual"]) <= 0.0  # feasible side
    g = jax.grad(lambda t, p: cal.solve(_inv, t, p, **kw).value, argnums=(0, 1))(2.0, 3.0)
    np.testing.assert_allclose(g, (-0.75, 0.5), rtol=1e-8)


def test_solve_jit_vmap_and_increasing():
    f = jax.jit(jax.vmap(lambda t: cal.solve(lambda x, p: jnp.exp(-x), t, None, decreasing=True, lower=0.0,
                                             upper=1.0, throw=False).value))
    v = np.asarray(f(jnp.array([0.5, 0.1, 1e-30, -1.0])))
    np.testing.assert_allclose(v[:3], -np.log([0.5, 0.1, 1e-30]), rtol=1e-9)
    assert np.isnan(v[3])  # exp(-x) <= -1 is infeasible: NaN, never a number
    # increasing: largest x with x^3 <= t
    sol = cal.solve(lambda x, p: x**3, 27.0, None, decreasing=False, lower=0.0, upper=1.0)
    assert float(sol.value) <= 3.0 and float(sol.value) == pytest.approx(3.0, rel=1e-9)


def test_solve_integer_rounds_toward_feasibility():
    sol = cal.solve(lambda x, p: x**2, 50.0, None, decreasing=False, lower=1.0, upper=2.0, lower_limit=1,
                    upper_limit=1e9, log_scale=True, integer=True)
    assert float(sol.value) == 7.0
    sol = cal.solve(lambda x, p: 1.0 / x, 1.0 / 76.5, None, decreasing=True, lower=1.0, upper=2.0, lower_limit=1,
                    upper_limit=1e9, log_scale=True, integer=True)
    assert float(sol.value) == 77.0
    # everything feasible: the limit itself
    sol = cal.solve(lambda x, p: 1.0 / x, 10.0, None, decreasing=True, lower=1.0, upper=2.0, lower_limit=1,
                    upper_limit=1e9, log_scale=True, integer=True)
    assert float(sol.value) == 1.0 and int(sol.result) == cal.SUCCESSFUL


def test_solve_failure_modes():
    kw = dict(decreasing=True, lower=1.0, upper=2.0, lower_limit=1.0, upper_limit=1e9, log_scale=True)
    with pytest.raises(cal.CalibrationError, match="infeasible"):
        cal.solve(_inv, 1e-12, 1.0, **kw)
    sol = cal.solve(_inv, 1e-12, 1.0, throw=False, **kw)
    assert int(sol.result) == cal.INFEASIBLE and np.isnan(float(sol.value))
    sol = jax.jit(lambda t: cal.solve(_inv, t, 1.0, **kw))(1e-12)  # traced: NaN + code, no raise
    assert int(sol.result) == cal.INFEASIBLE and np.isnan(float(sol.value))
    sol = cal.solve(lambda x, p: jnp.nan * x, 1.0, None, throw=False, **kw)
    assert int(sol.result) == cal.NONFINITE and np.isnan(float(sol.value))
    # max_steps: the value stays on the feasible side
    sol = cal.solve(_inv, 2.0, 3.0, max_steps=2, throw=False, **kw)
    assert int(sol.result) == cal.MAX_STEPS and 3.0 / float(sol.value) <= 2.0


# ---- Poisson -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _poisson_batch():
    return cal.poisson_noise_multiplier(jnp.asarray(EPS), 1e-5, sampling_probability=0.01, num_steps=1000)


@pytest.fixture
def poisson_batch():
    # cached in the process, not a module fixture: an xdist worker that tears module fixtures down
    # between the module's tests (seen: the 40 s calibration set up twice in one run) reuses it
    return _poisson_batch()


def test_poisson_matches_dp_accounting_and_is_feasible(poisson_batch):
    sol = poisson_batch
    assert (np.asarray(sol.result) == 0).all()
    sig = np.asarray(sol.value)
    ref = np.array([DP_ACCOUNTING_SIGMA[e] for e in EPS])
    np.testing.assert_allclose(sig, ref, rtol=5e-3)
    # feasible under the calibration grid (the certificate) and under the accountant's default grid
    assert (np.asarray(sol.stats["residual"]) <= 0).all()
    eps_default = poisson.epsilon_for_delta(1e-5, noise_multiplier=jnp.asarray(sig), sampling_probability=0.01,
                                            num_steps=1000)
    assert (np.asarray(eps_default) <= EPS).all()


def test_noise_multiplier_entry_point_and_errors(poisson_batch):
    s = cal.noise_multiplier(epsilon=jnp.asarray(EPS), delta=1e-5, sampling_probability=0.01, num_steps=1000)
    np.testing.assert_allclose(s, poisson_batch.value, rtol=0, atol=0)
    with pytest.raises(ValueError, match="epsilon"):
        cal.noise_multiplier(epsilon=-1.0, delta=1e-5, sampling_probability=0.01, num_steps=1000)
    with pytest.raises(ValueError, match="sampling_probability"):
        cal.noise_multiplier(epsilon=1.0, delta=1e-5, sampling_probability=1.5, num_steps=1000)
    # eps so small that no sigma <= 1e4 meets it: an error, never an infeasible value (a batch of
    # EPS's shape, whose program is compiled; all entries infeasible, so no certificate solve runs)
    tiny = jnp.full(EPS.shape, 1e-9)
    with pytest.raises(cal.CalibrationError, match="infeasible"):
        cal.noise_multiplier(epsilon=tiny, delta=1e-5, sampling_probability=0.01, num_steps=1000)
    sol = cal.poisson_noise_multiplier(tiny, 1e-5, sampling_probability=0.01, num_steps=1000, throw=False)
    assert np.all(np.asarray(sol.result) == cal.INFEASIBLE) and np.all(np.isnan(np.asarray(sol.value)))


@pytest.mark.slow
def test_poisson_implicit_gradients_match_finite_differences():
    def sig(e, d):
        return cal.noise_multiplier(epsilon=e, delta=d, sampling_probability=0.01, num_steps=1000)

    e0, d0 = 2.0, 1e-5
    ge, gd = jax.grad(sig, argnums=(0, 1))(e0, d0)
    # The implicit gradient is the local slope of the search grid's (2^15 cells) discretised
    # eps(sigma, delta); the returned sigma itself jitters by ~1e-7 absolute between neighbouring
    # targets (8.5e-8 from a line through 11 points 2e-6 apart, 2026-12-05), so steps of 1e-5
    # measure that jitter (FD off by 1.1% in eps, 1.4% in delta at 1e-4) rather than the slope.
    # Steps of 1e-3 average it out: measured |implicit / FD - 1| = 1.5e-4 (eps), 7.4e-4 (delta),
    # the same at steps of 1e-2 (1.3e-4, 9.2e-4): the local slope of the discretised function and
    # the smooth slope differ by that much.
    he, hd = 1e-3 * e0, 1e-3 * d0
    fe = (sig(e0 + he, d0) - sig(e0 - he, d0)) / (2 * he)
    fd = (sig(e0, d0 + hd) - sig(e0, d0 - hd)) / (2 * hd)
    np.testing.assert_allclose(ge, fe, rtol=3e-4)
    np.testing.assert_allclose(gd, fd, rtol=2e-3)


def test_gdp_mu_calibration_closed_form():
    # shuffle CLT: mu = sqrt(E (e^{1/s^2} - 1) / M)  =>  s = 1 / sqrt(log1p(mu^2 M / E))
    mu, m, e = jnp.array([0.5, 1.0, 2.0]), 1000.0, 4.0
    sol = cal.noise_multiplier_for_mu(mu, sampling="shuffle", num_rounds=m, num_epochs=e)
    np.testing.assert_allclose(sol.value, 1 / np.sqrt(np.log1p(np.asarray(mu) ** 2 * m / e)), rtol=1e-10)


# ---- shuffling, through a stand-in for jaxdp.shuffle (CLT closed forms) -------------------------


def _mu(noise_multiplier, num_rounds, num_epochs):
    return jnp.sqrt(num_epochs * jnp.expm1(1.0 / noise_multiplier**2) / num_rounds)


def _gap_clt(*, noise_multiplier, num_rounds, num_epochs=1, method="exact"):
    from jax.scipy.special import ndtr

    return 2.0 * ndtr(_mu(noise_multiplier, num_rounds, num_epochs) / 2.0) - 1.0


def _eps_stand_in(delta, *, noise_multiplier, num_rounds, num_epochs=1):
    # any monotone stand-in will do for the solver logic: the classic Gaussian-mechanism form
    return _mu(noise_multiplier, num_rounds, num_epochs) * jnp.sqrt(2.0 * jnp.log(1.25 / delta))


@pytest.fixture
def shuffle_stub(monkeypatch):
    import importlib

    mod = importlib.import_module("jaxdp.shuffle")
    monkeypatch.setattr(mod, "delta_gap", _gap_clt, raising=False)
    monkeypatch.setattr(mod, "epsilon_for_delta", _eps_stand_in, raising=False)
    return mod


def test_rounds_integer_and_real_root(shuffle_stub):
    gaps = jnp.array([0.01, 0.05])
    m, m_real = cal.rounds(delta_gap=gaps, noise_multiplier=1.0, num_epochs=2)
    mu_star = 2 * norm.ppf((1 + np.asarray(gaps)) / 2)
    exact = 2 * math.expm1(1.0) / mu_star**2
    np.testing.assert_allclose(m_real, exact, rtol=1e-8)
    np.testing.assert_array_equal(m, np.ceil(exact))
    g_at = _gap_clt(noise_multiplier=1.0, num_rounds=m, num_epochs=2)
    g_below = _gap_clt(noise_multiplier=1.0, num_rounds=m - 1, num_epochs=2)
    assert (np.asarray(g_at) <= np.asarray(gaps)).all() and (np.asarray(g_below) > np.asarray(gaps)).all()
    # implicit gradient of the real root: M = 2v/mu*^2
    dm = jax.grad(lambda g: cal.rounds(delta_gap=g, noise_multiplier=1.0, num_epochs=2)[1])(0.01)
    h = 1e-6
    fd = (2 * math.expm1(1) / (2 * norm.ppf((1.01 + h) / 2)) ** 2 - 2 * math.expm1(1) / (2 * norm.ppf((1.01 - h) / 2)) ** 2) / (2 * h)
    assert float(dm) == pytest.approx(fd, rel=1e-5)
    n, _ = cal.samples(delta_gap=0.01, noise_multiplier=1.0, batch_size=10, num_epochs=2)
    assert float(n) == 10 * float(m[0])


def test_shuffle_sigma_and_epochs(shuffle_stub):
    sol = cal.shuffle_noise_multiplier(jnp.array([0.5, 1.0]), 1e-5, num_rounds=1000, num_epochs=3)
    mu = np.asarray([0.5, 1.0]) / np.sqrt(2 * np.log(1.25e5))
    np.testing.assert_allclose(sol.value, 1 / np.sqrt(np.log1p(mu**2 * 1000 / 3)), rtol=1e-9)
    s = cal.noise_multiplier(epsilon=1.0, delta=1e-5, sampling="shuffle", num_rounds=1000, num_epochs=3)
    assert float(s) == pytest.approx(float(sol.value[1]), rel=1e-12)
    e = cal.epochs(noise_multiplier=1.0, delta_gap=0.05, num_rounds=1000)
    ev = int(e.value)
    assert float(_gap_clt(noise_multiplier=1.0, num_rounds=1000, num_epochs=ev)) <= 0.05
    assert float(_gap_clt(noise_multiplier=1.0, num_rounds=1000, num_epochs=ev + 1)) > 0.05
    with pytest.raises(cal.CalibrationError):
        cal.epochs(noise_multiplier=0.3, delta_gap=1e-6, num_rounds=10)


def test_shuffle_real_accountant_if_present():
    import importlib

    mod = importlib.import_module("jaxdp.shuffle")
    if not hasattr(mod, "delta_gap"):
        pytest.skip("jaxdp.shuffle.delta_gap not available yet")
    m, m_real = cal.rounds(delta_gap=0.01, noise_multiplier=1.0, method="clt")
    assert float(mod.delta_gap(noise_multiplier=1.0, num_rounds=m, num_epochs=1, method="clt")) <= 0.01


# ---- Renyi Pufferfish ----------------------------------------------------------------------------


def test_rpp_scale_matches_pufferfish_point_masses():
    pf = pytest.importorskip("jaxdp.pufferfish")
    # point masses 0 and 1: D_alpha(Lap(0,b)||Lap(1,b)) is closed form; "tight" is exact there
    sol = cal.rpp_scale([0.0], [1.0], alpha=2.0, epsilon=1.0, noise="laplace")
    b = float(sol.value)
    ref = float(pf.calibrate_laplace([0.0], [1.0], alpha=2.0, epsilon=1.0, method="tight"))
    assert b == pytest.approx(ref, rel=1e-4)
    assert b >= ref * (1 - 1e-6)
