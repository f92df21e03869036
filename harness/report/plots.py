"""Figures of ``specproof report`` as PNG bytes (matplotlib's Agg canvas; no display, no network).

Each function takes the ``results.json`` document and returns ``(png_bytes, caption)`` or ``None`` when
the document holds no data for it; the caption is the one-sentence explanation printed under the figure.
Zeros cannot sit on a logarithmic axis: an exact 0 is drawn at the panel's floor with a hollow marker.
Every bound line is labelled in its panel's legend.
"""

from __future__ import annotations

import io
import math
from typing import Any

from specproof.harness.exact.dtypes import DTYPE_NAMES
from specproof.harness.report.measure import ULP_BINS, ulp_bin_label
from specproof.harness.report.rows import Row, rows_of

__all__ = ["drift_against_vocabulary", "ulp_histograms", "acceptance_error_against_tv", "half_type_margins",
           "all_figures"]

DTYPE_ORDER = DTYPE_NAMES
_MARKERS = "osD^v<>ph*"


def _figure(panels: int, height: float = 3.4):
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    cols = 2 if panels > 1 else 1
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(5.6 * cols, height * rows), dpi=90, layout="constrained")
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(panels)]
    return fig, axes


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _whitebox_rows(document: dict[str, Any], prefix: str) -> dict[str, list[Row]]:
    """White-box rows whose input name starts with ``prefix``, per dtype."""
    out: dict[str, list[Row]] = {}
    for row in rows_of(document):
        if row.kind == "whitebox" and row.input.startswith(prefix) and row.verdict != "error":
            out.setdefault(row.dtype, []).append(row)
    return out


def _plot_with_zeros(ax: Any, xs: list[float], ys: list[float], floor: float, **style: Any) -> None:
    pairs = sorted(zip(xs, ys))
    ax.plot([x for x, _ in pairs], [max(y, floor) for _, y in pairs], **style)
    zeros = [x for x, y in pairs if y <= 0]
    if zeros:
        ax.scatter(zeros, [floor] * len(zeros), facecolors="none", edgecolors=style.get("color", "k"), s=50, zorder=3)


def _floor(values: list[float]) -> float:
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    return min(positive) / 10 if positive else 1e-20


def drift_against_vocabulary(document: dict[str, Any]) -> tuple[bytes, str] | None:
    """Exact TV of the implied output law against V, per dtype, with the derived bound dashed."""
    data = _whitebox_rows(document, "dirichlet-V")
    dtypes = [d for d in DTYPE_ORDER if d in data]
    if not dtypes:
        return None
    fig, axes = _figure(len(dtypes))
    for ax, dtype in zip(axes, dtypes):
        by_impl: dict[str, list[Row]] = {}
        for row in data[dtype]:
            by_impl.setdefault(row.implementation, []).append(row)
        values = [r.figures["tv"].value for r in data[dtype]]
        bounds = [r.figures["tv"].threshold for r in data[dtype]]
        floor = _floor(values + bounds)
        for i, (name, rows) in enumerate(sorted(by_impl.items())):
            color = f"C{i}"
            xs = [r.detail["vocab"] for r in rows]
            _plot_with_zeros(ax, xs, [r.figures["tv"].value for r in rows], floor,
                             color=color, marker=_MARKERS[i % len(_MARKERS)], label=name)
            pairs = sorted(zip(xs, (r.figures["tv"].threshold for r in rows)))
            ax.plot([x for x, _ in pairs], [b for _, b in pairs], color=color, linestyle="--", linewidth=0.8,
                    alpha=0.6)
        ax.plot([], [], color="0.35", linestyle="--", linewidth=0.8, label="derived bound (dashed, same colour)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{dtype}: TV(output, p) vs vocabulary (dashed: derived bound)", fontsize=9)
        ax.set_xlabel("vocabulary size V")
        ax.set_ylabel("exact TV")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    caption = ("Exact total variation between each white-box implementation's implied output law and the exact "
               "target on Dirichlet(0.5) pairs, against the vocabulary size: solid lines are measured, dashed lines "
               "the derived worst-case bounds, so a solid line above its dashed line is drift no correct float "
               "code in that dtype can produce (implementations with identical values draw on top of each other).")
    return _png(fig), caption


def ulp_histograms(document: dict[str, Any]) -> tuple[bytes, str] | None:
    """Histogram of the output field's ULP errors at the largest vocabulary, per dtype."""
    data = _whitebox_rows(document, "dirichlet-V")
    dtypes = [d for d in DTYPE_ORDER if d in data]
    if not dtypes:
        return None
    fig, axes = _figure(len(dtypes))
    largest_v = 0
    for ax, dtype in zip(axes, dtypes):
        largest_v = max(r.detail["vocab"] for r in data[dtype])
        rows = sorted((r for r in data[dtype] if r.detail["vocab"] == largest_v), key=lambda r: r.implementation)
        counts = [[r.detail["ulp_histogram"].get(ulp_bin_label(i), 0) for i in range(ULP_BINS)] for r in rows]
        used = [i for i in range(len(counts[0])) if any(c[i] for c in counts)] if counts else []
        if not used:
            continue
        lo, hi = min(used), max(used)
        width = 0.8 / max(len(rows), 1)
        for i, (row, count) in enumerate(zip(rows, counts)):
            xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(lo, hi + 1)]
            ax.bar(xs, [max(c, 0) for c in count[lo:hi + 1]], width=width, color=f"C{i}", label=row.implementation)
        ax.set_xticks(range(lo, hi + 1))
        ax.set_xticklabels([ulp_bin_label(i).split(" ")[1] for i in range(lo, hi + 1)], rotation=45, fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"{dtype}: ULP error of the output law, V={largest_v:,}", fontsize=9)
        ax.set_xlabel("error in ULPs of the exact value (bin upper edge)")
        ax.set_ylabel("tokens")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    caption = ("How many of the V tokens of the output law carry an error of 0, at most half an ULP (correctly "
               "rounded), one ULP, two, four, ... ULPs of the dtype, at the largest vocabulary measured: a long "
               "right tail means an implementation loses bits on some tokens even when its TV is small.")
    return _png(fig), caption


