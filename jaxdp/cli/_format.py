"""Output of the ``jaxdp`` command: number formatting, tables that fit the terminal, footnotes
explaining every ``n/a``, and strict JSON."""

from __future__ import annotations

import json
import math
import textwrap

#: tables wider than this are split into column groups unless ``--wide`` (or ``--json``) is given
MAX_WIDTH = 100


def clean(x):
    """JSON-safe: numpy -> Python, NaN -> null, +-inf -> "inf"/"-inf"."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return clean(x.tolist())
    if isinstance(x, (np.floating, float)):
        x = float(x)
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def is_na(x):
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return x is None


def num(x, digits=4):
    """Compact number: NaN -> n/a, inf -> inf, else %.{digits}g."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def integer(x):
    """A count with thousands separators (NaN -> n/a, beyond 1e12 -> "> 1e12")."""
    x = float(x)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "> 1e12" if x > 0 else "-inf"
    if x >= 1e7:
        return f"{x:.4g}"
    return f"{int(round(x)):,}"


def separating(values, digits=4):
    """Format ``values`` with the fewest significant digits (at least ``digits``) that keep
    neighbours that differ from printing alike, so a printed ``x <= y < z`` is visibly true."""
    vals = [float(v) for v in values]
    for d in range(digits, 18):
        txt = [num(v, d) for v in vals]
        if all(t1 != t2 for (v1, t1), (v2, t2) in zip(zip(vals, txt), zip(vals[1:], txt[1:])) if v1 != v2):
            return txt
    return [repr(v) for v in vals]


class Footnotes:
    """Numbered reasons for the ``n/a`` cells of a report (one footnote per distinct reason)."""

    def __init__(self):
        self.reasons = []

    def mark(self, reason):
        """``"[k]"`` for ``reason`` (registered on first use)."""
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"[{self.reasons.index(reason) + 1}]"

    def cell(self, x, reason, digits=4):
        """``num(x)``, or ``n/a [k]`` with the reason in footnote k when x is NaN."""
        return f"n/a {self.mark(reason)}" if is_na(x) else num(x, digits)

    def lines(self):
        return [wrap(f"[{k}] {r}", "    ") for k, r in enumerate(self.reasons, 1)]


def wrap(text, indent="  ", width=MAX_WIDTH):
    """``text`` wrapped to ``width`` columns, continuation lines indented."""
    return "\n".join(textwrap.wrap(text, width=width, subsequent_indent=indent, break_on_hyphens=False))


def with_reasons(payload, reasons):
    """Add ``"<key>_reason": reason`` beside every key of ``payload`` whose value is (or holds) null."""
    out = dict(payload)
    for key, reason in reasons.items():
        if key not in out:
            continue
        v = clean(out[key])
        if v is None or (isinstance(v, list) and any(x is None for x in v)):
            out[f"{key}_reason"] = reason
    return out


def _render(headers, rows, align):
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for k, r in enumerate(cells):
        out.append("  ".join(f"{c:{a}{wi}}" for c, a, wi in zip(r, align, w)).rstrip())
        if k == 0:
            out.append("  ".join("-" * wi for wi in w))
    return out, w


def table(headers, rows, align=None, keep=1, wide=False, width=MAX_WIDTH):
    """Aligned text table.  Wider than ``width``: split into column groups, each repeating the first
    ``keep`` (key) columns, unless ``wide``."""
    align = list(align or ["<"] + [">"] * (len(headers) - 1))
    lines, w = _render(headers, rows, align)
    if wide or len(lines[1]) <= width:
        return "\n".join(lines)
    base = sum(w[:keep]) + 2 * keep
    groups, cur, used = [], [], base
    for i in range(keep, len(headers)):
        if cur and used + w[i] > width:
            groups.append(cur)
            cur, used = [], base
        cur.append(i)
        used += w[i] + 2
    groups.append(cur)
    parts = []
    for g in groups:
        idx = list(range(keep)) + g
        parts.append("\n".join(_render([headers[i] for i in idx], [[r[i] for i in idx] for r in rows],
                                       [align[i] for i in idx])[0]))
    return "\n\n".join(parts)


def emit(args, payload, text):
    """Print the report: JSON with ``--json`` (strict: NaN -> null), else the text."""
    if args.json:
        print(json.dumps(clean(payload), indent=2, allow_nan=False))
    else:
        print(text)
    if payload.get("plot") and not args.json:
        print(f"wrote {payload['plot']}")
