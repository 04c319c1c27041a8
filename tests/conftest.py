import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")

import jax  # noqa: E402
import jaxdp  # noqa: F401,E402  (float64)

# One on-disk compilation cache for the run's workers (xdist): a program compiled by one worker is
# loaded by the other instead of compiled again (a 2^12-cell shuffled eps(delta) takes ~33 s to
# compile and ~2 s to run on a CI core).  Keyed by JAX on the program and versions, so a stale
# entry is never used; JAXDP_TEST_JAX_CACHE="" switches it off.
_cache = os.environ.get("JAXDP_TEST_JAX_CACHE", os.path.join(os.path.dirname(os.path.dirname(__file__)), ".jax-test-cache"))
if _cache:
    os.makedirs(_cache, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", _cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
else:  # off means off: not the library's default user cache either (jaxdp._config)
    jax.config.update("jax_compilation_cache_dir", None)
from hypothesis import Phase, settings  # noqa: E402

# CI: fixed examples, no shrinking (each shrink step recompiles or re-runs a JAX batch; a failure
# reports its first counterexample, which the thorough profile can then shrink)
settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True, database=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import gc  # noqa: E402

import pytest  # noqa: E402

_RSS_LIMIT = 6 * 2**30  # bytes; CI has 24 GiB for two workers


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@pytest.fixture(autouse=True, scope="module")
def _bound_worker_memory():
    """Drop JAX's compiled programs after a module once a worker holds more than 6 GiB.

    A CI worker that ran several hundred tests aborted (faulthandler dump, no Python error) in
    tests/test_calibrate.py; every module compiles its own programs, so the caches of earlier
    modules only cost memory.  Below the limit nothing is dropped (modules that share compilations
    keep them).
    """
    yield
    if _rss() > _RSS_LIMIT:
        import jax

        jax.clear_caches()
        gc.collect()


# Tests of one module mostly share compiled programs (module fixtures, the same entry point at the
# same grid).  With `--dist loadgroup` an ungrouped test goes to whichever worker is free, so both
# workers compiled the same program side by side: tests/test_calibrate.py's module fixture took
# 110 s of setup on *each* worker in one run (55 s alone from a cold cache, 18 s from a warm one).
# So every ungrouped test is grouped with its module; the modules below hold independent heavy
# tests (each document's blocks, each notebook) and keep per-test distribution.
_SPLIT_MODULES = {"tests/test_docs.py", "tests/test_notebooks.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module in _SPLIT_MODULES or item.get_closest_marker("xdist_group") is not None:
            continue
        item.add_marker(pytest.mark.xdist_group(module))