def acceptance_error_against_tv(document: dict[str, Any]) -> tuple[bytes, str] | None:
    """|acceptance-rate error| against TV(p, q) = 1 - sum min(p, q), per dtype."""
    data = _whitebox_rows(document, "")
    dtypes = [d for d in DTYPE_ORDER if d in data]
    if not dtypes:
        return None
    fig, axes = _figure(len(dtypes))
    for ax, dtype in zip(axes, dtypes):
        rows = [r for r in data[dtype] if r.detail["tv_pq_float"] > 0]
        by_impl: dict[str, list[Row]] = {}
        for row in rows:
            by_impl.setdefault(row.implementation, []).append(row)
        values = [r.figures["acceptance_rate_error"].value for r in rows]
        floor = _floor(values)
        for i, (name, group) in enumerate(sorted(by_impl.items())):
            xs = [r.detail["tv_pq_float"] for r in group]
            ys = [r.figures["acceptance_rate_error"].value for r in group]
            ax.scatter(xs, [max(y, floor) for y in ys], color=f"C{i}", marker=_MARKERS[i % len(_MARKERS)],
                       label=name, alpha=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{dtype}: acceptance-rate error vs TV(p, q)", fontsize=9)
        ax.set_xlabel("TV(p, q) = 1 - sum min(p, q) (exact)")
        ax.set_ylabel("|sum A_f q - sum min(p, q)|")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    caption = ("The error in the probability of accepting a draft (what sets the speed-up) against how far the "
               "draft is from the target, over every white-box input (left: near-identical pairs; points on the bottom "
               "edge are exact): a rise to the left would mean that close pairs cost precision.")
    return _png(fig), caption


def half_type_margins(document: dict[str, Any]) -> tuple[bytes, str] | None:
    """TV divided by its derived tolerance for every half-type white-box and grid row."""
    points: dict[str, list[tuple[str, float, bool]]] = {}
    for row in rows_of(document):
        if row.dtype not in ("float16", "bfloat16") or row.kind not in ("whitebox", "grid"):
            continue
        tv = row.figures.get("tv")
        if not tv or not tv.threshold or tv.value is None:
            continue
        ratio = tv.value / tv.threshold
        points.setdefault(row.dtype, []).append((f"{row.implementation} ({row.kind})", ratio, row.passed))
    dtypes = [d for d in ("float16", "bfloat16") if d in points]
    if not dtypes:
        return None
    names = sorted({p[0] for d in dtypes for p in points[d]}, reverse=True)
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.2, 1.2 + 0.28 * len(names)), dpi=90, layout="constrained")
    for i, dtype in enumerate(dtypes):
        ax = fig.add_subplot(1, len(dtypes), i + 1)
        floor = _floor([p[1] for p in points[dtype]])
        for passed, color, label in ((True, "C2", "passes (within tolerance)"), (False, "C3", "flagged")):
            chosen = [p for p in points[dtype] if p[2] == passed]
            ax.scatter([max(p[1], floor) for p in chosen], [names.index(p[0]) for p in chosen], color=color,
                       label=label, alpha=0.7, s=18)
        ax.axvline(1.0, color="k", linewidth=0.8, linestyle="--", label="TV = derived tolerance")
        ax.set_xscale("log")
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names if i == 0 else [], fontsize=7)
        ax.set_ylim(-0.5, len(names) - 0.5)
        ax.set_title(f"{dtype}: TV / derived tolerance per input (dashed: 1)", fontsize=9)
        ax.set_xlabel("TV / tolerance")
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=7)
    caption = ("For float16 and bfloat16, each white-box input's and grid scenario's exact TV as a fraction of the "
               "dtype's derived tolerance: green points left of the dashed line are drift the dtype explains; red "
               "points are flagged (beyond the tolerance, or impossible mass at any TV), and the half-type table "
               "says whether float64 shows the same deviation (algorithmic bias) or not (dtype-specific).")
    return _png(fig), caption


def all_figures(document: dict[str, Any]) -> list[tuple[str, bytes, str]]:
    """``(title, png, caption)`` for every figure the document has data for."""
    out = []
    for title, make in (("Drift against vocabulary size", drift_against_vocabulary),
                        ("Error histograms in ULPs", ulp_histograms),
                        ("Acceptance-rate error against TV(p, q)", acceptance_error_against_tv),
                        ("Half types: drift against the derived tolerance", half_type_margins)):
        made = make(document)
        if made is not None:
            out.append((title, made[0], made[1]))
    return out
