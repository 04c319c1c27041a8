"""Properties of shuffled DP-SGD accounting: exact single-epoch law, multi-epoch brackets, closed forms.

The exact single-epoch curve is evaluated per example on the scalar-parameter path (one law, a of
fixed shape (33,)): it compiles once and then costs ~0.3 s per call.  The multi-epoch PLD bracket is
evaluated in one fixed-shape batch of 4 on a small grid.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxdp.shuffle as sh
from jaxdp.core.pld import Grid
from jaxdp.mechanisms import shuffled as ms
from jaxdp.shuffle import asymptotics as asy
from jaxdp.shuffle import closed_form as cf

from ._util import assert_curve, gauss_curve_ref, n_examples

A = np.concatenate([[0.0], np.geomspace(1e-6, 1e-2, 8), np.linspace(0.02, 1.0, 24)])  # (33,)
sigma_st = st.floats(0.5, 8.0)


def _exact(a, sigma, M):
    """The exact curve; for sigma >= 0.5 it is resolved everywhere (issue 3), so NaN is a failure."""
    f = np.asarray(ms.tradeoff(a, sigma, M))
    assert not np.any(np.isnan(f)), f"NaN in the exact curve: sigma={sigma}, M={M}"
    return f
logm_st = st.floats(0.0, 8.0)  # M = 10**logm in [1, 1e8]


@settings(max_examples=n_examples(8, 100))
@given(sigma_st, logm_st)
def test_exact_single_epoch_curve_valid_and_between_bounds(sigma, logm):
    M = 10.0**logm
    f = _exact(A, sigma, M)
    assert_curve(A, f, tol=1e-8, name=f"shuffled exact sigma={sigma} M={M}")
    # linear test is an upper bound on f; Berry-Esseen (in its regime) a lower bound
    up = np.asarray(cf.tradeoff_linear_test(A, sigma, M))
    assert np.all(f <= up + 1e-8), np.max(f - up)
    be = np.asarray(cf.tradeoff_berry_esseen(A, sigma, M))
    if np.all(np.isfinite(be)):
        assert np.all(be <= f + 1e-8), np.max(be - f)
    # the TV gap is sup_a (1 - a - f(a)) >= the gap at any sampled a
    tv = float(ms.tv_gap(sigma, M))
    assert np.isfinite(tv) and 0 <= tv <= 1
    assert np.max(1 - A - f) <= tv + 1e-8


@pytest.mark.acceptance  # README suite budget (issue 18): property check over many compiled shapes, 15-40 s of XLA
@settings(max_examples=n_examples(6, 100))
@given(sigma_st, logm_st)
def test_reverse_curve_is_the_inverse(sigma, logm):
    """T(Q, P) = T(P, Q)^{-1}: f_rev(f(a)) = a wherever f is strictly decreasing."""
    M = 10.0**logm
    f = _exact(A, sigma, M)
    r = np.asarray(ms.tradeoff_reverse(f, sigma, M))
    assert_curve(np.sort(f), np.asarray(ms.tradeoff_reverse(np.sort(f), sigma, M)), tol=1e-8, name="reverse")
    strict = (f > 1e-6) & (f < 1 - 1e-6) & (A > 1e-6)
    np.testing.assert_allclose(r[strict], A[strict], atol=1e-6, rtol=1e-4)
    # symmetrised curve min(f, f_rev) lies below both and is still <= 1 - a
    fr = np.asarray(ms.tradeoff_reverse(A, sigma, M))
    assert np.all(np.minimum(f, fr) <= 1 - A + 1e-12)


@settings(max_examples=n_examples(5, 60))
@given(sigma_st, st.floats(0.0, 6.0), st.floats(1.1, 10.0))
def test_exact_curve_monotone_in_sigma_and_M(sigma, logm, factor):
    M = 10.0**logm
    f = _exact(A, sigma, M)
    more_rounds = _exact(A, sigma, M * factor)
    more_noise = _exact(A, sigma * factor, M)
    assert np.all(more_rounds >= f - 1e-8), np.min(more_rounds - f)
    assert np.all(more_noise >= f - 1e-8), np.min(more_noise - f)


@settings(max_examples=n_examples(4, 50))
@given(sigma_st)
def test_one_round_is_the_gaussian_mechanism(sigma):
    f = np.asarray(ms.tradeoff(A, sigma, 1.0))
    ref = np.array([gauss_curve_ref(a, 1.0 / sigma) for a in A])
    np.testing.assert_allclose(f, ref, atol=1e-12)


def test_regression_former_nan_band_is_resolved():
    """Formerly all-NaN (sigma=1: M<=2; 0.7: M<=5; 0.5: M<=10): now the Laplace method, a valid curve."""
    for sigma, M in [(1.0, 2.0), (0.7, 5.0), (0.5, 10.0)]:
        f = _exact(A, sigma, M)
        assert_curve(A, f, tol=1e-8, name=f"shuffled exact sigma={sigma} M={M}")


def test_regression_sigma_1_two_rounds_resolved():
    # was a strict xfail (NaN, found by test_exact_curve_monotone_in_sigma_and_M)
    assert np.isfinite(float(ms.tradeoff(0.1, 1.0, 2.0)))


E4 = 4
GS = Grid(size=2**12)


@pytest.mark.acceptance  # README suite budget (issue 18): property check over many compiled shapes, 15-40 s of XLA
@settings(max_examples=n_examples(1, 10))
@given(st.lists(st.tuples(st.floats(0.8, 4.0), st.floats(1.0, 4.0)), min_size=E4 // 2, max_size=E4 // 2),
       st.integers(1, 20))
def test_multi_epoch_bracket(p, epochs):
    """E and E + 1 epochs side by side: ordered brackets, valid lower curves, monotone in E."""
    s = np.repeat([x[0] for x in p], 2)
    m = np.repeat([np.ceil(10 ** x[1]) for x in p], 2)
    e = np.tile([epochs, epochs + 1], E4 // 2).astype(np.float64)
    b = sh.tradeoff_bracket(A, noise_multiplier=s, num_rounds=m, num_epochs=e, grid=GS)
    lo, up = np.asarray(b.lower), np.asarray(b.upper)
    assert np.all(lo <= up + 1e-12)
    assert_curve(A, lo, tol=1e-9, name="shuffle multi-epoch lower")
    # certified monotonicity: E+1 epochs' lower end <= E epochs' upper end
    assert np.all(lo[1::2] <= up[0::2] + 1e-12)


# ---------------------------------------------------------------- closed forms (cheap, per example)


@given(sigma_st, st.floats(0.0, 12.0), st.integers(1, 100))
def test_closed_form_curves_valid(sigma, logm, E):
    M = 10.0**logm
    for name, fn in [("linear_test", cf.tradeoff_linear_test), ("clt", asy.tradeoff_clt),
                     ("berry_esseen", cf.tradeoff_berry_esseen)]:
        f = np.asarray(fn(A, sigma, M, E))
        if name == "berry_esseen" and not np.all(np.isfinite(f)):
            assert 3.0 / sigma**2 > np.log(M)  # NaN only outside the documented regime
            continue
        assert_curve(A, f, tol=1e-12, name=name)


@settings(max_examples=n_examples(10, 200))
@given(sigma_st, st.floats(0.0, 8.0), st.integers(1, 50))
def test_edgeworth_curve_valid(sigma, logm, E):
    f = np.asarray(asy.tradeoff_edgeworth(A, sigma, 10.0**logm, E))
    assert_curve(A, f, tol=1e-12, convex=False, name="edgeworth")  # documented: no convexity claim


@given(sigma_st, st.floats(0.0, 12.0), st.integers(1, 100), st.floats(1.01, 10.0))
def test_gaps_monotone(sigma, logm, E, factor):
    M = 10.0**logm
    for method in ("linear_test", "clt", "berry_esseen"):
        g = lambda s, m, e: float(sh.delta_gap(noise_multiplier=s, num_rounds=m, num_epochs=e, method=method))  # noqa: E731
        base = g(sigma, M, E)
        if not np.isfinite(base):
            assert method == "berry_esseen"
            continue
        assert 0 <= base <= 1
        assert g(sigma * factor, M, E) <= base + 1e-14
        assert g(sigma, M * factor, E) <= base + 1e-14 or not np.isfinite(g(sigma, M * factor, E)) is False
        assert g(sigma, M, E + 1) >= base - 1e-14


@given(st.floats(1e-8, 0.5), st.floats(1e-8, 0.5), st.floats(1.0, 8.0), st.integers(1, 50))
def test_rounds_berry_esseen_monotone_in_delta(d1, d2, sigma, E):
    lo, hi = sorted([d1, d2])
    m_lo = float(sh.rounds_for_delta(lo, noise_multiplier=sigma, num_epochs=E, method="berry_esseen"))
    m_hi = float(sh.rounds_for_delta(hi, noise_multiplier=sigma, num_epochs=E, method="berry_esseen"))
    assert m_hi <= m_lo


@given(sigma_st, st.floats(0.0, 12.0), st.integers(1, 100))
def test_closed_forms_jit_equals_eager_and_grads_finite(sigma, logm, E):
    M = 10.0**logm
    eager = float(_cf_sum(sigma, M, float(E)))
    val, grads = _cf_vg(jnp.float64(sigma), jnp.float64(M), jnp.float64(E))
    np.testing.assert_allclose(float(val), eager, rtol=1e-12, atol=1e-15)
    assert all(np.isfinite(np.asarray(g)) for g in grads)


def _cf_sum(s, m, e):
    return asy.tradeoff_clt(0.1, s, m, e) + cf.tradeoff_linear_test(0.1, s, m, e) + cf.delta_linear_test(s, m, e)


_cf_vg = jax.jit(jax.value_and_grad(_cf_sum, argnums=(0, 1)))


def test_float32_closed_forms_are_widened():
    f64 = cf.tradeoff_linear_test(np.float32(0.1).astype(np.float64), np.float32(1.3).astype(np.float64), 1000.0)
    f32 = cf.tradeoff_linear_test(np.float32(0.1), np.float32(1.3), np.float32(1000.0))
    assert f32.dtype == jnp.float64 and float(f32) == float(f64)
    e32 = ms.tradeoff(A.astype(np.float32), np.float32(1.0), np.float32(100.0))
    assert e32.dtype == jnp.float64 and np.all(np.isfinite(np.asarray(e32)))
