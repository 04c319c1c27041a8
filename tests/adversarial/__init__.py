"""Adversarial suite (issue 20): every public quantity against rigorous bounds computed another way.

Each module covers one area (``test_poisson.py``, ``test_calibrate.py``, ``test_shuffle.py``,
``test_pufferfish.py``, ``test_validation.py``).  Property tests draw over the *whole validated
domain* of an entry point (down to its validated minimum noise, q up to 1, delta down to the
supported floor, far-apart and duplicated atoms, M in (1, 2)); every reproducer of issue 20 is a
``test_regression_*``.  Budgets: ``tests.properties._util.n_examples`` (CI profile: fixed seed,
whole suite under 3 minutes; ``HYPOTHESIS_PROFILE=thorough``: the larger on-demand profile).
"""
