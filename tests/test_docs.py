"""README.md and every docs/*.md cannot go stale (issue 19): their commands, outputs and numbers are
rerun and compared with the text. The format (console / python blocks, ``# -> VALUE`` checks,
tolerances, ``doctest: skip|tol|source|cite`` markers) is documented in ``tests/_mddoctest.py``.
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
    blocks, notes, errors = md.parse(str(path))
    for n in notes:
        errors += md.check_source(n)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("path", FILES, ids=_rel)
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
    if not ran:
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
