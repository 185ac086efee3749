"""Report figures and text pages, drawn with matplotlib's object API (no pyplot state, Agg
and the SVG/PDF canvases only), from a snapshot's stored results: a report reopened later
draws exactly the numbers it was computed with.

- :func:`svg_figures` -> inline SVG strings for the report page (text kept as text, so the
  page stays searchable and light).
- :func:`pdf_bytes` -> a PDF (PdfPages): a title and method page, the tables as monospaced
  text pages, then the plots.
"""

from __future__ import annotations

import io
import json
import math
import re
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure

RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "medhelm-studio",
    "font.size": 9,
    "axes.titlesize": 10,
    "pdf.fonttype": 42,
}
KOO_LI_CUTS = (0.5, 0.75, 0.9)
FOREST_FLOOR = -1.0  # intervals reaching below this are drawn clipped, with an arrow
PAGE = (11.69, 8.27)  # A4 landscape, inches
LINES_PER_PAGE = 58
LINE_WIDTH = 170
DASH = "\u2013"  # shown where there is no number


# --------------------------------------------------------------------------------------------
# Number formatting, shared with the page


def fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return DASH
    if isinstance(x, int) and abs(x) < 10**15:
        return str(x)
    if abs(x) >= 10**6:  # e.g. an ICC of a near-degenerate clinician pair
        return f"{float(x):.{digits}g}"
    return f"{x:.{digits}f}"


def fmt_ci(lo: Any, hi: Any, digits: int = 3) -> str:
    if lo is None or hi is None:
        return DASH
    return f"({fmt(lo, digits)}, {fmt(hi, digits)})"


# --------------------------------------------------------------------------------------------
# Figures


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


def scatter_figure(items: list[Mapping[str, Any]]) -> Figure | None:
    pts = [i for i in items if _finite(i.get("clinician_mean")) and _finite(i.get("jury"))]
    if not pts:
        return None
    fig = Figure(figsize=(5.6, 4.4), layout="constrained")
    ax = fig.add_subplot()
    cats = sorted({p["category"] for p in pts})
    colors = matplotlib.colormaps["tab10"]
    for n, cat in enumerate(cats):
        sel = [p for p in pts if p["category"] == cat]
        ax.scatter(
            [p["clinician_mean"] for p in sel],
            [p["jury"] for p in sel],
            s=18,
            alpha=0.8,
            color=colors(n % 10),
            label=cat,
        )
    lo = min(min(p["clinician_mean"] for p in pts), min(p["jury"] for p in pts))
    hi = max(max(p["clinician_mean"] for p in pts), max(p["jury"] for p in pts))
    ax.plot([lo, hi], [lo, hi], ls="--", lw=0.8, color="grey", label="y = x")
    ax.set_xlabel("clinician mean composite")
    ax.set_ylabel("jury composite")
    ax.set_title(f"Jury vs clinician mean, per item (n = {len(pts)})")
    ax.legend(fontsize=7, loc="best")
    return fig


