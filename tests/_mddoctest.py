"""Doc-test harness for README.md and docs/*.md (issue 19: docs that cannot go stale).

Every command output and every number a document quotes is either produced by a check this module
runs, or explicitly marked with where it comes from. ``tests/test_docs.py`` runs it over README.md
and every docs/*.md.

Fenced blocks
-------------
``console``
    Lines starting with ``$ `` are commands (``$ jaxdp ...``); the lines after each one, up to the
    next ``$ `` line or the end of the fence, are its expected stdout. Commands run in-process through
    ``jaxdp.cli.main(argv)`` with stdout captured (one process, so compiled programs are shared), in
    a temporary working directory (``--plot x.png`` writes there). A non-zero exit code fails.
    ``$ printf '...' > FILE`` writes an example input file there (run by the shell, no output).
``python``
    Executed; the blocks of one file share one namespace, in document order. Checked values: a
    top-level statement whose last line ends in ``# -> VALUE`` is compared after it runs with

    * the assigned value, for an assignment ``name = ...`` (the first target),
    * the value of the expression, for an expression statement.

    ``VALUE`` is a number (``0.0164956``, ``1.14e6``, ``2,730``) or a bracketed list of numbers
    (``[1.415, 0.98]``, compared elementwise), optionally followed by ``+- TOL`` (an absolute
    tolerance). Other comments are prose and are not checked.
``bash`` / ``sh``
    Commands shown, not run (installation lines). They may not quote results: a ``#`` comment in
    them may not contain a digit (quote results in a ``console`` block instead).
any other info string, or none
    Must be marked ``skip`` (below).

Comparison
----------
Expected and actual text are split into numbers and the text between them. Numbers (``1,138``,
``-0.5``, ``1.138e+06``, the 417 of ``417x``; not digits inside identifiers such as ``float64``) are compared to half a
unit of the expected number's last printed digit (``0.00999864`` -> 5e-9, ``1.138e+06`` -> 500,
``2,730`` -> 0.5), so changing any digit fails; a stated tolerance (``+- TOL`` in python, the
``tol`` marker below for a console block) replaces that. Text is compared after collapsing runs of
whitespace. ``...`` in expected output stands for any text (for what is not reproducible, such as
the ``(computed in ... s)`` timing line).

Markers (HTML comments, invisible when rendered)
-------------------------------------------------
``<!-- doctest: skip (reason) -->``
    on the line right before a fence: an illustrative block, not run. The reason is required.
``<!-- doctest: tol ABS -->``
    on the line right before a ``console`` fence: absolute tolerance for its numbers (for outputs
    that legitimately move in the last digits, e.g. across JAX versions); the reason goes in prose.
``<!-- doctest: source PATH -->``
    before a paragraph or table whose numbers come from a measurement stored elsewhere (a benchmark
    result file): every number in that paragraph/table (up to the next blank line) must occur in
    PATH (relative to the repository root), at the printed precision.
``<!-- doctest: measured (command and setting) -->``
    before a paragraph or table of numbers measured by a run too long for CI and not stored in a
    file (a training run, a timing): nothing checked, the command that produced them must be given.
``<!-- doctest: cite (reference) -->``
    before a paragraph whose numbers are citations of papers (not recomputed here); nothing checked,
    the reference must be given.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import math
import os
import re
import shlex
import subprocess
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MARKER = re.compile(r"^<!--\s*doctest:\s*(\w+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)\s*$")
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?(?!\d)|(?<![\w.])[-+]?\.\d+(?:[eE][-+]?\d+)?")
CHECK = re.compile(r"#\s*->\s*(.+?)\s*$")


@dataclasses.dataclass
class Block:
    path: str
    line: int  # 1-based line of the opening fence
    info: str
    text: str
    marker: tuple[str, str] | None  # (kind, argument) of the marker right before the fence


@dataclasses.dataclass
class Annotated:
    path: str
    line: int
    kind: str  # source | cite
    arg: str
    text: str


def parse(path: str) -> tuple[list[Block], list[Annotated], list[str]]:
    """Fenced blocks, marked paragraphs, and format errors of one Markdown file."""
    lines = open(path, encoding="utf-8").read().splitlines()
    blocks, notes, errors = [], [], []
    i, pending = 0, None
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line.strip())
        if m:
            kind, arg = m.group(1), m.group(2)
            if kind not in ("skip", "tol", "source", "cite", "measured"):
                errors.append(f"{path}:{i + 1}: unknown doctest marker {kind!r}")
            if kind in ("skip", "cite", "measured") and not arg.strip("() "):
                errors.append(f"{path}:{i + 1}: doctest {kind} marker needs a reason/reference")
            if kind in ("source", "cite", "measured"):
                j = i + 1
                para = []
                while j < len(lines) and lines[j].strip():
                    para.append(lines[j])
                    j += 1
                if kind == "source" and not os.path.exists(os.path.join(ROOT, arg)):
                    errors.append(f"{path}:{i + 1}: doctest source {arg!r} does not exist")
                notes.append(Annotated(path, i + 1, kind, arg, "\n".join(para)))
                pending = None
            else:
                pending = (kind, arg, i)
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            ticks, info = f.group(1), f.group(2).lower()
            j = i + 1
            while j < len(lines) and not lines[j].startswith(ticks):
                j += 1
            marker = (pending[0], pending[1]) if pending and pending[2] == i - 1 else None
            blocks.append(Block(path, i + 1, info, "\n".join(lines[i + 1:j]), marker))
            pending = None
            i = j + 1
            continue
        i += 1
    for b in blocks:
        skip = b.marker is not None and b.marker[0] == "skip"
        if b.info in ("bash", "sh") and not skip:
            for k, ln in enumerate(b.text.splitlines()):
                if "#" in ln and re.search(r"\d", ln.split("#", 1)[1]):
                    errors.append(f"{path}:{b.line + 1 + k}: a bash block may not quote results in comments "
                                  f"(use a console block): {ln.strip()}")
        elif b.info not in ("console", "python", "bash", "sh") and not skip:
            errors.append(f"{path}:{b.line}: fence with info {b.info!r} is neither console nor python: "
                          "mark it <!-- doctest: skip (reason) --> or give it an info string")
    return blocks, notes, errors


# ---------------------------------------------------------------------------------------------
# comparison


def _unit(tok: str) -> float:
    """Half a unit of the last printed digit of a number token."""
    t = tok.replace(",", "").lstrip("+-")
    mant, _, exp = t.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 0.5 * 10.0 ** (-decimals + (int(exp) if exp else 0))


def _num(tok: str) -> float:
    return float(tok.replace(",", ""))


def split(text: str) -> tuple[list[str], list[str]]:
    """(numbers, text pieces between them with whitespace collapsed)."""
    nums = NUMBER.findall(text)
    pieces = [" ".join(p.split()) for p in NUMBER.split(text)]
    return nums, pieces


def _compare_flat(expected: str, actual: str, tol: float | None) -> list[str] | None:
    """Number differences, or None when the text around the numbers differs."""
    en, ep = split(expected)
    an, ap = split(actual)
    if ep != ap or len(en) != len(an):
        return None
    diffs = []
    for e, a in zip(en, an):
        t = _unit(e) if tol is None else tol
        if not abs(_num(a) - _num(e)) <= t * (1 + 1e-12):
            diffs.append(f"number {e} printed, got {a} (tolerance {t:g})")
    return diffs


def _compare_ellipsis(expected: str, actual: str, tol: float | None) -> list[str]:
    """Expected text with ``...`` (any text, e.g. a timing) matched as a pattern, numbers then compared."""
    parts = []
    for k, piece in enumerate(expected.split("...")):
        if k:
            parts.append(r"(?:.*?)")
        nums, texts = split(piece)
        for j, t in enumerate(texts):
            parts.append(r"\s*".join(re.escape(w) if w else "" for w in t.split(" ")) if t else "")
            if j < len(nums):
                parts.append(r"\s*(" + NUMBER.pattern + r")\s*")
    pattern = r"\s*" + "".join(parts) + r"\s*"
    m = re.fullmatch(pattern, actual, flags=re.S)
    if not m:
        return [f"output does not match {expected!r}:\n{actual}"]
    diffs = []
    for e, a in zip(NUMBER.findall(expected.replace("...", " ")), [g for g in m.groups() if g is not None]):
        t = _unit(e) if tol is None else tol
        if not abs(_num(a) - _num(e)) <= t * (1 + 1e-12):
            diffs.append(f"number {e} printed, got {a} (tolerance {t:g})")
    return diffs


def compare(expected: str, actual: str, tol: float | None = None) -> list[str]:
    """Differences between expected and actual text (empty when they agree)."""
    if "..." in expected:
        return _compare_ellipsis(expected, actual, tol)
    flat = _compare_flat(expected, actual, tol)
    if flat is not None:
        return flat
    el, al = expected.strip().splitlines(), actual.strip().splitlines()
    diffs = []
    for k in range(max(len(el), len(al))):
        e = el[k] if k < len(el) else None
        a = al[k] if k < len(al) else None
        d = None if e is None or a is None else _compare_flat(e, a, tol)
        if d is None:
            diffs.append(f"line {k + 1}: expected {e!r}, got {a!r}")
        else:
            diffs += [f"line {k + 1}: {x}" for x in d]
    return diffs or ["text differs (blank lines)"]


def check_value(spec: str, value: Any) -> list[str]:
    """Compare a python value with a ``# -> VALUE [+- TOL]`` spec."""
    spec, _, tol_s = spec.partition("+-")
    tol = float(tol_s) if tol_s.strip() else None
    spec = spec.strip()
    toks = NUMBER.findall(spec)
    if not toks:
        return [f"'# -> {spec}' quotes no number"]
    arr = np.ravel(np.asarray(value, dtype=float))
    if arr.size != len(toks):
        return [f"'# -> {spec}' quotes {len(toks)} numbers, value has {arr.size}: {arr}"]
    out = []
    for t, v in zip(toks, arr):
        u = _unit(t) if tol is None else tol
        if not (math.isfinite(v) and abs(v - _num(t)) <= u * (1 + 1e-12)):
            out.append(f"quoted {t}, computed {v!r} (tolerance {u:g})")
    return out


