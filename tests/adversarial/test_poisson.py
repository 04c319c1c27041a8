"""Adversarial properties of jaxdp.poisson over its whole validated domain (issue 20).

Validated domain: noise_multiplier > 0 (down to 1e-4 here, far below any useful value), q in
(0, 1], integer num_steps >= 1 (up to 1e5), delta in (0, 1) down to 1e-15, epsilon up to 1e6.

References (all independent of the PLD engine, evaluated with mpmath at 40 digits):

* q = 1: the T-step mechanism is the Gaussian mechanism G_mu with mu = sqrt(T) / sigma.
* T = 1, remove direction: delta_r(eps) = q delta_G(log(1 + (e^eps - 1) / q); 1/sigma), so
  eps_r(delta) = log(1 - q + q e^{eps_G(delta / q; 1/sigma)}); add direction:
  delta_a(eps) = c delta_G(eps + log q - log c; 1/sigma) with c = 1 - e^eps (1 - q) (0 once c <= 0);
  both: the larger of the two.  The one-step remove trade-off curve is q G_{1/sigma}(a) + (1-q)(1-a).
* Any T (post-processing): the T-step value dominates the one-step value, and the event "sampled in
  all T steps" gives delta_T(eps) >= q^T delta_G(eps - T log q; sqrt(T)/sigma).

Calls use parameter arrays of shape (16,) on Grid(size=2**12), the shapes of
tests/properties/test_poisson_props.py, so they share its compilations.  The reproducers of issue 20
run as reported (scalar, default grid).
"""

from __future__ import annotations

import mpmath as mp
import pytest
import numpy as np
from hypothesis import given, settings, strategies as st

import jaxdp.poisson as po
from jaxdp.core.pld import DEFAULT_GRID, Grid
from tests import _mddoctest as md
from tests.properties._util import gauss_curve_ref, gauss_delta_ref, n_examples

mp.mp.dps = 40
G = Grid(size=2**12)
B = 16
A = np.concatenate([[0.0], np.geomspace(1e-6, 1e-2, 8), np.linspace(0.02, 1.0, 24)])  # (33,)

log_sigma = st.floats(-4.0, 2.0)
log_q = st.floats(-8.0, 0.0)
log_delta = st.floats(-15.0, np.log10(0.5))
log_T = st.floats(0.0, 5.0)


def _Phi(x):
    return mp.ncdf(x)


def _dG(e, mu):
    """delta_G(e) of G_mu at any real e (mpmath)."""
    return _Phi(-e / mu + mu / 2) - mp.e**e * _Phi(-e / mu - mu / 2)


