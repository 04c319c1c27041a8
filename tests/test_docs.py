"""README.md and every docs/*.md cannot go stale (issue 19): their commands, outputs and numbers are
rerun and compared with the text, numbers in prose included. The format (console / python blocks,
``# -> VALUE`` checks, tolerances, ``doctest: skip|tol|source|value|measured|cite`` markers, the
exempt classes of prose numbers) is documented in ``tests/_mddoctest.py``.
"""

from __future__ import annotations

import pathlib
import sys

import pytest


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _mddoctest as md  # noqa: E402

ROOT = pathlib.Path(md.ROOT)
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _rel(p):
    return str(pathlib.Path(p).relative_to(ROOT))


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_doc_format_and_sources(path):
    """Well-formed markers and fences; numbers marked `source` occur in their source file."""
    _, _, errors = md.parse(str(path))
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_doc_prose_numbers(path):
    """Every number in prose is backed (a checked block's number, a value/source marker) or marked
    measured/cite, or is one of the exempt non-result classes of tests/_mddoctest.py."""
    errors = md.check_prose(str(path))
    assert not errors, f"{len(errors)} unbacked prose numbers:\n" + "\n".join(errors)


# The two documents that run the CLI's example commands (jaxdp shuffle, poisson, compare, compare
# --all-samplers, plan) are long checks, run in CI's acceptance step: each command compiles its own
# program on first use, 20-35 s apiece on a CI core (issue 18's cold-start figures), 110-140 s per
# document in the README's test command (2026-12-05).  Every other document's blocks run there.
_CLI_DOCUMENTS = {"README.md", "docs/cli.md"}


@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=pytest.mark.acceptance) if _rel(p) in _CLI_DOCUMENTS else p for p in FILES], ids=_rel)
def test_doc_blocks(path, tmp_path):
    """Every console command prints what the text shows; every python block runs and its `# ->` values hold."""
    blocks, _, _ = md.parse(str(path))
    ns: dict = {"__name__": "__doc__"}
    errors = []
    ran = 0
    for b in blocks:
        if b.marker and b.marker[0] == "skip":
            continue
        if b.info == "console":
            errors += md.check_console(b, str(tmp_path))
            ran += 1
        elif b.info == "python":
            errors += md.check_python(b, ns)
            ran += 1
    errors += md.check_values(str(path), ns)
    if not ran and not any(k == "value" for k, _ in md._prose_markers(str(path)).values()):
        pytest.skip("no executable blocks")
    assert not errors, "\n".join(errors)


def test_harness_catches_a_one_digit_change():
    """The comparison rule itself: any changed digit fails, the printed precision passes."""
    assert md.compare("gap 0.00999864 <= 0.01", "gap 0.009998641 <= 0.01") == []
    assert md.compare("gap 0.00999864 <= 0.01", "gap 0.00999874 <= 0.01")
    assert md.compare("M 2,730  ratio 417x", "M 2,731  ratio 417x")
    assert md.compare("1.138e+06", "1.1384e+06") == [] and md.compare("1.138e+06", "1.139e+06")
    assert md.compare("a  b\n c", "a b c") == [] and md.compare("a b", "a c")
    assert md.check_value("0.0164956", 0.01649561) == [] and md.check_value("0.0164956", 0.0164966)
    assert md.check_value("[1.5, 2]", [1.56, 2.4]) != []
    assert md.check_value("[1.5, 2]", [1.54, 2.4]) == []
    assert md.check_value("1.0 +- 0.1", 1.08) == []


def _one_digit(n, k):
    """``n``'s token with digit ``k`` of its mantissa increased by one (9 -> 0)."""
    return n.token[:k] + str((int(n.token[k]) + 1) % 10) + n.token[k + 1:]


