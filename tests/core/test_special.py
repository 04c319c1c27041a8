"""jaxdp._special.ndtr against scipy.special.ndtr (independent C implementation)."""

import jax
import numpy as np
import scipy.special as sps

from jaxdp._special import ndtr


def test_ndtr_matches_scipy_relative_in_both_tails():
    x = np.concatenate([np.linspace(-38.0, 38.0, 20001), -np.logspace(-8, 1.5, 500), np.logspace(-8, 1.5, 500)])
    got = np.asarray(jax.jit(ndtr)(x))
    ref = sps.ndtr(x)
    # relative accuracy where Phi is small (lower tail), absolute near 1
    rel = np.abs(got - ref) / np.maximum(ref, 1e-300)
    assert np.max(rel[ref > 1e-300]) < 1e-14, np.max(rel[ref > 1e-300])
    assert np.max(np.abs(got - ref)) < 4.5e-16  # 2 ulp near 1
    # and the upper tail via the symmetry 1 - Phi(x) = Phi(-x)
    g = np.asarray(jax.grad(lambda t: ndtr(t))(1.3))
    assert abs(g - np.exp(-1.3**2 / 2) / np.sqrt(2 * np.pi)) < 1e-15