# ---------------------------------------------------------------------------------------------
# running


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``jaxdp ARGV`` in this process: (exit code, stdout)."""
    from jaxdp import cli  # a module or a package: both expose main(argv)

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(argv)
    return int(rc or 0), buf.getvalue()


def console_commands(block: Block) -> list[tuple[str, str]]:
    """(command, expected stdout) pairs of a console block."""
    out: list[tuple[str, list[str]]] = []
    for ln in block.text.splitlines():
        if ln.startswith("$ "):
            out.append((ln[2:].strip(), []))
        elif out:
            out[-1][1].append(ln)
        elif ln.strip():
            raise AssertionError(f"{block.path}:{block.line}: console block text before the first '$ ' command")
    return [(c, "\n".join(e)) for c, e in out]


def check_console(block: Block, workdir: str) -> list[str]:
    tol = float(block.marker[1]) if block.marker and block.marker[0] == "tol" else None
    errors = []
    for cmd, expected in console_commands(block):
        argv = shlex.split(cmd)
        if argv[0] == "printf" and ">" in cmd:  # a doc's example input file, written in the work dir
            subprocess.run(cmd, shell=True, cwd=workdir, check=True)  # noqa: S602 - our own documentation
            continue
        if argv[0] != "jaxdp":
            errors.append(f"{block.path}:{block.line}: only jaxdp and `printf ... > file` commands run here: {cmd}")
            continue
        cwd = os.getcwd()
        os.chdir(workdir)
        try:
            rc, out = run_cli(argv[1:])
        finally:
            os.chdir(cwd)
        if rc != 0:
            errors.append(f"{block.path}:{block.line}: `{cmd}` exited {rc}")
            continue
        errors += [f"{block.path}:{block.line}: `{cmd}`: {d}" for d in compare(expected, out, tol)]
    return errors


def check_python(block: Block, ns: dict) -> list[str]:
    tree = ast.parse(block.text, filename=block.path)
    src = block.text.splitlines()
    errors = []
    for stmt in tree.body:
        last = src[stmt.end_lineno - 1]
        m = CHECK.search(last)
        if isinstance(stmt, ast.Expr) and m:
            code = compile(ast.Expression(stmt.value), block.path, "eval")
            value = eval(code, ns)  # noqa: S307 - our own documentation
        else:
            exec(compile(ast.Module([stmt], []), block.path, "exec"), ns)  # noqa: S102
            value = None
            if m:
                if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    errors.append(f"{block.path}:{block.line + stmt.end_lineno}: '# ->' on a statement that is "
                                  "neither an assignment nor an expression")
                    continue
                target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
                value = eval(ast.unparse(target), ns)  # noqa: S307
        if m:
            errors += [f"{block.path}:{block.line + stmt.end_lineno}: {d}" for d in check_value(m.group(1), value)]
    return errors


def check_source(note: Annotated) -> list[str]:
    if note.kind != "source":
        return []
    ref = open(os.path.join(ROOT, note.arg), encoding="utf-8").read()
    ref_nums = [(_num(t), t) for t in NUMBER.findall(ref)]
    errors = []
    for t in NUMBER.findall(note.text):
        v, u = _num(t), _unit(t)
        # printed at the same or finer precision in the source (a percentage may be quoted as-is)
        if not any(abs(rv - v) <= u * (1 + 1e-12) for rv, _ in ref_nums):
            errors.append(f"{note.path}:{note.line}: {t} does not occur in {note.arg}")
    return errors
