"""Properties of jaxdp.pufferfish (Renyi Pufferfish calibration, divergences, Wasserstein distances).

Compilation dominates: every calibration property reads ONE jitted program (:func:`_program`) that
calls the public ``calibrate_laplace`` / ``calibrate_gaussian`` for every non-``exact`` method on a
fixed-shape batch (K prior pairs of N atoms, each with a 3 x 3 grid of (alpha, epsilon)), together
with the forward-mode derivatives in alpha and epsilon of ``tight`` and ``theorem2`` (every
method's derivatives: slow test).  The ``exact`` methods (quadrature inside
the root solve, ~10 s of CPU to compile) are exercised by the slow tests here; in CI they are
covered by tests/pufferfish/test_soundness.py (208 pairs: soundness, exact <= tight, exact <=
theorem2) and tests/pufferfish/test_gradients_jit.py (their gradients).  Divergences are evaluated
eagerly with array alpha/scale of one fixed shape (one compilation per noise type).

Where each expected value comes from:

* monotonicity in epsilon: every method returns the smallest scale with B(scale) <= eps for a
  fixed function B (definition), so a larger eps can only allow a smaller scale;
* monotonicity in alpha: D_alpha is non-decreasing in alpha (van Erven & Harremoes 2014, Thm 3);
  the ``tight`` / ``theorem2`` conditions are (1/t) log E_pi exp(t d_alpha(D)), t = alpha - 1,
  non-decreasing in t (Lyapunov) with d_alpha non-decreasing; ``pierquin`` / ``song`` are closed
  forms in W_inf.  ``theorem1`` is *not* monotone in alpha (alpha W/((alpha-1) eps) for one atom);
* ordering exact <= tight <= min(theorem1, pierquin), pierquin <= song (Laplace) and
  exact <= theorem2 <= pierquin (Gaussian): pointwise comparison of the conditions
  (E_pi g(|D|/b) <= g(W_inf/b); log g_alpha(t) <= (alpha-1)t <= alpha t; D_alpha <= D_inf);
* soundness: ``renyi_divergence`` (quadrature, itself checked against mpmath below) of the
  calibrated mechanism is <= eps in both directions (definition of (alpha, eps)-RPP);
* renyi_divergence non-increasing in the scale: data processing, since N(0, s2^2) = N(0, s1^2) * N(0, s2^2 - s1^2)
  and Lap(b2) = Lap(b1) * ((b1/b2)^2 delta_0 + (1 - (b1/b2)^2) Lap(b2)) (characteristic functions);
* renyi_divergence references: the integral of p_i^alpha p_j^(1-alpha) by ``mpmath.quad`` at 20
  digits (split at every atom), and the closed forms for point masses;
* Wasserstein: scipy.stats.wasserstein_distance (W1), a numpy quantile-function integration
  (W2, W_inf), W1 <= W2 <= W_inf (Lyapunov), W_p(mu, mu + c) = |c| (definition).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

import jaxdp.pufferfish as pf

from ._util import n_examples

N = 4  # atoms per prior
K = 2  # prior pairs per hypothesis example
NA, NE = 3, 3  # alpha x epsilon grid per pair
P = NA * NE
LAP_CHEAP = ("theorem1", "tight", "pierquin", "song")
GAU_CHEAP = ("theorem2", "pierquin")
CHEAP = tuple("laplace_" + m for m in LAP_CHEAP) + tuple("gaussian_" + m for m in GAU_CHEAP)
R = 1 + 1e-9  # root-finding slack (bisection to ~1e-15 in log scale; 1e-9 is generous)

atom = st.floats(-4.0, 4.0)
weight = st.floats(0.05, 1.0)
alpha_st = st.one_of(st.floats(0.2, 0.9), st.floats(1.1, 12.0))
eps_st = st.floats(0.1, 4.0)
prior_pair = st.tuples(st.lists(atom, min_size=N, max_size=N), st.lists(weight, min_size=N, max_size=N),
                       st.lists(atom, min_size=N, max_size=N), st.lists(weight, min_size=N, max_size=N),
                       st.floats(0.1, 3.0))  # shift of samples_j: even the minimal example has distinct priors
pair_batch = st.lists(st.tuples(prior_pair, st.lists(alpha_st, min_size=NA, max_size=NA, unique=True),
                                st.lists(eps_st, min_size=NE, max_size=NE, unique=True)),
                      min_size=K, max_size=K)


def _arrays(batch):
    """(K, N) atoms and normalised weights, (K, NA*NE) alpha / eps on a sorted grid (alpha major)."""
    x, wx, y, wy, a, e = [], [], [], [], [], []
    for (xi, wi, yj, wj, shift), al, ep in batch:
        x.append(xi)
        y.append(np.asarray(yj) + shift)
        wx.append(np.asarray(wi) / np.sum(wi))
        wy.append(np.asarray(wj) / np.sum(wj))
        aa, ee = np.meshgrid(np.sort(al), np.sort(ep), indexing="ij")
        a.append(aa.ravel())
        e.append(ee.ravel())
    return tuple(np.asarray(v, np.float64) for v in (x, wx, y, wy, a, e))


def _cheap(x, wx, y, wy, a, e, methods=CHEAP):
    out = {}
    for k in methods:
        noise, m = k.split("_", 1)
        cal = pf.calibrate_laplace if noise == "laplace" else pf.calibrate_gaussian
        out[k] = cal(x, y, alpha=a, epsilon=e, method=m, weights_i=wx, weights_j=wy)
    return out


def _with_jvp(x, wx, y, wy, a, e, methods):
    """Values and forward-mode d/dalpha, d/deps (one jvp, vmapped over the two unit tangents)."""
    tangents = (jnp.stack([jnp.ones_like(a), jnp.zeros_like(a)]), jnp.stack([jnp.zeros_like(e), jnp.ones_like(e)]))
    vals, jac = jax.vmap(lambda ta, te: jax.jvp(lambda aa, ee: _cheap(x, wx, y, wy, aa, ee, methods), (a, e),
                                                (ta, te)))(*tangents)
    return {k: v[0] for k, v in vals.items()}, {k: v[0] for k, v in jac.items()}, {k: v[1] for k, v in jac.items()}


# gradients in CI for one bisection-based condition per noise (implicit-function theorem through
# solve_increasing); all methods in the slow test (each jvp roughly doubles the compilation)
GRAD_CI = ("laplace_tight", "gaussian_theorem2")


@jax.jit
def _program(x, wx, y, wy, a, e):
    """Public calibrations of every non-exact method under jit + vmap over prior pairs, with
    d/dalpha and d/deps of the GRAD_CI methods."""

    def one(x, wx, y, wy, a, e):
        vals, da, de = _with_jvp(x, wx, y, wy, a, e, GRAD_CI)
        vals.update(_cheap(x, wx, y, wy, a, e, tuple(k for k in CHEAP if k not in GRAD_CI)))
        return vals, da, de

    return jax.vmap(one)(x, wx, y, wy, a, e)


@jax.jit
def _program_all_grads(x, wx, y, wy, a, e):
    return jax.vmap(lambda *z: _with_jvp(*z, CHEAP))(x, wx, y, wy, a, e)


@jax.jit
def _program_exact(x, wx, y, wy, a, e):
    """The two ``exact`` calibrations (quadrature inside an Illinois solve; ~10 s of CPU to compile: slow tests)."""

    def one(x, wx, y, wy, a, e):
        return {"laplace_exact": pf.calibrate_laplace(x, y, alpha=a, epsilon=e, method="exact", weights_i=wx,
                                                      weights_j=wy),
                "gaussian_exact": pf.calibrate_gaussian(x, y, alpha=a, epsilon=e, method="exact", weights_i=wx,
                                                        weights_j=wy)}

    return jax.vmap(one)(x, wx, y, wy, a, e)


def _run(batch, exact=False, all_grads=False):
    arrs = _arrays(batch)
    vals, da, de = (_program_all_grads if all_grads else _program)(*arrs)
    if exact:
        vals = dict(vals, **_program_exact(*arrs))
    return arrs, {k: np.asarray(v) for k, v in vals.items()}, {k: np.asarray(v) for k, v in da.items()}, \
        {k: np.asarray(v) for k, v in de.items()}


def _sound(x, wx, y, wy, a, e, noise, scales, what):
    """max(D_alpha(q_i || q_j), D_alpha(q_j || q_i)) <= eps for every pair and grid point (quadrature estimate)."""
    for k in range(K):
        d1 = pf.renyi_divergence(x[k], y[k], alpha=a[k], noise=noise, scale=scales[k], weights_i=wx[k], weights_j=wy[k])
        d2 = pf.renyi_divergence(y[k], x[k], alpha=a[k], noise=noise, scale=scales[k], weights_i=wy[k], weights_j=wx[k])
        d = np.maximum(np.asarray(d1), np.asarray(d2))
        assert np.all(d <= e[k] * (1 + 1e-9) + 1e-12), (what, a[k], e[k], d)


def _check_grads(vals, da, de, e):
    for k in da:
        assert np.all(np.isfinite(da[k])) and np.all(np.isfinite(de[k])), k
        assert np.all(de[k] <= 0.0), (k, de[k])  # d scale / d eps <= 0 (monotone in eps)
        if k != "laplace_theorem1":
            assert np.all(da[k] >= 0.0), (k, da[k])
    if "laplace_song" in de:
        # song: b = W_inf / eps exactly, so d b / d eps = -b / eps (closed form), d b / d alpha = 0
        np.testing.assert_allclose(de["laplace_song"], -vals["laplace_song"] / e, rtol=1e-12)
        np.testing.assert_allclose(da["laplace_song"], 0.0, atol=0.0)


@settings(max_examples=n_examples(2))
@given(pair_batch)
def test_calibrated_scale_monotone_in_eps_and_alpha_with_finite_gradients(batch):
    (x, wx, y, wy, a, e), vals, da, de = _run(batch)
    _check_monotone(vals, CHEAP)
    assert set(da) == set(GRAD_CI)
    _check_grads(vals, da, de, e)


@pytest.mark.slow
@settings(max_examples=n_examples(2))
@given(pair_batch)
def test_gradients_of_every_non_exact_method_finite_and_signed(batch):
    (x, wx, y, wy, a, e), vals, da, de = _run(batch, all_grads=True)
    assert set(da) == set(CHEAP)
    _check_grads(vals, da, de, e)


def _check_monotone(vals, keys):
    for k in keys:
        v = vals[k]
        assert np.all(np.isfinite(v)) and np.all(v > 0), (k, v)
        g = v.reshape(K, NA, NE)
        # non-increasing in eps (last axis), at every alpha
        assert np.all(g[..., 1:] <= g[..., :-1] * R), (k, g)
        if k != "laplace_theorem1":
            # non-decreasing in alpha (middle axis), at every eps
            assert np.all(g[:, 1:] * R >= g[:, :-1]), (k, g)


@settings(max_examples=n_examples(2))
@given(pair_batch)
def test_ordering_and_soundness_of_calibrated_scales(batch):
    (x, wx, y, wy, a, e), vals, _, _ = _run(batch)
    lap = {m: vals["laplace_" + m] for m in LAP_CHEAP}
    gau = {m: vals["gaussian_" + m] for m in GAU_CHEAP}
    assert np.all(lap["tight"] <= np.minimum(lap["theorem1"], lap["pierquin"]) * R)
    assert np.all(lap["pierquin"] <= lap["song"] * R)
    assert np.all(gau["theorem2"] <= gau["pierquin"] * R)
    # every method's scale meets D_alpha <= eps in both directions (quadrature estimate, checked
    # against mpmath in test_renyi_divergence_matches_mpmath_and_upper_value_is_above)
    for noise, scales in (("laplace", lap), ("gaussian", gau)):
        for m, sc in scales.items():
            _sound(x, wx, y, wy, a, e, noise, sc, m)


@pytest.mark.slow
@settings(max_examples=n_examples(2))
@given(pair_batch)
def test_exact_method_monotone_ordered_and_sound(batch):
    """exact <= tight (Laplace), exact <= theorem2 (Gaussian), monotone like the others, and its own
    quadrature upper value is <= eps wherever it is strictly below the sufficient condition."""
    (x, wx, y, wy, a, e), vals, _, _ = _run(batch, exact=True)
    _check_monotone(vals, ("laplace_exact", "gaussian_exact"))
    assert np.all(vals["laplace_exact"] <= vals["laplace_tight"] * R)
    assert np.all(vals["gaussian_exact"] <= vals["gaussian_theorem2"] * R)
    for noise in ("laplace", "gaussian"):
        sc = vals[noise + "_exact"]
        _sound(x, wx, y, wy, a, e, noise, sc, noise + " exact")
        for k in range(K):
            _, u1 = _renyi(x[k], wx[k], y[k], wy[k], a[k], sc[k], noise)
            _, u2 = _renyi(y[k], wy[k], x[k], wx[k], a[k], sc[k], noise)
            below = sc[k] < vals[noise + ("_tight" if noise == "laplace" else "_theorem2")][k] * (1 - 1e-9)
            assert np.all(np.maximum(u1, u2)[below] <= e[k][below] * (1 + 1e-9)), (noise, a[k], e[k])


def test_jit_equals_eager_and_float32_is_widened():
    """The jitted program equals the eager public calls; float32 inputs give the float64 result of the
    widened (exactly representable) values, as float64."""
    batch = [(([0.0, 1.0, 2.5, 4.0], [0.1, 0.4, 0.3, 0.2], [0.5, 3.0, 3.5, 3.25], [0.3, 0.3, 0.2, 0.2], 0.0),
              [0.5, 2.0, 7.0], [0.25, 1.0, 3.0])] * K
    (x, wx, y, wy, a, e), vals, _, _ = _run(batch)
    kw = dict(alpha=a[0], epsilon=e[0], weights_i=wx[0], weights_j=wy[0])
    eager_l = np.asarray(pf.calibrate_laplace(x[0], y[0], method="tight", **kw))
    np.testing.assert_allclose(vals["laplace_tight"][0], eager_l, rtol=1e-12)
    f32 = {k: np.asarray(v, np.float32) for k, v in kw.items()}
    x32, y32 = x[0].astype(np.float32), y[0].astype(np.float32)
    widened = {k: v.astype(np.float64) for k, v in f32.items()}
    got = pf.calibrate_laplace(x32, y32, method="tight", **f32)
    assert got.dtype == jnp.float64
    ref = pf.calibrate_laplace(x32.astype(np.float64), y32.astype(np.float64), method="tight", **widened)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-12)
    # and within float32 rounding of the float64 inputs (scale is smooth in every input)
    np.testing.assert_allclose(np.asarray(got), eager_l, rtol=1e-5)
    d32 = pf.renyi_divergence(x32, y32, alpha=f32["alpha"], noise="gaussian", scale=np.float32(1.5),
                              weights_i=f32["weights_i"], weights_j=f32["weights_j"])
    assert d32.dtype == jnp.float64 and np.all(np.isfinite(np.asarray(d32)))


def _inf_case():
    x, wx = np.array([0.0, 1.0, 2.5, 4.0]), np.array([0.1, 0.4, 0.3, 0.2])
    y, wy = np.array([0.5, 3.0, 3.5, 3.25]), np.array([0.3, 0.3, 0.2, 0.2])
    e = np.array([0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0])
    return x, wx, y, wy, np.full(P, np.inf), e


def test_alpha_inf_laplace_is_w_inf_over_eps():
    """alpha = inf: every non-exact Laplace method is W_inf / eps (Song et al.) and its exact D_inf
    (max of log q_i/q_j, exact for Laplace mixtures) is <= eps; Gaussian is +inf (no Gaussian
    mechanism is eps-Pufferfish for distinct priors)."""
    x, wx, y, wy, a, e = _inf_case()
    vals, _, _ = _program(*(np.stack([v] * K) for v in (x, wx, y, wy, a, e)))
    winf = float(pf.wasserstein_inf(x, y, wx, wy))
    for m in LAP_CHEAP:
        np.testing.assert_allclose(np.asarray(vals["laplace_" + m][0]), winf / e, rtol=1e-12)
    for m in GAU_CHEAP:
        assert np.all(np.isinf(np.asarray(vals["gaussian_" + m][0])))
    b = np.asarray(vals["laplace_song"][0])
    d = np.maximum(np.asarray(pf.renyi_divergence(x, y, alpha=a, noise="laplace", scale=b, weights_i=wx, weights_j=wy)),
                   np.asarray(pf.renyi_divergence(y, x, alpha=a, noise="laplace", scale=b, weights_i=wy, weights_j=wx)))
    assert np.all(d <= e * (1 + 1e-9)), np.c_[e, d]


@pytest.mark.slow
def test_alpha_inf_laplace_exact_below_song_and_sound():
    x, wx, y, wy, a, e = _inf_case()
    ex = np.asarray(_program_exact(*(np.stack([v] * K) for v in (x, wx, y, wy, a, e)))["laplace_exact"][0])
    winf = float(pf.wasserstein_inf(x, y, wx, wy))
    assert np.all(ex <= winf / e * R)
    d = np.maximum(np.asarray(pf.renyi_divergence(x, y, alpha=a, noise="laplace", scale=ex, weights_i=wx, weights_j=wy)),
                   np.asarray(pf.renyi_divergence(y, x, alpha=a, noise="laplace", scale=ex, weights_i=wy, weights_j=wx)))
    assert np.all(d <= e * (1 + 1e-9)), np.c_[e, d]


# ---------------------------------------------------------------------------------------------
# renyi_divergence
# ---------------------------------------------------------------------------------------------


def _renyi(x, wx, y, wy, a, s, noise):
    est, up = pf.renyi_divergence(x, y, alpha=a, noise=noise, scale=s, weights_i=wx, weights_j=wy,
                                  return_upper=True)
    return np.asarray(est), np.asarray(up)


@settings(max_examples=n_examples(3))
@given(prior_pair, st.sampled_from(["laplace", "gaussian"]),
       st.lists(st.one_of(st.floats(0.2, 0.95), st.floats(1.05, 12.0)), min_size=P, max_size=P, unique=True),
       st.lists(st.floats(0.3, 6.0), min_size=P, max_size=P, unique=True), st.floats(0.3, 6.0), alpha_st)
def test_renyi_divergence_monotone_in_alpha_and_scale(pair, noise, alphas, scales, s0, a0):
    xi, wi, yj, wj, shift = pair
    x, y = np.asarray(xi, np.float64), np.asarray(yj, np.float64) + shift
    wx, wy = np.asarray(wi) / np.sum(wi), np.asarray(wj) / np.sum(wj)
    al, sc = np.sort(alphas), np.sort(scales)
    # both calls have P points: one compiled program per noise type
    ea, ua = _renyi(x, wx, y, wy, al, np.full(P, s0), noise)
    es, us = _renyi(x, wx, y, wy, np.full(P, a0), sc, noise)
    for est, up in ((ea, ua), (es, us)):
        assert np.all(np.isfinite(est)) and np.all(est >= 0) and np.all(est <= up), (est, up)
    tol = 1e-9 * (1 + ea[1:])
    assert np.all(ea[1:] >= ea[:-1] - tol), np.c_[al, ea]  # D_alpha non-decreasing in alpha
    tol = 1e-9 * (1 + es[:-1])
    assert np.all(es[1:] <= es[:-1] + tol), np.c_[sc, es]  # more noise: smaller divergence


def _mp_renyi(x, wx, y, wy, a, s, noise):
    """D_alpha(mu_x * p || mu_y * p) by mpmath.quad at 20 digits, split at every atom (and, for the
    Gaussian, wide enough for the tilted integrand centred at alpha x - (alpha - 1) y)."""
    with mp.workdps(20):
        a, s = mp.mpf(a), mp.mpf(s)
        xs, ys = [mp.mpf(float(v)) for v in x], [mp.mpf(float(v)) for v in y]
        wxs, wys = [mp.mpf(float(v)) for v in wx], [mp.mpf(float(v)) for v in wy]
        if noise == "laplace":
            dens = lambda z, c: mp.exp(-abs(z - c) / s) / (2 * s)  # noqa: E731
        else:
            dens = lambda z, c: mp.npdf(z, c, s)  # noqa: E731

        def f(z):
            qi = mp.fsum(w * dens(z, c) for w, c in zip(wxs, xs))
            qj = mp.fsum(w * dens(z, c) for w, c in zip(wys, ys))
            return qi**a * qj ** (1 - a)

        pts = sorted(set(xs + ys))
        if noise == "gaussian":
            lo = min(pts + [a * min(xs) - (a - 1) * max(ys)])
            hi = max(pts + [a * max(xs) - (a - 1) * min(ys)])
            pts = sorted(set(pts + [lo - 12 * s, hi + 12 * s]))
        integral = mp.quad(f, [-mp.inf] + pts + [mp.inf])
        return float(mp.log(integral) / (a - 1))


@settings(max_examples=n_examples(2))
@given(prior_pair, st.sampled_from(["laplace", "gaussian"]),
       st.lists(st.tuples(st.one_of(st.floats(0.2, 0.95), st.floats(1.05, 8.0)), st.floats(0.5, 4.0)),
                min_size=2, max_size=2))
def test_renyi_divergence_matches_mpmath_and_upper_value_is_above(pair, noise, pts):
    """Estimate within 1e-7 relative of mpmath; the reported upper value (the certified side) above it."""
    xi, wi, yj, wj, shift = pair
    x, y = np.asarray(xi, np.float64), np.asarray(yj, np.float64) + shift
    wx, wy = np.asarray(wi) / np.sum(wi), np.asarray(wj) / np.sum(wj)
    a = np.resize([p[0] for p in pts], P)  # P points: the compiled shape of every divergence call here
    s = np.resize([p[1] for p in pts], P)
    est, up = _renyi(x, wx, y, wy, a, s, noise)
    for k in range(len(pts)):
        ref = _mp_renyi(x, wx, y, wy, a[k], s[k], noise)
        assert abs(est[k] - ref) <= 1e-7 * abs(ref) + 1e-10, (a[k], s[k], est[k], ref)
        assert up[k] >= ref * (1 - 1e-12) - 1e-14, (a[k], s[k], up[k], ref)


@settings(max_examples=n_examples(2))
@given(st.floats(0.01, 3.0), st.lists(st.tuples(st.one_of(st.floats(0.2, 0.95), st.floats(1.05, 12.0)),
                                               st.floats(0.3, 5.0)), min_size=P, max_size=P))
def test_renyi_divergence_point_masses_closed_forms(t, pts):
    """Point masses at 0 and t (N equal atoms: same compiled shape): Gaussian alpha t^2 / (2 s^2);
    Laplace log g_alpha(t/s) / (alpha - 1), g_alpha(u) = alpha/(2alpha-1) e^{(alpha-1)u} +
    (alpha-1)/(2alpha-1) e^{-alpha u}, evaluated by mpmath at 40 digits."""
    a, s = (np.array(v, np.float64) for v in zip(*pts))
    x, y, w = np.zeros(N), np.full(N, t), np.full(N, 0.25)
    for noise in ("gaussian", "laplace"):
        est, up = _renyi(x, w, y, w, a, s, noise)
        if noise == "gaussian":
            ref = a * t * t / (2 * s * s)
        else:
            ref = []
            for ak, sk in zip(a, s):
                u, al = mp.mpf(t) / mp.mpf(sk), mp.mpf(ak)
                if abs(2 * al - 1) < mp.mpf("1e-6"):
                    g = mp.exp(-u / 2) * (1 + u / 2)  # alpha = 1/2 limit
                else:
                    g = al / (2 * al - 1) * mp.exp((al - 1) * u) + (al - 1) / (2 * al - 1) * mp.exp(-al * u)
                ref.append(float(mp.log(g) / (al - 1)))
            ref = np.array(ref)
        np.testing.assert_allclose(est, ref, rtol=1e-8, atol=1e-13)
        assert np.all(up >= ref * (1 - 1e-12)), (noise, up, ref)


# ---------------------------------------------------------------------------------------------
# Wasserstein distances
# ---------------------------------------------------------------------------------------------


def _np_quantile_wp(x, wx, y, wy):
    """(W1, W2, W_inf) by integrating |F^-1(u) - G^-1(u)|^p over u in [0, 1] (numpy, piecewise constant)."""
    ox, oy = np.argsort(x), np.argsort(y)
    cx, cy = np.cumsum(wx[ox]) / np.sum(wx), np.cumsum(wy[oy]) / np.sum(wy)
    u = np.unique(np.concatenate([[0.0], cx, cy, [1.0]]))
    mid = 0.5 * (u[:-1] + u[1:])
    qx = x[ox][np.minimum(np.searchsorted(cx, mid), len(x) - 1)]
    qy = y[oy][np.minimum(np.searchsorted(cy, mid), len(y) - 1)]
    du, d = np.diff(u), np.abs(qx - qy)
    return np.sum(du * d), np.sqrt(np.sum(du * d * d)), np.max(np.where(du > 1e-15, d, 0.0))


@settings(max_examples=n_examples(3))
@given(prior_pair, st.floats(-3.0, 3.0))
def test_wasserstein_distances_references_and_ordering(pair, c):
    xi, wi, yj, wj, shift = pair
    x, y = np.asarray(xi, np.float64), np.asarray(yj, np.float64) + shift
    wx, wy = np.asarray(wi, np.float64), np.asarray(wj, np.float64)
    d = {k: float(v) for k, v in pf.wasserstein_distances(x, y, weights_i=wx, weights_j=wy).items()}
    r1, r2, rinf = _np_quantile_wp(x, wx, y, wy)
    np.testing.assert_allclose(d["w1"], scipy.stats.wasserstein_distance(x, y, wx, wy), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose([d["w1"], d["w2"], d["winf"]], [r1, r2, rinf], rtol=1e-10, atol=1e-12)
    assert d["w1"] <= d["w2"] * R + 1e-15 and d["w2"] <= d["winf"] * R + 1e-15
    # symmetric, and a translation by c moves every quantile by |c|
    rev = {k: float(v) for k, v in pf.wasserstein_distances(y, x, weights_i=wy, weights_j=wx).items()}
    np.testing.assert_allclose([rev[k] for k in d], [d[k] for k in d], rtol=1e-12, atol=1e-15)
    sh = {k: float(v) for k, v in pf.wasserstein_distances(x, x + c, weights_i=wx, weights_j=wx).items()}
    np.testing.assert_allclose([sh["w1"], sh["w2"], sh["winf"]], [abs(c)] * 3, rtol=1e-12, atol=1e-12)
    # W_p non-decreasing in p; jit and float32 inputs
    ps = [float(pf.wasserstein_p(x, y, wx, wy, p=p)) for p in (1.0, 1.5, 2.0, 3.0)]
    assert all(p1 <= p2 * R + 1e-15 for p1, p2 in zip(ps, ps[1:])), ps
    j = jax.jit(lambda a, b, u, v: pf.wasserstein_2(a, b, u, v))(x, y, wx, wy)
    np.testing.assert_allclose(float(j), d["w2"], rtol=1e-13)
    d32 = pf.wasserstein_distances(x.astype(np.float32), y.astype(np.float32), weights_i=wx.astype(np.float32),
                                   weights_j=wy.astype(np.float32))
    assert d32["w1"].dtype == jnp.float64
    np.testing.assert_allclose(float(d32["w1"]), d["w1"], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# the audit harness's Renyi -> trade-off conversion (the curve the Pufferfish audit compares with)
# ---------------------------------------------------------------------------------------------

A_CURVE = np.concatenate([[0.0], np.geomspace(1e-6, 1e-2, 5), np.linspace(0.02, 0.98, 17)])


@settings(max_examples=n_examples(3))
@given(st.floats(0.3, 2.0).filter(lambda t: abs(t - 1.0) > 1e-3), st.floats(0.05, 3.0), st.floats(1.01, 2.0))
def test_rdp_tradeoff_is_a_tradeoff_curve_monotone_in_alpha_and_eps(alpha, eps, factor):
    """f_RDP(a) = min{b : D_alpha(Bern(1-b)||Bern(a)) <= eps and D_alpha(Bern(a)||Bern(1-b)) <= eps}:
    the feasible set is convex (D_alpha jointly quasi-convex, van Erven & Harremoes 2014, Thm 13) and
    contains the diagonal b = 1 - a (D = 0), so f is a trade-off curve; D_alpha non-decreasing in
    alpha makes f non-decreasing in alpha, and f is non-increasing in eps (definition)."""
    from jaxdp.audit.harness import rdp_tradeoff

    from ._util import assert_curve

    f = np.array([rdp_tradeoff(v, alpha, eps) for v in A_CURVE])
    assert_curve(A_CURVE, f, tol=1e-9, name=f"f_RDP alpha={alpha} eps={eps}")
    f_eps = np.array([rdp_tradeoff(v, alpha, eps * factor) for v in A_CURVE])
    assert np.all(f_eps <= f + 1e-12)
    a2 = min(alpha * factor, 2.0) if alpha > 1 else alpha ** (1 / factor)  # larger order, same side of 1
    f_a = np.array([rdp_tradeoff(v, a2, eps) for v in A_CURVE])
    assert np.all(f_a >= f - 1e-12), (alpha, a2, np.max(f - f_a))


def test_regression_rdp_tradeoff_large_alpha_does_not_overflow():
    """Regression (fixed: log-domain _binary_renyi).  Found running ``python -m jaxdp.audit.harness`` (full): OverflowError in the Pufferfish Gaussian
    adult setting (alpha = 5, eps = 2) at a = FPR = 0.2511 >= e^-2.  There the b = 0 end has
    D_alpha(Bern(a) || Bern(1)) = +inf (alpha > 1), so the answer is a positive b < 1 - a (0.094 by
    the same bisection in log domain); alpha = 2 (no overflow) at a = 0.7, eps = 0.5 gives 0.081."""
    from jaxdp.audit.harness import rdp_tradeoff

    for a, alpha, eps in ((0.2511, 5.0, 2.0), (0.7, 10.0, 0.5), (0.7, 2.5, 0.5)):
        f = rdp_tradeoff(a, alpha, eps)
        assert 0.0 < f < 1.0 - a
