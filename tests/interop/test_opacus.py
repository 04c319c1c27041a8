"""jaxdp.interop.opacus against Opacus 1.6.0 (issue 17): ``PrivacyEngine(accountant="jaxdp")``.

Skipped where opacus or torch is not installed (``pip install jaxdp[opacus]``); ``.ci/run`` installs both
after the README suite and runs this file on its own.

Reference values (the constants below) are Opacus 1.6.0's own accountants on the history of the
training run of :func:`test_privacy_engine_trains_with_jaxdp` -- ``[(1.0, 0.25, 8)]``: noise
multiplier 1, 64 points in batches of 16 (Opacus' Poisson sample rate 1/4), 2 epochs -- at
delta = 1e-5, recomputed live here:

* ``PRVAccountant`` (Gopi et al. 2021, add/remove, Poisson): ``get_epsilon`` returns the upper end
  of its bracket, at its default ``eps_error = 0.01``: 5.467992; its estimate (the middle) 5.457580.
  PRV is close to exact, so jaxdp's certified upper end must lie within 1% of it (it lies 0.19%
  below it, and 1.5e-5 relative above PRV's estimate, inside PRV's tighter bracket at
  ``eps_error = 1e-3``).
* ``RDPAccountant``: 6.253145, an RDP bound 15% above the PLD ones; jaxdp must be below it
  (agreement within 1% is not expected of RDP).
* ``get_noise_multiplier(target_epsilon=3, target_delta=1e-5, sample_rate=0.25, steps=8)``: sigma
  1.4453125 with ``"prv"``, 1.56982421875 with ``"rdp"``; with ``"jaxdp"`` 1.4404296875 (Opacus'
  bisection on [0, 20], tolerance 0.01 in eps), within 1% of the PRV one and feasible by jaxdp.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

import torch  # noqa: E402
from opacus.accountants import PRVAccountant, RDPAccountant, create_accountant, register_accountant  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402

import jaxdp  # noqa: E402
from jaxdp import events as ev  # noqa: E402
from jaxdp.core.pld import Grid  # noqa: E402
from jaxdp.interop import opacus as interop  # noqa: E402
from jaxdp.interop.opacus import JaxdpOpacusAccountant, register, to_jaxdp_event  # noqa: E402

DELTA = 1e-5
HISTORY = [(1.0, 0.25, 8)]  # the training run below
PRV_EPS_UPPER = 5.467992  # PRVAccountant().get_epsilon(1e-5) on HISTORY (eps_error = 0.01)
PRV_EPS_ESTIMATE = 5.457580  # the middle of the same PRV bracket
RDP_EPS = 6.253145  # RDPAccountant().get_epsilon(1e-5) on HISTORY
SIGMA_PRV, SIGMA_RDP = 1.4453125, 1.56982421875  # get_noise_multiplier(target eps 3, ...) per accountant
SIGMA_JAXDP = 1.4404296875  # the same with accountant="jaxdp"
G14 = Grid(size=2**14)


@pytest.fixture(scope="module", autouse=True)
def registered():
    return register()


def _offline(history, grid=None):
    """jaxdp's own accountant on a history, built here by hand (not through the adapter)."""
    parts = tuple(ev.SelfComposed(ev.PoissonSampled(q, ev.Gaussian(s)), n) for s, q, n in history)
    event = parts[0] if len(parts) == 1 else ev.Composed(parts)
    return jaxdp.account(event, neighboring="add_remove", grid=grid)


def _opacus_eps(cls, history, **kw):
    acc = cls()
    acc.history = list(history)
    return acc.get_epsilon(DELTA, **kw)


def test_import_jaxdp_does_not_import_torch():
    code = "import sys, jaxdp, jaxdp.interop; print('torch' in sys.modules, 'opacus' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_privacy_engine_trains_with_jaxdp():
    """A 2-layer net, 64 random points, 2 epochs of Opacus Poisson batches of expected size 16."""
    torch.manual_seed(0)
    x, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    engine = opacus.PrivacyEngine(accountant="jaxdp")
    model, optim, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16),
        noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=True)
    for _ in range(2):
        for xb, yb in loader:
            optim.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            optim.step()
    acc = engine.accountant
    assert isinstance(acc, JaxdpOpacusAccountant)
    assert acc.history == HISTORY and len(acc) == 8
    eps = engine.get_epsilon(DELTA)
    b = _offline(HISTORY).epsilon(DELTA)
    assert eps == pytest.approx(float(b.value), rel=1e-9) and float(b.value) == float(b.upper)
    # Opacus' own accountants on the same history (the constants are their values, checked live)
    prv, rdp = _opacus_eps(PRVAccountant, HISTORY), _opacus_eps(RDPAccountant, HISTORY)
    assert prv == pytest.approx(PRV_EPS_UPPER, abs=1e-6) and rdp == pytest.approx(RDP_EPS, abs=1e-6)
    assert eps <= prv and abs(eps - prv) / prv < 0.01  # PRV's certified upper end: jaxdp is tighter
    assert (prv - eps) / prv == pytest.approx(0.0019, abs=2e-4)  # the 0.19% docs/interop.md quotes
    assert eps < rdp
    # PRV's tighter bracket (eps_error 1e-3) overlaps jaxdp's certified bracket around the truth
    ref = PRVAccountant()
    ref.history = list(HISTORY)
    lo, mid, up = ref._get_dprv(eps_error=1e-3, delta_error=DELTA / 1000).compute_epsilon(DELTA, DELTA / 1000, 1e-3)
    assert mid == pytest.approx(PRV_EPS_ESTIMATE, abs=2e-6)
    assert lo <= float(b.lower) <= float(b.upper) <= up and 0 < (eps - mid) / mid < 3e-5


