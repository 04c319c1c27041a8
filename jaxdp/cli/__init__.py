"""The ``jaxdp`` command: plan, account, compare and calibrate DP-SGD with shuffling; RPP tables.

Subcommands (``jaxdp SUBCOMMAND --help`` for each), one module each: ``plan``, ``shuffle``,
``poisson``, ``compare``, ``calibrate``, ``rpp``.  Every subcommand prints a human-readable table by
default, JSON with ``--json`` and writes a figure with ``--plot FILE.png``.  Bad input gives a
one-line message on stderr and exit code 2 (never a traceback).  Reference: ``docs/cli.md``.

Shared pieces: :mod:`._args` (parser, argument types), :mod:`._format` (tables, numbers,
footnotes, JSON), :mod:`._runtime` (JAX setup, cache, progress notes), :mod:`._compute` (the
batched JAX programs).  JAX is imported only after the arguments are parsed (``--help`` and input
errors are instant).  Compiled programs are kept in a persistent cache (``$JAXDP_CACHE_DIR``,
default ``~/.cache/jaxdp/jax``; ``--no-cache`` or ``JAXDP_CACHE_DIR=off`` disables it).
"""

from __future__ import annotations

import os
import sys

from . import calibrate, compare, plan, poisson, rpp, shuffle
from ._args import Parser, common_parser
from ._format import clean
from ._runtime import PROG, CLIError, cache_dir, quiet_native_logs

__all__ = ["main", "build_parser", "cache_dir", "clean", "CLIError"]

COMMANDS = (plan, shuffle, poisson, compare, calibrate, rpp)

EPILOG = ("Numbers are for add/remove adjacency. Lists are comma-separated (--sigma 0.8,1,2). "
          "Compiled programs are cached in $JAXDP_CACHE_DIR (default ~/.cache/jaxdp/jax).")


def build_parser():
    """The top-level parser; ``parser.subparsers`` maps each subcommand name to its parser."""
    from .. import __version__  # cheap: jaxdp/__init__ must stay importable without side effects

    p = Parser(prog=PROG, description="Differentially private accounting for DP-SGD with shuffling (f-DP), "
               "Poisson subsampling and Renyi Pufferfish privacy.", epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="SUBCOMMAND", parser_class=Parser)
    common = common_parser()
    p.subparsers = {m.NAME: m.add_parser(sub, common) for m in COMMANDS}
    return p


def _parse(parser, argv):
    args, extra = parser.parse_known_args(argv)
    if extra:
        if getattr(args, "cmd", None):
            parser.subparsers[args.cmd].unrecognized(extra)
        parser.unrecognized(extra)
    return args


def main(argv=None) -> int:
    """Entry point of the ``jaxdp`` command; returns the exit code (0 ok, 2 bad input, 1 internal error)."""
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except SystemExit as e:  # --help / --version (0) and usage errors (2)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    if not getattr(args, "cmd", None):
        print(f"{PROG}: error: choose a subcommand: plan, shuffle, poisson, compare, calibrate, rpp (see '{PROG} --help')",
              file=sys.stderr)
        return 2
    quiet_native_logs()
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, NotImplementedError) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"{PROG} {args.cmd}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - never a traceback for users; JAXDP_DEBUG=1 shows it
        if os.environ.get("JAXDP_DEBUG"):
            raise
        msg = " ".join(str(e).split())[:500]
        print(f"{PROG} {args.cmd}: internal error: {type(e).__name__}: {msg} (set JAXDP_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1