def bland_altman_figure(items: list[Mapping[str, Any]]) -> Figure | None:
    pts = [i for i in items if _finite(i.get("clinician_z")) and _finite(i.get("jury_z"))]
    if len(pts) < 2:
        return None
    mean = [(p["jury_z"] + p["clinician_z"]) / 2 for p in pts]
    diff = [p["jury_z"] - p["clinician_z"] for p in pts]
    bias = sum(diff) / len(diff)
    sd = math.sqrt(sum((d - bias) ** 2 for d in diff) / (len(diff) - 1))
    fig = Figure(figsize=(5.6, 4.4), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(mean, diff, s=18, alpha=0.8, color="#1f5fbf")
    for y, label, ls in (
        (bias, f"mean difference {bias:.2f}", "-"),
        (bias + 1.96 * sd, f"+1.96 SD {bias + 1.96 * sd:.2f}", "--"),
        (bias - 1.96 * sd, f"-1.96 SD {bias - 1.96 * sd:.2f}", "--"),
    ):
        ax.axhline(y, ls=ls, lw=0.9, color="#a35b00")
        ax.annotate(label, (1, y), xycoords=("axes fraction", "data"), ha="right", va="bottom",
                    fontsize=7)  # fmt: skip
    ax.set_xlabel("mean of jury z and clinician mean z")
    ax.set_ylabel("jury z - clinician mean z")
    ax.set_title(f"Bland-Altman, z-scored composites (n = {len(pts)})")
    return fig


def forest_figure(
    cells: list[Mapping[str, Any]], columns: list[Mapping[str, str]]
) -> Figure | None:
    overall = [c for c in cells if c["section"] == "overall" and _finite(c.get("estimate"))]
    if not overall:
        return None
    rows = list(
        dict.fromkeys((c["row_group"], c["row"]) for c in cells if c["section"] == "overall")
    )
    cols = [c["column"] for c in columns]
    fig = Figure(figsize=(8.0, 1.2 + 0.55 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    colors = matplotlib.colormaps["tab10"]
    step = 0.7 / max(len(cols), 1)
    for j, col in enumerate(cols):
        color = colors(j % 10)
        ys, xs, clipped = [], [], []
        for i, row in enumerate(rows):
            key = (*row, col)
            cell = next(
                (c for c in overall if (c["row_group"], c["row"], c["column"]) == key), None
            )
            if cell is None:
                continue
            y = len(rows) - 1 - i + 0.35 - j * step
            ys.append(y)
            xs.append(max(cell["estimate"], FOREST_FLOOR))
            low, high = cell.get("ci_low"), cell.get("ci_high")
            if _finite(low) and _finite(high):
                # a BCa interval need not contain the estimate: draw it as it is
                ax.hlines(y, max(low, FOREST_FLOOR), min(high, 1.0), color=color, lw=1.2)
            if (_finite(low) and low < FOREST_FLOOR) or cell["estimate"] < FOREST_FLOOR:
                clipped.append(y)
        ax.plot(xs, ys, "o", ms=4, color=color, label=col)
        if clipped:
            ax.plot([FOREST_FLOOR] * len(clipped), clipped, "<", ms=5, color=color)
    for cut in KOO_LI_CUTS:
        ax.axvline(cut, ls=":", lw=0.8, color="grey")
    ax.axvline(0, lw=0.8, color="black")
    ax.set_yticks([len(rows) - 1 - i for i in range(len(rows))])
    labels = [r[1] if r[0] == "all" else f"{r[0]}: {r[1]}" for r in rows]
    ax.set_yticklabels([textwrap.fill(label, 34) for label in labels], fontsize=8)
    lows = [c["ci_low"] for c in overall if _finite(c.get("ci_low"))]
    lows += [c["estimate"] for c in overall]
    ax.set_xlim(max(FOREST_FLOOR, min([0.0, *lows])) - 0.05, 1.05)
    level = round(100 * overall[0].get("confidence", 0.95))
    ax.set_xlabel(
        f"ICC with {level}% interval (dotted: Koo & Li cuts 0.5, 0.75, 0.9; < -1 clipped)"
    )
    ax.set_title("Agreement with clinicians per row (MedHELM ICC(3,2))")
    fig.legend(fontsize=7, loc="outside lower center", ncol=min(len(cols), 6))
    return fig


def heatmap_figure(clinicians: list[str], pairs: list[Mapping[str, Any]]) -> Figure | None:
    if len(clinicians) < 2 or not pairs:
        return None
    index = {r: n for n, r in enumerate(clinicians)}
    size = len(clinicians)
    grid = [[math.nan] * size for _ in range(size)]
    for p in pairs:
        a, b = index.get(p["rater_a"]), index.get(p["rater_b"])
        if a is None or b is None or not _finite(p.get("icc")):
            continue
        grid[a][b] = grid[b][a] = p["icc"]
    fig = Figure(figsize=(2.6 + 0.45 * size, 1.4 + 0.45 * size), layout="constrained")
    ax = fig.add_subplot()
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#eeeeee")
    im = ax.imshow(grid, vmin=-1, vmax=1, cmap=cmap)
    ax.set_xticks(range(size), clinicians, rotation=90, fontsize=7)
    ax.set_yticks(range(size), clinicians, fontsize=7)
    if size <= 16:
        for a in range(size):
            for b in range(size):
                if _finite(grid[a][b]):
                    ax.text(b, a, f"{grid[a][b]:.2f}", ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, label="ICC(3,2), colours clipped to [-1, 1]", shrink=0.8)
    ax.set_title("Clinician pairs on shared items\n(grey: no pair ICC)", fontsize=9)
    return fig


def figures(results: Mapping[str, Any]) -> list[tuple[str, str, Figure | None, str]]:
    """(key, title, figure or None, note when there is no figure), in report order."""
    data = results.get("plot_data", {})
    items = data.get("items", [])
    out = [
        ("scatter", "Jury vs clinician mean score", scatter_figure(items),
         data.get("z_note") or "no item has both a jury and a clinician score"),
        ("bland_altman", "Bland-Altman: jury z vs clinician mean z", bland_altman_figure(items),
         data.get("z_note") or "fewer than 2 items with both z-scores"),
        ("forest", "ICC per category and benchmark",
         forest_figure(results.get("cells", []), results.get("columns", [])),
         "no cell has an estimate"),
        ("heatmap", "Clinician x clinician agreement",
         heatmap_figure(data.get("clinicians", []), data.get("pairs", [])),
         data.get("pairs_note") or "fewer than 2 clinicians sharing items"),
    ]  # fmt: skip
    return out


_XML_HEAD = re.compile(r"^.*?(?=<svg)", re.S)


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return _XML_HEAD.sub("", buf.getvalue(), count=1)


def svg_figures(results: Mapping[str, Any]) -> list[dict[str, str | None]]:
    """[{key, title, svg or None, note}] for the report page."""
    with matplotlib.rc_context(RC):
        figs = figures(results)
    return [
        {
            "key": key,
            "title": title,
            "svg": _svg(fig) if fig else None,
            "note": None if fig else note,
        }
        for key, title, fig, note in figs
    ]


# --------------------------------------------------------------------------------------------
# Text pages


def _wrap(line: str, indent: int) -> list[str]:
    if len(line) <= LINE_WIDTH:
        return [line]
    return textwrap.wrap(line, LINE_WIDTH, subsequent_indent=" " * indent) or [line]


def _cell_line(c: Mapping[str, Any]) -> str:
    head = f"  {c['row'][:40]:<40} {c['column'][:24]:<24}"
    if c.get("status") != "ok":
        return f"{head} {DASH:>7}  no estimate: {c.get('reason')}"
    n_raters = f"{fmt(c.get('n_raters'))}" + (
        f" ({c['n_pairs']} pairs)" if c.get("n_pairs") else ""
    )
    note = f"  [{c['reason']}]" if c.get("reason") else ""
    drop = f"  dropped: {c['dropped_raters']}" if c.get("dropped_raters") else ""
    return (
        f"{head} {fmt(c.get('estimate')):>7}  {fmt_ci(c.get('ci_low'), c.get('ci_high')):<20} "
        f"{fmt(c.get('n_items')):>5} {n_raters:<14} {c.get('band') or '':<22}{note}{drop}"
    )


def _records(title: str, rows: Iterable[Mapping[str, Any]], columns: list[str]) -> list[str]:
    rows = list(rows)
    lines = [title]
    if not rows:
        return [*lines, "  (none)", ""]
    widths = {
        c: max(
            len(c), *(len(fmt(r.get(c)) if not isinstance(r.get(c), str) else r[c]) for r in rows)
        )
        for c in columns
    }
    widths = {c: min(w, 40) for c, w in widths.items()}
    lines.append("  " + " ".join(f"{c:<{widths[c]}}" for c in columns))
    for r in rows:
        vals = [r.get(c) if isinstance(r.get(c), str) else fmt(r.get(c), 4) for c in columns]
        lines.append(
            "  "
            + " ".join(f"{str(v)[:40]:<{widths[c]}}" for v, c in zip(vals, columns, strict=True))
        )
    return [*lines, ""]


def report_lines(
    *, header: Mapping[str, Any], results: Mapping[str, Any], method: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """(title and method page lines, table lines) as the PDF prints them."""
    first = [str(header.get("title", "Agreement report")), ""]
    first += [f"{k}: {v}" for k, v in header.items() if k != "title"]
    first += ["", "Method"]
    for key, value in method.items():
        text = json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)
        first += _wrap(f"  {key}: {text}", 6)
    cells = results.get("cells", [])
    legend = (
        f"  {'row':<40} {'column':<24} {'ICC':>7}  {'95% CI':<20} {'items':>5} "
        f"{'raters':<14} {'Koo & Li band (CI)':<22}"
    )
    lines = ["Table 2: agreement with clinicians (ICC, bootstrap interval)", legend]
    lines += [ln for c in cells if c["section"] == "overall" for ln in _wrap(_cell_line(c), 60)]
    lines += ["", "Per criterion (metrics: their overall value against each criterion)", legend]
    lines += [ln for c in cells if c["section"] == "criterion" for ln in _wrap(_cell_line(c), 60)]
    lines.append("")
    lines += _records(
        "Machine minus clinician-clinician ICC",
        results.get("differences", []),
        [
            "row",
            "column",
            "estimate",
            "ci_low",
            "ci_high",
            "machine_icc",
            "clinician_icc",
            "n_items",
            "reason",
        ],
    )
    board = results.get("leaderboard", {})
    lines += _records(
        "Leaderboard by model (raw-scale composites; HELM win rate; jury cost per item)",
        board.get("by_model", []),
        ["model", "n_items_clinician", "clinician_mean", "n_items_jury", "jury_mean",
         "win_rate_jury", "win_rate_clinician", "cost_per_item", "cost_estimate_per_item"],
    )  # fmt: skip
    lines += _records(
        "By model and category",
        board.get("by_model_category", []),
        ["model", "category", "n_items_clinician", "clinician_mean", "n_items_jury", "jury_mean"],
    )
    lines += _records(
        "Jury cost by judge",
        board.get("cost_by_judge", []),
        [
            "judge",
            "n_calls",
            "n_calls_costed",
            "input_tokens",
            "output_tokens",
            "cost",
            "cost_estimate",
        ],
    )
    for key, note in board.get("notes", {}).items():
        lines += _wrap(f"  {key}: {note}", 6)
    cov = results.get("coverage", {})
    lines += ["", "Coverage"]
    for key in (
        "n_items",
        "n_items_rated",
        "n_items_short",
        "missing_values",
        "rated_items_without_jury",
    ):
        lines.append(f"  {key}: {cov.get(key)}")
    lines += _wrap(
        f"  cannot assess: {json.dumps(cov.get('cannot_assess', {}), sort_keys=True)}", 6
    )
    lines += _wrap(f"  invalid judge scores: {json.dumps(cov.get('invalid_judge_scores', {}))}", 6)
    lines += _records(
        "  Raters with too few items",
        cov.get("raters_few_items", []),
        ["rater", "rater_kind", "n_items"],
    )
    lines += _records(
        "  Judge calls",
        [{**j, "by_status": json.dumps(j["by_status"])} for j in cov.get("judge_calls", [])],
        ["judge", "total", "failed", "by_status"],
    )
    changes = results.get("changes")
    if changes:
        lines += ["Changes since the previous snapshot"]
        lines += _wrap("  " + json.dumps({k: v for k, v in changes.items() if k != "cells"}), 6)
        lines += _records(
            "  Cells that moved",
            changes.get("cells", []),
            ["section", "row", "column", "change", "previous", "current", "delta"],
        )
    return first, lines


def _text_page(pdf: PdfPages, lines: list[str], *, heading: str) -> None:
    fig = Figure(figsize=PAGE)
    fig.text(0.03, 0.97, heading, fontsize=8, color="grey", va="top")
    fig.text(
        0.03, 0.94, "\n".join(lines), family="monospace", fontsize=6.5, va="top", linespacing=1.25
    )
    pdf.savefig(fig)


def pdf_bytes(
    *, header: Mapping[str, Any], results: Mapping[str, Any], method: Mapping[str, Any]
) -> bytes:
    """The report as a PDF: title and method, the tables as text pages, then every plot."""
    first, lines = report_lines(header=header, results=results, method=method)
    title = str(header.get("title", "Agreement report"))
    buf = io.BytesIO()
    with (
        matplotlib.rc_context(RC),
        PdfPages(buf, metadata={"Title": title, "Creator": "medhelm-studio"}) as pdf,
    ):
        for start in range(0, max(len(first), 1), LINES_PER_PAGE):
            _text_page(pdf, first[start : start + LINES_PER_PAGE], heading=title)
        for start in range(0, max(len(lines), 1), LINES_PER_PAGE):
            _text_page(pdf, lines[start : start + LINES_PER_PAGE], heading=f"{title}: tables")
        for _key, fig_title, fig, note in figures(results):
            if fig is None:
                fig = Figure(figsize=PAGE)
                fig.text(0.5, 0.5, f"{fig_title}: {note}", ha="center", va="center")
            pdf.savefig(fig)
    return buf.getvalue()