def test_heterogeneous_history_matches_offline_and_prv():
    acc = JaxdpOpacusAccountant(grid=G14)
    for s, q, n in [(1.0, 0.25, 3), (1.5, 0.5, 2), (1.0, 0.25, 2)]:
        for _ in range(n):
            acc.step(noise_multiplier=s, sample_rate=q)
    assert acc.history == [(1.0, 0.25, 3), (1.5, 0.5, 2), (1.0, 0.25, 2)] and len(acc) == 7
    merged = [(1.0, 0.25, 5), (1.5, 0.5, 2)]
    assert acc.jaxdp_event() == to_jaxdp_event(merged)
    eps = acc.get_epsilon(DELTA)
    assert eps == pytest.approx(float(_offline(merged, G14).epsilon(DELTA).value), rel=1e-9)
    prv = _opacus_eps(PRVAccountant, acc.history)
    assert eps <= prv and abs(eps - prv) / prv < 0.01


def test_get_noise_multiplier_with_jaxdp():
    kw = dict(target_epsilon=3.0, target_delta=DELTA, sample_rate=0.25, steps=8)
    sigma = get_noise_multiplier(accountant="jaxdp", **kw)
    assert sigma == pytest.approx(SIGMA_JAXDP, rel=1e-3)
    eps = float(_offline([(sigma, 0.25, 8)]).epsilon(DELTA).value)
    assert eps <= 3.0 and 3.0 - eps <= 0.01  # feasible by jaxdp, and Opacus' tolerance reached
    sigma_prv = get_noise_multiplier(accountant="prv", **kw)
    assert sigma_prv == SIGMA_PRV and abs(sigma - sigma_prv) / sigma_prv < 0.01
    assert get_noise_multiplier(accountant="rdp", **kw) == SIGMA_RDP


def test_make_private_with_epsilon_uses_jaxdp():
    """Opacus' calibration entry point looks the accountant up by ``mechanism()``: jaxdp's sigma."""
    model = torch.nn.Linear(4, 2)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    engine = opacus.PrivacyEngine(accountant="jaxdp")
    _, optim, _ = engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(data, batch_size=16), target_epsilon=3.0,
        target_delta=DELTA, epochs=2, max_grad_norm=1.0)
    assert optim.noise_multiplier == pytest.approx(SIGMA_JAXDP, rel=1e-3)


def test_conversion_and_empty_history():
    assert to_jaxdp_event([]) == ev.Composed(()) == to_jaxdp_event([(1.0, 0.5, 0)])
    assert to_jaxdp_event([(2, 1, 3)]) == ev.SelfComposed(ev.PoissonSampled(1.0, ev.Gaussian(2.0)), 3)
    acc = JaxdpOpacusAccountant()
    assert acc.get_epsilon(DELTA) == 0.0 and len(acc) == 0 and acc.mechanism() == "jaxdp"
    full = JaxdpOpacusAccountant(grid=G14)  # sample rate 1: the full batch, i.e. the plain Gaussian
    full.history = [(2.0, 1.0, 3)]
    assert full.get_epsilon(DELTA) == pytest.approx(
        float(jaxdp.account(ev.SelfComposed(ev.Gaussian(2.0), 3), grid=G14).epsilon(DELTA).value), rel=1e-9)


def test_queries_are_cached(monkeypatch):
    acc = JaxdpOpacusAccountant(grid=G14)
    acc.history = [(1.0, 0.25, 8)]
    builds = []
    real = interop.account
    monkeypatch.setattr(interop, "account", lambda *a, **k: builds.append(1) or real(*a, **k))
    e1 = acc.get_epsilon(DELTA)
    assert acc.get_epsilon(DELTA) == e1 and len(builds) == 1
    acc.step(noise_multiplier=1.0, sample_rate=0.25)
    assert acc.get_epsilon(DELTA) > e1 and len(builds) == 2


