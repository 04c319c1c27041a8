"""Every prose number of README.md and docs/*.md changed by one digit, one at a time (issue 19).

    python benchmarks/doc_mutations.py > benchmarks/results/doc_mutations.md

For each number outside fenced blocks (results, settings, versions, references, code spans alike)
its first and its last digit are each raised by one (9 -> 0), and the changed document is checked
the way CI checks it: ``tests/_mddoctest.check_prose`` (blocks, ``source``/``value``/``checked``
markers, ``copied`` lines, the anchor list ``tests/doc_anchors.tsv``), or for the generated
validation table of docs/soundness.md the exact-text comparison of ``tests/test_validation_table.py``.
Prints the counts per kind and every change that went undetected.  About 3 minutes, no JAX work
beyond building the validation table.  ``tests/test_docs.py`` runs a sample of the same loop.
"""

from __future__ import annotations

import collections
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]

import _mddoctest as md  # noqa: E402
from tests.test_validation_table import table_markdown  # noqa: E402


def main() -> int:
    region = table_markdown()
    missed, total = [], collections.Counter()
    for path in md.doc_files():
        text = open(path, encoding="utf-8").read()
        lines = text.splitlines()
        for n in md.prose_numbers(path, text):
            digits = [i for i, c in enumerate(n.token.lower().split("e")[0]) if c.isdigit()]
            for k in sorted({digits[0], digits[-1]}):
                changed = n.token[:k] + str((int(n.token[k]) + 1) % 10) + n.token[k + 1:]
                ln = lines[n.line - 1]
                mutated = lines.copy()
                mutated[n.line - 1] = ln[:n.start] + changed + ln[n.start + len(n.token):]
                mutated = "\n".join(mutated) + "\n"
                kind = n.status.split(":")[0]
                total[kind] += 1
                if kind == "region":
                    detected = region in text and region not in mutated
                else:
                    detected = bool(md.check_prose(path, mutated))
                if not detected:
                    missed.append((kind, os.path.relpath(path, ROOT), n.line, n.token, changed))
    undetected = collections.Counter(m[0] for m in missed)
    print("# One-digit changes of every prose number (benchmarks/doc_mutations.py)\n")
    print("| kind of number | changes | undetected |")
    print("|---|---|---|")
    for kind in sorted(total):
        print(f"| {kind} | {total[kind]} | {undetected[kind]} |")
    print(f"| all | {sum(total.values())} | {len(missed)} |")
    for m in missed:
        print(f"\nundetected: {m[1]}:{m[2]}: {m[3]} -> {m[4]} ({m[0]})")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
