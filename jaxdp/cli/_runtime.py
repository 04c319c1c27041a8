"""Process-level plumbing of the ``jaxdp`` command: errors, JAX setup, the compilation cache,
progress notes on stderr and the filter that keeps XLA's compile alarms off the user's screen."""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
import threading
import time

PROG = "jaxdp"

#: a computation running longer than this (seconds) gets a progress note on stderr
NOTE_AFTER_S = 2.0

#: substrings of the lines of XLA's "slow compile" alarm block (C++ logging on file descriptor 2)
_ALARM_START = "slow_operation_alarm"
_ALARM_BODY = ("Very slow compile", "[Compiling module", "XLA_FLAGS", "file a bug")


class CLIError(Exception):
    """A user error detected after parsing: one line on stderr, exit code 2."""


def quiet_native_logs():
    """Lower the C++ (XLA/TSL) log level of this process before JAX is imported.

    The CLI prints its own progress notes; XLA's ``Very slow compile? If you want to file a bug``
    alarm is not addressed to our users.  A value the user set explicitly is kept.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def cache_dir():
    """Persistent compilation cache directory (``None`` when disabled): the library's own
    (:func:`jaxdp._config.cache_dir`, ``$JAXDP_CACHE_DIR``)."""
    from .. import _config

    return _config.cache_dir()


def setup_jax(args):
    """Import JAX (float64 via jaxdp); the persistent compilation cache is the library's, which
    importing jaxdp turned on; ``--no-cache`` turns it off for this process."""
    import jax

    from .. import _config

    if getattr(args, "no_cache", False):
        jax.config.update("jax_compilation_cache_dir", None)
    else:
        _config.enable_cache()
    return jax


def import_module(name, what):
    """Import an optional part of jaxdp; a failure is a one-line user error."""
    try:
        return importlib.import_module(name)
    except Exception as e:  # another engineer's module may be unfinished
        raise CLIError(f"{what} is unavailable in this installation ({name}: {type(e).__name__}: {e})") from None


def note(args, msg):
    """One progress line on stderr (never with ``--quiet``)."""
    if not getattr(args, "quiet", False):
        print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


class _AlarmFilter:
    """Copies what is written to file descriptor 2 back to it, minus XLA's slow-compile alarm block."""

    def __init__(self):
        self.saved = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self.reader = os.fdopen(r, "r", errors="replace")
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self):
        skipping = False
        for line in self.reader:
            if _ALARM_START in line:
                skipping = True
                continue
            if skipping and (not line.strip() or set(line.strip()) == {"*"} or any(s in line for s in _ALARM_BODY)):
                continue
            skipping = False
            os.write(self.saved, line.encode())

    def close(self):
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(self.saved, 2)  # closes the pipe's write end: the pump sees EOF
        self.thread.join(timeout=5)
        os.close(self.saved)


# XLA work seen through JAX's public monitoring events: programs compiled (and their seconds), and
# programs loaded from the persistent cache (a cache hit is announced just before its duration)
_COMPILES = {"compiled": 0, "compiled_s": 0.0, "loaded": 0, "loaded_s": 0.0, "hit": False}
_TINY_S = 0.1  # compiles shorter than this (small helper programs) are not worth a mention


