"""Monte Carlo auditing of privacy mechanisms (trade-off functions with confidence intervals)."""

from jaxdp.audit.montecarlo import (
    TradeoffAudit,
    audit_shuffled_gaussian,
    audit_tradeoff,
    clopper_pearson,
    gaussian_loss_sampler,
    shuffled_gaussian_loss_sampler,
)

from jaxdp.audit.montecarlo import __all__  # noqa: E402,F401  (one list of the public names)
