"""Adversarial property tests for jaxdp.pufferfish divergences and calibration (issue 20, class 4).

Validated domain (docs/soundness.md, "Pufferfish"): atoms anywhere in float64 with spread R up to
1e15 noise scales, duplicated atoms, weights down to 1e-300 relative, alpha in (0, 1) U (1, 1e3]
(and inf for Laplace), both noises.  Independent references, named in each test:

* closed forms (spec section 1): single pair, Gaussian ``alpha d^2 / (2 s^2)``, Laplace
  ``log g_alpha(d/b) / (alpha - 1)``;
* far-apart clusters: the clusters do not interact, so ``I = sum_c wx_c^a wy_c^(1-a) I_c`` with each
  cluster's closed form (interaction terms are below e^-100 at the separations drawn; for Gaussian
  noise that needs a separation above (2 alpha - 1) max d, see the test);
* mpmath quadrature (split at atoms, pair centres and, for Gaussian noise, the points where two
  components of one mixture cross) for small random mixtures;
* the joint-convexity bound on the quantile coupling and data processing (noise-free laws), computed
  here in numpy: the returned value must never cross them.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxdp.pufferfish as pf
from tests.properties._util import n_examples

NOISES = ["laplace", "gaussian"]


def _alpha():
    # near 1 from both sides, moderate, large, below 1
    return st.one_of(st.floats(1e-4, 1e-2).map(lambda e: 1.0 + e), st.floats(1.05, 10.0),
                     st.floats(10.0, 1e3), st.floats(0.05, 0.95), st.floats(1e-4, 1e-2).map(lambda e: 1.0 - e))


def log_pair(d, s, alpha, noise):
    """(alpha - 1) D_alpha of one pair at distance d, in float64 via mpmath (closed forms)."""
    d, s, a = mp.mpf(abs(d)), mp.mpf(s), mp.mpf(alpha)
    if noise == "gaussian":
        return a * (a - 1) * d * d / (2 * s * s)
    t = d / s
    if a == mp.mpf(0.5):  # removable 1/(2a - 1): the Bhattacharyya limit (1 + t/2) e^{-t/2}
        return -t / 2 + mp.log1p(t / 2)
    return mp.log(a / (2 * a - 1) * mp.exp((a - 1) * t) + (a - 1) / (2 * a - 1) * mp.exp(-a * t))


def cluster_ref(wx, wy, ds, s, alpha, noise):
    """D_alpha for non-interacting clusters c with one atom per prior each (distance ds[c])."""
    mp.mp.dps = 40
    a = mp.mpf(alpha)
    terms = [a * mp.log(mp.mpf(p)) + (1 - a) * mp.log(mp.mpf(q)) + log_pair(d, s, alpha, noise)
             for p, q, d in zip(wx, wy, ds) if p > 0]
    m = max(terms)
    return float((m + mp.log(mp.fsum(mp.exp(t - m) for t in terms))) / (a - 1))


def mp_renyi(x, wx, y, wy, alpha, noise, s, dps=20):
    """D_alpha(q_x || q_y) by mpmath quadrature, split at atoms and pair centres with a ladder of
    offsets so every piece is smooth; the two tails to +-inf are integrated as well.

    Gaussian noise: log q has a kink of width ~ s^2 / |c_i - c_j| where two components
    w_i N(c_i, s^2), w_j N(c_j, s^2) cross; at large alpha the integrand can peak there (for
    x = [0, 1895], y = [0, 1898], alpha = 565 the whole mass sits at the crossing z ~ 948, and
    quadrature without that breakpoint returned 2048.47 against the true 2049.1155), so those
    points are breakpoints too."""
    mp.mp.dps = dps
    X = [mp.mpf(float(v)) for v in x]
    Y = [mp.mpf(float(v)) for v in y]
    WX = [mp.mpf(float(v)) / mp.fsum(map(mp.mpf, map(float, wx))) for v in wx]
    WY = [mp.mpf(float(v)) / mp.fsum(map(mp.mpf, map(float, wy))) for v in wy]
    S, a = mp.mpf(s), mp.mpf(alpha)
    if noise == "laplace":
        dens = lambda z, c: mp.exp(-abs(z - c) / S) / (2 * S)  # noqa: E731
    else:
        dens = lambda z, c: mp.exp(-(z - c) ** 2 / (2 * S * S)) / mp.sqrt(2 * mp.pi * S * S)  # noqa: E731

    def f(z):
        p = mp.fsum(w * dens(z, c) for w, c in zip(WX, X))
        q = mp.fsum(w * dens(z, c) for w, c in zip(WY, Y))
        return p ** a * q ** (1 - a) if p > 0 else mp.mpf(0)

    pts = set(X) | set(Y)
    cross = set()
    if noise == "gaussian":
        pts |= {a * xi - (a - 1) * yj for xi in X for yj in Y}
        for C, W in ((X, WX), (Y, WY)):
            for i in range(len(C)):
                for j in range(i + 1, len(C)):
                    if C[i] != C[j] and W[i] > 0 and W[j] > 0:  # w_i N(C_i) = w_j N(C_j) here
                        cross.add((C[i] + C[j]) / 2 + S * S * mp.log(W[i] / W[j]) / (C[j] - C[i]))
    br = sorted({p0 + k * S for p0 in pts for k in (-32, -4, -0.5, 0, 0.5, 4, 32)} | cross)
    tot = mp.quad(f, [-mp.inf, br[0]]) + mp.quad(f, [br[-1], mp.inf])
    tot += mp.fsum(mp.quad(f, [lo, hi]) for lo, hi in zip(br[:-1], br[1:]))
    return float(mp.log(tot) / (a - 1))


def np_quantile_coupling(x, wx, y, wy):
    ox, oy = np.argsort(x), np.argsort(y)
    xs, ys = x[ox], y[oy]
    cx, cy = np.cumsum(wx[ox]) / np.sum(wx), np.cumsum(wy[oy]) / np.sum(wy)
    cx[-1] = cy[-1] = 1.0
    t = np.unique(np.concatenate([cx, cy]))
    mass = np.diff(np.concatenate([[0.0], t]))
    ix = np.minimum(np.searchsorted(cx, t - 1e-15, "left"), len(x) - 1)
    iy = np.minimum(np.searchsorted(cy, t - 1e-15, "left"), len(y) - 1)
    return xs[ix], ys[iy], mass


def coupling_bound(x, wx, y, wy, alpha, noise, s):
    """(1/(alpha-1)) log E_pi e^{(alpha-1) D_pair} on the quantile coupling (numpy + mpmath)."""
    cx, cy, m = np_quantile_coupling(x, wx, y, wy)
    mp.mp.dps = 40
    a = mp.mpf(alpha)
    tot = mp.fsum(mp.mpf(mm) * mp.exp(log_pair(p - q, s, alpha, noise)) for p, q, mm in zip(cx, cy, m) if mm > 0)
    return float(mp.log(tot) / (a - 1))


_U = float(np.finfo(np.float64).eps)


def _check_sound(est, up, ref, *, ref_tol=2 * _U, resolved_tol=1e-6, name=""):
    """``ref_tol``: the reference's own error, relative.  Default: a closed form evaluated at 40
    digits and rounded to float64 (u/2), so the upper value may not be below it by more than that."""
    est, up = float(est), float(up)
    assert up >= ref - ref_tol * abs(ref), f"{name}: upper {up} below the reference {ref}"
    assert est <= up, f"{name}: estimate {est} above the upper value {up}"
    # the default value is the estimate only where resolved: never far below the truth
    assert est >= ref - resolved_tol * (1 + abs(ref)) - 1e-9, f"{name}: estimate {est} below the reference {ref}"


# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("noise", NOISES)
def test_regression_issue20_far_apart_atoms_renyi_not_zero(noise):
    # reproducer 4: clusters 1e5 apart do not interact, so D equals the single pair's closed form
    want = float(log_pair(1.0, 0.3, 1.0001, noise) / mp.mpf(1e-4))
    est, up = pf.renyi_divergence([0.0, 1e5], [1.0, 1e5 + 1], alpha=1.0001, noise=noise, scale=0.3,
                                  return_upper=True)
    assert abs(float(est) - want) <= 1e-6 * want, (float(est), want)
    assert want <= float(up) <= want * (1 + 1e-3), (float(up), want)


def test_regression_issue20_gaussian_mass_at_a_component_crossing():
    # Gaussian, alpha = 735: the second pair's tilt point lies near the first cluster and the whole
    # mass of f sits where q's two components cross (z ~ 1052.12, a kink of width ~5e-4).  The
    # library returned upper = estimate = 1912.5705 (grid 256) and 1913.23929 (grid 4096), below
    # the truth.  Reference: mp_renyi above (split at the crossings) at 20, 30 and 50 digits gives
    # 1913.2396017769665 (50: ...663); a float64 log-domain Riemann sum with step 1e-6 around the
    # peak gives 1913.23960177681.  Hard-coded: the quadrature takes ~10 s.
    ref = 1913.2396017769665
    w = np.array([1.1889486767507282e-05, 0.9999881105132324])
    x, y = np.array([0.0, 2101.4525642031563]), np.array([0.2574773732604899, 2103.987344607577])
    est, up = pf.renyi_divergence(x, y, alpha=735.2716149984275, noise="gaussian", scale=1.0,
                                  weights_i=w, weights_j=w, return_upper=True)
    _check_sound(est, up, ref, ref_tol=1e-13, name="crossing")


@settings(max_examples=n_examples(6))
@given(noise=st.sampled_from(NOISES), alpha=_alpha(), lsep=st.floats(0.0, 10.0), lscale=st.floats(-3, 3),
       d1=st.floats(0.0, 3.0), d2=st.floats(0.0, 3.0), lw=st.floats(-12, np.log10(0.5)),
       loff=st.floats(-6, 6))
def test_far_apart_clusters_match_closed_form(noise, alpha, lsep, lscale, d1, d2, lw, loff):
    # reference: non-interacting clusters, same weights in both priors (closed form per cluster).
    # Separation: Laplace needs ~ log(alpha) + log(1/w) + 100 scales.  Gaussian noise puts the mass
    # of the second cluster's pair term at its tilt point x - (alpha - 1) d, i.e. (alpha - 1) d
    # towards the first cluster; the clusters do not interact only if that point stays nearer its
    # own atoms (alpha d away) than the first cluster: sep > (2 alpha - 1) d, plus a margin of 200
    # scales for the width of the pair term and the weights.  The earlier 3 alpha + 200 failed
    # (thorough profile, alpha = 565, sep = 1895: the test's cluster reference was 1728.37; the
    # truth, mp_renyi at 30 and 50 digits at a similar point, is below it and the library above).
    s = 10.0**lscale
    spread = 3.0 * max(2.0 * alpha - 1.0, 1.0) if noise == "gaussian" else 3.0 * alpha
    sep = 10.0**lsep * (spread + 200.0) * s
    off = np.sign(loff) * 10.0**abs(loff) * s
    w = 10.0**lw
    x = np.array([off, off + sep])
    y = np.array([off + d1 * s, off + sep + d2 * s])
    wt = np.array([w, 1.0 - w])
    # the pair distances the library is given are those of the float64 atoms, not d * s: exact
    # differences of the represented atoms (at 2.75e11 a rounded position moves d by ~3e-5, which
    # is 3e-8 of b = 1e3, far above the tolerance below)
    dd = [float(mp.mpf(float(b_)) - mp.mpf(float(a_))) for a_, b_ in zip(x, y)]
    ref = cluster_ref(wt, wt, dd, s, alpha, noise)
    est, up = pf.renyi_divergence(x, y, alpha=alpha, noise=noise, scale=s, weights_i=wt, weights_j=wt,
                                  return_upper=True)
    _check_sound(est, up, ref, name=f"{noise} sep={sep:g} s={s:g} a={alpha}")


@settings(max_examples=n_examples(6))
@given(alpha=_alpha(), lsep=st.floats(0.0, 6.0), d=st.lists(st.floats(0.0, 2.0), min_size=2, max_size=2),
       wx=st.floats(1e-6, 1 - 1e-6), wy=st.floats(1e-6, 1 - 1e-6))
def test_far_apart_clusters_mismatched_weights_laplace(alpha, lsep, d, wx, wy):
    # weights differ between the priors: the quantile coupling crosses clusters, so the coupling
    # guard is loose and the quadrature itself must find the mass (reference: cluster closed form)
    sep = 10.0**lsep * 300.0
    x, y = np.array([0.0, sep]), np.array([d[0], sep + d[1]])
    dd = [d[0], float(mp.mpf(float(y[1])) - mp.mpf(float(x[1])))]  # represented distances (see above)
    ref = cluster_ref([wx, 1 - wx], [wy, 1 - wy], dd, 1.0, alpha, "laplace")
    est, up = pf.renyi_divergence(x, y, alpha=alpha, noise="laplace", scale=1.0, weights_i=[wx, 1 - wx],
                                  weights_j=[wy, 1 - wy], return_upper=True)
    _check_sound(est, up, ref, name=f"sep={sep:g}")
    # resolved where the panels meet the Laplace criterion 2 alpha h / b <= 60: the upper value is
    # then tight, not only sound.  The windows widen with log(R/b), so at sep = 3e8 and alpha = 29
    # (thorough profile: d = [1, 0], wx = 0.5, wy = 0.25) some panels do not, are bounded by
    # width x max f (sound), and the upper value is 1.6e-4 relative above the cluster formula; the
    # same at separation 300 is 4.7e-5 above, unchanged by this session's library changes.  Measured
    # at sep = 3e8 over 6 draws each: alpha 10 <= 6e-7, alpha 15 <= 7e-6, alpha 20 <= 3e-5.
    if alpha <= 10:
        assert float(up) <= ref + 1e-4 * (1 + abs(ref)) + 1e-6 / abs(alpha - 1), (float(up), ref)


@settings(max_examples=n_examples(8))
@given(noise=st.sampled_from(NOISES), alpha=st.one_of(_alpha(), st.just(np.inf)), ld=st.floats(-6, 2),
       loff=st.floats(-12, 12))
def test_single_pair_closed_form_anywhere(noise, alpha, ld, loff):
    # reference: the pair closed forms; the atoms may sit far from 0 (translation invariance)
    if noise == "gaussian" and np.isinf(alpha):
        alpha = 2.0
    d = 10.0**ld
    off = np.sign(loff) * 10.0**abs(loff)
    x, y = np.array([off]), np.array([off + d])
    dd = float(mp.mpf(float(y[0])) - mp.mpf(float(x[0])))  # the distance represented (exact difference)
    if noise == "laplace" and alpha == 0.5:
        # the Laplace closed form has a removable 1/(2 alpha - 1); at alpha = 1/2 it is
        # -2 log of the Bhattacharyya coefficient (1 + d/2) e^{-d/2} (found by the thorough profile)
        ref = float(mp.mpf(dd) - 2 * mp.log1p(mp.mpf(dd) / 2))
    else:
        ref = dd if np.isinf(alpha) else float(log_pair(dd, 1.0, alpha, noise) / (mp.mpf(alpha) - 1))
    est, up = pf.renyi_divergence(x, y, alpha=alpha, noise=noise, scale=1.0, return_upper=True)
    _check_sound(est, up, ref, name=f"{noise} d={dd:g} off={off:g}")


@settings(max_examples=n_examples(2, 40))
@given(noise=st.sampled_from(NOISES), alpha=st.sampled_from([0.3, 1.0 + 1e-3, 2.5, 12.0]),
       seed=st.integers(0, 2**31 - 1))
def test_duplicates_and_tiny_weights_vs_mpmath(noise, alpha, seed):
    # reference: mpmath quadrature; atoms on a small integer lattice (duplicates), one tiny weight
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 3, 3).astype(float), rng.integers(0, 3, 3).astype(float)
    wx, wy = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    wx[rng.integers(3)] = 1e-10
    s = float(rng.uniform(0.5, 2.0))
    ref = mp_renyi(x, wx, y, wy, alpha, noise, s)
    est, up = pf.renyi_divergence(x, y, alpha=alpha, noise=noise, scale=s, weights_i=wx, weights_j=wy,
                                  return_upper=True)
    # ref_tol: 20-digit quadrature of I (~1e-18 relative), divided by |alpha - 1| >= 1e-3, plus the
    # rounding to float64: 1e-12 relative is far above that and far below any real under-report
    _check_sound(est, up, ref, ref_tol=1e-12, resolved_tol=1e-6, name=f"{noise} {x} {y}")


@settings(max_examples=n_examples(6))
@given(noise=st.sampled_from(NOISES), alpha=_alpha(), seed=st.integers(0, 2**31 - 1), lspread=st.floats(-1, 8))
def test_never_crosses_coupling_and_data_processing_bounds(noise, alpha, seed, lspread):
    # references: joint convexity on the quantile coupling, and D(noisy) <= D(noise-free laws)
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 10.0**lspread, 4)
    y = x + rng.normal(0, 1.0, 4)
    wx, wy = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    cb = coupling_bound(x, wx, y, wy, alpha, noise, 1.0)
    est, up = pf.renyi_divergence(x, y, alpha=alpha, noise=noise, scale=1.0, weights_i=wx, weights_j=wy,
                                  return_upper=True)
    # The library adds to each guard a bound on its own float64 rounding (so that the guard is
    # never below the truth, docs/soundness.md): 32u (1 + size + log n) / |alpha - 1| with size the
    # largest |log mass| + 2 |(alpha - 1) D_pair| (coupling) or (|alpha| + |1 - alpha|) max |log w|
    # (data processing).  The returned value may exceed the exact guards by that allowance only.
    cx, cy, m = np_quantile_coupling(x, wx, y, wy)
    lp = [abs(float(log_pair(p - q, 1.0, alpha, noise))) for p, q in zip(cx, cy)]
    size_cb = max(abs(np.log(mm)) + 2 * v for mm, v in zip(m, lp) if mm > 0)
    size_dp = (abs(alpha) + abs(1 - alpha)) * max(np.max(np.abs(np.log(wx))), np.max(np.abs(np.log(wy))))
    allow = lambda size: 64 * _U * (1 + size + np.log(8)) / abs(alpha - 1)  # noqa: E731  (2x the library's)
    assert 0.0 <= float(est) <= float(up) <= cb * (1 + 1e-12) + allow(size_cb), (float(est), float(up), cb)
    dp = float(pf.renyi_discrete(x, wx, y, wy, alpha))
    assert float(up) <= dp * (1 + 1e-12) + allow(size_dp)


@pytest.mark.acceptance  # README suite budget (issue 18): property check over many compiled shapes, 15-40 s of XLA
@settings(max_examples=n_examples(2, 20))
@given(noise=st.sampled_from(NOISES), alpha=st.sampled_from([0.5, 2.0, 8.0]), eps=st.sampled_from([0.1, 1.0]),
       lsep=st.floats(0.0, 6.0))
def test_exact_calibration_is_feasible_by_the_public_divergence(noise, alpha, eps, lsep):
    # reference: the public renyi_divergence upper value at the calibrated scale, both directions
    sep = 10.0**lsep * 50.0
    x, y = np.array([0.0, 1.0, sep]), np.array([0.5, sep, sep + 2.0])
    cal = pf.calibrate_laplace if noise == "laplace" else pf.calibrate_gaussian
    s = float(cal(x, y, alpha=alpha, epsilon=eps, method="exact"))
    assert np.isfinite(s) and s > 0
    for a_, b_ in ((x, y), (y, x)):
        _, up = pf.renyi_divergence(a_, b_, alpha=alpha, noise=noise, scale=s, return_upper=True)
        assert float(up) <= eps * (1 + 1e-12), (noise, s, float(up), eps)
