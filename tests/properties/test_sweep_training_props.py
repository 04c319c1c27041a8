"""Properties of jaxdp.sweep (grid + chunked, sharded evaluation) and jaxdp.training (DP-SGD pieces and
the accountant state).

Where each expected value comes from:

* ``sweep``: one plain jitted ``jax.vmap`` of the same function over all points, and the closed
  forms evaluated point by point with scipy in a Python loop over the Cartesian product
  (itertools.product order = ``numpy.meshgrid(indexing="ij")``);
* ``dp_aggregate``: its formula, (1/b) sum_i g_i min(1, C/||g_i||) (+ N(0, (sigma C)^2) noise), in numpy;
* ``epoch_batches``: a permutation cut into floor(N/b) batches (definition);
* ``accountant_update``: the offline accountants ``jaxdp.poisson.epsilon_for_delta`` (q = b/N,
  T = E floor(N/b), same grid) and ``jaxdp.training.shuffle_epsilon``; both non-decreasing in E
  (composition never decreases a certified eps: tests/properties/test_poisson_props.py).
  The exact shuffled accountant costs ~60 s of CPU to compile and the Poisson one ~10 s, so the CI
  property substitutes closed-form monotone stand-ins for both (checking what the state passes
  to them); the real accountants run in the slow test here and, in CI, in tests/test_training.py
  (examples/train_adult.py against the offline accountants).
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

import jaxdp.poisson as po
from jaxdp import training
from jaxdp.core import tradeoff as tf
from jaxdp.core.pld import Grid
from jaxdp.sweep import grid, sweep

from ._util import n_examples

G = Grid(size=2**12)
B = 8
A = np.array([0.0, 1e-3, 0.1, 0.5, 1.0])

axis = st.lists(st.floats(0.1, 4.0), min_size=1, max_size=3, unique=True)


def _point_fn(mu, eps):
    return {"delta": tf.gaussian_delta(eps, mu), "curve": tf.gaussian(jnp.asarray(A), mu)}


_vmapped = jax.jit(jax.vmap(_point_fn))  # one compilation: always called on 9 points (padded)


def _scipy_point(mu, eps):
    """Closed forms (Dong, Roth & Su 2022): delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),
    G_mu(a) = Phi(Phi^{-1}(1 - a) - mu)."""
    n = scipy.stats.norm
    return n.cdf(-eps / mu + mu / 2) - np.exp(eps) * n.cdf(-eps / mu - mu / 2), n.cdf(n.isf(A) - mu)


@settings(max_examples=n_examples(3))
@given(axis, st.lists(st.floats(0.0, 6.0), min_size=1, max_size=3, unique=True), st.integers(1, 7),
       st.booleans())
def test_sweep_equals_explicit_loop_and_vmap(mus, epss, chunk, sharded):
    """Any grid, any chunk size (the last chunk padded), sharded or not: the same numbers as one plain
    vmap of the function over all points (to the last ulps), in itertools.product order, and the
    closed forms evaluated point by point in a loop with scipy."""
    pts = grid(mu=mus, eps=epss)
    prod = list(itertools.product(mus, epss))
    np.testing.assert_array_equal(np.c_[pts["mu"], pts["eps"]], np.array(prod, np.float64))
    res = sweep(_point_fn, pts, chunk_size=chunk, sharded=sharded, progress=False)
    np.testing.assert_array_equal(res["mu"], pts["mu"])
    n = len(prod)
    assert res["value"]["delta"].shape == (n,) and res["value"]["curve"].shape == (n, A.size)
    idx = np.minimum(np.arange(9), n - 1)
    vm = _vmapped(pts["mu"][idx], pts["eps"][idx])
    # a batch of 9 and a chunk of 1 are different XLA programs: delta = Phi(.) - e^eps Phi(.) cancels,
    # so ulp-level differences grow (found: 3e-14 relative at mu = 0.25, eps = 1, chunk 1, and 1.9e-12
    # at eps = 4 where delta = 7e-59); any mix-up of points would differ by far more than 1e-9
    np.testing.assert_allclose(res["value"]["delta"], np.asarray(vm["delta"])[:n], rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(res["value"]["curve"], np.asarray(vm["curve"])[:n], rtol=1e-13, atol=1e-300)
    for k, (m, e) in enumerate(prod):
        d_ref, f_ref = _scipy_point(m, e)
        np.testing.assert_allclose(res["value"]["delta"][k], d_ref, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(res["value"]["curve"][k], f_ref, rtol=1e-9, atol=1e-15)


def test_sweep_writes_what_it_returns(tmp_path):
    pts = grid(mu=[0.5, 1.0, 2.0], eps=[0.0, 1.0, 3.0])
    res = sweep(lambda mu, eps: tf.gaussian_delta(eps, mu), pts, chunk_size=4, progress=False,
                out_npz=str(tmp_path / "r.npz"), out_csv=str(tmp_path / "r.csv"))
    saved = np.load(tmp_path / "r.npz")
    for k in ("mu", "eps", "value"):
        np.testing.assert_array_equal(saved[k], res[k])
    rows = np.loadtxt(tmp_path / "r.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(rows, np.c_[res["mu"], res["eps"], res["value"]])  # repr(float) round-trips


# ------------------------------------------------------------------------------------------------
# DP-SGD pieces
# ------------------------------------------------------------------------------------------------


@jax.jit
def _aggregate(g, clip):
    t = training.dp_aggregate(l2_norm_clip=clip, noise_multiplier=0.0)
    return t.update(g, t.init(None))[0]


@settings(max_examples=n_examples(5))
@given(st.lists(st.lists(st.floats(-10.0, 10.0), min_size=5, max_size=5), min_size=6, max_size=6),
       st.floats(0.05, 5.0))
def test_dp_aggregate_is_clipped_mean(rows, clip):
    """Noise-free: (1/b) sum_i g_i min(1, C/||g_i||) over the whole pytree (numpy)."""
    g = np.array(rows, np.float64)
    tree = {"w": jnp.asarray(g[:, :3].reshape(6, 3, 1)), "b": jnp.asarray(g[:, 3:])}
    out = _aggregate(tree, clip)
    nrm = np.linalg.norm(g, axis=1)
    f = np.minimum(1.0, clip / np.maximum(nrm, 1e-30))
    ref = (g * f[:, None]).sum(0) / 6
    np.testing.assert_allclose(np.r_[np.asarray(out["w"]).ravel(), np.asarray(out["b"])], ref, rtol=1e-12, atol=1e-14)
    assert np.linalg.norm(ref) <= clip * (1 + 1e-12)  # the mean of clipped vectors is within the ball


@settings(max_examples=n_examples(3))
@given(st.integers(0, 2**31 - 1), st.integers(1, 40))
def test_epoch_batches_use_each_example_at_most_once(seed, b):
    n = 97
    idx = np.asarray(training.epoch_batches(jax.random.PRNGKey(seed), n, b))
    m = n // b
    assert idx.shape == (m, b)
    assert len(set(idx.ravel().tolist())) == m * b and idx.min() >= 0 and idx.max() < n


# ------------------------------------------------------------------------------------------------
# accountant state
# ------------------------------------------------------------------------------------------------


def _shuffle_stand_in(delta, *, noise_multiplier, num_rounds, num_epochs=1):
    mu = jnp.sqrt(num_epochs * jnp.expm1(1.0 / noise_multiplier**2) / num_rounds)
    return mu * jnp.sqrt(2.0 * jnp.log(1.25 / delta))


def _poisson_stand_in(delta, *, noise_multiplier, sampling_probability, num_steps, direction="both", grid=None):
    assert grid == G and direction == "both"  # the state's grid reaches the accountant
    mu = sampling_probability * jnp.sqrt(num_steps * jnp.expm1(1.0 / noise_multiplier**2))
    return mu * jnp.sqrt(2.0 * jnp.log(1.25 / delta))


@settings(max_examples=n_examples(2))
@given(st.lists(st.tuples(st.floats(0.6, 4.0), st.integers(50, 5000), st.integers(1, 256), st.floats(1e-9, 1e-3)),
                min_size=B, max_size=B).filter(lambda p: all(n >= b for _, n, b, _ in p)),
       st.lists(st.integers(1, 3), min_size=3, max_size=3))
def test_accountant_state_equals_offline_and_is_non_decreasing(pts, steps):
    """B training configurations in one state; after each update the reported numbers equal the
    offline accountants called with q = b/N, M = floor(N/b), T = E M, the state's delta and grid, and
    never decrease.  Both accountants are closed-form stand-ins here (CLT-type, monotone in E): this
    checks what the state passes to them; the real ones are compared in
    test_accountant_under_jit_scan_equals_offline_real_shuffle (slow) and tests/test_training.py."""
    import importlib

    mod = importlib.import_module("jaxdp.shuffle")
    with pytest.MonkeyPatch.context() as mp_:
        mp_.setattr(mod, "epsilon_for_delta", _shuffle_stand_in)
        mp_.setattr(po, "epsilon_for_delta", _poisson_stand_in)
        s, n, b, d = (np.array(x) for x in zip(*pts))
        s, d = s.astype(np.float64), d.astype(np.float64)
        st_ = training.accountant_init(noise_multiplier=s, num_examples=n, batch_size=b, delta=d, grid=G)
        m = (n // b).astype(np.float64)
        np.testing.assert_array_equal(np.asarray(st_.num_rounds), m)
        np.testing.assert_allclose(np.asarray(st_.sampling_probability), b / n, rtol=1e-15)
        prev_s, prev_p, epochs = np.zeros(B), np.zeros(B), 0
        for k in steps:
            st_ = training.accountant_update(st_, k)
            epochs += k
            assert int(st_.epochs) == epochs
            es, ep = np.asarray(st_.epsilon), np.asarray(st_.epsilon_poisson)
            off_p = np.asarray(_poisson_stand_in(d, noise_multiplier=s, sampling_probability=b / n,
                                                 num_steps=epochs * m, grid=G))
            off_s = np.asarray(_shuffle_stand_in(d, noise_multiplier=s, num_rounds=m, num_epochs=float(epochs)))
            np.testing.assert_allclose(ep, off_p, rtol=1e-13)
            np.testing.assert_allclose(es, off_s, rtol=1e-13)
            assert np.all(np.isfinite(ep)) and np.all(np.isfinite(es))
            assert np.all(ep > prev_p) and np.all(es > prev_s), (prev_p, ep)
            prev_s, prev_p = es, ep


@pytest.mark.slow
def test_accountant_under_jit_scan_equals_offline_real_shuffle():
    """The real exact shuffled accountant (SHUFFLE_GRID) inside jit + lax.scan, 3 epochs."""
    st0 = training.accountant_init(noise_multiplier=1.2, num_examples=1000, batch_size=50, delta=1e-5, grid=G)

    @jax.jit
    def run(st):
        def body(c, _):
            c = training.accountant_update(c)
            return c, (c.epsilon, c.epsilon_poisson)
        return jax.lax.scan(body, st, None, length=3)[1]

    es, ep = (np.asarray(v) for v in run(st0))
    e = np.arange(1.0, 4.0)
    # offline, one scalar call per epoch count (the program the accountant runs): equal to rounding
    off_s = np.array([float(training.shuffle_epsilon(1e-5, noise_multiplier=1.2, num_rounds=20.0, num_epochs=x)) for x in e])
    # offline, the three epoch counts in one array call (vmapped batches): measured ~4e-8 relative
    # from the scalar program (already for [1.0] vs [1.0, 1.0]: the batched program rounds
    # differently); both are certified upper values of the same eps (bracket ~2.5e-4 relative)
    off_c = np.asarray(training.shuffle_epsilon(1e-5, noise_multiplier=1.2, num_rounds=20.0, num_epochs=e))
    np.testing.assert_allclose(es, off_c, rtol=1e-7)
    off_p = np.asarray(po.epsilon_for_delta(1e-5, noise_multiplier=1.2, sampling_probability=0.05, num_steps=20 * e,
                                            grid=G))
    np.testing.assert_allclose(es, off_s, rtol=1e-9)
    np.testing.assert_allclose(ep, off_p, rtol=1e-9)
    assert np.all(np.diff(es) >= 0) and np.all(np.diff(ep) >= 0)
