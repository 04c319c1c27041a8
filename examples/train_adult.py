"""Shuffled DP-SGD logistic regression on UCI Adult, with per-epoch privacy accounting.

    python examples/train_adult.py --epochs 10              # full run (documented in docs/calibrate.md)
    python examples/train_adult.py --epochs 2 --subset 4000 # CI

Each epoch draws one fresh permutation; the accountant state (a pytree) is updated inside the
jitted ``lax.scan`` over epochs and reports the exact shuffled epsilon (jaxdp.shuffle) and the
Poisson-subsampling epsilon alongside (q = b/N, T = E M).  Data: the shipped copy of adult.data
(``jaxdp.pufferfish.datasets.load_adult``, no network).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxdp  # noqa: F401  (float64)
from jaxdp import training

NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship", "race", "sex"]


def load_features(subset=None, seed=0):
    from jaxdp.pufferfish.datasets import load_adult

    d = load_adult()
    cols = [np.log1p(d[c]) if c.startswith("capital") else d[c] for c in NUMERIC]
    x = np.stack(cols, axis=1)
    x = (x - x.mean(0)) / x.std(0)
    onehots = []
    for c in CATEGORICAL:
        vals = np.asarray(d[c])
        cats = sorted(set(vals.tolist()))
        onehots.append((vals[:, None] == np.array(cats)[None, :]).astype(np.float64))
    x = np.concatenate([x] + onehots, axis=1)
    y = (np.asarray(d["income"]) == ">50K").astype(np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y))
    x, y = x[idx], y[idx]
    n_test = len(y) // 5
    xt, yt, xtr, ytr = x[:n_test], y[:n_test], x[n_test:], y[n_test:]
    if subset is not None:
        xtr, ytr = xtr[:subset], ytr[:subset]
        xt, yt = xt[: max(subset // 4, 1)], yt[: max(subset // 4, 1)]
    return xtr, ytr, xt, yt


def loss_fn(params, x, y):
    logits = x @ params["w"] + params["b"]
    return jnp.mean(optax.sigmoid_binary_cross_entropy(logits, y))


def accuracy(params, x, y):
    return jnp.mean(((x @ params["w"] + params["b"]) > 0) == (y > 0.5))


def make_train(*, n, batch_size, epochs, noise_multiplier, l2_norm_clip, learning_rate, delta, seed):
    opt = training.shuffled_dpsgd(learning_rate, l2_norm_clip=l2_norm_clip, noise_multiplier=noise_multiplier,
                                  seed=seed)
    per_example = jax.vmap(jax.grad(loss_fn), in_axes=(None, 0, 0))

    @jax.jit
    def train(params, x, y, xt, yt, key):
        acc0 = training.accountant_init(noise_multiplier=noise_multiplier, num_examples=n, batch_size=batch_size,
                                        delta=delta)

        def epoch(carry, k):
            params, opt_state, acct = carry
            batches = training.epoch_batches(k, n, batch_size)  # one fresh permutation per epoch

            def step(c, idx):
                p, s = c
                g = per_example(p, x[idx], y[idx])
                u, s = opt.update(g, s, p)
                return (optax.apply_updates(p, u), s), None

            (params, opt_state), _ = jax.lax.scan(step, (params, opt_state), batches)
            acct = training.accountant_update(acct)
            out = (accuracy(params, xt, yt), acct.epsilon, acct.epsilon_poisson)
            return (params, opt_state, acct), out

        keys = jax.random.split(key, epochs)
        (params, _, acct), (acc, eps, eps_p) = jax.lax.scan(epoch, (params, opt.init(params), acc0), keys)
        return params, acc, eps, eps_p

    return train


def run(epochs=10, subset=None, batch_size=256, noise_multiplier=1.0, l2_norm_clip=1.0, learning_rate=0.5,
        delta=1e-5, seed=0, verbose=True):
    x, y, xt, yt = load_features(subset, seed)
    n = len(y)
    train = make_train(n=n, batch_size=batch_size, epochs=epochs, noise_multiplier=noise_multiplier,
                       l2_norm_clip=l2_norm_clip, learning_rate=learning_rate, delta=delta, seed=seed)
    params = {"w": jnp.zeros(x.shape[1]), "b": jnp.zeros(())}
    t0 = time.time()
    params, acc, eps, eps_p = train(params, jnp.asarray(x), jnp.asarray(y), jnp.asarray(xt), jnp.asarray(yt),
                                    jax.random.PRNGKey(seed))
    acc, eps, eps_p = map(np.asarray, (acc, eps, eps_p))
    if verbose:
        m = n // batch_size
        print(f"# Adult logistic regression, N={n}, b={batch_size}, M={m}, sigma={noise_multiplier}, "
              f"C={l2_norm_clip}, lr={learning_rate}, delta={delta}  ({time.time() - t0:.1f}s)")
        print("| epoch | test accuracy | eps (shuffle, exact) | eps (Poisson, q=b/N) |")
        print("|---|---|---|---|")
        for e in range(epochs):
            print(f"| {e + 1} | {acc[e]:.4f} | {eps[e]:.4f} | {eps_p[e]:.4f} |")
    return dict(n=n, accuracy=acc, epsilon=eps, epsilon_poisson=eps_p)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--subset", type=int, default=None, help="use the first SUBSET training rows")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--noise-multiplier", type=float, default=1.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    run(a.epochs, a.subset, a.batch_size, a.noise_multiplier, a.clip, a.lr, a.delta, a.seed)


if __name__ == "__main__":
    main()
