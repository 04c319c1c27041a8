"""dp_accounting (0.6.0) references for the event tests: pessimistic and optimistic PLD estimates.

The pessimistic value is dp_accounting's own ``PLDAccountant`` (its default rounding); the
optimistic one composes the same PLDs built with ``pessimistic_estimate=False``.  dp_accounting's
truth lies between the two (up to its truncation), so a sound jaxdp bracket must satisfy
``jaxdp.lower <= dpa_pessimistic`` and ``jaxdp.upper >= dpa_optimistic``.
"""

from __future__ import annotations

import math

from jaxdp import events as ev



def _dpa():
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution

    return dp_accounting, pld_privacy_accountant, privacy_loss_distribution


def to_dp_event(e):
    """The dp_accounting event of a jaxdp event (Gaussian / Laplace / PoissonSampled / SelfComposed / Composed)."""
    dpa, _, _ = _dpa()
    if isinstance(e, ev.Gaussian):
        return dpa.GaussianDpEvent(float(e.noise_multiplier))
    if isinstance(e, ev.Laplace):
        return dpa.LaplaceDpEvent(float(e.noise_multiplier))
    if isinstance(e, ev.PoissonSampled):
        return dpa.PoissonSampledDpEvent(float(e.sampling_probability), to_dp_event(e.event))
    if isinstance(e, ev.SelfComposed):
        return dpa.SelfComposedDpEvent(to_dp_event(e.event), int(e.count))
    if isinstance(e, ev.Composed):
        return dpa.ComposedDpEvent([to_dp_event(x) for x in e.events])
    raise TypeError(type(e).__name__)


def _pld_of(e, count, pessimistic, interval):
    _, _, PLD = _dpa()
    if isinstance(e, ev.SelfComposed):
        return _pld_of(e.event, count * int(e.count), pessimistic, interval)
    if isinstance(e, ev.Composed):
        out = None
        for x in e.events:
            p = _pld_of(x, count, pessimistic, interval)
            out = p if out is None else out.compose(p)
        return out
    q, inner = 1.0, e
    if isinstance(e, ev.PoissonSampled):
        q, inner = float(e.sampling_probability), e.event
    kw = dict(pessimistic_estimate=pessimistic, value_discretization_interval=interval, sampling_prob=q)
    if not pessimistic:  # (connect-the-dots has no optimistic mode: privacy buckets, as dp_accounting would pick)
        kw["use_connect_dots"] = False
    if isinstance(inner, ev.Gaussian):
        p = PLD.from_gaussian_mechanism(standard_deviation=float(inner.noise_multiplier), **kw)
    elif isinstance(inner, ev.Laplace):
        p = PLD.from_laplace_mechanism(parameter=float(inner.noise_multiplier), **kw)
    else:
        raise TypeError(type(inner).__name__)
    return p.self_compose(count) if count > 1 else p


def epsilon(e, delta, interval=1e-4):
    """(pessimistic, optimistic) eps(delta) of dp_accounting for the jaxdp event ``e``."""
    _, acc_mod, _ = _dpa()
    acc = acc_mod.PLDAccountant(value_discretization_interval=interval)
    acc.compose(to_dp_event(e))
    pess = acc.get_epsilon(delta)
    opt = _pld_of(e, 1, False, interval).get_epsilon_for_delta(delta)
    return float(pess), float(opt)


def delta(e, epsilon_, interval=1e-4):
    _, acc_mod, _ = _dpa()
    acc = acc_mod.PLDAccountant(value_discretization_interval=interval)
    acc.compose(to_dp_event(e))
    return float(acc.get_delta(epsilon_)), float(_pld_of(e, 1, False, interval).get_delta_for_epsilon(epsilon_))


__all__ = ["to_dp_event", "epsilon", "delta", "math"]