def _bisect(f, lo, hi, iters=120):
    """Smallest x in [lo, hi] with f(x) <= 0 for non-increasing f (returns the upper end)."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi, lo


def eps_gauss(delta, mu):
    """(upper, lower) on eps_G(delta) >= 0 of G_mu."""
    delta, mu = mp.mpf(delta), mp.mpf(mu)
    if _dG(mp.mpf(0), mu) <= delta:
        return mp.mpf(0), mp.mpf(0)
    return _bisect(lambda e: _dG(e, mu) - delta, 0, mu * mu / 2 + 40 * mu + 1)


def eps_one_step(delta, s, q):
    """eps(delta) of one step, worse direction: (remove, add) exact references (mpmath)."""
    delta, s, q = mp.mpf(delta), mp.mpf(s), mp.mpf(q)
    mu = 1 / s
    e_g = eps_gauss(min(delta / q, mp.mpf(1)), mu)[0] if delta < q else mp.mpf(0)
    e_r = mp.log(1 - q + q * mp.e**e_g)
    if q >= 1:
        return e_r, e_r

    def d_add(e):
        c = 1 - mp.e**e * (1 - q)
        return c * _dG(e + mp.log(q) - mp.log(c), mu) if c > 0 else mp.mpf(0)

    e_a = _bisect(lambda e: d_add(e) - delta, 0, -mp.log1p(-q))[0] if d_add(mp.mpf(0)) > delta else mp.mpf(0)
    return e_r, e_a


def eps_all_sampled(delta, s, q, T):
    """Rigorous lower bound eps_G(delta / q^T; sqrt(T)/s) + T log q (0 if delta >= q^T)."""
    delta, s, q, T = mp.mpf(delta), mp.mpf(s), mp.mpf(q), mp.mpf(T)
    r = delta / q**T
    if r >= 1:
        return mp.mpf(0)
    return max(eps_gauss(r, mp.sqrt(T) / s)[1] + T * mp.log(q), mp.mpf(0))


def _draw(data, q_fixed=None, T_fixed=None):
    s = 10.0 ** np.array(data.draw(st.lists(log_sigma, min_size=B, max_size=B)))
    q = np.full(B, q_fixed) if q_fixed is not None else 10.0 ** np.array(data.draw(st.lists(log_q, min_size=B, max_size=B)))
    T = np.full(B, T_fixed, np.float64) if T_fixed is not None else np.floor(10.0 ** np.array(data.draw(st.lists(log_T, min_size=B, max_size=B))))
    return s, q, T


def _eps(d, s, q, t, grid=G):
    b = po.epsilon_for_delta_bracket(d, noise_multiplier=s, sampling_probability=q, num_steps=t, grid=grid)
    return np.asarray(b.lower), np.asarray(b.upper)


def _delta(e, s, q, t, grid=G):
    b = po.delta_for_epsilon_bracket(e, noise_multiplier=s, sampling_probability=q, num_steps=t, grid=grid)
    return np.asarray(b.lower), np.asarray(b.upper)


@pytest.mark.xdist_group("poisson_small_eps")  # one compiled batched eps program
@settings(max_examples=n_examples(4))
@given(st.data())
def test_eps_q1_is_the_gaussian(data):
    """q = 1, any sigma, T, delta >= 1e-15: bracket contains eps_G(delta; sqrt(T)/sigma), tightly."""
    s, q, T = _draw(data, q_fixed=1.0)
    d = 10.0 ** np.array(data.draw(st.lists(log_delta, min_size=B, max_size=B)))
    lo, up = _eps(d, s, q, T)
    for i in range(B):
        hi_ref, lo_ref = eps_gauss(d[i], np.sqrt(T[i]) / s[i])
        assert np.isfinite(up[i]), (s[i], T[i], d[i])
        assert up[i] >= float(lo_ref) * (1 - 1e-12) and lo[i] <= float(hi_ref) * (1 + 1e-12) + 1e-12, (s[i], T[i], d[i], lo[i], up[i], hi_ref)
        assert up[i] <= float(hi_ref) * (1 + 1e-8) + 1e-8, (s[i], T[i], d[i], up[i], hi_ref)



@pytest.mark.xdist_group("poisson_small_eps")  # one compiled batched eps program
@settings(max_examples=n_examples(4))
@given(st.data())
def test_eps_one_step_closed_form(data):
    """T = 1, any sigma, q: the bracket contains the exact one-step eps (worse direction), and the
    upper end is finite (no FFT, hence no float floor) for delta down to 1e-15."""
    s, q, T = _draw(data, T_fixed=1)
    d = 10.0 ** np.array(data.draw(st.lists(log_delta, min_size=B, max_size=B)))
    lo, up = _eps(d, s, q, T)
    for i in range(B):
        e_r, e_a = eps_one_step(d[i], s[i], q[i])
        ref = float(max(e_r, e_a))
        assert np.isfinite(up[i]), (s[i], q[i], d[i])
        assert up[i] >= ref * (1 - 1e-9) - 1e-12, (s[i], q[i], d[i], up[i], ref)
        assert lo[i] <= ref * (1 + 1e-9) + 1e-12, (s[i], q[i], d[i], lo[i], ref)


@pytest.mark.xdist_group("poisson_small_eps")  # one compiled batched eps program
@settings(max_examples=n_examples(4))
@given(st.data())
def test_eps_dominates_rigorous_lower_bounds(data):
    """Any T up to 1e5: eps_T >= one-step eps and >= the all-sampled Gaussian bound; never NaN."""
    s, q, T = _draw(data)
    d = 10.0 ** np.array(data.draw(st.lists(log_delta, min_size=B, max_size=B)))
    lo, up = _eps(d, s, q, T)
    assert not np.any(np.isnan(up)) and not np.any(np.isnan(lo)), (s, q, T, d)
    assert np.all(lo <= up), (lo, up)
    for i in range(B):
        e_r, _ = eps_one_step(d[i], s[i], q[i])
        ref = max(float(e_r), float(eps_all_sampled(d[i], s[i], q[i], T[i])))
        assert up[i] >= ref * (1 - 1e-9) - 1e-12, (s[i], q[i], T[i], d[i], up[i], ref)


@settings(max_examples=n_examples(4))
@given(st.data())
def test_delta_dominates_rigorous_lower_bounds(data):
    """Any T, eps up to 1e6: delta_T(eps) >= the one-step remove delta and q^T delta_G(eps - T log q;
    sqrt(T)/sigma); q = 1 rows: the bracket contains delta_G(eps; sqrt(T)/sigma)."""
    s, q, T = _draw(data)
    q[:4] = 1.0
    e = 10.0 ** np.array(data.draw(st.lists(st.floats(-3.0, 6.0), min_size=B, max_size=B)))
    lo, up = _delta(e, s, q, T)
    assert np.all((up >= 0) & (up <= 1) & (lo <= up)), (lo, up)
    for i in range(B):
        S, Q, E, TT = mp.mpf(s[i]), mp.mpf(q[i]), mp.mpf(e[i]), mp.mpf(T[i])
        one = Q * _dG(mp.log(mp.e**E - (1 - Q)) - mp.log(Q), 1 / S)
        allm = Q**TT * _dG(E - TT * mp.log(Q), mp.sqrt(TT) / S)
        ref = float(max(one, allm, mp.mpf(0)))
        assert up[i] >= ref * (1 - 1e-9), (s[i], q[i], T[i], e[i], up[i], ref)
        if q[i] == 1.0:
            g = gauss_delta_ref(e[i], np.sqrt(T[i]) / s[i])
            assert lo[i] <= g * (1 + 1e-9) + 1e-300, (s[i], T[i], e[i], lo[i], g)


@settings(max_examples=n_examples(3))
@given(st.data())
def test_tradeoff_below_closed_forms(data):
    """Lower curve below the exact curves: G_{sqrt(T)/sigma} at q = 1, and the one-step remove curve
    q G_{1/sigma}(a) + (1 - q)(1 - a) at T = 1 (the "both" curve lies below the remove curve)."""
    s, q, T = _draw(data)
    q[:8] = 1.0
    T[8:] = 1.0
    b = po.tradeoff_bracket(A, noise_multiplier=s, sampling_probability=q, num_steps=T, direction="both", grid=G)
    lo, up = np.asarray(b.lower), np.asarray(b.upper)
    assert np.all(np.isfinite(lo)) and np.all(lo <= up + 1e-12)
    for i in range(B):
        for j in range(0, A.size, 4):
            if q[i] == 1.0:
                ref = gauss_curve_ref(A[j], np.sqrt(T[i]) / s[i])
            else:
                ref = float(mp.mpf(q[i]) * gauss_curve_ref(A[j], 1 / s[i]) + (1 - mp.mpf(q[i])) * (1 - mp.mpf(A[j])))
            assert lo[i, j] <= ref * (1 + 1e-9) + 1e-12, (s[i], q[i], T[i], A[j], lo[i, j], ref)


# ------------------------------------------------------------------------------------------------
# reproducers of issue 20 (as reported: scalar, default grid)
# ------------------------------------------------------------------------------------------------


@pytest.mark.xdist_group("poisson_default_bracket")
def test_regression_eps_saturated_near_709():
    """Class 2: [709.08, 709.09] against the exact 5409.07 (one-step remove closed form); with
    sigma = 1e-3 and 10 steps 7097.7 against the all-sampled lower bound 4.9e6."""
    b = po.epsilon_for_delta_bracket(1e-5, noise_multiplier=0.01, sampling_probability=0.5, num_steps=1)
    ref = float(eps_one_step(1e-5, 0.01, 0.5)[0])
    assert abs(ref - 5409.07) < 0.01
    assert float(b.lower) <= ref <= float(b.upper) <= ref * (1 + 1e-5)
    b = po.epsilon_for_delta_bracket(1e-5, noise_multiplier=1e-3, sampling_probability=0.5, num_steps=10)
    lb = float(eps_all_sampled(1e-5, 1e-3, 0.5, 10))
    assert lb > 4.9e6 and float(b.upper) >= lb and float(b.lower) <= float(b.upper) <= lb * 1.01


@pytest.mark.xdist_group("poisson_default_eps")
def test_regression_eps_infinite_for_small_delta():
    """Class 6: eps(1e-12) of one Gaussian step was +inf; closed form 3.449."""
    e = float(po.epsilon_for_delta(1e-12, noise_multiplier=2.0, sampling_probability=1.0, num_steps=1))
    hi_ref, lo_ref = eps_gauss(1e-12, 0.5)
    assert abs(float(hi_ref) - 3.449) < 1e-3
    assert float(lo_ref) * (1 - 1e-12) <= e <= float(hi_ref) * (1 + 1e-9)


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_regression_delta_nan_at_huge_epsilon():
    """Class 8: delta(1e6) was NaN; the truth is ~0 (delta(eps) <= P(loss > eps) and the loss of
    100 steps is far below 1e6)."""
    b = po.delta_for_epsilon_bracket(1e6, noise_multiplier=1.0, sampling_probability=0.01, num_steps=100)
    lo, up = float(b.lower), float(b.upper)
    assert 0.0 <= lo <= up < 1e-10


@pytest.mark.xdist_group("poisson_default_bracket")
def test_regression_small_delta_finite_down_to_1e15():
    """Item 3: for q < 1 and T >= 2 the upper eps was +inf below the FFT float allowance (~1e-12 at
    sigma = 1, q = 0.01, T = 1000).  Now the FFT-free Chernoff bound of the discretised law
    (``PLD.delta_upper``) keeps it finite: above the rigorous lower bounds (one step,
    all-sampled; mpmath) and within 5% of dp_accounting's RDP accountant (an independent sound
    upper bound; its PLD accountant returns inf at 1e-15)."""
    from dp_accounting import GaussianDpEvent, NeighboringRelation, PoissonSampledDpEvent, SelfComposedDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    d = np.array([1e-12, 1e-13, 1e-14, 1e-15])
    s = np.array([[1.0], [2.0]])
    q = np.array([[0.01], [0.5]])
    T = np.array([[1000.0], [10.0]])
    # scalar calls: the program compiled for the class-2 reproducer above is reused
    lo, up = np.zeros((2, 4)), np.zeros((2, 4))
    for r in range(2):
        for i in range(4):
            b = po.epsilon_for_delta_bracket(float(d[i]), noise_multiplier=float(s[r, 0]),
                                             sampling_probability=float(q[r, 0]), num_steps=float(T[r, 0]),
                                             grid=DEFAULT_GRID)
            lo[r, i], up[r, i] = float(b.lower), float(b.upper)
    assert np.all(np.isfinite(up)) and np.all(lo <= up), (lo, up)
    quoted = [lo, up]
    for r in range(2):
        event = SelfComposedDpEvent(PoissonSampledDpEvent(q[r, 0], GaussianDpEvent(s[r, 0])), int(T[r, 0]))
        acc = rdp.RdpAccountant()
        acc.compose(event)
        pld = PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4)
        pld.compose(event)
        for i, di in enumerate(d):
            ref_lo = max(float(eps_one_step(di, s[r, 0], q[r, 0])[0]), float(eps_all_sampled(di, s[r, 0], q[r, 0], T[r, 0])))
            assert up[r, i] >= ref_lo * (1 - 1e-9), (r, di, up[r, i], ref_lo)
            assert up[r, i] <= 1.05 * acc.get_epsilon(di), (r, di, up[r, i], acc.get_epsilon(di))
            quoted += [[acc.get_epsilon(di)], [pld.get_epsilon(di)] if np.isfinite(pld.get_epsilon(di)) else []]
    # docs/soundness.md's small-delta table quotes these values (dp_accounting's PLD is inf at 1e-15)
    values = np.concatenate([np.ravel(v) for v in quoted])
    assert not md.doc_quotes("docs/soundness.md", "small-delta-table", values,
                             inputs=[1, 0.01, 1000, 2, 0.5, 10, 1e-4, *d])


@pytest.mark.xdist_group("poisson_small_eps")  # one compiled batched eps program
def test_regression_q1_eps_through_erfcx_hole():
    """q = 1, sigma = 0.3, T = 100, delta = 1e-5 (mu = 33.3): eps ~ 697 puts the log Phi argument at
    -37.6, where jax's erfcx returned 0 on [26.543, 26.642]; the Gaussian closed form then gave
    697.7186 for both ends, the exact PLD value (696.785) looked below the guard and the upper end
    became inf.  Reference: mpmath bisection of delta_G (696.7777915417275)."""
    s = np.array([0.3, 0.3, 0.29, 0.31] * 4)
    T = np.array([100.0, 90.0, 100.0, 110.0] * 4)
    d = np.array([1e-5] * 4 + [1e-6] * 4 + [1e-4] * 4 + [1e-8] * 4)
    lo, up = _eps(d, s, np.ones(B), T)
    for i in range(B):
        hi_ref, lo_ref = eps_gauss(d[i], np.sqrt(T[i]) / s[i])
        assert np.isfinite(up[i]) and up[i] >= float(lo_ref) * (1 - 1e-12), (i, lo[i], up[i], hi_ref)
        assert lo[i] <= float(hi_ref) * (1 + 1e-12) and up[i] <= float(hi_ref) * (1 + 1e-8), (i, lo[i], up[i], hi_ref)
    assert abs(up[0] - 696.7777915417275) < 1e-6


@pytest.mark.xdist_group("poisson_small_eps")  # one compiled batched eps program
def test_regression_lower_end_at_the_one_step_tv_jump():
    """Found by the thorough profile (2026-12-03): sigma = 0.0090199, q = delta = 10^-6.25, T = 1, in a
    batch of 16 on Grid(2^12).  delta(0) = q TV(N(0,s^2), N(1,s^2)) is within 1e-660 of q, so the truth
    is eps = 0 (mpmath, as in test_eps_one_step_closed_form), while eps jumps to ~5400 for any
    delta below q TV; the batched bracket was [5211.90, 5405.17] (scalar: [0, 5405.17]).  The lower
    end must not exceed the truth; the upper end stays pessimistic."""
    s = np.ones(B)
    q = np.ones(B)
    d = np.full(B, 0.1)
    s[4], q[4], d[4] = 10.0**-2.044798938759341, 10.0**-6.25, 10.0**-6.25
    lo, up = _eps(d, s, q, np.ones(B))
    e_r, e_a = eps_one_step(d[4], s[4], q[4])
    ref = float(max(e_r, e_a))
    assert ref == 0.0
    assert lo[4] <= ref + 1e-12 and up[4] >= ref, (lo[4], up[4])
