"""Tests of the exact single-epoch shuffled-Gaussian law (jaxdp.mechanisms.shuffled).

Expected values and their provenance:
* REF: ``tests/shuffle/reference_law.py`` (Gil-Pelaez inversion with Gauss-Legendre panels, CF of
  the lognormal by scipy adaptive quadrature on the rotated Laplace contour; no FFT / grid /
  interpolation), run with scipy 1.x in double precision; rows are
  (x in U units, P(U > x), Q(U <= x), Q(U > x)), U = sqrt(M) (L - 1).
* spec shuffle.md section 6: exact TV at sigma = 1 (6 digits), Monte Carlo TV (+- 1 s.e.),
  exact integer-order Renyi divergences at sigma = 0.8, M = 1000.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxdp.mechanisms.shuffled import ShuffledGaussian, tradeoff, tradeoff_ends, tradeoff_reverse, tv_gap
from jaxdp.mechanisms import shuffled

# REF values (reference_law.py output).
REF = {
    (0.5, 1e3): [  # sigma = 0.5 is in the low-noise band of M = 1e3 (no closed form applies)
        (-3.0, 0.64612346322674, 0.2913105221872889, 0.7086894778127111),
        (-1.0, 0.48159567211751575, 0.4453696377377865, 0.5546303622622135),
        (0.0, 0.4069684741492392, 0.5187976701460046, 0.48120232985399536),
        (1.0, 0.34033741599695255, 0.5864597144263357, 0.4135402855736643),
        (3.0, 0.23325981160570963, 0.7001267309431154, 0.2998732690568846),
        (10.0, 0.06236036837521819, 0.9018032118133771, 0.09819678818662292),
    ],
    (1.0, 1e9): [
        (-2.0, 0.9364690698910882, 0.06352576703393886, 0.9364742329660611),
        (-1.0, 0.7772266595682026, 0.22276097878471618, 0.7772390212152838),
        (0.0, 0.4999869956137547, 0.4999964673658074, 0.5000035326341926),
        (1.0, 0.22276521314240927, 0.7772224248527009, 0.22277757514729912),
        (2.0, 0.06354171433290856, 0.9364531213964333, 0.06354687860356667),
        (5.0, 6.838760383787168e-05, 0.999931600917878, 6.839908212197265e-05),
    ],
    (1.0, 100.0): [
        (-2.0, 0.9567539872916803, 0.03297925529228085, 0.9670207447077191),
        (-1.0, 0.7730553772701652, 0.19062793997992156, 0.8093720600200784),
        (0.0, 0.46432029557203225, 0.4842633498533595, 0.5157366501466405),
        (1.0, 0.2055402164329535, 0.754986336020343, 0.24501366397965696),
        (2.0, 0.07182322443847444, 0.9078136660213458, 0.09218633397865417),
        (5.0, 0.0018416775000589247, 0.997060832327289, 0.002939167672710963),
    ],
    (2.0, 5.0): [  # M < 10 (integer M = 2 also matches a direct scipy convolution to 1e-10)
        (-0.6, 0.8892442028683523, 0.0728176532578455, 0.9271823467421545),
        (-0.2, 0.6097293745600398, 0.30422300377521516, 0.6957769962247848),
        (0.0, 0.4509362721021941, 0.4558352520709556, 0.5441647479290443),
        (0.2, 0.3123626643212609, 0.6003976094620406, 0.39960239053795943),
        (0.6, 0.12841322893306883, 0.8153997395972297, 0.18460026040277033),
        (1.5, 0.011249747819156775, 0.9794719164501691, 0.020528083549830933),
    ],
    (0.8, 1e3): [
        (-3.0, 0.9511548174230318, 0.04320338040107319, 0.9567966195989268),
        (-1.0, 0.6853191944608179, 0.29371480787876414, 0.7062851921212359),
        (0.0, 0.47697377299966104, 0.49879749327692874, 0.5012025067230712),
        (1.0, 0.2850070075814024, 0.6936896533972003, 0.30631034660279965),
        (3.0, 0.06710984079039806, 0.9241610320342746, 0.07583896796572542),
        (8.0, 0.0006936438522460175, 0.9990963465864455, 0.0009036534135544727),
    ],
}

# REF_SMALL: ``python tests/shuffle/reference_law.py small`` (LaplaceReference: de Hoog inversion of
# the Laplace transform, mpmath, 20 digits; matches a direct convolution at M = 2 to 1e-16).  Small M
# and small sigma, where the law is spread over many orders of magnitude (issue 3: these were NaN,
# or -- (0.5, 50), (1, 5) -- off by up to 2e-4 beyond the Fourier table).  Thresholds t = c M,
# c in (0.1, 0.5, 1, 2, 10, 100); rows as in REF.  (1, 2.5) settles the discrepancy the Gil-Pelaez
# reference showed there: that reference, not the law, was off (by 2e-4).
REF_SMALL = {
    (0.3, 1.5): [
        (-1.1022703842524304, 0.20136165473627832, 0.011297134298086249, 0.9887028657019138),
        (-0.6123724356957946, 0.0856634209082745, 0.03785208700700872, 0.9621479129929913),
        (0.0, 0.05553364528259108, 0.059162008316102334, 0.9408379916838977),
        (1.2247448713915892, 0.03461140892935832, 0.08867742765836019, 0.9113225723416398),
        (11.022703842524303, 0.009920401571680837, 0.19518080052668427, 0.8048191994733157),
        (121.24974226776733, 0.0011455081375785214, 0.4346986265279554, 0.5653013734720447),
    ],
    (0.3, 10.0): [
        (-2.846049894151541, 0.4670775150069333, 0.02015512845402478, 0.9798448715459752),
        (-1.5811388300841895, 0.1706040597882863, 0.08809892347960174, 0.9119010765203983),
        (0.0, 0.09932276406543494, 0.1382297987921589, 0.8617702012078411),
        (3.162277660168379, 0.05501493931944357, 0.20029306850001966, 0.7997069314999803),
        (28.46049894151541, 0.011891725097784578, 0.37881253556096506, 0.6211874644390349),
        (313.06548835666956, 0.0009306195334856104, 0.65617621472436, 0.34382378527563995),
    ],
    (0.5, 2.0): [
        (-1.2727922061357855, 0.7225673741549008, 0.013588538729773232, 0.9864114612702267),
        (-0.7071067811865475, 0.32885255332838637, 0.11147461342209296, 0.888525386577907),
        (0.0, 0.19127231079560492, 0.20897707777767746, 0.7910229222223225),
        (1.414213562373095, 0.09810304905677969, 0.33972412438030714, 0.6602758756196929),
        (12.727922061357855, 0.013165010254311382, 0.6784607736948723, 0.32153922630512766),
        (140.0071426749364, 0.00026586024140751174, 0.9500245659676465, 0.049975434032353494),
    ],
    (0.5, 50.0): [
        (-6.363961030678928, 0.9999998277016348, 1.6189816666256435e-08, 0.9999999838101833),
        (-3.5355339059327373, 0.8272408772736138, 0.06975740780763406, 0.9302425921923659),
        (0.0, 0.3256703128407483, 0.43288224125203634, 0.5671177587479637),
        (7.071067811865475, 0.06544475961578633, 0.7804999321505225, 0.2195000678494775),
        (63.63961030678927, 0.0012711055914468306, 0.9785743463793045, 0.021425653620695484),
        (700.035713374682, 3.7293915059466443e-06, 0.9994264743501446, 0.0005735256498553554),
    ],
    (1.0, 1.5): [
        (-1.1022703842524304, 0.9896562382585719, 0.0008039061343311361, 0.9991960938656689),
        (-0.6123724356957946, 0.648723919745094, 0.10891070064410849, 0.8910892993558915),
        (0.0, 0.3303736304147583, 0.3379915682060561, 0.6620084317939439),
        (1.2247448713915892, 0.10611338617153998, 0.6488799312271575, 0.3511200687728425),
        (11.022703842524303, 0.001157984259376188, 0.9843844108713805, 0.01561558912861949),
        (121.24974226776733, 2.7352056730656216e-08, 0.9999967052930111, 3.294706988898888e-06),
    ],
    (1.0, 2.0): [
        (-1.2727922061357855, 0.9968719044289555, 0.0002560763038790313, 0.999743923696121),
        (-0.7071067811865475, 0.7015907012683977, 0.09963062146833611, 0.9003693785316639),
        (0.0, 0.3449056212292373, 0.3573321535772008, 0.6426678464227993),
        (1.414213562373095, 0.09633756141185612, 0.6999787736617709, 0.30002122633822914),
        (12.727922061357855, 0.0005979699648858139, 0.9921425277459541, 0.007857472254045872),
        (140.0071426749364, 6.908382865766782e-09, 0.9999991754778488, 8.245221512215295e-07),
    ],
    (1.0, 5.0): [
        (-2.0124611797498106, 0.9999966788839041, 3.0330621822451193e-07, 0.9999996966937817),
        (-1.118033988749895, 0.8649084888833176, 0.05399856528249767, 0.9460014347175023),
        (0.0, 0.38554051671337997, 0.40883058424922925, 0.5911694157507708),
        (2.23606797749979, 0.056073689698795226, 0.8508194053673062, 0.14918059463269384),
        (20.124611797498105, 3.96636844093301e-05, 0.9995084445826488, 0.0004915554173512415),
        (221.37072977247917, 4.9849790961786766e-11, 0.9999999941922078, 5.807792247125576e-09),
    ],
    (1.0, 2.5): [
        (-1.4230249470757705, 0.9990297684710512, 8.216056783564026e-05, 0.9999178394321644),
        (-0.7905694150420948, 0.7429114030682723, 0.09035785029243752, 0.9096421497075625),
        (0.0, 0.3556007025152145, 0.37132986749415986, 0.6286701325058401),
        (1.5811388300841895, 0.08753777878183666, 0.7389372950301837, 0.2610627049698163),
        (14.230249470757705, 0.00033638046630479757, 0.9956556869686313, 0.0043443130313687295),
        (156.53274417833478, 2.2446985381563422e-09, 0.9999997338403921, 2.6615960790898896e-07),
    ],
}

SF_TOL = 1e-10  # stated accuracy of the survival functions


def assert_bracketed(lo, up, want, atol):
    """The reference lies in the curve's certified ends [lo, up] (to the reference's own rounding,
    1e-12), and their midpoint, the computed value, is within ``atol`` of it."""
    lo, up = np.asarray(lo), np.asarray(up)
    assert np.all(lo <= want + 1e-12), np.max(lo - want)
    assert np.all(up >= want - 1e-12), np.max(want - up)
    np.testing.assert_allclose(0.5 * (lo + up), want, rtol=0, atol=atol)
CURVE_TOL = 1e-6  # required accuracy of the trade-off curve and the gap


@functools.partial(jax.jit, static_argnames="direction")
def _sf(sigma, m, ell, direction):
    # sigma and M are arguments, not constants closed over: one program per direction for every key
    return ShuffledGaussian(noise_multiplier=sigma, num_rounds=m).privacy_loss_sf(ell, direction)


@pytest.fixture(scope="module")
def mech_sf():
    cache = {}

    def get(sigma, m, ell, direction="remove"):
        key = (sigma, m, tuple(np.asarray(ell).ravel()), direction)
        if key not in cache:
            out = _sf(jnp.float64(sigma), jnp.float64(m), jnp.asarray(ell), direction)
            cache[key] = tuple(np.asarray(v) for v in out)
        return cache[key]

    return get


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
@pytest.mark.parametrize("key", sorted(REF))
def test_sf_against_reference(key, mech_sf):
    sigma, m = key
    rows = np.array(REF[key])
    x, p_sf, q_cdf, q_sf = rows.T
    ell = np.log1p(x / math.sqrt(m))
    a, b = mech_sf(sigma, m, ell, "remove")  # (Q(ell > x), P(ell > x))
    np.testing.assert_allclose(a, q_sf, rtol=0, atol=SF_TOL)
    np.testing.assert_allclose(b, p_sf, rtol=0, atol=SF_TOL)
    # add direction: A = P(-ell > -ell0) = P(U < x), B = Q(U < x)
    a2, b2 = mech_sf(sigma, m, -ell, "add")
    np.testing.assert_allclose(a2, 1.0 - p_sf, rtol=0, atol=SF_TOL)
    np.testing.assert_allclose(b2, q_cdf, rtol=0, atol=SF_TOL)


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
@pytest.mark.parametrize("key", sorted(REF))
def test_curve_against_reference(key):
    sigma, m = key
    rows = np.array(REF[key])
    x, p_sf, q_cdf, q_sf = rows.T
    # a = P(U > x) -> f = Q(U <= x); reverse: a = Q(U <= x) -> P(U > x)
    assert_bracketed(*tradeoff_ends(jnp.asarray(p_sf), sigma, m), q_cdf, CURVE_TOL * 1e-2)
    assert_bracketed(*tradeoff_ends(jnp.asarray(q_cdf), sigma, m, reverse=True), p_sf, CURVE_TOL * 1e-2)
    tv_ref = q_sf[x == 0.0][0] - p_sf[x == 0.0][0]
    np.testing.assert_allclose(float(tv_gap(sigma, m)), tv_ref, rtol=0, atol=CURVE_TOL * 1e-2)


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
def test_small_m_low_noise_against_laplace_reference():
    """f (both directions) and the gap at the 8 small-M points, one compiled call: each reference
    lies between the curve's certified ends, whose midpoint (the computed value) is within 1e-8 of
    it (measured <= 8e-10); the lower end, with its a priori allowance err (1 + |slope|), sits up to
    2.4e-5 below it where the slope is steep (low noise, small a).  The mechanism's survival
    functions: <= 2e-11, checked when the points were added."""
    keys = sorted(REF_SMALL)
    rows = np.array([REF_SMALL[k] for k in keys])  # (8, 6, 4)
    sig = jnp.array([k[0] for k in keys])
    ms = jnp.array([k[1] for k in keys])
    p_sf, q_cdf, q_sf = rows[..., 1], rows[..., 2], rows[..., 3]

    @jax.jit
    def curve_and_gap(s, m, a, a_rev):
        return tradeoff_ends(a, s, m), tradeoff_ends(a_rev, s, m, reverse=True), tv_gap(s, m)

    (lo, up), (lo_r, up_r), tv = jax.vmap(curve_and_gap)(sig, ms, jnp.asarray(p_sf), jnp.asarray(q_cdf))
    assert_bracketed(lo, up, q_cdf, CURVE_TOL * 1e-2)
    # the reverse curve's upper end is an upper bound (before 2026-12-05 both ends were the deducted
    # value, and the truth lay up to 2.6e-8 above it at sigma = 1, M = 10)
    assert_bracketed(lo_r, up_r, p_sf, CURVE_TOL * 1e-2)
    tv_ref = q_sf[:, 2] - p_sf[:, 2]  # the threshold t = M, i.e. L = 1
    assert np.all(rows[:, 2, 0] == 0.0)
    np.testing.assert_allclose(np.asarray(tv), tv_ref, rtol=0, atol=CURVE_TOL * 1e-2)


def test_exact_tv_spec():
    # spec section 6, exact TV at sigma = 1 (6 digits given)
    tv = np.asarray(tv_gap(jnp.array([1.0, 1.0]), jnp.array([100.0, 1e4])))
    np.testing.assert_allclose(tv, [0.051416, 0.005228], atol=1e-6)


def test_monte_carlo_tv_spec():
    # spec section 6 Monte Carlo table, +- 1 s.e.; accept 3 s.e.
    ms = jnp.array([100.0, 1000.0, 2700.0, 10000.0])
    tv = np.asarray(tv_gap(jnp.ones(4), ms))
    mc = np.array([0.05148, 0.01644, 0.01006, 0.00527])
    se = np.array([0.0002, 0.00006, 0.00004, 0.00003])
    assert np.all(np.abs(tv - mc) <= 3 * se), (tv, mc)
    # chi^2 bound TV <= sqrt(v/M)/2 and the linear-test lower bound 2 Phi(1/(2 sigma sqrt M)) - 1
    v = math.expm1(1.0)
    assert np.all(tv <= 0.5 * np.sqrt(v / np.asarray(ms)))
    assert np.all(tv >= 2 * stats.norm.cdf(0.5 / np.sqrt(np.asarray(ms))) - 1)


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
@pytest.mark.parametrize("sigma", [0.3, 1.0, 5.0])
def test_m_equal_one_is_gaussian(sigma):
    a = jnp.linspace(0.0, 1.0, 101)
    g = stats.norm.cdf(stats.norm.ppf(1 - np.asarray(a)) - 1 / sigma)  # G_{1/sigma}
    np.testing.assert_allclose(np.asarray(tradeoff(a, sigma, 1.0)), g, atol=1e-9)
    np.testing.assert_allclose(np.asarray(tradeoff_reverse(a, sigma, 1.0)), g, atol=1e-9)
    mech = ShuffledGaussian(noise_multiplier=sigma, num_rounds=1.0)
    ell = jnp.linspace(-3, 3, 7)
    a_sf, b_sf = mech.privacy_loss_sf(ell, "remove")
    mu = 1 / sigma
    np.testing.assert_allclose(a_sf, stats.norm.sf(ell, mu * mu / 2, mu), atol=1e-12)
    np.testing.assert_allclose(b_sf, stats.norm.sf(ell, -mu * mu / 2, mu), atol=1e-12)


def test_renyi_oracle():
    # spec section 6: sigma = 0.8, M = 1000, D_k(Q||P) = log E_P[L^k] / (k - 1)
    from jaxdp.mechanisms import _shuffled_law as sl

    law = sl.grid_law(jnp.float64(0.8), jnp.float64(1000.0), n_coarse=2**14, upsample=4, tail=1e-13, nz=640)
    mass = np.diff(np.asarray(law.cdf_p))
    xc = float(law.lo) + float(law.h) * (np.arange(mass.size) + 0.5)
    L = 1.0 + xc / math.sqrt(1000.0)
    d2 = math.log(math.fsum(mass * L**2))
    d3 = math.log(math.fsum(mass * L**3)) / 2
    # spec values are given to 7 decimals (truncated); D_2 also has the closed form log(1 + v/M)
    # measured: 4.9e-8 above the closed form at this (cheap, n_coarse = 2^14, upsample 4) table --
    # the second moment weighs the far upper tail, where the table hands over to the one-big-jump
    # approximation; documented in docs/shuffle_exact.md as the known tail limitation
    assert abs(d2 - 0.0037636) < 1e-7 and abs(d2 - math.log1p(math.expm1(1 / 0.64) / 1000)) < 1e-7
    # measured 0.0056720143 (1.1e-7 above the spec's truncated 0.0056719): the same far-tail
    # limitation as D_2 above, documented; the spec's own digits allow [0.0056719, 0.0056720)
    assert abs(d3 - 0.0056719) < 2e-7


@pytest.mark.acceptance  # README suite budget (issue 18): gradients against finite differences: forward, reverse and batched programs, 10-20 s of XLA
def test_gradients_match_finite_differences():
    f = jax.jit(lambda s, m: tv_gap(s, m))
    for s0, m0 in [(1.0, 1000.0), (0.7, 3.7e4), (2.0, 7.5), (1.0, 2.0)]:  # (1, 2): Laplace method
        gs, gm = jax.grad(f, argnums=(0, 1))(s0, m0)
        hs, hm = 1e-4 * s0, 1e-4 * m0
        fds = (f(s0 + hs, m0) - f(s0 - hs, m0)) / (2 * hs)
        fdm = (f(s0, m0 + hm) - f(s0, m0 - hm)) / (2 * hm)
        assert np.isfinite(gs) and np.isfinite(gm)
        np.testing.assert_allclose(gs, fds, rtol=1e-4)
        np.testing.assert_allclose(gm, fdm, rtol=1e-4)


@pytest.mark.acceptance
def test_sf_gradient_and_jit_vmap():
    def q_tail(s, m):
        mech = ShuffledGaussian(noise_multiplier=s, num_rounds=m)
        return mech.privacy_loss_sf(jnp.array([0.05]), "remove")[0][0]

    g = jax.jit(q_tail)
    gs, gm = jax.grad(g, argnums=(0, 1))(1.0, 500.0)
    fds = (g(1.0001, 500.0) - g(0.9999, 500.0)) / 2e-4
    fdm = (g(1.0, 500.05) - g(1.0, 499.95)) / 0.1
    np.testing.assert_allclose([gs, gm], [fds, fdm], rtol=1e-4)
    # vmap over (sigma, M) equals the loop; jit equals eager
    sig = jnp.array([0.9, 1.3])
    ms = jnp.array([300.0, 2e5])
    a = jnp.array([0.1, 0.5])
    vm = jax.vmap(lambda s, m: tradeoff(a, s, m))(sig, ms)
    for i in range(2):
        np.testing.assert_allclose(vm[i], tradeoff(a, float(sig[i]), float(ms[i])), atol=1e-12)


def test_symmetry_and_bounds():
    a = jnp.linspace(0, 1, 201)
    f = np.asarray(tradeoff(a, 1.0, 50.0))
    assert f[0] == 1.0 and f[-1] == 0.0
    assert np.all(np.diff(f) <= 1e-12)  # nonincreasing
    assert np.all(f <= 1 - np.asarray(a) + 1e-15)
    tv = float(tv_gap(1.0, 50.0))
    assert abs(np.max(1 - np.asarray(a) - f) - tv) < 1e-4  # sup over a coarse grid of a
    assert np.max(1 - np.asarray(a) - f) <= tv + 1e-9


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
def test_privacy_loss_range_covers_tail():
    for direction in ("remove", "add"):
        mech = ShuffledGaussian(noise_multiplier=0.8, num_rounds=1000.0)
        lo, hi = mech.privacy_loss_range(direction, 1e-12)
        a_lo, _ = mech.privacy_loss_sf(jnp.array([lo, hi]), direction)
        assert 1 - a_lo[0] <= 1e-10 and a_lo[1] <= 1e-10


def test_bad_input():
    with pytest.raises(ValueError, match="noise_multiplier"):
        ShuffledGaussian(noise_multiplier=-1.0, num_rounds=10.0)
    with pytest.raises(ValueError, match="num_rounds"):
        ShuffledGaussian(noise_multiplier=1.0, num_rounds=0.5)
    with pytest.raises(ValueError, match="direction"):
        ShuffledGaussian(noise_multiplier=1.0, num_rounds=10.0).privacy_loss_sf(0.0, "both")
    with pytest.raises(ValueError, match="M"):
        tv_gap(1.0, 0.0)
    out = jax.jit(lambda s: tv_gap(s, 10.0))(-1.0)
    assert np.isnan(out)
    # outside the designed domain (sigma < 0.3 with small M): NaN, never a plausible number
    assert np.isnan(float(tv_gap(0.2, 50.0)))
    # sigma = 0.3, M = 3000: beyond its Fourier table the one-big-jump hand-over would be off by
    # ~4e-5 in f (measured against the Laplace reference): NaN there, finite inside the table
    f = np.asarray(tradeoff(jnp.array([1e-4, 0.01, 0.1, 0.3, 0.5, 0.9]), 0.3, 3000.0))
    assert np.isnan(f[0]) and np.all(np.isfinite(f[1:]))


# ------------------------------------------------------------------ the gap by one contour integral


def _gap_refs():
    """(sigma, M, gap) from the mpmath references above: the rows at x = 0 (L = 1), q_sf - p_sf."""
    out = []
    for table in (REF, REF_SMALL):
        for (sigma, m), rows in table.items():
            for x, p_sf, q_cdf, q_sf in rows:
                if x == 0.0:
                    out.append((sigma, m, q_sf - p_sf))
    return out


def test_contour_gap_against_mpmath_references():
    # REF: Gil-Pelaez + Gauss-Legendre (mpmath); REF_SMALL: de Hoog inversion (mpmath, 20 digits).
    refs = _gap_refs()
    assert len(refs) >= 10
    sig, ms, want = (np.array(c) for c in zip(*refs))
    got = np.asarray(tv_gap(sig, ms))  # method="contour" (default)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
def test_contour_gap_agrees_with_the_tabulated_law():
    # Two independent numerical routes to TV: the damped-FFT table read at L = 1 (method="table")
    # and the single line integral / Talbot inversion (method="contour").  Non-integer M included:
    # a lost 2 pi in log phi_Y only shows there (the table was wrong at sigma = 38, M = 2.92).
    sig = np.array([0.3, 0.5, 0.7, 1.0, 2.0, 8.0, 20.0, 38.46, 50.0])
    ms = np.array([2.0, 2.92, 7.5, 19.38, 1e3, 3.3e5, 1e10])
    s, m = (a.ravel() for a in np.meshgrid(sig, ms, indexing="ij"))
    fast = np.asarray(tv_gap(s, m))
    table = np.asarray(tv_gap(s, m, method="table"))
    assert np.all(np.isfinite(fast)) and np.all(np.isfinite(table))
    np.testing.assert_allclose(fast, table, rtol=0, atol=2e-8)  # worst measured on 2,400 points: 2.7e-9


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
def test_narrow_law_non_integer_m_regression():
    # sigma = 38.46, M = 2.92: the tabulated cdf had negative cell masses and P(U <= 0) = 0.336
    # (the log1p series was taken near u = 2 pi, where phi_Y returns to ~1).  Reference: the CLT,
    # exact as sigma -> infinity (gap = 2 Phi(mu/2) - 1, mu = sqrt((e^{1/sigma^2} - 1) / M)); at this
    # sigma its relative error is ~1e-4 (it matches the exact gap at the integer M = 3 to 1e-4).
    from jaxdp.mechanisms import _shuffled_law as law

    sigma, m = 38.46, 2.92
    tab = law.grid_law(sigma, m, n_coarse=2**11, upsample=16, tail=1e-10, nz=320)
    masses = np.diff(np.asarray(tab.cdf_p)[: int(tab.n_used)])
    assert masses.min() > -1e-12
    mu = math.sqrt(math.expm1(1.0 / sigma**2) / m)
    clt = 2.0 * stats.norm.cdf(mu / 2.0) - 1.0
    for method in ("contour", "table"):
        assert abs(float(tv_gap(sigma, m, method=method)) / clt - 1.0) < 1e-3
    # the curve at sigma = 50 (was NaN for M >= 100): close to G_mu, mu = sqrt(v / M)
    a = np.array([0.05, 0.3, 0.5, 0.9])
    for m in (100.0, 1e6):
        mu = math.sqrt(math.expm1(1.0 / 2500.0) / m)
        g = stats.norm.cdf(stats.norm.ppf(1 - a) - mu)
        f = np.asarray(tradeoff(jnp.asarray(a), 50.0, m))
        np.testing.assert_allclose(f, g, rtol=0, atol=1e-5)


@pytest.mark.acceptance  # README suite budget (issue 18): gradients against finite differences: forward, reverse and batched programs, 10-20 s of XLA
@pytest.mark.parametrize("sigma,m", [(1.0, 1e4), (0.6, 20.0), (4.0, 3.0), (0.8, 1e8)])
def test_contour_gap_gradients_match_finite_differences(sigma, m):
    # line integral at (1, 1e4), (4, 3), (0.8, 1e8); Talbot at (0.6, 20); central differences, h = 1e-5 rel.
    g_s, g_m = jax.grad(lambda s, mm: tv_gap(s, mm), argnums=(0, 1))(sigma, m)
    hs, hm = 1e-5 * sigma, 1e-5 * m
    fd_s = (float(tv_gap(sigma + hs, m)) - float(tv_gap(sigma - hs, m))) / (2 * hs)
    fd_m = (float(tv_gap(sigma, m + hm)) - float(tv_gap(sigma, m - hm))) / (2 * hm)
    assert abs(float(g_s) / fd_s - 1.0) < 1e-4, (float(g_s), fd_s)
    assert abs(float(g_m) / fd_m - 1.0) < 1e-4, (float(g_m), fd_m)


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
def test_contour_gap_near_one_round_regression():
    # M just above 1 with sigma ~ 4 (found by the 1e5-point sweep: NaN at sigma = 4.08, M = 1.06).
    # Reference: LaplaceReference(4.08, 1.06).cdf(1.06) (tests/shuffle/reference_law.py, de Hoog
    # inversion in mpmath at 20 digits): P - Q = 0.09482203386300708.  Talbot is NOT accurate here
    # (1.2e-5 off, measured), so the point must come from the line integral.
    np.testing.assert_allclose(float(tv_gap(4.08, 1.06)), 0.09482203386300708, rtol=0, atol=1e-9)
    s = np.geomspace(3.5, 5.0, 7)
    m = np.array([1.0005, 1.01, 1.06, 1.12, 1.3, 1.6, 2.0])
    fast, table = (np.asarray(tv_gap(*np.meshgrid(s, m), method=k)) for k in ("contour", "table"))
    assert np.all(np.isfinite(fast))
    np.testing.assert_allclose(fast, table, rtol=0, atol=2e-8)


# ---- the curve from one damped Fourier line, and the grouped batch path ------------------------


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
def test_line_curve_against_mpmath_references():
    # Expected values: REF (Gil-Pelaez + Gauss-Legendre in mpmath).  Where the line's checks pass
    # the curve is accurate to ~1e-12 (measured); where they fail (spread laws: REF_SMALL, and REF
    # points whose thresholds lie where the line's truncation check is not met) ok is False.
    from jaxdp.mechanisms._shuffled_gap import line_curve

    line_curve = jax.jit(line_curve, static_argnames=("nz", "reverse"))
    n_ok = 0
    for (sigma, m), rows in list(REF.items()) + list(REF_SMALL.items()):
        x, p_sf, q_cdf, q_sf = np.array(rows).T
        for reverse, a, want in ((False, p_sf, q_cdf), (True, q_cdf, p_sf)):
            f, f_up, ok = line_curve(jnp.asarray(a), sigma, m, reverse=reverse)
            if bool(ok):
                n_ok += 1
                assert_bracketed(f, f_up, want, 1e-9)
    assert n_ok >= 4  # (1, 1e9) and (0.8, 1e3), both directions
    # the spread laws are never claimed: the tabulated law (Laplace method) takes them
    for sigma, m in ((0.3, 1.5), (0.5, 2.0), (1.0, 2.0)):
        assert not bool(line_curve(jnp.linspace(0.01, 0.9, 8), sigma, m)[-1])


@pytest.mark.acceptance
def test_grouped_curves_agree_with_the_tabulated_law():
    # Two independent numerical routes to f: the line (bisection + Newton on its cdf) and the
    # damped-FFT / Laplace table.  Pairs over the whole domain, incl. M = 1 (closed form) and the
    # spread region (fallback); measured max difference on the 1024 benchmark pairs: 3.7e-10.
    from jaxdp.mechanisms.shuffled import _table_curves, tradeoff_curve_ends, tradeoff_curves

    sig = np.array([0.3, 0.8, 3.0, 50.0])
    ms = np.array([1.0, 1.7, 4.1e3, 1e10])
    s, m = (v.ravel() for v in np.meshgrid(sig, ms, indexing="ij"))
    a = jnp.asarray([1e-6, 0.01, 0.2, 0.5, 0.9, 0.999])
    # the routes' allowances differ (the table's err can be 10x its diagnostic), so their computed
    # values (midpoints of the ends) are compared, and each route's ends must overlap the other's
    for reverse in (False, True):
        lo, up = (np.asarray(v) for v in tradeoff_curve_ends(a, s, m, reverse=reverse))
        np.testing.assert_array_equal(lo, np.asarray(tradeoff_curves(a, s, m, reverse=reverse)))
        assert lo.shape == (s.size, a.size)
        w_lo, w_up = (np.asarray(v) for v in _table_curves(a, jnp.asarray(s), jnp.asarray(m), reverse, 2**11, 16, 320))
        both = np.isfinite(w_lo)
        assert np.array_equal(np.isfinite(lo), both) and np.array_equal(np.isfinite(up), both)
        assert np.all(lo[both] <= w_up[both]) and np.all(w_lo[both] <= up[both])
        np.testing.assert_allclose(0.5 * (lo + up)[both], 0.5 * (w_lo + w_up)[both], rtol=0, atol=1e-8)
    # the gaps from the same line nodes vs the contour gap (its own damping, or Talbot); measured
    # on the 1024 benchmark pairs: 6.2e-10
    f2, gap = tradeoff_curves(a, s, m, return_gap=True)
    np.testing.assert_array_equal(np.asarray(f2), np.asarray(tradeoff_curves(a, s, m)))
    np.testing.assert_allclose(np.asarray(gap), np.asarray(tv_gap(s, m)), rtol=0, atol=2e-9)


@pytest.mark.acceptance  # README suite budget (issue 18): default-grid shuffled law programs, ~10-35 s of XLA compiling; an accuracy check against an independent reference
def test_public_tradeoff_batch_uses_the_grouped_path_consistently():
    # jaxdp.shuffle.tradeoff with concrete E = 1 inputs goes through the grouped path; under jit it
    # uses the table: the two agree to 1e-8, shapes params + a, invalid pairs NaN.
    import jaxdp.shuffle as sh

    a = jnp.linspace(0.01, 0.9, 5)
    sig = jnp.asarray([0.7, 2.0, -1.0])
    ms = jnp.asarray([500.0, 3.0, 10.0])
    eager = np.asarray(sh.tradeoff(a, noise_multiplier=sig[:2], num_rounds=ms[:2]))
    jitted = np.asarray(jax.jit(lambda s, m: sh.tradeoff(a, noise_multiplier=s, num_rounds=m))(sig[:2], ms[:2]))
    assert eager.shape == (2, 5)
    np.testing.assert_allclose(eager, jitted, rtol=0, atol=1e-8)
    with pytest.raises(ValueError, match="noise_multiplier"):
        sh.tradeoff(a, noise_multiplier=sig, num_rounds=ms)


def test_both_directions_from_one_law_are_the_two_calls():
    """tradeoff_ends_both_directions tabulates the law once: the same numbers as tradeoff_ends of
    each direction (each checked against references above); errors and NaN as theirs."""
    a = np.array([0.0, 1e-6, 1e-3, 0.2, 0.7, 1.0])
    fwd, rev = shuffled.tradeoff_ends_both_directions(a, 1.0, 50.0)
    for got, want in ((fwd, shuffled.tradeoff_ends(a, 1.0, 50.0)), (rev, shuffled.tradeoff_ends(a, 1.0, 50.0, reverse=True))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="scalars"):
        shuffled.tradeoff_ends_both_directions(a, [1.0, 2.0], 50.0)
    with pytest.raises(ValueError, match="a"):
        shuffled.tradeoff_ends_both_directions([1.5], 1.0, 50.0)
