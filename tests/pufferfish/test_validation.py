"""Bad input: eager ValueError naming the argument; under jit NaN, never a plausible number."""

import jax
import numpy as np
import pytest

import jaxdp.pufferfish as pf

X, Y = [0.0, 1.0, 2.0], [0.5, 1.5]


@pytest.mark.parametrize("kw,match", [
    (dict(samples_i=[]), "samples_i"),
    (dict(samples_j=[1.0, np.nan]), "samples_j"),
    (dict(alpha=0.0), "alpha"),
    (dict(alpha=-1.0), "alpha"),
    (dict(alpha=1.0), "alpha"),
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=-0.5), "epsilon"),
    (dict(weights_i=[0.5, -0.1, 0.6]), "weights_i"),
    (dict(weights_j=[0.0, 0.0]), "weights_j"),
    (dict(weights_j=[1.0, 2.0, 3.0]), "weights_j"),
    (dict(method="nope"), "method"),
])
@pytest.mark.parametrize("fn", ["laplace", "gaussian"])
def test_eager_errors(kw, match, fn):
    args = dict(samples_i=X, samples_j=Y, alpha=2.0, epsilon=1.0)
    args.update(kw)
    f = pf.calibrate_laplace if fn == "laplace" else pf.calibrate_gaussian
    with pytest.raises(ValueError, match=match):
        f(args.pop("samples_i"), args.pop("samples_j"), **args)


def test_renyi_divergence_errors():
    with pytest.raises(ValueError, match="noise"):
        pf.renyi_divergence(X, Y, alpha=2.0, noise="cauchy", scale=1.0)
    with pytest.raises(ValueError, match="scale"):
        pf.renyi_divergence(X, Y, alpha=2.0, noise="laplace", scale=0.0)
    with pytest.raises(ValueError, match="alpha"):
        pf.renyi_divergence(X, Y, alpha=-2.0, noise="laplace", scale=1.0)


def test_traced_bad_input_is_nan():
    f = jax.jit(lambda a, e, w: pf.calibrate_laplace(X, Y, alpha=a, epsilon=e, weights_i=w))
    w = np.array([0.2, 0.3, 0.5])
    assert np.isfinite(float(f(2.0, 1.0, w)))
    assert np.isnan(float(f(-1.0, 1.0, w)))
    assert np.isnan(float(f(1.0, 1.0, w)))
    assert np.isnan(float(f(2.0, 0.0, w)))
    assert np.isnan(float(f(2.0, 1.0, np.array([0.2, -0.3, 0.5]))))
    g = jax.jit(lambda a, e: pf.calibrate_gaussian(X, Y, alpha=a, epsilon=e))
    assert np.isnan(float(g(np.nan, 1.0)))
