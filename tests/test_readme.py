"""The README's copy-paste commands stay what CI runs. Its python snippet and every quoted output and
number are checked by tests/test_docs.py (the doc-test harness, tests/_mddoctest.py)."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

MAIN_JOB = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[plot]" && jaxdp plan'
TESTS = ('python3 -m venv .venv && . .venv/bin/activate && pip install -q -e ".[test]" && python -m pytest '
         '-m "not slow and not acceptance" -q -n 2 -p no:cacheprovider')


def test_readme_first_two_commands_are_the_main_job_and_the_ci_test_command():
    bash = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    assert [b.strip() for b in bash[:2]] == [MAIN_JOB, TESTS]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert TESTS in ci, "README's test command is no longer the one .ci/run runs"


def test_readme_python_snippet_is_checked_by_the_harness():
    block = re.findall(r"```python\n(.*?)```", README, flags=re.S)[0]
    assert re.search(r"^gap = .*#\s*->\s*[0-9.]+\s*$", block, flags=re.M)
