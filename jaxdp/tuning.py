r"""Constrained tuning with optax: gradient steps on calibrated quantities.

The pattern: keep the privacy constraint *exact* by calibrating, and optimise only what is free.
With (epsilon, delta) fixed, the noise multiplier is a function of the other hyperparameters,
:math:`\sigma^\star(b, E) = \texttt{calibrate.poisson\_noise\_multiplier}(\varepsilon, \delta; q = b/N, T = E\lceil N/b\rceil)`,
whose gradient comes from the implicit-function theorem (:mod:`jaxdp.calibrate`).  Any
differentiable utility proxy :math:`U(\sigma^\star(\theta), \theta)` can then be minimised with an
optax optimiser; every iterate is feasible by construction.

Default proxy (:func:`noise_to_signal`): the std of the Gaussian noise in the mean gradient
relative to a unit clipped per-example signal, averaged over the run, plus an optimisation-error
term, :math:`U = \sigma^\star / (b\sqrt{T}) + \kappa / T`.

Integer quantities (T = steps) enter the accountant rounded (straight-through): the accountant
composes an integer number of steps, and the gradient flows through the sampling rate q = b/N.
Epochs E are an outer integer choice (pass a list; use :func:`jaxdp.calibrate.epochs` for the
largest E meeting a budget).

The Pufferfish coupling optimisation runs through the same :func:`minimize` (see
:func:`optimise_coupling`).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import optax

from ._config import jit
from . import _config  # noqa: F401
from . import calibrate as _cal


def minimize(loss: Callable, params, *, optimizer: optax.GradientTransformation | None = None,
             num_steps: int = 100):
    """Run ``num_steps`` optax steps on ``loss(params)`` inside ``lax.scan``; returns (params, losses)."""
    opt = optimizer if optimizer is not None else optax.adam(0.05)

    def step(carry, _):
        p, s = carry
        val, g = jax.value_and_grad(loss)(p)
        u, s = opt.update(g, s, p)
        return (optax.apply_updates(p, u), s), val

    (params, _), hist = jax.lax.scan(step, (params, opt.init(params)), None, length=num_steps)
    return params, hist


def noise_to_signal(sigma, batch_size, num_steps, *, kappa=1.0):
    r""":math:`\sigma/(b\sqrt{T}) + \kappa/T`: averaged noise std per unit signal plus an optimisation-error term."""
    return sigma / (batch_size * jnp.sqrt(num_steps)) + kappa / num_steps


def calibrated_sigma(log_batch_size, *, epsilon, delta, num_examples, num_epochs, grid=_cal.CALIBRATION_GRID):
    """sigma*(b) for Poisson DP-SGD with q = b/N and T = ceil(E N / b); differentiable in log b.

    The q-derivative is the implicit-function theorem; the accountant composes an integer number of
    steps (no derivative in T), so the T-derivative is the one-step secant sigma*(T+1) - sigma*(T),
    solved in the same batched call.
    """
    sg = jax.lax.stop_gradient
    b = jnp.exp(log_batch_size)
    t_real = num_epochs * num_examples / b
    t = sg(jnp.ceil(t_real))
    sol = _cal.poisson_noise_multiplier(epsilon, delta, sampling_probability=b / num_examples,
                                        num_steps=jnp.stack([t, t + 1.0]), grid=grid, throw=False)
    s, s1 = sol.value[0], sol.value[1]
    s = s + sg(s1 - s) * (t_real - sg(t_real))
    return s, b, t + (t_real - sg(t_real))


def tune_batch_size(*, epsilon, delta, num_examples, num_epochs, init_batch_size=64.0, loss=None,
                    optimizer=None, num_steps=30, grid=_cal.CALIBRATION_GRID):
    r"""Minimise a utility proxy over the batch size b at fixed (epsilon, delta) and epochs E.

    ``loss(sigma, batch_size, num_steps)`` (default :func:`noise_to_signal`).  Returns a dict with
    the tuned ``batch_size`` (real; round it), ``noise_multiplier`` (calibrated, feasible),
    ``num_steps`` and the loss history.
    """
    loss = loss if loss is not None else noise_to_signal

    def objective(lb):
        s, b, t = calibrated_sigma(lb, epsilon=epsilon, delta=delta, num_examples=num_examples,
                                   num_epochs=num_epochs, grid=grid)
        return loss(s, b, t)

    lb, hist = jit(lambda p: minimize(objective, p, optimizer=optimizer or optax.adam(0.1),
                                          num_steps=num_steps))(jnp.log(jnp.asarray(init_batch_size, jnp.float64)))
    s, b, t = calibrated_sigma(lb, epsilon=epsilon, delta=delta, num_examples=num_examples, num_epochs=num_epochs,
                               grid=grid)
    return dict(batch_size=b, noise_multiplier=s, num_steps=t, history=hist)


def optimise_coupling(a, b, log_integrand, *, num_steps=400, learning_rate=0.2, sinkhorn_iters=60):
    r"""Pufferfish coupling optimisation through :func:`minimize`.

    Minimises :math:`\log\mathbb E_\pi[e^{\ell(X, X')}]` over couplings :math:`\pi\in\Pi(a, b)`
    parametrised as the Sinkhorn projection of :math:`e^\theta` (as in
    :func:`jaxdp.pufferfish.optimise_coupling`); returns ``(pi, objective)`` with pi rounded to an
    exact coupling.
    """
    from .pufferfish import couplings as C

    a = jnp.asarray(a, jnp.float64)
    b = jnp.asarray(b, jnp.float64)
    ell = jnp.asarray(log_integrand, jnp.float64)

    def proj(theta):
        return C.sinkhorn(a, b, -theta, reg=1.0, num_iters=sinkhorn_iters)

    theta, _ = minimize(lambda th: C.coupling_objective(proj(th), ell), jnp.zeros(ell.shape),
                        optimizer=optax.adam(learning_rate), num_steps=num_steps)
    P = C.round_to_coupling(proj(theta), a, b)
    return P, C.coupling_objective(P, ell)


__all__ = ["minimize", "noise_to_signal", "calibrated_sigma", "tune_batch_size", "optimise_coupling"]
