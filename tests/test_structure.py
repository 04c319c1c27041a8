"""The code's seams, checked on its source (issue 16): data flows one way, privates stay private.

* no import cycle among ``jaxdp`` modules (imports inside functions count: a lazy import is still a
  dependency);
* no private name (``_x``) imported from another module, except from a private module of the same
  package (``jaxdp/shuffle/_common.py`` is shared by ``jaxdp.shuffle`` only), and no private
  attribute of another module's namespace read through an alias (``_tf._gauss_delta``);
* no library function longer than 100 lines;
* no run of six identical lines (white space folded; blank, comment, import and lone-punctuation
  lines skipped) in two places of ``jaxdp/``.  Runs of the same *shape* (other names and numbers)
  are found by the project's ``duplicates`` tool, which is not a package CI can install; it is run
  before each submission.

Everything here reads the source with :mod:`ast`; nothing is imported or run.
"""

from __future__ import annotations

import ast
import collections
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent / "jaxdp"

def _modules():
    mods = {}
    for p in sorted(ROOT.rglob("*.py")):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


MODS = _modules()
TREES = {m: ast.parse(p.read_text(), str(p)) for m, p in MODS.items()}


def _package(mod):
    return mod if MODS[mod].name == "__init__.py" else mod.rsplit(".", 1)[0]


def _resolve(mod, node):
    if not node.level:
        return node.module
    base = _package(mod).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(mod):
    """(target module, imported name or None, alias) for every jaxdp import of ``mod``."""
    out = []
    for node in ast.walk(TREES[mod]):
        if isinstance(node, ast.ImportFrom):
            tgt = _resolve(mod, node)
            if tgt and tgt.split(".")[0] == "jaxdp":
                for a in node.names:
                    out.append((tgt, a.name, a.asname or a.name))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "jaxdp":
                    out.append((a.name, None, a.asname or a.name))
    return out


def _edges():
    g = {m: set() for m in MODS}
    for m in MODS:
        for tgt, name, _ in _imports(m):
            sub = f"{tgt}.{name}" if name else None
            dep = sub if sub in MODS else tgt
            if dep in MODS and dep != m:
                g[m].add(dep)
    return g


def _cycles(g):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _shared_private_module(importer, target):
    """``target`` is a private module (``pkg._x``) of a package that contains ``importer``."""
    pkg, _, leaf = target.rpartition(".")
    return _is_private(leaf) and (importer == pkg or importer.startswith(pkg + "."))


def test_no_import_cycles():
    assert _cycles(_edges()) == []


def test_no_private_names_cross_modules():
    bad = []
    for m in MODS:
        module_aliases = {}
        for tgt, name, alias in _imports(m):
            sub = f"{tgt}.{name}" if name else tgt
            if sub in MODS:  # a module imported by name: its private attributes must not be read
                module_aliases[alias] = sub
                continue
            if name and _is_private(name) and not _shared_private_module(m, tgt):
                bad.append(f"{m}: from {tgt} import {name}")
        for node in ast.walk(TREES[m]):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_aliases and _is_private(node.attr)):
                tgt = module_aliases[node.value.id]
                if not _shared_private_module(m, tgt):
                    bad.append(f"{m}:{node.lineno}: {node.value.id}.{node.attr} ({tgt})")
    assert bad == []


def _long_functions():
    out = {}
    for m, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 100:
                    out[(m, node.name)] = n
    return out


def test_no_function_over_100_lines():
    assert _long_functions() == {}


def _runs(files, k=6):
    """Places (file, first line) of every run of k identical significant lines seen more than once."""
    seen = collections.defaultdict(list)
    for name, text in files:
        lines = []
        for i, raw in enumerate(text.split("\n"), 1):
            s = " ".join(raw.split())
            if s and not s.startswith(("#", "import ", "from ")) and not re.fullmatch(r"[()\[\]{},:;]+", s):
                lines.append((i, s))
        for j in range(len(lines) - k + 1):
            seen[tuple(s for _, s in lines[j:j + k])].append((name, lines[j][0]))
    return [v for v in seen.values() if len(v) > 1]


def test_no_six_identical_lines_in_two_places():
    assert _runs((str(p.relative_to(ROOT)), p.read_text()) for p in MODS.values()) == []


def test_the_checks_can_fail():
    # the checkers themselves find what they are meant to find (a test that cannot fail is no test)
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert _shared_private_module("jaxdp.shuffle.closed_form", "jaxdp.shuffle._common")
    assert not _shared_private_module("jaxdp.calibrate", "jaxdp.shuffle._common")
    assert not _shared_private_module("jaxdp.shuffle", "jaxdp.mechanisms._shuffled_law")
    block = "".join(f"x{i} = f(y{i})\n" for i in range(6))
    assert len(_runs([("a.py", block), ("b.py", "import os\n\n" + block.replace("x", "    x"))])) == 1
