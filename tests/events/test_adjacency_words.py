"""One adjacency vocabulary (issue 16, item 5): ``neighboring`` names the relation, ``direction`` the pair.

``jaxdp.account``, ``jaxdp.poisson`` and ``jaxdp.shuffle`` use the same words: ``neighboring`` in
("add_remove", "replace_one") and ``direction`` in ("both", "remove", "add"), "remove" being
T(P, Q) with P the output without the example.  The direction check below is independent of the
vocabulary code: the shuffled curve of ``jaxdp.shuffle`` (its exact single-epoch law) must lie inside
the certified bracket of ``jaxdp.account``'s PLD of the same direction, and outside the other's.
"""

import numpy as np
import pytest

import jaxdp
from jaxdp import poisson, shuffle
from jaxdp.core.pld import Grid
from jaxdp.events import Gaussian, Shuffled, UnsupportedEventError

SMALL = Grid(size=2**12)
POISSON = dict(noise_multiplier=1.0, sampling_probability=0.01, num_steps=10)


def test_poisson_speaks_neighboring():
    a = poisson.epsilon_for_delta(1e-5, **POISSON, grid=SMALL)
    b = poisson.epsilon_for_delta(1e-5, **POISSON, grid=SMALL, neighboring="add_remove")
    assert float(a) == float(b)
    with pytest.raises(UnsupportedEventError, match="PoissonSampled: neighboring='replace_one' is not supported"):
        poisson.epsilon_for_delta(1e-5, **POISSON, neighboring="replace_one")
    for fn, arg in ((poisson.delta_for_epsilon, 1.0), (poisson.tradeoff, 0.1)):
        with pytest.raises(ValueError, match="neighboring must be one of"):
            fn(arg, **POISSON, neighboring="swap")
    with pytest.raises(ValueError, match="direction must be one of"):
        poisson.epsilon_for_delta(1e-5, **POISSON, direction="reverse")


@pytest.mark.acceptance  # README suite budget (issue 18): compiles several PLD accountant programs, 10-40 s of XLA
def test_shuffle_speaks_direction():
    a = np.array([1e-3, 0.05, 0.3])
    kw = dict(noise_multiplier=1.0, num_rounds=10)
    f_rem = np.asarray(shuffle.tradeoff(a, **kw, direction="remove"))
    f_add = np.asarray(shuffle.tradeoff(a, **kw, direction="add"))
    np.testing.assert_array_equal(f_rem, np.asarray(shuffle.tradeoff(a, **kw)))
    np.testing.assert_array_equal(f_add, np.asarray(shuffle.tradeoff(a, **kw, reverse=True)))
    with pytest.raises(ValueError, match="direction='both' has no single shuffled curve"):
        shuffle.tradeoff(a, **kw, direction="both")
    with pytest.raises(ValueError, match="contradicts"):
        shuffle.tradeoff_bracket(a, **kw, direction="remove", reverse=True)
    with pytest.raises(ValueError, match="direction must be one of"):
        shuffle.tradeoff(a, **kw, direction="forward")
    # the same word means the same pair in jaxdp.account: each direction's value from jaxdp.shuffle
    # (the pessimistic end, from the exact single-epoch law) lies in the certified bracket of the
    # PLD of the same direction, up to the law's error (the "add" value is deliberately lowered by
    # its propagated cdf error, 2.6e-8 here), and outside the other direction's bracket
    acc = jaxdp.account(Shuffled(Gaussian(1.0), 10))
    for direction, f, other in (("remove", f_rem, f_add), ("add", f_add, f_rem)):
        p = acc.pld(direction)
        lo, up = np.asarray(p.tradeoff_lower(a)), np.asarray(p.tradeoff_upper(a))
        assert np.all(lo - 5e-8 <= f) and np.all(f <= up), direction
        assert np.any((other < lo - 5e-8) | (other > up)), direction
