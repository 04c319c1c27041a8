"""Traced programs kept on disk beside JAX's persistent compilation cache.

JAX's persistent cache stores compiled programs, not traces: a new process still traces and lowers
a jaxdp program (about half a second for a Poisson eps, seconds for the CLI's) before it can look
the compiled one up.  :func:`call` keeps the traced program too, as a :mod:`jax.export` artifact
in ``<compilation cache>/jaxdp-traces/``; a later process loads it, and JAX finds the compiled
program under the same key as before, so neither is redone.

It is on exactly when JAX's persistent compilation cache is (``JAXDP_CACHE_DIR=off`` switches both
off) and only for concrete arguments (inside a trace the caller's own program is being built).
An entry is keyed by the jaxdp source (every ``.py`` file of the package, so an edit invalidates
it), the JAX and jaxlib versions, the backend, the JAX settings that change a trace (x64, default
precision and promotion rules), the function, its static settings and the argument shapes and
dtypes; anything that fails to load is rebuilt.  Entries are pickles of
``jax.export.Exported`` (JAX's own serialisation needs the ``flatbuffers`` package, which jaxdp
does not depend on); like the compiled programs beside them they are trusted local files, and
deleting the directory is always safe.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib
import pickle
import tempfile

import jax
import jaxlib
import numpy as np

from . import _config

_CALLS = {}  # key -> jitted call of the loaded program (one per process)
_CONFIG = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_dtype_promotion", "jax_numpy_rank_promotion",
           "jax_default_prng_impl")


@functools.lru_cache(maxsize=None)
def _source_key() -> str:
    root = pathlib.Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    h.update(f"{jax.__version__} {jaxlib.__version__} {jax.default_backend()}".encode())
    return h.hexdigest()


def directory():
    """Where traced programs are kept (``None``: JAX's persistent compilation cache is off)."""
    base = jax.config.jax_compilation_cache_dir
    return os.path.join(base, "jaxdp-traces") if base else None


def _dtype(a):
    return a.dtype if hasattr(a, "dtype") else np.result_type(a)


def _key(fun, static, args) -> str:
    leaves, tree = jax.tree_util.tree_flatten(args)
    sig = [(np.shape(a), str(_dtype(a))) for a in leaves]
    # the settings that change what a trace contains (jaxdp's code and JAX's version are in _source_key)
    cfg = [getattr(jax.config, k, None) for k in _CONFIG]
    text = repr((fun.__module__, fun.__qualname__, sorted(static.items()), sig, str(tree), cfg))
    return hashlib.sha256((_source_key() + text).encode()).hexdigest()[:32]


def _load(path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception:  # noqa: BLE001  (missing, partly written, or from another JAX: rebuild)
        return None


def _save(path, exported):
    try:
        # the reverse-mode rule is a closure (not picklable); a concrete call never differentiates
        exported = dataclasses.replace(exported, _get_vjp=None)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(exported, f)
        os.replace(tmp, path)  # atomic: concurrent processes never read half an entry
    except Exception:  # noqa: BLE001  (an unwritable cache only costs time)
        pass


def call(core, args, **static):
    """``core(*args, **static)`` for a program of :func:`jaxdp._config.jit`, traced at most once per
    machine for these settings (``static``: its static keyword arguments, hashable; ``args`` a
    tuple of arrays or pytrees of them).

    Falls back to ``core`` itself where the cache is off, an argument is traced, or another program
    is being traced (constants inside a ``jit``: the call becomes part of that program).
    """
    d = directory()
    if d is None or _config.staging() or any(isinstance(a, jax.core.Tracer) for a in jax.tree_util.tree_leaves(args)):
        return core(*args, **static)
    fun = core.__wrapped__
    key = _key(fun, static, args)
    run = _CALLS.get(key)
    if run is None:
        path = os.path.join(d, key + ".pkl")
        exported = _load(path)
        if exported is None:
            specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), _dtype(a)), args)
            exported = jax.export.export(jax.jit(functools.partial(fun, **static)))(*specs)
            _save(path, exported)
        run = _CALLS[key] = jax.jit(exported.call, compiler_options=_config.COMPILER_OPTIONS)
    return run(*args)
