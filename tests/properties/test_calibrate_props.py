"""Properties of jaxdp.calibrate: the generic solver, Poisson / shuffle / GDP-mu calibrations, rounds.

Compilation dominates (one Poisson calibration program costs ~10-15 s of CPU to compile, one
``jaxdp.poisson.epsilon_for_delta`` program ~10 s), so every Poisson calibration here uses ONE
fixed-shape batch (B = 8) on a small static grid; re-running the public accountant at sigma* for
general (q, T), the gradients, ``epochs``, the exact shuffle accountant and ``rpp_scale`` are slow
tests (``-m slow``).  In CI, tests/test_calibrate.py also checks the Poisson calibration against
dp_accounting on the default calibration grid.

Where each expected value comes from:

* feasibility: q = 1 is the Gaussian mechanism G_{sqrt(T)/sigma} (Dong, Roth & Su 2022, Cor. 2.13)
  and T = 1 is one Poisson-subsampled Gaussian, whose hockey-stick divergences in both orders are
  closed forms in Phi (the likelihood ratio 1 - q + q e^{(2x-1)/(2 sigma^2)} is monotone in x); both
  evaluated by mpmath at 40 digits.  The certified eps is >= the true eps, so the calibrated sigma
  must have true delta(eps_target) <= delta_target;
* monotonicity: definition (smallest sigma with a certified eps <= target; the certified eps is
  non-increasing in delta and sigma, non-decreasing in q and T: tests/properties/test_poisson_props.py);
* generic ``solve``: closed-form roots of p0 x^-p1 and p0 x^p1 and their implicit derivatives;
* ``noise_multiplier_for_mu``: inverse of the Bu et al. / shuffle CLT formulas in closed form;
* ``rounds``: the definition (smallest integer M with delta_gap(M) <= target) and, for the CLT gap
  2 Phi(mu/2) - 1, mu = sqrt(E (e^{1/sigma^2} - 1) / M), the closed-form real root.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxdp.calibrate as cal
import jaxdp.poisson as po
import jaxdp.shuffle as sh
from jaxdp.core.pld import Grid

from ._util import gauss_delta_ref, n_examples

G = Grid(size=2**12)
B = 8
H = B // 2

eps_st = st.floats(0.1, 8.0)
delta_st = st.floats(1e-10, 1e-2)
q_st = st.floats(1e-3, 1.0)
T_st = st.integers(1, 64)


def _pnm(e, d, q, t):
    return cal.poisson_noise_multiplier(jnp.asarray(e, jnp.float64), jnp.asarray(d, jnp.float64),
                                        sampling_probability=jnp.asarray(q, jnp.float64),
                                        num_steps=jnp.asarray(t, jnp.float64), grid=G, throw=False)


def _eps(d, s, q, t):
    return np.asarray(po.epsilon_for_delta(np.asarray(d, np.float64), noise_multiplier=np.asarray(s, np.float64),
                                           sampling_probability=np.asarray(q, np.float64),
                                           num_steps=np.asarray(t, np.float64), grid=G))


def _subsampled_delta_ref(eps, sigma, q):
    """max over both orders of the hockey-stick divergence of N(0, s^2) and (1-q) N(0, s^2) + q N(1, s^2)
    (checked against scipy.integrate.quad of (Q - e^eps P)_+ and (P - e^eps Q)_+ to 1e-9 when written)."""
    eps, s, q = mp.mpf(eps), mp.mpf(sigma), mp.mpf(q)
    x1 = mp.mpf(1) / 2 + s**2 * mp.log((mp.e**eps - 1 + q) / q)
    d_qp = (1 - q) * mp.ncdf(-x1 / s) + q * mp.ncdf(-(x1 - 1) / s) - mp.e**eps * mp.ncdf(-x1 / s)
    c = mp.e ** (-eps) - 1 + q
    d_pq = mp.mpf(0)
    if c > 0:
        x2 = mp.mpf(1) / 2 + s**2 * mp.log(c / q)
        d_pq = mp.ncdf(x2 / s) - mp.e**eps * ((1 - q) * mp.ncdf(x2 / s) + q * mp.ncdf((x2 - 1) / s))
    return float(max(d_qp, d_pq, 0))


def _check_solution(sol, what):
    r = np.asarray(sol.result)
    v = np.asarray(sol.value)
    assert np.all(r == cal.SUCCESSFUL), (what, r)
    assert np.all(np.isfinite(v)) and np.all(v >= 1e-2), (what, v)
    assert np.all(np.asarray(sol.stats["residual"]) <= 0.0), (what, sol.stats["residual"])  # feasible side
    inf_end = np.asarray(sol.stats["infeasible_end"])
    interior = v > 1e-2 * (1 + 1e-12)  # not held at the lower limit of sigma_range
    # the infeasible end of the final bracket is just below: sigma* is the smallest feasible to rtol
    assert np.all(inf_end[interior] < v[interior]), (what, inf_end, v)
    assert np.all(v[interior] / inf_end[interior] - 1 <= 1e-8), (what, inf_end, v)
    return v


def _reference_delta(e, s, q, t):
    """True delta at eps for q = 1 (Gaussian, any T) or T = 1 (one subsampled step); None otherwise."""
    if q == 1.0:
        return gauss_delta_ref(e, math.sqrt(t) / s)
    if t == 1.0:
        return _subsampled_delta_ref(e, s, q)
    return None


@pytest.mark.acceptance  # README suite budget (issue 18): property check over many compiled shapes, 15-40 s of XLA
@settings(max_examples=n_examples(2))
@given(st.lists(st.tuples(eps_st, delta_st, T_st), min_size=H // 2, max_size=H // 2),
       st.lists(st.tuples(eps_st, delta_st, q_st), min_size=H // 2, max_size=H // 2), st.floats(1.1, 3.0),
       st.sampled_from(["epsilon", "delta", "q", "T"]))
def test_poisson_sigma_feasible_tight_and_monotone(gauss, sub, factor, which):
    """One batch of 2 x 4 targets: 4 base points (2 with q = 1 and any T, 2 with T = 1 and any q) and
    the same 4 with a stricter target (smaller eps or delta) or more leakage (larger q, more steps).

    * every sigma* is feasible: the solver's own residual and, where a closed form exists (q = 1 or
      T = 1), the true delta(eps_target) <= delta_target (the public accountant re-run at sigma* for
      general (q, T) is test_poisson_sigma_independently_feasible, slow: one more ~10 s compilation);
    * sigma* is the smallest feasible value to the solver tolerance (its infeasible end is adjacent);
    * the modified targets need at least as much noise.
    """
    e = np.array([p[0] for p in gauss] + [p[0] for p in sub])
    d = np.array([p[1] for p in gauss] + [p[1] for p in sub])
    q = np.array([1.0] * (H // 2) + [p[2] for p in sub])
    t = np.array([float(p[2]) for p in gauss] + [1.0] * (H // 2))
    e2, d2, q2, t2 = e.copy(), d.copy(), q.copy(), t.copy()
    if which == "epsilon":
        e2 = e / factor
    elif which == "delta":
        d2 = d / factor**4
    elif which == "q":
        q2 = np.minimum(q * factor, 1.0)
    else:
        t2 = t + np.ceil(4 * factor)
    E, D, Q, T = (np.concatenate([a, b]) for a, b in ((e, e2), (d, d2), (q, q2), (t, t2)))
    s = _check_solution(_pnm(E, D, Q, T), "poisson sigma")
    assert np.all(s[H:] >= s[:H] * (1 - 1e-9)), (which, np.c_[s[:H], s[H:]])
    for k in range(B):
        ref = _reference_delta(E[k], s[k], Q[k], T[k])
        if ref is not None:
            assert ref <= D[k] * (1 + 1e-9), (E[k], D[k], Q[k], T[k], s[k], ref)


@pytest.mark.slow
@settings(max_examples=n_examples(2))
@given(st.lists(st.tuples(eps_st, delta_st, q_st, T_st), min_size=B, max_size=B))
def test_poisson_sigma_independently_feasible(p):
    """The public accountant, re-run at sigma*, certifies eps <= target (general q and T)."""
    E, D, Q, T = (np.array(x, np.float64) for x in zip(*p))
    s = _check_solution(_pnm(E, D, Q, T), "poisson sigma")
    eps_at = _eps(D, s, Q, T)
    assert np.all(eps_at <= E), np.c_[E, eps_at]


@pytest.mark.slow
def test_poisson_sigma_gradients_finite_and_signed():
    """Implicit-function gradients: d sigma / d eps <= 0, d sigma / d delta <= 0, d sigma / d q >= 0 (compile ~60 s)."""
    e = np.linspace(0.3, 6.0, B)
    d = np.geomspace(1e-9, 1e-3, B)
    q = np.linspace(0.01, 0.95, B)  # q = 1: test_regression_poisson_gradient_in_q_at_q_one
    t = np.arange(1.0, B + 1) * 7
    ge, gd, gq = jax.grad(lambda e, d, q: _pnm(e, d, q, t).value.sum(), argnums=(0, 1, 2))(e, d, q)
    ge, gd, gq = (np.asarray(g) for g in (ge, gd, gq))
    assert np.all(np.isfinite(ge)) and np.all(np.isfinite(gd)) and np.all(np.isfinite(gq))
    assert np.all(ge < 0) and np.all(gd < 0) and np.all(gq >= 0), (ge, gd, gq)


@pytest.mark.slow
def test_regression_poisson_gradient_in_q_at_q_one():
    """Regression (fixed: double-where in SubsampledGaussian._loss_remove).  Found by
    test_poisson_sigma_gradients_finite_and_signed (q = linspace(0.01, 1, 8)): at
    sigma = 1, T = 56, delta = 1e-3, d eps / d q = 50.9 at q = 0.5, 64.65 at q = 0.999 and NaN at
    q = 1 (the one-sided derivative exists: eps is smooth in q up to 1); d sigma*/d q likewise."""
    q = jnp.array([0.5, 0.999, 1.0])
    g = jax.grad(lambda q: po.epsilon_for_delta(jnp.full(3, 1e-3), noise_multiplier=jnp.ones(3), sampling_probability=q,
                                                num_steps=jnp.full(3, 56.0), grid=G).sum())(q)
    assert np.all(np.isfinite(np.asarray(g))), g


@pytest.mark.slow
def test_poisson_epochs_is_the_largest_feasible_integer():
    s = np.linspace(0.8, 3.0, B)
    e = np.linspace(0.5, 4.0, B)
    d = np.full(B, 1e-5)
    q = np.linspace(0.01, 0.3, B)
    sol = cal.epochs(noise_multiplier=s, epsilon=e, delta=d, sampling="poisson", sampling_probability=q, grid=G,
                     throw=False)
    E = np.asarray(sol.value)
    spe = np.ceil(1.0 / q)
    ok = np.asarray(sol.result) == cal.SUCCESSFUL
    assert ok.any()
    assert np.all(np.isnan(E[~ok]))  # infeasible (E = 1 already too much): NaN, never a number
    Ef = np.where(ok, E, 1.0)
    assert np.all(_eps(d, s, q, Ef * spe)[ok] <= e[ok])
    assert np.all(_eps(d, s, q, (Ef + 1) * spe)[ok] > e[ok])


# ------------------------------------------------------------------------------------------------
# the generic solver
# ------------------------------------------------------------------------------------------------

power_st = st.lists(st.tuples(st.floats(0.1, 10.0), st.floats(0.5, 3.0), st.floats(0.1, 10.0)),
                    min_size=B, max_size=B)
_KW = dict(lower=1.0, upper=2.0, lower_limit=1e-6, upper_limit=1e6, log_scale=True, throw=False)


def _dec(x, p):
    return p[0] * x ** (-p[1])


def _inc(x, p):
    return p[0] * x ** p[1]


@jax.jit
def _solve_real(t, p0, p1):
    def one(t, p0, p1):
        def dec(t, a, b):
            sol = cal.solve(_dec, t, (a, b), decreasing=True, **_KW)
            return sol.value, sol.result

        (dv, dr), g = jax.value_and_grad(dec, argnums=(0, 1, 2), has_aux=True)(t, p0, p1)
        inc = cal.solve(_inc, t, (p0, p1), decreasing=False, **_KW)
        return dv, dr, inc.value, inc.result, jnp.stack(g)

    return jax.vmap(one)(t, p0, p1)


@jax.jit
def _solve_int(t, p0, p1):
    kw = dict(_KW, lower_limit=1.0, integer=True)

    def one(t, p0, p1):
        dec = cal.solve(_dec, t, (p0, p1), decreasing=True, **kw)
        inc = cal.solve(_inc, t, (p0, p1), decreasing=False, **kw)
        return dec.value, dec.result, inc.value, inc.result

    return jax.vmap(one)(t, p0, p1)


@settings(max_examples=n_examples(5))
@given(power_st)
def test_solve_closed_form_roots_feasible_side_and_implicit_gradients(pts):
    """x* = (p0 / t)^(1/p1) solves p0 x^-p1 = t (and (t / p0)^(1/p1) solves p0 x^p1 = t);
    dx*/dt = -x*/(p1 t), dx*/dp0 = x*/(p0 p1), dx*/dp1 = -x* log(x*)/p1 (implicit-function theorem)."""
    p0, p1, t = (np.array(x, np.float64) for x in zip(*pts))
    dv, dr, iv, ir, g = (np.asarray(v) for v in _solve_real(t, p0, p1))
    root_d, root_i = (p0 / t) ** (1 / p1), (t / p0) ** (1 / p1)
    assert np.all(dr == cal.SUCCESSFUL) and np.all(ir == cal.SUCCESSFUL)
    np.testing.assert_allclose(dv, root_d, rtol=1e-9)
    np.testing.assert_allclose(iv, root_i, rtol=1e-9)
    # the feasible side, never past (numpy's power may differ from XLA's by an ulp: 4 ulps of slack)
    assert np.all(_dec(dv, (p0, p1)) <= t * (1 + 1e-15)) and np.all(_inc(iv, (p0, p1)) <= t * (1 + 1e-15))
    want = np.stack([-root_d / (p1 * t), root_d / (p0 * p1), -root_d * np.log(root_d) / p1], axis=1)
    np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-12)
    # integer problems: the extreme feasible integer (definition), at least the limit 1
    dv, dr, iv, ir = (np.asarray(v) for v in _solve_int(t, p0, p1))
    assert np.all(dr == cal.SUCCESSFUL) and np.all(dv == np.round(dv)) and np.all(dv >= 1)
    assert np.all(_dec(dv, (p0, p1)) <= t * (1 + 1e-15))
    assert np.all((dv == 1) | (_dec(np.maximum(dv - 1, 1), (p0, p1)) > t)), np.c_[dv, root_d]
    feas = ir == cal.SUCCESSFUL  # p0 x^p1 <= t at x = 1 needs p0 <= t; otherwise infeasible (NaN)
    np.testing.assert_array_equal(feas, p0 <= t)
    assert np.all(np.isnan(iv[~feas]))
    assert np.all(_inc(iv[feas], (p0[feas], p1[feas])) <= t[feas] * (1 + 1e-15))
    assert np.all(_inc(iv[feas] + 1, (p0[feas], p1[feas])) > t[feas])


# ------------------------------------------------------------------------------------------------
# GDP mu and shuffle rounds (closed forms)
# ------------------------------------------------------------------------------------------------


@settings(max_examples=n_examples(3))
@given(st.lists(st.tuples(st.floats(0.05, 5.0), st.floats(1e-3, 1.0), st.integers(1, 10_000)), min_size=B,
                max_size=B))
def test_noise_multiplier_for_mu_inverts_the_clt_formula(pts):
    """Poisson: mu = q sqrt(T (e^{1/s^2} - 1)) => s = 1/sqrt(log1p(mu^2/(q^2 T))), clamped to the
    range [1e-2, 1e6] (the shuffle formula is checked in tests/test_calibrate.py)."""
    mu, q, T = (np.array(x, np.float64) for x in zip(*pts))
    sp = np.asarray(cal.noise_multiplier_for_mu(mu, sampling="poisson", sampling_probability=q, num_steps=T,
                                                throw=False).value)
    ref = np.clip(1 / np.sqrt(np.log1p(mu**2 / (q**2 * T))), 1e-2, 1e6)
    np.testing.assert_allclose(sp, ref, rtol=1e-10)
    assert np.all(q * np.sqrt(T * np.expm1(1 / sp**2)) <= mu * (1 + 1e-12))  # feasible side


def _clt_gap(s, M, E):
    mu = np.sqrt(E * np.expm1(1 / s**2) / M)
    return np.array([float(2 * mp.ncdf(mp.mpf(m) / 2) - 1) for m in np.atleast_1d(mu)])


@settings(max_examples=n_examples(3))
@given(st.lists(st.tuples(st.floats(1e-3, 0.5), st.floats(0.5, 5.0), st.integers(1, 20)), min_size=B, max_size=B))
def test_rounds_clt_is_the_smallest_feasible_integer(pts):
    """M = smallest integer with the CLT gap <= target (mpmath); the real root in closed form
    E (e^{1/s^2} - 1) / mu*^2 with mu* = 2 Phi^{-1}((1 + g)/2); M non-increasing in the target."""
    g, s, E = (np.array(x, np.float64) for x in zip(*pts))
    m, m_real = (np.asarray(v) for v in cal.rounds(delta_gap=g, noise_multiplier=s, num_epochs=E, method="clt"))
    assert np.all(m == np.round(m)) and np.all(m >= 1)
    assert np.all(_clt_gap(s, m, E) <= g * (1 + 1e-12)), np.c_[g, _clt_gap(s, m, E)]
    # smallest: M - 1 is infeasible (where the real root is above the limit M = 1; at the limit see
    # test_regression_rounds_whole_range_feasible_returns_one)
    above = m_real > 1.0
    assert np.all((_clt_gap(s, np.maximum(m - 1, 1), E) > g)[above]), np.c_[m, m_real]
    assert np.all(m[above] == np.ceil(m_real[above])), np.c_[m, m_real]
    mu_star = np.array([float(2 * mp.sqrt(2) * mp.erfinv(mp.mpf(x))) for x in g])  # 2 Phi^{-1}((1+g)/2)
    ref = E * np.expm1(1 / s**2) / mu_star**2
    big = ref > 1.0  # below 1 the solve stops at the limit M = 1
    np.testing.assert_allclose(m_real[big], ref[big], rtol=1e-8)
    m2, _ = cal.rounds(delta_gap=g * 1.5, noise_multiplier=s, num_epochs=E, method="clt")
    assert np.all(np.asarray(m2) <= m)


def test_regression_rounds_whole_range_feasible_returns_one():
    """Regression (fixed in the integer refinement, jaxdp.roots.extreme_integer).  Found by test_rounds_clt_is_the_smallest_feasible_integer: sigma = 1, E = 1, target 0.5.  The CLT
    gap at M = 1 is 2 Phi(sqrt(e - 1)/2) - 1 = 0.4878 <= 0.5, so the smallest feasible M is 1 (the
    real root is reported as 1.0) but the integer returned is 2 (feasible, not the smallest)."""
    assert _clt_gap(np.array([1.0]), np.array([1.0]), np.array([1.0]))[0] <= 0.5
    ones = np.ones(B)  # the property test's shape: no new compilation
    m, m_real = cal.rounds(delta_gap=0.5 * ones, noise_multiplier=ones, num_epochs=ones, method="clt")
    assert float(m_real[0]) == 1.0
    assert float(m[0]) == 1.0


@pytest.mark.slow  # ~5 s: its own compilation of the Berry-Esseen rounds solve
def test_regression_rounds_berry_esseen_below_regime_start():
    """Regression (fixed: the bracket starts inside the regime).  sigma = 0.8: the regime is M >= e^{3/0.64} = 108.6; the gap is 0.0070 <= 0.01 at M = 1e7,
    so a smallest feasible M exists (about 5e6), but rounds raises CalibrationError (code NONFINITE)."""
    assert float(sh.delta_gap(noise_multiplier=0.8, num_rounds=1e7, method="berry_esseen")) <= 0.01
    m, _ = cal.rounds(delta_gap=0.01, noise_multiplier=0.8, method="berry_esseen")
    assert float(sh.delta_gap(noise_multiplier=0.8, num_rounds=m, method="berry_esseen")) <= 0.01


# ------------------------------------------------------------------------------------------------
# exact shuffle accountant and RPP scale (expensive compilations: slow)
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_shuffle_sigma_feasible_and_monotone_in_eps():
    e = np.array([0.5, 1.0, 2.0, 4.0])
    sol = cal.shuffle_noise_multiplier(e, 1e-5, num_rounds=100.0, num_epochs=2.0, throw=False)
    s = np.asarray(sol.value)
    assert np.all(np.asarray(sol.result) == cal.SUCCESSFUL)
    assert np.all(np.diff(s) <= 0)
    eps_at = np.asarray(sh.epsilon_for_delta(1e-5, noise_multiplier=s, num_rounds=100.0, num_epochs=2.0))
    assert np.all(eps_at <= e), np.c_[e, eps_at]


@pytest.mark.slow
def test_rpp_scale_feasible():
    import jaxdp.pufferfish as pf

    x, y = np.array([0.0, 1.0, 2.5]), np.array([0.5, 3.0, 3.5])
    for noise, a, e in (("laplace", 2.0, 1.0), ("gaussian", 3.0, 0.5), ("laplace", 0.5, 0.2)):
        b = float(cal.rpp_scale(x, y, alpha=a, epsilon=e, noise=noise).value)
        d = max(float(pf.renyi_divergence(x, y, alpha=a, noise=noise, scale=b, return_upper=True)[1]),
                float(pf.renyi_divergence(y, x, alpha=a, noise=noise, scale=b, return_upper=True)[1]))
        assert d <= e, (noise, a, e, b, d)
