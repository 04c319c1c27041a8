"""The README's Python snippet runs as written, and the numbers its comments quote are what it computes."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_snippet_runs_and_its_quoted_gap_is_true():
    blocks = _python_blocks()
    assert blocks, "README.md has no python block"
    ns: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)  # noqa: S102  (our own README)
    # the quoted value on the `gap = ...` line, compared at the digits it shows
    m = re.search(r"^gap = .*#\s*([0-9.eE+-]+)\s*$", blocks[0], flags=re.M)
    assert m, "the gap line of the README snippet quotes no value"
    quoted = m.group(1)
    digits = len(quoted.split(".")[1]) if "." in quoted else 0
    assert float(ns["gap"]) == pytest.approx(float(quoted), abs=0.5 * 10.0**-digits + 1e-15), (float(ns["gap"]), quoted)
    assert float(ns["b_star"]) > 0
