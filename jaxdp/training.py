r"""Training-loop accounting: shuffled DP-SGD as an optax transformation plus a jit-able accountant state.

* :func:`dp_aggregate` — an ``optax.GradientTransformation`` taking **per-example** gradients
  (leading batch axis), clipping each to L2 norm ``l2_norm_clip``, summing, adding
  :math:`N(0, (\sigma C)^2 I)` and dividing by the batch size:

  .. math:: \tilde g = \frac{1}{b}\Big(\sum_{i} g_i \min\big(1, C/\|g_i\|_2\big) + \sigma C\, \xi\Big).

* :func:`shuffled_dpsgd` — ``optax.chain(dp_aggregate(...), optax.sgd(learning_rate))``.
* :func:`epoch_batches` — one fresh permutation per epoch, cut into M = floor(N / b) batches of
  size b (the last N mod b examples of that permutation sit the epoch out; every example is used
  at most once per epoch, which is the model the shuffle accountant certifies).
* :class:`AccountantState` / :func:`accountant_init` / :func:`accountant_update` — a pytree
  updated inside ``jit``/``lax.scan`` after each epoch: the exact shuffled epsilon
  (:func:`jaxdp.shuffle.epsilon_for_delta`, M rounds, E epochs) with the Poisson number
  alongside (rate q = b/N, T = E M steps, :func:`jaxdp.poisson.epsilon_for_delta`).

Example (see ``examples/train_adult.py``)::

    opt = shuffled_dpsgd(0.5, l2_norm_clip=1.0, noise_multiplier=1.0, batch_size=256, seed=0)
    acc = accountant_init(noise_multiplier=1.0, num_examples=N, batch_size=256, delta=1e-5)
    ...  # per epoch: for each batch of epoch_batches(key, N, 256): per-example grads -> opt.update
    acc = accountant_update(acc)   # acc.epsilon, acc.epsilon_poisson
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from . import _config  # noqa: F401
from . import poisson as _poisson
from .calibrate import CALIBRATION_GRID
from .core import pld as _pld
from ._pytree import pytree_dataclass


class DPAggregateState(NamedTuple):
    key: jax.Array


def dp_aggregate(*, l2_norm_clip: float, noise_multiplier: float, seed: int = 0) -> optax.GradientTransformation:
    """Per-example clipping, sum, Gaussian noise of std ``noise_multiplier * l2_norm_clip``, mean."""

    def init_fn(params):
        del params
        return DPAggregateState(key=jax.random.PRNGKey(seed))

    def update_fn(updates, state, params=None):
        del params
        leaves, treedef = jax.tree_util.tree_flatten(updates)
        b = leaves[0].shape[0]
        sq = sum(jnp.sum(jnp.reshape(g, (b, -1)) ** 2, axis=1) for g in leaves)
        factor = jnp.minimum(1.0, l2_norm_clip / jnp.maximum(jnp.sqrt(sq), 1e-30))
        key, *keys = jax.random.split(state.key, len(leaves) + 1)
        out = []
        for g, k in zip(leaves, keys):
            s = jnp.tensordot(factor.astype(g.dtype), g, axes=1)
            s = s + noise_multiplier * l2_norm_clip * jax.random.normal(k, s.shape, s.dtype)
            out.append(s / b)
        return jax.tree_util.tree_unflatten(treedef, out), DPAggregateState(key=key)

    return optax.GradientTransformation(init_fn, update_fn)


def shuffled_dpsgd(learning_rate, *, l2_norm_clip: float, noise_multiplier: float, seed: int = 0,
                   momentum=None) -> optax.GradientTransformation:
    """DP-SGD with per-example clipping and Gaussian noise; feed it batches from :func:`epoch_batches`."""
    return optax.chain(dp_aggregate(l2_norm_clip=l2_norm_clip, noise_multiplier=noise_multiplier, seed=seed),
                       optax.sgd(learning_rate, momentum=momentum))


def epoch_batches(key, num_examples: int, batch_size: int):
    """Indices of shape (M, batch_size), M = num_examples // batch_size, from one fresh permutation."""
    m = num_examples // batch_size
    perm = jax.random.permutation(key, num_examples)
    return perm[: m * batch_size].reshape(m, batch_size)


# ------------------------------------------------------------------------------------------------
# accountant state
# ------------------------------------------------------------------------------------------------


@pytree_dataclass(static=("grid",))
class AccountantState:
    """Privacy spent so far by shuffled DP-SGD (a pytree; update it inside jit / scan).

    epochs: completed epochs E; epsilon: exact shuffled eps(delta) after E epochs (NaN if
    :mod:`jaxdp.shuffle` is not available); epsilon_poisson: Poisson-subsampling eps with q = b/N
    and T = E M (certified PLD), for comparison.
    """

    epochs: jax.Array
    epsilon: jax.Array
    epsilon_poisson: jax.Array
    noise_multiplier: jax.Array
    num_rounds: jax.Array
    sampling_probability: jax.Array
    delta: jax.Array
    grid: _pld.Grid = CALIBRATION_GRID


def accountant_init(*, noise_multiplier, num_examples, batch_size, delta, grid=CALIBRATION_GRID) -> AccountantState:
    m = num_examples // batch_size
    f = jnp.float64
    return AccountantState(epochs=jnp.asarray(0, jnp.int32), epsilon=jnp.asarray(0.0, f),
                           epsilon_poisson=jnp.asarray(0.0, f), noise_multiplier=jnp.asarray(noise_multiplier, f),
                           num_rounds=jnp.asarray(m, f), sampling_probability=jnp.asarray(batch_size / num_examples, f),
                           delta=jnp.asarray(delta, f), grid=grid)


def _shuffle_eps():
    mod = importlib.import_module("jaxdp.shuffle")
    return getattr(mod, "epsilon_for_delta", None)


def shuffle_epsilon(delta, *, noise_multiplier, num_rounds, num_epochs):
    """Offline shuffled eps (NaN if jaxdp.shuffle is not available yet)."""
    fn = _shuffle_eps()
    if fn is None:
        return jnp.full(jnp.shape(num_epochs), jnp.nan)
    return fn(delta, noise_multiplier=noise_multiplier, num_rounds=num_rounds, num_epochs=num_epochs)


def accountant_update(state: AccountantState, num_epochs: int = 1) -> AccountantState:
    """Account for ``num_epochs`` more epochs; jit/scan-safe (every number is traced)."""
    e = state.epochs + num_epochs
    ef = e.astype(jnp.float64)
    eps_s = shuffle_epsilon(state.delta, noise_multiplier=state.noise_multiplier, num_rounds=state.num_rounds,
                            num_epochs=ef)
    eps_p = _poisson.epsilon_for_delta(state.delta, noise_multiplier=state.noise_multiplier,
                                       sampling_probability=state.sampling_probability,
                                       num_steps=ef * state.num_rounds, grid=state.grid)
    return AccountantState(epochs=e, epsilon=jnp.asarray(eps_s, jnp.float64), epsilon_poisson=eps_p,
                           noise_multiplier=state.noise_multiplier, num_rounds=state.num_rounds,
                           sampling_probability=state.sampling_probability, delta=state.delta, grid=state.grid)


__all__ = ["dp_aggregate", "shuffled_dpsgd", "epoch_batches", "AccountantState", "accountant_init",
           "accountant_update", "shuffle_epsilon", "DPAggregateState"]
