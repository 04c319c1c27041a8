"""Monte Carlo auditing of privacy mechanisms (trade-off functions with confidence intervals)."""

from jaxdp.audit.montecarlo import (
    TradeoffAudit,
    audit_shuffled_gaussian,
    audit_tradeoff,
    clopper_pearson,
    gaussian_loss_sampler,
    shuffled_gaussian_loss_sampler,
)

__all__ = [
    "TradeoffAudit",
    "audit_shuffled_gaussian",
    "audit_tradeoff",
    "clopper_pearson",
    "gaussian_loss_sampler",
    "shuffled_gaussian_loss_sampler",
]
