"""Float64 for the accountant, and a persistent compilation cache on by default.

Privacy accounting needs float64: deltas of 1e-8 are differences of probabilities close to one,
PLD grids hold 1e5-1e6 cells whose masses are summed, and FFT powers of characteristic functions
lose ~E * 2^-24 relative accuracy in float32, which would silently give wrong privacy numbers.
Importing :mod:`jaxdp` therefore enables ``jax_enable_x64`` (documented in the README).  All
public entry points cast their inputs to float64; float32 inputs are widened (exact), never used
for the computation.

Compiling jaxdp's programs costs far more than running them (seconds to a minute for a PLD
accountant on a small machine, milliseconds to run), so importing jaxdp also points JAX's
persistent compilation cache at ``$JAXDP_CACHE_DIR`` (default ``$XDG_CACHE_HOME/jaxdp/jax``, i.e.
``~/.cache/jaxdp/jax``): a second process loads what the first compiled.  ``JAXDP_CACHE_DIR=off``
switches this off; a cache directory the user already gave JAX (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config``) is left as it is.  The cache is keyed by JAX on the program, the JAX version and the
device, so a stale entry is never used.
"""

import functools
import os

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

#: XLA options of jaxdp's own compiled programs (a user's programs keep theirs).  XLA's CPU fusion
#: emitters, on by default, cost a third more compile time and twice the compiler's memory on the
#: PLD programs (docs/performance.md measures it) without running them faster; every backend other
#: than the CPU ignores the option.
COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False}


def staging():
    """Whether a program is being traced right now (``jit``, or a ``scan``/``while`` body): a new
    array is then a tracer of it (under ``vmap`` or ``grad`` alone it is not, and options apply)."""
    return isinstance(jnp.zeros(()), jax.core.Tracer)


def jit(fun=None, **kwargs):
    """``jax.jit`` whose top-level calls compile with :data:`COMPILER_OPTIONS`.

    JAX accepts compiler options only on the outermost program, so a call made while another
    program is being traced (a tracer among the arguments, or a new array being one: see
    :func:`staging`) runs the plain ``jax.jit`` of the same function and inherits the caller's
    options; JAX's own refusal is the last resort (it costs a second trace).  Also usable as
    ``functools.partial(jit, static_argnames=...)``.
    """
    if fun is None:
        return functools.partial(jit, **kwargs)
    plain = jax.jit(fun, **kwargs)
    tuned = jax.jit(fun, compiler_options=COMPILER_OPTIONS, **kwargs)

    @functools.wraps(fun)
    def call(*args, **kw):
        if staging() or any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves((args, kw))):
            return plain(*args, **kw)
        try:
            return tuned(*args, **kw)
        except ValueError as e:
            if "compiler_options" not in str(e):
                raise
            return plain(*args, **kw)

    return call


#: Programs that compile faster than this are not worth a disk entry.
CACHE_MIN_COMPILE_SECONDS = 0.5


def cache_dir():
    """The persistent compilation cache directory jaxdp uses (``None`` when switched off)."""
    env = os.environ.get("JAXDP_CACHE_DIR")
    if env is not None and env.strip().lower() in ("", "0", "off", "none", "false"):
        return None
    if env:
        return os.path.expanduser(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxdp", "jax")


def enable_cache(path=None):
    """Point JAX's persistent compilation cache at ``path`` (default :func:`cache_dir`).

    Returns the directory in use, or ``None`` when it is off or cannot be created (an unwritable
    cache only costs time, so that is not an error).
    """
    path = cache_dir() if path is None else path
    if path is None:
        return None
    try:
        os.makedirs(path, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECONDS)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    except Exception:  # noqa: BLE001
        return None
    return path


if not jax.config.jax_compilation_cache_dir:
    enable_cache()
