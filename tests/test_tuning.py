"""optax tuning on calibrated quantities (IFT gradients), checked against brute force."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxdp  # noqa: F401
from jaxdp import calibrate as cal
from jaxdp import tuning


def _sigma_mu(lb, mu=1.0, n=10_000.0, epochs=5.0):
    # sigma* meeting a Poisson CLT mu at q = b/N, T = E N / b (closed form: mu^2 = b E (e^{1/s^2}-1) / N)
    b = jnp.exp(lb)
    t = epochs * n / b
    # the CLT mu is smooth in T: pass the real T (num_steps is validated as an integer only eagerly)
    s = cal.noise_multiplier_for_mu(mu, sampling="poisson", sampling_probability=b / n, num_steps=t,
                                    throw=False).value
    return s, b, t


def test_minimize_over_calibrated_sigma_matches_brute_force():
    def obj(lb):
        s, b, t = _sigma_mu(lb)
        return tuning.noise_to_signal(s, b, t, kappa=0.05)

    lb, hist = jax.jit(lambda p: tuning.minimize(obj, p, optimizer=optax.adam(0.05), num_steps=300))(jnp.log(16.0))
    grid = jnp.log(jnp.linspace(4, 600, 2000))
    vals = jax.vmap(obj)(grid)
    best = float(jnp.exp(grid[jnp.argmin(vals)]))
    assert float(hist[-1]) <= float(hist[0])
    assert float(jnp.exp(lb)) == pytest.approx(best, rel=0.05)
    assert float(obj(lb)) <= float(jnp.min(vals)) * 1.001


def test_coupling_optimisation_through_minimize():
    pf = pytest.importorskip("jaxdp.pufferfish")
    a = jnp.array([0.5, 0.5])
    b = jnp.array([0.3, 0.7])
    ell = jnp.array([[0.0, 2.0], [3.0, 0.1]])
    P, val = tuning.optimise_coupling(a, b, ell, num_steps=200)
    P2, val2 = pf.optimise_coupling(a, b, ell, num_steps=200)
    np.testing.assert_allclose(P.sum(1), a, atol=1e-9)
    np.testing.assert_allclose(P.sum(0), b, atol=1e-9)
    assert float(val) == pytest.approx(float(val2), abs=1e-6)


@pytest.mark.slow
def test_tune_batch_size_poisson_feasible():
    out = tuning.tune_batch_size(epsilon=2.0, delta=1e-5, num_examples=10_000, num_epochs=2, init_batch_size=64.0,
                                 num_steps=5)
    from jaxdp import poisson

    eps = poisson.epsilon_for_delta(1e-5, noise_multiplier=out["noise_multiplier"],
                                    sampling_probability=out["batch_size"] / 10_000, num_steps=out["num_steps"],
                                    grid=cal.CALIBRATION_GRID)
    assert float(eps) <= 2.0
    assert np.isfinite(np.asarray(out["history"])).all()