def _mutated(lines, n, changed):
    ln = lines[n.line - 1]
    lines2 = lines.copy()
    lines2[n.line - 1] = ln[:n.start] + changed + ln[n.start + len(n.token):]
    return "\n".join(lines2) + "\n"


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_one_digit_change_in_prose_fails(path):
    """Changing one digit of any prose number, whatever accounts for it (a block, a source file, a
    value or checked marker, an exemption such as a version or a code span), makes the static check
    fail (issue 19).  A sample of 20 per document here (the README suite's budget, issue 18); every
    number of every document, first and last digit, in the closing note's run of the same loop.  (Generated regions and ``copied`` lines
    have their own tests: the region is regenerated, the line compared with its file.)"""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    nums = [n for n in md.prose_numbers(str(path)) if n.status not in ("region", "copied")]
    if not nums:
        pytest.skip("no prose numbers")
    for n in nums[:: max(1, len(nums) // 20)]:
        k = max(i for i, c in enumerate(n.token.lower().split("e")[0]) if c.isdigit())
        changed = _one_digit(n, k)
        assert md.check_prose(str(path), _mutated(lines, n, changed)), f"{_rel(path)}:{n.line}: {n.token} -> {changed}"


def test_anchors_catch_what_printed_somewhere_missed():
    """Two changes the older rule (the number occurs somewhere in the source file) let pass: the
    soundness note's 49 thresholds changed to 40 (tests/adversarial/test_poisson.py also prints 40),
    and a pinned code line changed under the document (its constant edited)."""
    path = ROOT / "docs" / "soundness.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    n = next(n for n in md.prose_numbers(str(path)) if n.token == "49" and "thresholds" in n.context)
    assert n.status == "source" and md._printed_in("tests/adversarial/test_poisson.py", "40")
    assert md.check_prose(str(path), _mutated(lines, n, "40"))
    rows = md._read_anchors()["docs/soundness.md"]
    i = next(i for i, r in enumerate(rows) if r[0] == "49")
    saved = md._read_anchors
    try:
        edited = {k: list(v) for k, v in saved().items()}
        edited["docs/soundness.md"][i] = ("49", rows[i][1], rows[i][2].replace("49", "50"))
        md._read_anchors = lambda: edited
        errors = md.check_prose(str(path))
    finally:
        md._read_anchors = saved
    assert errors and "no longer accounts for it" in errors[0], errors


def test_anchor_file_lists_only_checked_documents():
    assert set(md._read_anchors()) <= {_rel(p) for p in FILES}


def test_prose_rules_on_a_small_document(tmp_path):
    """The prose rules themselves: a result must be backed; exempt classes pass; markers back."""
    doc = tmp_path / "d.md"
    block = "```console\n$ jaxdp plan\nM exact 2,730\n```\n\n"
    cases = {
        "The exact M is 2,730.": [],  # equal to the block's output
        "The exact M is 2,731.": ["2,731"],
        "Python 3.10+, issue 20, Chua et al. (2024), `--sigma 0.7`, f >= 1 - a, 2^12.": [],
        "It takes 417 steps.": ["417"],
        "<!-- doctest: measured (a long run) -->\nIt takes 417 steps.": [],
        "<!-- doctest: source README.md -->\nIt is 417x fewer.": [],
        "<!-- doctest: source README.md -->\nIt is 419x fewer.": ["419"],
    }
    for prose, bad in cases.items():
        doc.write_text(block + prose + "\n", encoding="utf-8")
        errors = md.check_prose(str(doc))
        assert len(errors) == len(bad) and all(b in e for b, e in zip(bad, errors)), (prose, errors)
    doc.write_text("<!-- doctest: value [math.sqrt(2)] -->\nsqrt 2 = 1.4142.\n", encoding="utf-8")
    assert md.check_prose(str(doc)) == [] and md.check_values(str(doc), {}) == []
    doc.write_text("<!-- doctest: value [math.sqrt(2)] -->\nsqrt 2 = 1.4143.\n", encoding="utf-8")
    assert md.check_values(str(doc), {})


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_one_digit_change_in_recorded_numbers_fails(path):
    """Every number quoted from a recorded output (``copied``) fails the static check when one of its
    digits changes, however small the number (issue 19: no quoted number goes unchecked)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    nums = [n for n in md.prose_numbers(str(path)) if n.status == "copied"]
    if not nums:
        pytest.skip("no copied numbers")
    for n in nums[:: max(1, len(nums) // 20)]:
        k = max(i for i, c in enumerate(n.token) if c.isdigit())
        changed = n.token[:k] + str((int(n.token[k]) + 1) % 10) + n.token[k + 1:]
        ln = lines[n.line - 1]
        lines2 = lines.copy()
        lines2[n.line - 1] = ln[:n.start] + changed + ln[n.start + len(n.token):]
        assert md.check_prose(str(path), "\n".join(lines2) + "\n"), f"{_rel(path)}:{n.line}: {n.token} -> {changed}"


def test_no_quoted_number_is_left_unchecked():
    """No document marks numbers as merely `measured`: each is recomputed by a doc block, a `value`
    expression or a test (`checked`), or quoted line by line from a recorded output (`copied`)."""
    for path in FILES:
        kinds = {k for k, _ in md._prose_markers(str(path)).values()}
        assert "measured" not in kinds, _rel(path)