def test_state_dict_round_trip_and_other_accountants():
    acc = JaxdpOpacusAccountant()
    acc.history = list(HISTORY)
    other = JaxdpOpacusAccountant()
    other.load_state_dict(acc.state_dict())
    assert other.history == HISTORY
    rdp = RDPAccountant()
    rdp.history = [(1.0, 0.25, 4)]
    other.load_state_dict(rdp.state_dict())  # an rdp checkpoint re-accounted by jaxdp
    assert other.history == [(1.0, 0.25, 4)]
    with pytest.raises(ValueError, match="mechanism must be one of"):
        other.load_state_dict({"history": HISTORY, "mechanism": "pld"})
    with pytest.raises(ValueError, match="history"):
        other.load_state_dict({"mechanism": "rdp"})
    with pytest.raises(ValueError, match=r"history\[0\]\.num_steps"):
        other.load_state_dict({"history": [(1.0, 0.25, -1)], "mechanism": "rdp"})
    assert other.history == [(1.0, 0.25, 4)]  # unchanged by the refused loads


def test_registration():
    assert register() is JaxdpOpacusAccountant  # idempotent
    assert isinstance(create_accountant("jaxdp"), JaxdpOpacusAccountant)
    register_accountant("jaxdp", RDPAccountant, force=True)
    try:
        with pytest.raises(ValueError, match="already held by RDPAccountant"):
            register()
        assert register(force=True) is JaxdpOpacusAccountant
    finally:
        register_accountant("jaxdp", JaxdpOpacusAccountant, force=True)
    assert isinstance(create_accountant("jaxdp"), JaxdpOpacusAccountant)


@pytest.mark.parametrize("kw, match", [
    (dict(noise_multiplier=0.0, sample_rate=0.1), "noise_multiplier must be a finite number > 0"),
    (dict(noise_multiplier=-1.0, sample_rate=0.1), "noise_multiplier must be a finite number > 0"),
    (dict(noise_multiplier=math.inf, sample_rate=0.1), "noise_multiplier must be a finite number > 0"),
    (dict(noise_multiplier=math.nan, sample_rate=0.1), "noise_multiplier must be a number"),
    (dict(noise_multiplier="1.0", sample_rate=0.1), "noise_multiplier must be a number"),
    (dict(noise_multiplier=True, sample_rate=0.1), "noise_multiplier must be a number"),
    (dict(noise_multiplier=1.0, sample_rate=0.0), r"sample_rate must be in \(0, 1\]"),
    (dict(noise_multiplier=1.0, sample_rate=1.5), r"sample_rate must be in \(0, 1\]"),
    (dict(noise_multiplier=1.0, sample_rate=-0.1), r"sample_rate must be in \(0, 1\]"),
    (dict(noise_multiplier=1.0, sample_rate=None), "sample_rate must be a number"),
])
def test_bad_step_is_an_error_naming_the_argument(kw, match):
    acc = JaxdpOpacusAccountant()
    with pytest.raises(ValueError, match=match):
        acc.step(**kw)
    assert acc.history == []


@pytest.mark.parametrize("history, match", [
    ([(1.0, 0.1, -3)], r"history\[0\]\.num_steps must be an integer >= 0"),
    ([(1.0, 0.1, 2), (1.0, 0.1, 2.5)], r"history\[1\]\.num_steps must be an integer >= 0"),
    ([(0.0, 0.1, 2)], r"history\[0\]\.noise_multiplier must be a finite number > 0"),
    ([(1.0, 2.0, 2)], r"history\[0\]\.sample_rate must be in \(0, 1\]"),
    ([(1.0, 0.1)], r"history\[0\] must be a \(noise_multiplier, sample_rate, num_steps\) triple"),
    (5, "history must be a list"),
])
def test_bad_history_is_an_error_naming_the_entry(history, match):
    acc = JaxdpOpacusAccountant()
    acc.history = history
    with pytest.raises(ValueError, match=match):
        acc.get_epsilon(DELTA)
    with pytest.raises(ValueError, match=match):
        len(acc)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, math.nan, "1e-5"])
def test_bad_delta_is_an_error(delta):
    acc = JaxdpOpacusAccountant()
    acc.history = list(HISTORY)
    with pytest.raises(ValueError, match="delta must be"):
        acc.get_epsilon(delta)


def test_unknown_mechanism_name_is_opacus_error():
    with pytest.raises(ValueError, match="Unexpected accounting mechanism: jaxdp2"):
        opacus.PrivacyEngine(accountant="jaxdp2")
