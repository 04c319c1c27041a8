"""dp_accounting reference calls shared by the benchmarks (dp_accounting is a test/bench extra)."""

import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution as pldlib


def dpa_epsilon(sigma, q, T, delta, interval=1e-4):
    """dp_accounting's PLD accountant (pessimistic, connect-the-dots), both directions."""
    acc = pld_privacy_accountant.PLDAccountant(
        dpa.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=interval
    )
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), int(T))
    return acc.get_epsilon(delta)


def dpa_epsilon_optimistic(sigma, q, T, delta, interval=1e-4):
    p = pldlib.from_gaussian_mechanism(
        sigma, sampling_prob=q, pessimistic_estimate=False, value_discretization_interval=interval,
        use_connect_dots=False,
    )
    return p.self_compose(int(T)).get_epsilon_for_delta(delta)


def dpa_rdp_epsilon(sigma, q, T, delta):
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), int(T))
    return acc.get_epsilon(delta)
