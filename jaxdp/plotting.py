"""Plots for the ``jaxdp`` command and the notebooks (matplotlib is imported lazily: ``pip install jaxdp[plot]``)."""

from __future__ import annotations

import numpy as np


def _plt():
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError("plotting needs matplotlib: pip install 'jaxdp[plot]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def tradeoff_curves(path, a, curves, *, title="", styles=None, gap_panel=False):
    """Trade-off curves f(a) (dict label -> values on ``a``) with the diagonal 1 - a; linear and log-a panels.

    ``gap_panel``: a third panel with 1 - a - f(a) on a log scale, where curves that all sit on the
    diagonal in the first two panels are told apart.
    """
    plt = _plt()
    styles = styles or {}
    fig, axes = plt.subplots(1, 3 if gap_panel else 2, figsize=(15 if gap_panel else 10, 4.4))
    a = np.asarray(a)
    for ax, logx in zip(axes[:2], (False, True)):
        ax.plot(a, 1 - a, color="0.7", lw=1, ls=":", label="1 - a (perfect privacy)")
        for label, f in curves.items():
            f = np.asarray(f)
            ok = np.isfinite(f)
            ax.plot(a[ok], f[ok], label=label, **styles.get(label, {}))
        ax.set_xlabel("type I error a")
        ax.set_ylabel("type II error f(a)")
        if logx:
            ax.set_xscale("log")
            ax.set_xlim(max(a[a > 0].min(), 1e-6), 1)
            ax.set_title("log scale in a")
        else:
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_aspect("equal")
            ax.set_title(title)
    if gap_panel:
        ax = axes[2]
        top = 0.0
        for label, f in curves.items():  # same order, hence same colours, as the other panels
            d = 1 - a - np.asarray(f)
            ok = np.isfinite(d) & (d > 0)
            ax.plot(a[ok], d[ok], label=label, **styles.get(label, {}))
            top = max(top, float(d[ok].max()) if ok.any() else 0.0)
        ax.set_yscale("log")
        if top > 0:  # the curves all vanish at a = 0 and a = 1; show four decades below the largest distance
            ax.set_ylim(top * 1e-4, top * 2)
        ax.set_xlim(0, 1)
        ax.set_xlabel("type I error a")
        ax.set_ylabel("1 - a - f(a)  (distance below the diagonal)")
        ax.set_title("difference from perfect privacy (log scale)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper right")
    return _save(fig, path)


def gap_vs_rounds(path, ms, curves, *, delta=None, marks=None, title="", bounds=()):
    """Gap sup_a(1 - a - f(a)) vs rounds M (log-log), horizontal line at the target delta, planned M marked.

    A gap is at most 1, so the curves named in ``bounds`` (closed-form bounds, which may exceed 1)
    are capped at 1.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, g in curves.items():
        g = np.asarray(g, float)
        if label in bounds:
            g = np.minimum(g, 1.0)
        ok = np.isfinite(g) & (g > 0)
        ax.plot(np.asarray(ms)[ok], g[ok], label=label, marker="o" if ok.sum() < 15 else None, ms=3)
    if delta is not None:
        ax.axhline(delta, color="k", ls="--", lw=1, label=f"target delta = {delta:g}")
    for label, (m, g) in (marks or {}).items():
        if np.isfinite(m):
            ax.plot([m], [g], marker="*", ms=12, ls="none", label=f"{label}: M = {m:,.0f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rounds per epoch M")
    ax.set_ylabel("gap  sup_a (1 - a - f(a))")
    ax.set_ylim(top=1.5)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def bars(path, labels, series, *, ylabel="", title="", log=False):
    """Grouped bars: ``series`` maps a legend label to one value per x label (e.g. eps shuffle vs Poisson)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(labels) + 2), 4))
    k = len(series)
    x = np.arange(len(labels))
    w = 0.8 / max(k, 1)
    for i, (name, vals) in enumerate(series.items()):
        ax.bar(x + (i - (k - 1) / 2) * w, np.asarray(vals, float), w, label=name)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.set_title(title)
    # legend outside the axes, so that it never covers a bar
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def lines(path, x, series, *, xlabel="", ylabel="", title="", logx=False, logy=False, markers=True):
    """Generic line plot (e.g. the noise table sigma(eps) of ``jaxdp calibrate``)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.8) if len(series) > 6 else (7, 4.5))
    colours = plt.get_cmap("tab20" if len(series) > 10 else "tab10").colors
    shapes = "os^vDP*Xph<>"
    for i, (name, y) in enumerate(series.items()):
        y = np.asarray(y, float)
        ok = np.isfinite(y)
        # distinct colour AND marker for every series (up to 20 series; markers cycle independently)
        ax.plot(np.asarray(x, float)[ok], y[ok], label=name, color=colours[i % len(colours)],
                marker=shapes[i % len(shapes)] if markers else None, ms=5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        from matplotlib.ticker import NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels (3x10^0 4x10^0 ...) overlap
        xs = np.unique(np.asarray(x, float)[np.isfinite(np.asarray(x, float))])
        if 0 < len(xs) <= 12:  # a few grid values (alpha = 2, 5, 10): label each, not just the decades
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if len(series) > 6:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=8)
    return _save(fig, path)
