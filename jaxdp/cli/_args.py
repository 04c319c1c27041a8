"""Argument parsing of the ``jaxdp`` command: a parser with one-line errors and "did you mean"
suggestions, and the validated argument types (checked before JAX is imported)."""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re

from ._runtime import PROG


def suggestion(word, candidates):
    """``" (did you mean X?)"`` for the closest candidate, or ``""``."""
    close = difflib.get_close_matches(str(word), list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``jaxdp plan: error: ...``), exit code 2 and suggestions."""

    def error(self, message):  # noqa: D401
        msg = " ".join(str(message).split())
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", msg)
        if m and "did you mean" not in msg:
            msg += suggestion(m.group(1), re.findall(r"'?([\w-]+)'?", m.group(2)))
        self.exit(2, f"{self.prog}: error: {msg} (see '{self.prog} --help')\n")

    def unrecognized(self, extra):
        """Refuse unknown arguments from this (sub)command's parser, suggesting a close flag."""
        flags = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        hint = ""
        for word in extra:
            if word.startswith("-"):
                hint = hint or suggestion(word.split("=", 1)[0], flags)
        self.error(f"unrecognized arguments: {' '.join(extra)}{hint}")


def _number(text, what):
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{what}: {text!r} must be finite")
    return x


def ranged(what, lo=None, hi=None, lo_open=False, hi_open=False, integer=False):
    """A number type restricted to an interval (optionally whole numbers)."""
    def conv(text):
        x = _number(text, what)
        if integer and x != int(x):
            raise argparse.ArgumentTypeError(f"{what}: {text!r} must be a whole number")
        bad = (lo is not None and (x < lo or (lo_open and x == lo))) or (hi is not None and (x > hi or (hi_open and x == hi)))
        if bad:
            left = "(" if lo_open else "["
            right = ")" if (hi_open or hi is None) else "]"
            rng = f"{left}{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}{right}"
            raise argparse.ArgumentTypeError(f"{what}: {text!r} is outside {rng}")
        return int(x) if integer else x

    conv.__name__ = what
    return conv


def list_of(conv, what):
    """A comma-separated list of ``conv`` values (at most 10000)."""
    def parse(text):
        parts = str(text).replace(";", ",").split(",")
        if not parts or any(not p.strip() for p in parts):
            raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a comma-separated list of numbers")
        if len(parts) > 10000:
            raise argparse.ArgumentTypeError(f"{what}: at most 10000 values")
        return [conv(p.strip()) for p in parts]

    parse.__name__ = what
    return parse


SIGMA = ranged("noise multiplier", lo=0.0, lo_open=True)
DELTA = ranged("delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
EPS = ranged("epsilon", lo=0.0, lo_open=True)
EPS0 = ranged("epsilon", lo=0.0)
ROUNDS = ranged("rounds", lo=1.0, hi=1e12, integer=True)
EPOCHS = ranged("epochs", lo=1.0, hi=1e6, integer=True)
BATCH = ranged("batch size", lo=1.0, hi=1e9, integer=True)
PROB = ranged("sampling probability", lo=0.0, hi=1.0, lo_open=True)
STEPS = ranged("steps", lo=1.0, hi=1e12, integer=True)
ALPHA = ranged("alpha", lo=1.0, lo_open=True)
ACCURACY = ranged("accuracy", lo=0.0, hi=1.0, lo_open=True, hi_open=True)

#: jaxdp.core.accuracy.DEFAULT_ACCURACY, repeated here so that parsing does not import JAX
#: (tests/test_cli.py checks that the two agree)
DEFAULT_ACCURACY = 1e-2


def alpha(text):
    """A Renyi order > 1, or ``inf``."""
    if str(text).strip().lower() in ("inf", "infinity"):
        return float("inf")
    return ALPHA(text)


def plot_path(text):
    path = str(text)
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".png", ".pdf", ".svg"):
        raise argparse.ArgumentTypeError(f"--plot: {path!r} must end in .png, .pdf or .svg")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"--plot: directory {parent!r} does not exist")
    return path


def common_parser():
    """The output options every subcommand shares."""
    common = Parser(add_help=False)
    g = common.add_argument_group("output")
    g.add_argument("--json", action="store_true", help="print JSON (for scripts) instead of tables")
    g.add_argument("--plot", metavar="FILE.png", type=plot_path, help="write a figure (.png, .pdf or .svg)")
    g.add_argument("--wide", action="store_true", help="do not split tables wider than 100 columns")
    g.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    g.add_argument("--no-cache", action="store_true", help="do not use the persistent JAX compilation cache")
    return common
