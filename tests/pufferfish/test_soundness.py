"""Soundness and ordering on >= 200 random discrete prior pairs (incl. heavy tails).

Reference divergence: ``renyi_mixture`` estimate (itself checked against scipy quadrature in
test_divergences.py) on a finer grid than the one used for calibration.
"""

import pytest
import jax
import jax.numpy as jnp
import numpy as np

import jaxdp.pufferfish as pf
from jaxdp.pufferfish.calibration import calibrate_all
from jaxdp.pufferfish.divergences import renyi_mixture

N = 6
NPAIRS = 208
ALPHAS = [1.5, 2.0, 3.0, 5.0, 10.0, 0.5, np.inf, 20.0]
EPSS = [0.1, 0.5, 1.0, 2.0]


def make_pairs(seed=0):
    rng = np.random.default_rng(seed)
    xs, ys, wxs, wys, al, ep = [], [], [], [], [], []
    for k in range(NPAIRS):
        kind = k % 4
        if kind == 0:    # light tails
            x, y = rng.normal(0, 1, N), rng.normal(rng.normal(0, 1), rng.uniform(0.5, 2), N)
        elif kind == 1:  # Cauchy (heavy tails)
            x, y = rng.standard_cauchy(N), rng.standard_cauchy(N) + rng.normal()
        elif kind == 2:  # Pareto / lognormal (one-sided heavy tails)
            x, y = rng.pareto(1.5, N), rng.lognormal(0, 1.5, N)
        else:            # shared integer support (zero weights allowed)
            x, y = rng.integers(0, 5, N).astype(float), rng.integers(0, 5, N).astype(float)
        wx, wy = rng.dirichlet(np.ones(N) * 0.7), rng.dirichlet(np.ones(N) * 0.7)
        if kind == 3:
            wx[rng.integers(N)] = 0.0
            wx /= wx.sum()
        xs.append(x); ys.append(y); wxs.append(wx); wys.append(wy)
        al.append(ALPHAS[k % len(ALPHAS)]); ep.append(EPSS[(k // len(ALPHAS)) % len(EPSS)])
    return tuple(jnp.asarray(np.array(v)) for v in (xs, wxs, ys, wys, al, ep))


@jax.jit
def _scales(x, wx, y, wy, a, e):
    return jax.vmap(calibrate_all)(x, wx, y, wy, a, e)


@jax.jit
def _divs(x, wx, y, wy, a, s_lap, s_gau):
    def one(x, wx, y, wy, a, sl, sg):
        sl_ok = sl > 0
        sls = jnp.where(sl_ok, sl, 1.0)
        dl = [renyi_mixture(x, wx, y, wy, alpha=a, noise="laplace", scale=sls, grid=512)[0],
              renyi_mixture(y, wy, x, wx, alpha=a, noise="laplace", scale=sls, grid=512)[0]]
        dl = [jnp.where(sl_ok, d, 0.0) for d in dl]
        sg_ok = jnp.isfinite(sg) & (sg > 0)  # sigma = 0: checked with renyi_discrete above
        sgs = jnp.where(sg_ok, sg, 1.0)
        dg = [renyi_mixture(x, wx, y, wy, alpha=a, noise="gaussian", scale=sgs, grid=512)[0],
              renyi_mixture(y, wy, x, wx, alpha=a, noise="gaussian", scale=sgs, grid=512)[0]]
        dg = jnp.where(sg_ok, jnp.maximum(*dg), 0.0)
        return jnp.maximum(*dl), dg
    return jax.vmap(jax.vmap(one, (None,) * 5 + (0, 0)), (0,) * 7)(x, wx, y, wy, a, s_lap, s_gau)


@pytest.mark.acceptance  # README suite budget (issue 18): property check over many compiled shapes, 15-40 s of XLA
def test_soundness_and_ordering():
    x, wx, y, wy, a, e = make_pairs()
    sc = _scales(x, wx, y, wy, a, e)
    lap = ["laplace_" + m for m in pf.LAPLACE_METHODS]
    gau = ["gaussian_" + m for m in pf.GAUSSIAN_METHODS]
    s_lap = jnp.stack([sc[k] for k in lap], 1)
    s_gau = jnp.stack([sc[k] for k in gau] + [sc[gau[0]]] * (len(lap) - len(gau)), 1)
    sl = np.asarray(s_lap)
    assert np.all(np.isfinite(sl)) and np.all(sl >= 0), sl[~(np.isfinite(sl) & (sl >= 0))]
    # a zero scale only where the priors themselves meet the budget (exact method)
    zero = sl == 0
    assert np.all(~zero[:, [0, 1, 3, 4]])
    d0 = np.asarray(jax.vmap(lambda x, wx, y, wy, a: jnp.maximum(pf.renyi_discrete(x, wx, y, wy, a),
                                                                   pf.renyi_discrete(y, wy, x, wx, a)))(x, wx, y, wy, a))
    assert np.all(d0[zero[:, 2]] <= np.asarray(e)[zero[:, 2]])
    dl, dg = _divs(x, wx, y, wy, a, s_lap, s_gau)
    dl, dg = np.asarray(dl), np.asarray(dg)
    eps = np.asarray(e)[:, None]
    # every method's calibrated scale meets the true D_alpha <= eps, worse direction
    assert np.all(dl <= eps + 1e-9), (np.max(dl - eps), np.argwhere(dl > eps + 1e-9)[:5])
    assert np.all(dg <= eps + 1e-9), (np.max(dg - eps), np.argwhere(dg > eps + 1e-9)[:5])
    # orderings (relative slack 1e-9 for root-finding rounding)
    r = 1 + 1e-9
    ex, ti, t1, pq = (np.asarray(sc["laplace_" + m]) for m in ["exact", "tight", "theorem1", "pierquin"])
    assert np.all(ex <= ti * r)
    fin = np.isfinite(np.asarray(a))  # alpha = inf: all W_inf / eps, tight == others
    assert np.all(ti <= np.minimum(t1, pq) * r)
    gex, gt2, gpq = (np.asarray(sc["gaussian_" + m]) for m in ["exact", "theorem2", "pierquin"])
    assert np.all(gex[fin] <= gt2[fin] * r) and np.all(gt2[fin] <= gpq[fin] * r)
    # exact is strictly useful on most pairs
    assert np.mean(ex < 0.99 * ti) > 0.5
    assert len(np.asarray(a)) >= 200
