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
``<!-- doctest: source PATH [PATH ...] -->``
    before a paragraph or table whose numbers come from a file (a benchmark result, the code
    defining a constant or default, the test asserting a value): every number in that
    paragraph/table (up to the next blank line) that is not exempt (below) or a checked block's
    number must be printed in one of the PATHs (relative to the repository root): the same digits,
    or a longer number it truncates (``0.051416`` in ``0.05141635``), or an integer written another
    way (``1e5`` as ``100_000``); the anchors (below) pin it to one line of the file that does.
``<!-- doctest: value EXPR -->``
    before a paragraph or table whose numbers a Python expression computes: ``EXPR`` is evaluated
    after the document's python blocks, in their namespace, with ``math``, ``np``, ``imp``
    (``importlib.import_module``) and ``default("pkg.mod.func", "arg")`` (an argument's default,
    read from the code) at hand, and gives a number or a list. Every number of the paragraph must
    equal one of the values at its printed precision, or be an input: a checked block's number or
    a constant written in ``EXPR`` itself; and every value must be quoted by the paragraph.
``<!-- doctest: copied PATH [PATH ...] -->``
    before a paragraph or table quoted from a recorded output (``benchmarks/results/*.md``, written
    by the command that file names): every line of it holding a number must occur verbatim in one
    of the PATHs (list bullets, ``**`` and runs of whitespace aside), so a one-digit change fails
    even for small numbers. For runs too long for CI (the 15-minute audit, a 10-epoch training run)
    and for timings; a test regenerates the file wherever the run fits in CI.
``<!-- doctest: checked KEY -->``
    before a paragraph or table whose numbers a test computes (a run too long for the doc test, e.g.
    in the acceptance step): the test calls ``doc_quotes("docs/x.md", "KEY", values, inputs)``,
    which checks the paragraph as ``value`` does; the marker is an error unless a file under tests/
    makes that call.
``<!-- doctest: measured (command and setting) -->``
    numbers that nothing checks: parsed, but ``tests/test_docs.py`` allows it in no document (record
    the run's output under ``benchmarks/results/`` and quote it with ``copied``, or have a test
    compute it with ``checked``).
``<!-- doctest: cite (reference) -->``
    before a paragraph whose numbers are citations of papers (not recomputed here); nothing checked,
    the reference must be given.

Consecutive markers before one paragraph all apply (e.g. ``source`` for the constants of a
paragraph and ``value`` for what it computes). ``<!-- NAME:BEGIN -->`` ... ``<!-- NAME:END -->``
encloses generated text that a test under ``tests/`` regenerates and compares (it must contain
``NAME:BEGIN``; e.g. the validation table of docs/soundness.md).

Numbers in prose
----------------
Every number outside fences (paragraphs, lists, tables, headings) must be accounted for
(``check_prose``, ``check_values``): a number in a marked paragraph as its markers say; elsewhere
it must equal, at its printed precision (strictly within half a unit of its last digit), a number
of the document's checked blocks (a console command or its output, python code or a ``# ->``
value; all of them compared with what runs). So ``2,730`` quoted in a sentence passes because the
``jaxdp plan`` output shows ``2,730``, and fails when either changes. Exempt, recognised
syntactically and nothing else:

* code: inline code spans (also across lines) and indented code blocks -- identifiers, argument
  values and formulas as typed, not results;
* link and image targets, HTML comments, dates (2026-11-29);
* references: an integer (or dotted, 4.1) after issue, class, item, theorem, section, step,
  notebook, reproducer, figure, lemma, equation, arXiv ... (``issue 20``, ``classes 1, 3 and 7``,
  ``Theorem 4.1``);
* versions: after Python/jax/numpy/CUDA/``version``, before ``+`` (``3.10+``), after ``CC BY``;
* years: 19xx/20xx in ``(2024)``, after ``et al.``, after a venue acronym (``ICML 2024``);
* numbering: a list or heading ordinal (``1.``), a table row's first cell holding the row's own
  number (1, 2, 3, ... counted from the header);
* powers: base and exponent of ``2^12``, ``2^-52``;
* formula digits: a single-digit integer (``-1``, ``2``) next to an operator or bracket
  (``= < > + - * / ^ ( ) [ ] { } , | ~``), standing alone, or a coefficient of a one-letter
  symbol (``2 b^2``, ``2 s + 1``); constants of formulas and settings such as ``sigma = 1``.

Everything else is a result: backed by a block, ``value``, ``checked``, ``source`` or ``copied``,
or a citation (``cite``).

Anchors (``tests/doc_anchors.tsv``): the list of every prose number of the documents, in order
(``copied`` and generated-region numbers aside, which are compared line by line), each with what
accounts for it -- a block- or source-backed number pinned to the one line (of its section's
checked blocks or of its source file) that prints it, a ``value``/``checked`` number to its marker,
an exempt number to its class. ``check_prose`` requires a document's numbers to be exactly the
listed ones and every pinned line to still print its number, so a one-digit change of any prose
number fails (``tests/test_docs.py`` changes a sample of each document's numbers; the closing
note's run changes every one), and so does an edit of a quoted constant in the code. After a
deliberate edit: ``python tests/_mddoctest.py --anchors``, then review the diff of the list.
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
    return _parse_text(path, open(path, encoding="utf-8").read())


def _parse_text(path: str, text: str) -> tuple[list[Block], list[Annotated], list[str]]:
    lines = text.splitlines()
    blocks, notes, errors = [], [], []
    i, pending = 0, None
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line.strip())
        if m:
            kind, arg = m.group(1), m.group(2)
            if kind not in ("skip", "tol", "source", "copied", "cite", "measured", "value", "checked"):
                errors.append(f"{path}:{i + 1}: unknown doctest marker {kind!r}")
            if kind in ("skip", "cite", "measured") and not arg.strip("() "):
                errors.append(f"{path}:{i + 1}: doctest {kind} marker needs a reason/reference")
            if kind == "checked" and not _checked_by(arg.strip()):
                errors.append(f"{path}:{i + 1}: no test under tests/ calls doc_quotes(..., {arg.strip()!r}, ...)")
            if kind in ("source", "copied", "cite", "measured", "value", "checked"):
                j = i + 1
                para = []
                while j < len(lines) and lines[j].strip():
                    para.append(lines[j])
                    j += 1
                for src in arg.split() if kind in ("source", "copied") else []:
                    if not os.path.exists(os.path.join(ROOT, src)):
                        errors.append(f"{path}:{i + 1}: doctest source {src!r} does not exist")
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


# ---------------------------------------------------------------------------------------------
# numbers in prose (outside fences)

PROSE_MARKERS = ("source", "copied", "measured", "cite", "value", "checked")
_REF = re.compile(
    r"(?:\b(?:issues?|class(?:es)?|items?|theorems?|reproducers?|sections?|notebooks?|lemmas?|steps?|"
    r"equations?|eqs?\.|algorithms?|figures?|propositions?|corollar(?:y|ies)|definitions?|arxiv)\s+"
    r"(?:\d+(?:\.\d+)?\s*(?:,|/|and|or|-)?\s*)*)$", re.I)
_VERSION = re.compile(r"\b(?:python|jax|jaxlib|numpy|scipy|version|versions|cuda)\s*$", re.I)
_DATE = re.compile(r"\b(?:19|20)\d\d-\d\d-\d\d\b")
_POWER = re.compile(r"\d+\s*\^\s*\{?[-+]?\d+\}?")
_FORMULA_NEIGHBOUR = set("=<>+-*/^()[]{},|~")


@dataclasses.dataclass
class ProseNumber:
    path: str
    line: int
    token: str
    status: str  # exempt:<class> | block | source | measured | cite | value | region | unbacked
    context: str  # the source line
    start: int  # column of the token in the line
    marker: int | None = None  # line of the marker that accounts for the number
    paragraph: tuple = ()  # lines of all the markers over its paragraph


def _blank(text: str, pattern: str, flags: int = 0) -> str:
    """``text`` with every match of ``pattern`` replaced by spaces (columns kept)."""
    return re.sub(pattern, lambda m: " " * len(m.group(0)), text, flags=flags)


def _exemption(line: str, clean: str, start: int, end: int, tok: str, ordinal: bool = False) -> str | None:
    """The syntactic class of a non-result number, or None for a result (see the module docstring)."""
    before, after = clean[:start], clean[end:]
    if re.match(r"^\s*(?:[-*+]\s+|#+\s+)?\d+\.\s", line) and re.fullmatch(r"\s*(?:[-*+]\s+|#+\s+)?", before):
        return "list"
    if ordinal and re.fullmatch(r"\s*\|\s*", before):
        return "row"
    if _REF.search(before) and re.fullmatch(r"\d+(?:\.\d+)?", tok):
        return "reference"
    if _VERSION.search(before) or re.search(r"\bCC BY\s*$", before) \
            or re.fullmatch(r"\d+\.\d+", tok) and re.match(r"\+(?![\d.])", after):  # 3.10+
        return "version"
    if re.fullmatch(r"(?:19|20)\d\d", tok) and (before.rstrip().endswith(("(", "al.", "al.,")) or after.lstrip().startswith(")")
                                                 or re.search(r"\b[A-Z]{3,}\s*$", before)):  # (2024), ICML 2024
        return "year"
    for m in _POWER.finditer(clean):
        if m.start() <= start < m.end():
            return "power"
    if re.fullmatch(r"[-+]?\d", tok):
        prev = before.rstrip()[-1:] if before.strip() else ""
        nxt = after.lstrip()[:1]
        if prev in _FORMULA_NEIGHBOUR or nxt in _FORMULA_NEIGHBOUR or not prev and not nxt:
            return "formula"
        if re.match(r"\s*[A-Za-z](?:\^|\s*[-+*/)=]|\s*$)", after):  # a coefficient: 2 b^2, 2 s + 1
            return "formula"
    return None


def _row_ordinals(lines: list[str]) -> set[int]:
    """Lines (1-based) of table rows whose first cell is the row's own number (1, 2, 3, ... from the
    first row under the header): numbering, not data."""
    out, k = set(), 0
    for i, ln in enumerate(lines):
        if not ln.lstrip().startswith("|"):
            k = 0
            continue
        if re.fullmatch(r"\s*\|[\s:|-]+", ln):  # the header separator: rows are counted from here
            k = 1
            continue
        if k:
            m = re.match(r"\s*\|\s*(\d+)\s*\|", ln)
            if m and int(m.group(1)) == k:
                out.add(i + 1)
            k += 1
    return out


def _regions(lines: list[str]) -> set[int]:
    """Lines (1-based) inside ``<!-- NAME:BEGIN -->`` ... ``<!-- NAME:END -->``: generated text that a test
    under tests/ regenerates and compares (it must name ``NAME:BEGIN``)."""
    out, start = set(), None
    for i, ln in enumerate(lines):
        m = re.match(r"^<!--\s*([A-Z][A-Z0-9-]*):(BEGIN|END)\s*-->\s*$", ln.strip())
        if m and m.group(2) == "BEGIN":
            start = (m.group(1), i)
        elif m and start and m.group(1) == start[0]:
            if _generated_by(start[0]):
                out.update(range(start[1] + 1, i + 2))
            start = None
    return out


def _generated_by(name: str) -> str | None:
    tests = os.path.join(ROOT, "tests")
    for dirpath, _, files in os.walk(tests):
        for f in files:
            if f.endswith(".py") and f"{name}:BEGIN" in open(os.path.join(dirpath, f), encoding="utf-8").read():
                return os.path.join(dirpath, f)
    return None


def _in(sorted_values: np.ndarray, tok: str) -> bool:
    """Whether a value equal to ``tok`` at its printed precision is among ``sorted_values``."""
    # strictly within half a unit: 9.5 (a constant of a formula) does not back a quoted 10
    v, u = _num(tok), _unit(tok) * (1 - 1e-12)
    k = np.searchsorted(sorted_values, v - u, side="right")
    return bool(k < len(sorted_values) and abs(sorted_values[k] - v) < u)


def _block_numbers(blocks: list[Block]) -> list[float]:
    """Numbers of the blocks the harness runs: console commands and checked output, python code and
    ``# ->`` values (all compared with what runs, so a prose number equal to one of them is backed)."""
    out = []
    for b in blocks:
        if b.info in ("console", "python") and not (b.marker and b.marker[0] == "skip"):
            out += [_num(t) for t in NUMBER.findall(b.text)]
    return out


def _sections(lines: list[str], blocks: list[Block]):
    """(line -> section index, {section: its blocks}); sections run from a #/## heading to the next.

    A prose number is backed by the checked blocks of its own section, so a setting changed by one
    digit does not pass by equalling a number printed elsewhere."""
    heads, fence = [], None
    for i, ln in enumerate(lines):
        f = FENCE.match(ln)
        if fence:
            fence = None if ln.startswith(fence) else fence
        elif f:
            fence = f.group(1)
        elif re.match(r"#{1,2}\s", ln):
            heads.append(i + 1)
    starts = [0] + heads + [len(lines) + 1]

    def section(line_no):
        return int(np.searchsorted(starts, line_no, side="right")) - 1

    by_section: dict = {}
    for b in blocks:
        by_section.setdefault(section(b.line), []).append(b)
    return section, by_section


def prose_numbers(path: str, text: str | None = None) -> list[ProseNumber]:
    """Every number in the prose of a Markdown file, with how it is accounted for."""
    text = open(path, encoding="utf-8").read() if text is None else text
    lines = text.splitlines()
    blocks = _parse_text(path, text)[0]
    section, section_blocks = _sections(lines, blocks)
    backed_of = {k: np.array(sorted(_block_numbers(v)) or [np.nan]) for k, v in section_blocks.items()}
    # a section without checked blocks (an introduction summing up) is backed by the whole document's
    empty = np.array(sorted(_block_numbers(blocks)) or [np.nan])
    regions = _regions(lines)
    ordinals = _row_ordinals(lines)
    out: list[ProseNumber] = []
    markers: list = []  # (kind, argument, line) of the prose markers over the current paragraph
    fence, prev_blank, in_code, span_open, prev_marker = None, True, False, False, False
    for i, line in enumerate(lines):
        if fence:
            if line.startswith(fence):
                fence = None
            prev_blank = False
            continue
        f = FENCE.match(line)
        if f:
            fence, markers = f.group(1), []
            continue
        if not line.strip():
            markers, prev_blank, span_open = [], True, False
            continue
        m = MARKER.match(line.strip())
        if m:
            if m.group(1) in PROSE_MARKERS:  # consecutive markers all apply to the paragraph below
                markers = (markers if prev_marker else []) + [(m.group(1), m.group(2), i + 1)]
            prev_marker = True
            prev_blank = False
            continue
        prev_marker = False
        in_code = line.startswith(("    ", "\t")) and (prev_blank or in_code)
        prev_blank = False
        clean = _blank(line, r"<!--.*?-->")
        clean = _blank(clean, r"\]\([^)]*\)")  # link targets
        if span_open:  # an inline code span continued from the line before
            close = clean.find("`")
            clean = " " * len(clean) if close < 0 else " " * (close + 1) + clean[close + 1:]
            span_open = close < 0
        clean = _blank(clean, r"`[^`]*`")  # inline code
        if "`" in clean:  # a span that continues on the next line
            k = clean.index("`")
            clean, span_open = clean[:k] + " " * (len(clean) - k), True
        clean = _blank(clean, _DATE.pattern)
        clean = re.sub(r"(?<=\d) (?=\d{3}(?!\d))", ",", clean)  # 200 000 is one number (column kept)
        for mt in NUMBER.finditer(clean):
            tok, s, e = mt.group(0), mt.start(), mt.end()
            if tok.endswith("."):  # a sentence's full stop, not a decimal point
                tok, e = tok[:-1], e - 1
            if re.match(r"[A-Za-wyz_]", clean[e:e + 1]):  # part of a name (01_shuffling, 3D)
                continue
            ex = "code" if in_code else _exemption(line, clean, s, e, tok, i + 1 in ordinals)
            at = None
            if ex:
                status = "exempt:" + ex
            elif i + 1 in regions:
                status = "region"
            elif markers:
                status, at = _marked_status(markers, backed_of.get(section(i + 1), empty), tok, line)
            else:
                status = "block" if _in(backed_of.get(section(i + 1), empty), tok) else "unbacked"
            out.append(ProseNumber(path, i + 1, tok, status, line, s, at, tuple(k[2] for k in markers)))
    return out


def _marked_status(markers: list, backed: np.ndarray, tok: str, text: str = "") -> tuple[str, int]:
    """How a number in a marked paragraph is accounted for: (status, line of the deciding marker).
    measured/cite accept anything; ``copied``: the number's whole line occurs in the file; otherwise
    a checked block's number, a number occurring in a ``source`` file, or (checked later, by
    ``check_values``) a ``value`` marker's number."""
    for kind, _, line in markers:
        if kind in ("measured", "cite"):
            return kind, line
    for kind, arg, line in markers:
        if kind == "copied":
            return ("copied" if any(_copied_line(text) in _copied_text(src) for src in arg.split())
                    else "copied-missing"), line
    sources = [(arg, line) for kind, arg, line in markers if kind == "source"]
    if sources and _in(backed, tok):
        return "block", sources[0][1]
    for arg, line in sources:
        if any(_printed_in(src, tok) for src in arg.split()):
            return "source", line
    for kind, _, line in markers:
        if kind in ("value", "checked"):
            return kind, line
    return "source-missing", sources[0][1]


def check_prose(path: str, text: str | None = None) -> list[str]:
    """Static part of the prose check: every number is exempt, backed by a block, marked, or (for
    ``source``) occurs in the source file, and (for the project's documents) is the number pinned at
    its place in tests/doc_anchors.tsv; ``value`` paragraphs are checked by ``check_values``."""
    nums = prose_numbers(path, text)
    markers = _prose_markers(path, text)
    errors, seen = [], set()
    for n in nums:
        if n.status == "unbacked":
            errors.append(f"{n.path}:{n.line}: {n.token} in prose is not backed: quote it from a checked block, "
                          f"or mark the paragraph (doctest: value/source/measured/cite): {n.context.strip()[:100]}")
        elif n.status == "copied-missing" and (n.line, "copied") not in seen:
            seen.add((n.line, "copied"))
            paths = " or ".join(markers[n.marker][1].split())
            errors.append(f"{n.path}:{n.line}: this line is not in {paths} (a copied paragraph quotes its "
                          f"file's lines verbatim): {n.context.strip()[:100]}")
        elif n.status == "source-missing":
            paths = " or ".join(markers[n.marker][1].split())
            errors.append(f"{n.path}:{n.line}: {n.token} does not occur in {paths}")
    if not errors and os.path.abspath(path) in doc_files():
        errors += check_anchors(path, text)
    return errors


def _prose_markers(path: str, text: str | None = None) -> dict[int, tuple[str, str]]:
    """{marker line: (kind, argument)} of the prose markers of a file."""
    text = open(path, encoding="utf-8").read() if text is None else text
    out = {}
    for i, ln in enumerate(text.splitlines()):
        m = MARKER.match(ln.strip())
        if m and m.group(1) in PROSE_MARKERS:
            out[i + 1] = (m.group(1), m.group(2))
    return out


_COPIED_CACHE: dict[str, str] = {}


def _copied_line(line: str) -> str:
    """A document line as ``copied`` compares it: list bullet, emphasis and runs of whitespace dropped."""
    line = re.sub(r"^\s*(?:[-*+]\s+|>\s*)", "", line)
    return " ".join(line.replace("**", "").split())


def _copied_text(rel: str) -> str:
    """A recorded output file as one string, whitespace collapsed, so a wrapped doc line still matches."""
    if rel not in _COPIED_CACHE:
        ref = open(os.path.join(ROOT, rel), encoding="utf-8").read()
        _COPIED_CACHE[rel] = "\n".join(_copied_line(ln) for ln in ref.splitlines())
    return _COPIED_CACHE[rel]


_PRINTED_CACHE: dict[str, tuple[set, list, set, set]] = {}


def _plain(tok: str) -> str:
    """A number as printed, normalised: no sign '+', no thousands commas, no trailing decimal zeros."""
    tok = tok.lstrip("+").replace(",", "")
    if "." not in tok or "e" in tok.lower() or not tok.endswith("0"):
        return tok
    return tok.rstrip("0").rstrip(".")


def _printed_sets(text: str) -> tuple[set, list, set, set]:
    text = re.sub(r"(?<=\d)_(?=\d)", "", text)
    raw = [t.lstrip("+").replace(",", "") for t in NUMBER.findall(text)]
    return {_plain(t) for t in raw}, raw, {_num(t) for t in raw if "." not in t}, set(raw)


def _prints(sets: tuple[set, list, set, set], tok: str) -> bool:
    exact, raw, whole, raw_set = sets
    p = tok.lstrip("+").replace(",", "")
    if p in raw_set or ("." not in p and _plain(p) in exact):
        return True
    if "e" in p.lower():
        return _num(p) in whole or any(_num(t) == _num(p) for t in raw if "e" in t.lower())
    if "." not in p:
        return any(t.startswith(p + ".") for t in raw) or _num(p) in whole
    # a truncation keeps every printed digit, trailing zeros included (0.990 is not a truncation of 0.999)
    return any(t.startswith(p) and t[len(p):].isdigit() for t in raw)


def _printed_in(rel: str, tok: str) -> bool:
    """Whether the source file prints ``tok``: the same digits (``0.94`` in ``0.94``), or a longer
    number that ``tok`` truncates (``0.051416`` in ``0.05141635``, ``709`` in ``709.78``), or, for
    integers and powers of ten, the same value written another way (``1e5`` as ``100_000``).  Stricter
    than equality at the printed precision, which let a changed digit pass whenever the changed
    number rounded to some other number of the file."""
    if rel not in _PRINTED_CACHE:
        _PRINTED_CACHE[rel] = _printed_sets(open(os.path.join(ROOT, rel), encoding="utf-8").read())
    return _prints(_PRINTED_CACHE[rel], tok)


def _default(dotted: str, arg: str) -> Any:
    """Default value of argument ``arg`` of the function ``dotted`` (``"pkg.module.func"``), read from
    the code, so a doc quoting a default stays in step with it."""
    import importlib
    import inspect

    mod, _, name = dotted.rpartition(".")
    return inspect.signature(getattr(importlib.import_module(mod), name)).parameters[arg].default


def _imp(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


# names a `value` expression may use besides the document's own python namespace
VALUE_HELPERS = {"math": math, "np": np, "imp": _imp, "default": _default}


def check_values(path: str, ns: dict, text: str | None = None, cache: dict | None = None) -> list[str]:
    """Dynamic part: each ``value EXPR`` marker's expression, evaluated in the document's python
    namespace, gives the numbers its paragraph quotes; every such prose number must equal one of them
    at its printed precision, and every value must be quoted (no idle expression)."""
    text = open(path, encoding="utf-8").read() if text is None else text
    nums = prose_numbers(path, text)
    inputs = _block_numbers(_parse_text(path, text)[0])
    errors = []
    for line, (kind, expr) in _prose_markers(path, text).items():
        if kind != "value":
            continue
        key = (path, expr)
        if cache is not None and key in cache:
            values = cache[key]
        else:
            for k, v in VALUE_HELPERS.items():
                ns.setdefault(k, v)
            try:
                values = np.ravel(np.asarray(eval(expr, ns), dtype=float))  # noqa: S307 - our own documentation
            except Exception as exc:  # noqa: BLE001 - reported as a doc error
                errors.append(f"{path}:{line}: doctest value {expr!r} raised {exc!r}")
                continue
            if cache is not None:
                cache[key] = values
        # inputs: the blocks' numbers, and the constants the expression itself shows
        errors += _quoted(path, nums, line, values, inputs + [_num(t) for t in NUMBER.findall(expr)], f"value {expr!r}")
    return errors


def _quoted(path, nums, line, values, inputs, what) -> list[str]:
    """Every number of the paragraph under marker ``line`` equals one of ``values`` at its printed
    precision or is one of ``inputs``; every value is quoted."""
    values = np.ravel(np.asarray(values, dtype=float))
    backed = np.array(sorted(inputs) or [np.nan])
    para = [n for n in nums if line in n.paragraph]
    used = np.zeros(len(values), bool)
    errors = []
    for n in para:
        v, u = _num(n.token), _unit(n.token)
        hit = np.abs(values - v) <= u * (1 + 1e-12)
        used |= hit
        if n.status in ("value", "checked") and n.marker == line and not hit.any() and not _in(backed, n.token):
            errors.append(f"{path}:{n.line}: {n.token} quoted, {what} gives {values.tolist()}")
    for v in values[~used]:
        errors.append(f"{path}:{line}: {what} computed {v!r}, which the paragraph does not quote")
    return errors


def doc_quotes(rel: str, key: str, values, inputs=()) -> list[str]:
    """For a test that computes what a document quotes (a run too long for the doc test itself, e.g.
    in the acceptance step): the paragraph under ``<!-- doctest: checked KEY -->`` in ``rel`` quotes
    exactly ``values`` (each at its printed precision; ``inputs`` are the settings it also shows).
    Returns the errors; the caller asserts there are none."""
    path = os.path.join(ROOT, rel)
    text = open(path, encoding="utf-8").read()
    lines = [ln for ln, (kind, arg) in _prose_markers(path, text).items() if kind == "checked" and arg.strip() == key]
    if len(lines) != 1:
        return [f"{rel}: {len(lines)} 'doctest: checked {key}' markers, expected one"]
    return _quoted(rel, prose_numbers(path, text), lines[0], values, list(inputs), f"the test of {key!r}")


def _checked_by(key: str) -> str | None:
    """The test file that calls ``doc_quotes(..., KEY, ...)`` for a ``checked KEY`` marker."""
    tests = os.path.join(ROOT, "tests")
    pat = re.compile(r"doc_quotes\([^)]*[\"']" + re.escape(key) + r"[\"']")
    for dirpath, _, files in os.walk(tests):
        for f in files:
            if f.endswith(".py") and pat.search(open(os.path.join(dirpath, f), encoding="utf-8").read()):
                return os.path.join(dirpath, f)
    return None


# ------------------------------------------------------------------------------------------------
# anchors: each block- or source-backed prose number pinned to the line that states it
# ------------------------------------------------------------------------------------------------
#
# "Printed somewhere in the file" lets a changed digit pass whenever the file also prints the
# changed number (0.3 -> 0.4 in a module full of constants), and a ``value`` paragraph accepts a
# setting changed into another input.  tests/doc_anchors.tsv lists every prose number of the
# documents, in order (``copied`` and generated ones aside: they are compared line by line), each
# with what accounts for it: a block- or source-backed number is pinned to one line of its source
# file or of its section's checked blocks, which must still exist and print it; a ``value`` or
# ``checked`` number to its marker (the dynamic check compares it); an exempt one (a reference, a
# version, a code span) to its class.  A document's numbers must be exactly the listed ones, so a
# one-digit change anywhere in its prose fails, and so does a change of a constant in the code that
# the document quotes.  After editing a document or a pinned line: ``python tests/_mddoctest.py
# --anchors``, and review the diff (each row shows what the number is pinned to).

ANCHORS = os.path.join(ROOT, "tests", "doc_anchors.tsv")
_WORD = re.compile(r"[a-z_][a-z_]+")


def _squash(line: str) -> str:
    return " ".join(line.split())


def _rel_doc(path: str) -> str:
    return os.path.relpath(os.path.abspath(path), ROOT)


_LINES_CACHE: dict[str, list] = {}


def _source_lines(rel: str) -> list[tuple[str, tuple]]:
    """(whitespace-squashed line, its printed numbers) for each line of a file that has a number."""
    if rel not in _LINES_CACHE:
        lines = open(os.path.join(ROOT, rel), encoding="utf-8").read().splitlines()
        _LINES_CACHE[rel] = [(_squash(ln), _printed_sets(ln)) for ln in lines if re.search(r"\d", ln)]
    return _LINES_CACHE[rel]


def _candidates(n: ProseNumber, lines: list[str], blocks: list[Block], markers: dict) -> list[tuple[str, str]]:
    """What may account for ``n``: for a block- or source-backed number the lines that print it
    (file, whitespace-squashed line), in file order; otherwise its one status (``value`` and
    ``checked`` with the marker's argument, ``exempt`` with its class)."""
    kind, _, detail = n.status.partition(":")
    if kind in ("value", "checked", "cite"):
        return [(kind, _squash(markers[n.marker][1]))]
    if kind not in ("source", "block"):
        return [(kind, detail)]
    out = []
    if kind == "source":
        for k in n.paragraph:
            mkind, arg = markers[k]
            for src in arg.split() if mkind == "source" else []:
                out += [(src, ln) for ln, sets in _source_lines(src) if _prints(sets, n.token)]
        return out
    section, by_section = _sections(lines, blocks)
    own = by_section.get(section(n.line)) or blocks
    for b in own:
        if b.info in ("console", "python") and not (b.marker and b.marker[0] == "skip"):
            for ln in b.text.splitlines():
                vals = np.array(sorted(_num(t) for t in NUMBER.findall(ln)) or [np.nan])
                if _in(vals, n.token):
                    out.append((_rel_doc(n.path), _squash(ln)))
    return out


def _pinned(path: str, text: str | None = None) -> list[tuple[ProseNumber, list[tuple[str, str]]]]:
    """Every prose number but the ``copied`` and generated-region ones (those are compared line by
    line with their files already), with what may account for it."""
    text = open(path, encoding="utf-8").read() if text is None else text
    lines, blocks, markers = text.splitlines(), _parse_text(path, text)[0], _prose_markers(path, text)
    return [(n, _candidates(n, lines, blocks, markers)) for n in prose_numbers(path, text)
            if n.status not in ("copied", "region")]


def _read_anchors() -> dict[str, list[tuple[str, str, str]]]:
    out: dict = {}
    if os.path.exists(ANCHORS):
        for row in open(ANCHORS, encoding="utf-8").read().splitlines():
            doc, tok, src, line = row.split("\t")
            out.setdefault(doc, []).append((tok, src, line))
    return out


def check_anchors(path: str, text: str | None = None) -> list[str]:
    """The document's prose numbers are the listed ones, each still accounted for as listed."""
    rel = _rel_doc(path)
    pins = _read_anchors().get(rel, [])
    nums = _pinned(path, text)
    hint = "; after a deliberate edit run `python tests/_mddoctest.py --anchors` and review the diff"
    errors = []
    for i, (n, cands) in enumerate(nums):
        if i >= len(pins) or pins[i][0] != n.token:
            errors.append(f"{rel}:{n.line}: {n.token} is not the number pinned at this place in "
                          f"tests/doc_anchors.tsv ({pins[i][0] if i < len(pins) else 'none'}){hint}")
            break
        if pins[i][1:] not in cands:
            errors.append(f"{rel}:{n.line}: {n.token}: pinned to {pins[i][1]} {pins[i][2][:80]!r}, which no "
                          f"longer accounts for it{hint}")
    if not errors and len(pins) > len(nums):
        errors.append(f"{rel}: tests/doc_anchors.tsv pins {len(pins) - len(nums)} more number(s) than the "
                      f"document has (first: {pins[len(nums)][0]}){hint}")
    return errors


def write_anchors(files: list[str]) -> None:
    """List every number, a backed one pinned to the candidate line sharing most words with its own."""
    rows = []
    for path in files:
        for n, cands in _pinned(path):
            if not cands:
                continue  # check_prose reports it
            words = set(_WORD.findall(n.context.lower()))
            best = max(cands, key=lambda c: len(words & set(_WORD.findall(c[1].lower()))))
            rows.append("\t".join((_rel_doc(path), n.token) + best))
    with open(ANCHORS, "w", encoding="utf-8") as fh:
        fh.write("\n".join(rows) + "\n")


def doc_files() -> list[str]:
    """README.md and every docs/*.md: the documents the harness checks."""
    import glob

    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--anchors"]:
        raise SystemExit("usage: python tests/_mddoctest.py --anchors  (rewrite tests/doc_anchors.tsv)")
    write_anchors(doc_files())
    print(f"wrote {ANCHORS}")