def _count_compiles():
    """Count XLA compilations and persistent-cache loads, so the closing note says which happened."""
    if _COMPILES.get("listening"):
        return
    from jax import monitoring

    def on_event(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            _COMPILES["hit"] = True

    def on_duration(event, secs, **_):
        if event != "/jax/core/compile/backend_compile_duration":  # one compile, or one cache load
            return
        if _COMPILES["hit"]:
            _COMPILES["loaded"] += 1
            _COMPILES["loaded_s"] += secs
        elif secs >= _TINY_S:
            _COMPILES["compiled"] += 1
            _COMPILES["compiled_s"] += secs
        _COMPILES["hit"] = False

    monitoring.register_event_listener(on_event)
    monitoring.register_event_duration_secs_listener(on_duration)
    _COMPILES["listening"] = True


def _done_note(what, seconds, before, cache_on):
    d = {k: _COMPILES[k] - before[k] for k in ("compiled", "compiled_s", "loaded", "loaded_s")}
    parts = []
    if d["compiled"]:
        parts.append(f"{d['compiled_s']:.1f} s compiling {d['compiled']} JAX program{'s' * (d['compiled'] > 1)}"
                     + ("; later runs load them from the persistent cache" if cache_on else "; the persistent cache is off"))
    if d["loaded"]:
        parts.append(f"{d['loaded_s']:.1f} s loading {d['loaded']} compiled program{'s' * (d['loaded'] > 1)} "
                     "from the persistent cache")
    return f"{what}: done in {seconds:.1f} s" + (f" ({'; '.join(parts)})" if parts else "")


@contextlib.contextmanager
def working(args, what):
    """Run a computation; after :data:`NOTE_AFTER_S` seconds say on stderr what is being done.

    Nothing is printed when the computation is fast (e.g. its programs are in the persistent
    cache).  Yields a dict whose ``"seconds"`` is set on exit.
    """
    info = {"seconds": float("nan")}
    timer = None
    cache_on = bool(cache_dir()) and not getattr(args, "no_cache", False)
    with contextlib.suppress(ImportError, AttributeError):
        _count_compiles()
    before = {k: _COMPILES[k] for k in ("compiled", "compiled_s", "loaded", "loaded_s")}
    if not getattr(args, "quiet", False):
        # what XLA does (compile, or load from the cache) is known only afterwards: the closing note says
        msg = f"{what}: working (each process traces its JAX programs, then compiles them or loads them from the cache)"
        timer = threading.Timer(NOTE_AFTER_S, note, (args, msg))
        timer.daemon = True
        timer.start()
    filt = None
    with contextlib.suppress(OSError, ValueError):
        filt = _AlarmFilter()
    t0 = time.time()
    try:
        yield info
    finally:
        info["seconds"] = time.time() - t0
        if timer is not None:
            timer.cancel()
        if filt is not None:
            filt.close()
        if timer is not None and info["seconds"] > NOTE_AFTER_S and not math.isnan(info["seconds"]):
            note(args, _done_note(what, info["seconds"], before, cache_on))


class Progress:
    """A minimal progress bar on stderr (only when stderr is a terminal and not ``--quiet``)."""

    def __init__(self, total, desc, enabled=True):
        self.total, self.desc, self.n = max(int(total), 1), desc, 0
        self.enabled = enabled and sys.stderr.isatty()
        self.t0 = time.time()
        self._draw()

    def _draw(self):
        if not self.enabled:
            return
        width = 28
        k = int(width * self.n / self.total)
        sys.stderr.write(f"\r{self.desc} [{'#' * k}{'.' * (width - k)}] {self.n}/{self.total} {time.time() - self.t0:5.1f}s")
        sys.stderr.flush()

    def update(self, n=1):
        self.n = min(self.n + n, self.total)
        self._draw()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


CHUNK = 4


def chunked(args, fn, cols, desc):
    """Run ``fn`` on fixed-size chunks (padded: one compiled signature) with a progress bar."""
    import numpy as np

    n = len(cols[0])
    out = {}
    bar = Progress(math.ceil(n / CHUNK), desc, enabled=not args.quiet) if n > CHUNK else None
    for i in range(0, n, CHUNK):
        part = [np.asarray(c[i:i + CHUNK], float) for c in cols]
        k = len(part[0])
        if n > CHUNK and k < CHUNK:
            part = [np.concatenate([p, np.repeat(p[-1:], CHUNK - k)]) for p in part]
        res = fn(*part)
        for key, v in res.items():
            out.setdefault(key, []).append(np.asarray(v)[:k])
        if bar:
            bar.update()
    if bar:
        bar.close()
    return {k: np.concatenate(v) for k, v in out.items()}
