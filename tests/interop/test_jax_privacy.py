"""jaxdp.interop.jax_privacy: jaxdp as jax_privacy 2.0's accountant (issue 17).

Reference: the same jax_privacy computation with its own ``PldAccountantConfig`` (dp_accounting's
PLD accountant, discretisation 1e-4); jax_privacy's doctest values (PLD, q = 0.1, delta = 1e-6:
sigma 3 over 512 steps -> eps 3.77; eps 1 over 512 steps -> sigma 9.66, ``shared/spec/samplers.md``
section 5; and, from the same doctest (``jax_privacy/experimental/accounting.py``, "Calibrating
Number of Iterations for DP-SGD"): sigma 3, eps 2 -> 155 steps).  Tolerance 1% on eps and sigma.
The doctest figures are reproduced with the default ``JaxdpAccountantConfig()`` (the adapter's
default grid, what a user gets); the logic checks use a 2^14-cell grid.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

pytest.importorskip("dp_accounting")
accounting = pytest.importorskip("jax_privacy.accounting")

from jaxdp.core.pld import Grid  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import _mddoctest as md  # noqa: E402
from jaxdp.interop.dp_accounting import JaxdpAccountant  # noqa: E402
from jaxdp.interop.jax_privacy import JaxdpAccountantConfig  # noqa: E402

G14 = Grid(size=2**14)
PARAMS = dict(num_samples=10_000, batch_size=1000, delta=1e-6)  # q = 0.1


def _eps(config, noise, steps=512):
    acc = accounting.DpsgdTrainingAccountant(dp_accountant_config=config)
    return acc.compute_epsilon(steps, accounting.DpParams(noise_multipliers=noise, **PARAMS))


def test_config_creates_fresh_jaxdp_accountants():
    cfg = JaxdpAccountantConfig(grid=G14)
    assert isinstance(cfg, accounting.DpAccountantConfig)
    a, b = cfg.create_accountant(), cfg.create_accountant()
    assert isinstance(a, JaxdpAccountant) and a is not b


def test_dpsgd_epsilon_matches_pld():
    got = _eps(JaxdpAccountantConfig(), 3.0)
    want = _eps(accounting.PldAccountantConfig(), 3.0)
    assert got == pytest.approx(want, rel=1e-2)
    assert got == pytest.approx(3.77, abs=0.03)  # jax_privacy's doctest value (2 digits)
    assert not md.doc_quotes("docs/interop.md", "jax-privacy-eps", [got, want], inputs=[0.1, 1e-6, 512, 3])
    # a noise schedule: sigma 3 for 256 steps, then 4
    sched = [(0, 3.0), (256, 4.0)]
    assert _eps(JaxdpAccountantConfig(grid=G14), sched) == pytest.approx(_eps(accounting.PldAccountantConfig(), sched), rel=1e-2)


def test_calibrate_noise_multiplier():
    kw = dict(target_epsilon=1.0, batch_sizes=1000, num_updates=512, num_samples=10_000, target_delta=1e-6, tol=1e-3)
    s_j = accounting.calibrate_noise_multiplier(
        accountant=accounting.DpsgdTrainingAccountant(dp_accountant_config=JaxdpAccountantConfig()), **kw)
    assert s_j == pytest.approx(9.66, rel=1e-2)  # jax_privacy's doctest value
    pld = _eps(accounting.PldAccountantConfig(), s_j)
    assert pld <= 1.0 + 1e-3  # feasible by dp_accounting's PLD (to calibrate's tol)
    assert not md.doc_quotes("docs/interop.md", "jax-privacy-calibrate", [s_j, pld], inputs=[1, 9.66])


def test_calibrate_num_updates_doctest_155():
    # jax_privacy 2.0's doctest (jax_privacy/experimental/accounting.py, "Calibrating Number of
    # Iterations for DP-SGD": dpsgd_event(3.0, t, sampling_prob=0.1), dp_accounting's PLDAccountant,
    # target eps 2, delta 1e-6) prints 155.  Here the same question goes through jax_privacy's own
    # step calibration (calibrate_num_updates on DpsgdTrainingAccountant, q = 1000 / 10_000) with
    # jaxdp as the accountant (its default config).  Not a knife edge: eps(155) and eps(156) lie on
    # either side of 2 by about 0.2% (docs/interop.md quotes them).
    acc = accounting.DpsgdTrainingAccountant(dp_accountant_config=JaxdpAccountantConfig())
    steps = accounting.calibrate_num_updates(
        target_epsilon=2.0, accountant=acc, noise_multipliers=3.0, batch_sizes=1000, num_samples=10_000, target_delta=1e-6)
    assert steps == 155
    e155, e156 = (_eps(JaxdpAccountantConfig(), 3.0, steps=k) for k in (155, 156))
    assert e155 <= 2.0 < e156
    assert not md.doc_quotes("docs/interop.md", "jax-privacy-steps", [steps, e155, e156], inputs=[0.1, 3, 1e-6, 2])


# Two phases, both the noise and the batch size change: 300 steps at sigma 1.0, q = 100 / 10_000,
# then 200 at sigma 1.5, q = 200 / 10_000 (jax_privacy's (step, value) schedule form, DpParams).
TWO_PHASE = dict(noise_multipliers=[(0, 1.0), (300, 1.5)], batch_size=[(0, 100), (300, 200)], num_samples=10_000, delta=1e-5)


def test_two_phase_schedule_matches_pld():
    # Reference: jax_privacy's own PldAccountantConfig (dp_accounting's PLD accountant) on the same
    # DpParams; the agreement asked for is 1% (issue 17).  benchmarks/interop_peers.py times the two.
    def eps(cfg):
        return accounting.DpsgdTrainingAccountant(dp_accountant_config=cfg).compute_epsilon(500, accounting.DpParams(**TWO_PHASE))

    got, want = eps(JaxdpAccountantConfig(grid=G14)), eps(accounting.PldAccountantConfig())
    assert got == pytest.approx(want, rel=1e-2)
