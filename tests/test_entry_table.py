"""The stable entry points reproduce the values stored before the issue-16 refactor (its first acceptance item).

``tests/entry_points_before.json`` holds 45 values of 17 entry points (Poisson, shuffle, calibrate,
pufferfish, the Gaussian closed forms), written by ``python tests/_entry_table.py`` from commit
326d8b9, before the closed forms, the adjacency words and the PLD engine moved (see that script).
The discretisation did not change, so every value must agree to float rounding (1e-12 relative),
and a calibrated sigma to its solver's tolerance (rtol 1e-10: its starting guess now uses the one
Phi of ``jaxdp.closed_forms``, which moves the search path by ulps).
"""

import json
import pathlib

import numpy as np
import pytest

from _entry_table import evaluate

BEFORE = json.loads((pathlib.Path(__file__).parent / "entry_points_before.json").read_text())
SOLVER_RTOL = {"calibrate.poisson_noise_multiplier": 1e-10}


@pytest.mark.acceptance
def test_entry_points_reproduce_the_stored_table():
    after = evaluate()
    assert sorted(after) == sorted(BEFORE) and sum(len(v) for v in BEFORE.values()) >= 30
    for name, values in BEFORE.items():
        np.testing.assert_allclose(after[name], values, rtol=SOLVER_RTOL.get(name, 1e-12), atol=0, err_msg=name)
