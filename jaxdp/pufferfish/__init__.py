"""Renyi Pufferfish privacy: couplings, sufficient conditions, exact calibration, mechanisms, UCI experiments.

See ``docs/pufferfish.md``. Stable entry points: :func:`calibrate_laplace`, :func:`calibrate_gaussian`,
:func:`renyi_divergence`.
"""

from .. import _config  # noqa: F401  (float64)
from .couplings import (Coupling1D, quantile_coupling, wasserstein_p, wasserstein_1, wasserstein_2,
                        wasserstein_inf, wasserstein_distances, sinkhorn, round_to_coupling,
                        independent_coupling, coupling_objective, optimise_coupling)
from .divergences import (renyi_divergence, renyi_mixture, renyi_gaussian_shift, renyi_laplace_shift,
                          renyi_gaussian_priors, renyi_discrete)
from .calibration import (LAPLACE_METHODS, GAUSSIAN_METHODS, calibrate_laplace, calibrate_gaussian,
                          calibrate_condition, calibrate_exponential_family, calibrate_gaussian_prior,
                          calibrate_gaussian_mixture_prior, calibrate_all, laplace_scale, gaussian_scale,
                          bound_theorem1, bound_tight, bound_theorem2, expfam_bound)

__all__ = [
    "calibrate_laplace", "calibrate_gaussian", "renyi_divergence",
    "Coupling1D", "quantile_coupling", "wasserstein_p", "wasserstein_1", "wasserstein_2", "wasserstein_inf",
    "wasserstein_distances", "sinkhorn", "round_to_coupling", "independent_coupling", "coupling_objective",
    "optimise_coupling", "renyi_mixture", "renyi_gaussian_shift", "renyi_laplace_shift",
    "renyi_gaussian_priors", "renyi_discrete", "LAPLACE_METHODS", "GAUSSIAN_METHODS", "calibrate_condition",
    "calibrate_exponential_family", "calibrate_gaussian_prior", "calibrate_gaussian_mixture_prior",
    "calibrate_all", "laplace_scale", "gaussian_scale", "bound_theorem1", "bound_tight", "bound_theorem2",
    "expfam_bound",
]
from .mechanisms import (AdditiveNoiseMechanism, sample_noise, laplace_mechanism, gaussian_mechanism,
                         exponential_family_mechanism)
from . import datasets  # noqa: F401  (experiments: import jaxdp.pufferfish.experiments)

__all__ += ["AdditiveNoiseMechanism", "sample_noise", "laplace_mechanism", "gaussian_mechanism",
            "exponential_family_mechanism", "datasets"]
