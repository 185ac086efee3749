"""The report's four plots, drawn with matplotlib's object API (no pyplot state; Agg and the
SVG/PDF canvases only). Every name drawn (category, benchmark, judge, metric, rater) goes
through `figure_text`, so a `$` in a name is drawn as itself, never read as math."""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Collection, Mapping
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from agreement.plots.numbers import finite
from medhelm_site.common.figures import figure_svg, figure_text, svg_markup

RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "medhelm-studio",
    "font.size": 9,
    "axes.titlesize": 10,
    "pdf.fonttype": 42,
    # the resolution of the rasterized point clouds inside the SVG and PDF files (the axes,
    # lines and text stay vector)
    "savefig.dpi": 200,
}
#: A scatter of more points than this is drawn as one image inside the vector files: 3,000
#: points were 3,000 SVG elements each, which the page carried and the PDF drew one by one
#: (bench/README.md, issue 32).
RASTER_POINTS = 500
KOO_LI_CUTS = (0.5, 0.75, 0.9)
FOREST_FLOOR = -1.0  # intervals reaching below this are drawn clipped, with an arrow


def scatter_figure(items: list[Mapping[str, Any]]) -> Figure | None:
    """Jury composite against the clinician mean composite, one point per item, by category."""
    pts = [i for i in items if finite(i.get("clinician_mean")) and finite(i.get("jury"))]
    if not pts:
        return None
    fig = Figure(figsize=(5.6, 4.4), layout="constrained")
    ax = fig.add_subplot()
    colors = matplotlib.colormaps["tab10"]
    for n, cat in enumerate(sorted({p["category"] for p in pts})):
        sel = [p for p in pts if p["category"] == cat]
        ax.scatter(
            [p["clinician_mean"] for p in sel],
            [p["jury"] for p in sel],
            s=18,
            alpha=0.8,
            color=colors(n % 10),
            label=figure_text(cat),
            rasterized=len(pts) > RASTER_POINTS,
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
    """Difference against mean of the jury and clinician z-scores, with the limits of
    agreement (mean difference +- 1.96 SD)."""
    pts = [i for i in items if finite(i.get("clinician_z")) and finite(i.get("jury_z"))]
    if len(pts) < 2:
        return None
    mean = [(p["jury_z"] + p["clinician_z"]) / 2 for p in pts]
    diff = [p["jury_z"] - p["clinician_z"] for p in pts]
    bias = sum(diff) / len(diff)
    sd = math.sqrt(sum((d - bias) ** 2 for d in diff) / (len(diff) - 1))
    fig = Figure(figsize=(5.6, 4.4), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(mean, diff, s=18, alpha=0.8, color="#1f5fbf", rasterized=len(pts) > RASTER_POINTS)
    for y, label, ls in (
        (bias, f"mean difference {bias:.2f}", "-"),
        (bias + 1.96 * sd, f"+1.96 SD {bias + 1.96 * sd:.2f}", "--"),
        (bias - 1.96 * sd, f"-1.96 SD {bias - 1.96 * sd:.2f}", "--"),
    ):
        ax.axhline(y, ls=ls, lw=0.9, color="#a35b00")
        ax.annotate(
            label, (1, y), xycoords=("axes fraction", "data"), ha="right", va="bottom", fontsize=7
        )
    ax.set_xlabel("mean of jury z and clinician mean z")
    ax.set_ylabel("jury z - clinician mean z")
    ax.set_title(f"Bland-Altman, z-scored composites (n = {len(pts)})")
    return fig


def _forest_column(
    ax: Axes,
    overall: list[Mapping[str, Any]],
    rows: list[tuple[str, str]],
    *,
    column: str,
    j: int,
    step: float,
) -> None:
    """One column's estimates and intervals, offset by its position `j`."""
    color = matplotlib.colormaps["tab10"](j % 10)
    ys, xs, clipped = [], [], []
    for i, row in enumerate(rows):
        key = (*row, column)
        cell = next((c for c in overall if (c["row_group"], c["row"], c["column"]) == key), None)
        if cell is None:
            continue
        y = len(rows) - 1 - i + 0.35 - j * step
        ys.append(y)
        xs.append(max(cell["estimate"], FOREST_FLOOR))
        low, high = cell.get("ci_low"), cell.get("ci_high")
        if finite(low) and finite(high):
            # a BCa interval need not contain the estimate: draw it as it is
            ax.hlines(y, max(low, FOREST_FLOOR), min(high, 1.0), color=color, lw=1.2)
        if (finite(low) and low < FOREST_FLOOR) or cell["estimate"] < FOREST_FLOOR:
            clipped.append(y)
    ax.plot(xs, ys, "o", ms=4, color=color, label=figure_text(column))
    if clipped:
        ax.plot([FOREST_FLOOR] * len(clipped), clipped, "<", ms=5, color=color)


def forest_figure(
    cells: list[Mapping[str, Any]], columns: list[Mapping[str, str]]
) -> Figure | None:
    """Every Table 2 estimate with its interval, one line per row, one colour per column
    (a cell that is not estimable has no estimate, so it is not drawn; the title says so)."""
    overall = [c for c in cells if c["section"] == "overall" and finite(c.get("estimate"))]
    not_estimable = sum(
        c["section"] == "overall" and c.get("status") == "not_estimable" for c in cells
    )
    if not overall:
        return None
    rows = list(
        dict.fromkeys((c["row_group"], c["row"]) for c in cells if c["section"] == "overall")
    )
    cols = [c["column"] for c in columns]
    fig = Figure(figsize=(8.0, 1.2 + 0.55 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    step = 0.7 / max(len(cols), 1)
    for j, col in enumerate(cols):
        _forest_column(ax, overall, rows, column=col, j=j, step=step)
    for cut in KOO_LI_CUTS:
        ax.axvline(cut, ls=":", lw=0.8, color="grey")
    ax.axvline(0, lw=0.8, color="black")
    ax.set_yticks([len(rows) - 1 - i for i in range(len(rows))])
    labels = [r[1] if r[0] == "all" else f"{r[0]}: {r[1]}" for r in rows]
    ax.set_yticklabels([figure_text(textwrap.fill(label, 34)) for label in labels], fontsize=8)
    lows = [c["ci_low"] for c in overall if finite(c.get("ci_low"))]
    lows += [c["estimate"] for c in overall]
    ax.set_xlim(max(FOREST_FLOOR, min([0.0, *lows])) - 0.05, 1.05)
    level = round(100 * overall[0].get("confidence", 0.95))
    ax.set_xlabel(
        f"ICC with {level}% interval (dotted: Koo & Li cuts 0.5, 0.75, 0.9; < -1 clipped)"
    )
    title = "Agreement with clinicians per row (MedHELM ICC(3,2))"
    if not_estimable:
        title += (
            f"\n{not_estimable} cell{'s' if not_estimable != 1 else ''} not estimable, not drawn"
        )
    ax.set_title(title)
    fig.legend(fontsize=7, loc="outside lower center", ncol=min(len(cols), 6))
    return fig


#: The heatmap's grid is at most this wide and high (inches).
HEATMAP_MAX_GRID_INCHES = 7.5


def heatmap_figure(clinicians: list[str], pairs: list[Mapping[str, Any]]) -> Figure | None:
    """Clinician x clinician ICC on shared items (grey where a pair has none; "n.e." and no
    colour where the estimability rule left the pair out of the mean)."""
    if len(clinicians) < 2 or not pairs:
        return None
    index = {r: n for n, r in enumerate(clinicians)}
    size = len(clinicians)
    grid = [[math.nan] * size for _ in range(size)]
    left_out: list[tuple[int, int]] = []
    for p in pairs:
        a, b = index.get(p["rater_a"]), index.get(p["rater_b"])
        if a is None or b is None:
            continue
        if p.get("excluded"):  # not estimable: no number, no colour
            left_out += [(a, b), (b, a)]
            continue
        if not finite(p.get("icc")):
            continue
        grid[a][b] = grid[b][a] = p["icc"]
    # a cell of 0.45 in, the grid at most HEATMAP_MAX_GRID_INCHES (labels of 7 pt still fit):
    # 29 clinicians were a 15 x 14 inch figure, a 20-megapixel PNG at print resolution
    side = min(0.45 * size, HEATMAP_MAX_GRID_INCHES)
    fig = Figure(figsize=(2.6 + side, 1.4 + side), layout="constrained")
    ax = fig.add_subplot()
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#eeeeee")
    # no interpolation: each pair one flat cell, and the SVG and PDF files carry the grid's
    # size x size pixels for the viewer to scale, not an image resampled to the page's dpi
    im = ax.imshow(grid, vmin=-1, vmax=1, cmap=cmap, interpolation="none")
    names = [figure_text(c) for c in clinicians]
    ax.set_xticks(range(size), names, rotation=90, fontsize=7)
    ax.set_yticks(range(size), names, fontsize=7)
    if size <= 16:
        for a in range(size):
            for b in range(size):
                if finite(grid[a][b]):
                    ax.text(b, a, f"{grid[a][b]:.2f}", ha="center", va="center", fontsize=6)
        for a, b in left_out:
            ax.text(b, a, "n.e.", ha="center", va="center", fontsize=6, color="#8a4b00")
    fig.colorbar(im, ax=ax, label="ICC(3,2), colours clipped to [-1, 1]", shrink=0.8)
    title = "Clinician pairs on shared items\n(grey: no pair ICC"
    title += "; n.e.: not estimable, left out of the mean)" if left_out else ")"
    ax.set_title(title, fontsize=9)
    return fig


def figures(results: Mapping[str, Any]) -> list[tuple[str, str, Figure | None, str]]:
    """(key, title, figure or None, note when there is no figure), in report order."""
    data = results.get("plot_data", {})
    items = data.get("items", [])
    return [
        (
            "scatter",
            "Jury vs clinician mean score",
            scatter_figure(items),
            data.get("z_note") or "no item has both a jury and a clinician score",
        ),
        (
            "bland_altman",
            "Bland-Altman: jury z vs clinician mean z",
            bland_altman_figure(items),
            data.get("z_note") or "fewer than 2 items with both z-scores",
        ),
        (
            "forest",
            "ICC per category and benchmark",
            forest_figure(results.get("cells", []), results.get("columns", [])),
            "no cell has an estimate",
        ),
        (
            "heatmap",
            "Clinician x clinician agreement",
            heatmap_figure(data.get("clinicians", []), data.get("pairs", [])),
            data.get("pairs_note") or "fewer than 2 clinicians sharing items",
        ),
    ]


#: What each figure shows, in one line: the page's text alternative for it, after its title.
DESCRIPTIONS = {
    "scatter": "each item's jury composite score against its clinician mean composite score, "
    "one point per item coloured by category, with the line y = x",
    "bland_altman": "the difference between each item's jury z-score and clinician mean "
    "z-score against their mean, with the mean difference and the limits of agreement "
    "(mean difference plus or minus 1.96 SD)",
    "forest": "every Table 2 ICC with its interval, one line per category or benchmark and "
    "one colour per machine rater, with the Koo & Li cuts 0.5, 0.75 and 0.9",
    "heatmap": "the ICC of every pair of clinicians on the items they share, coloured from "
    "-1 to 1, grey where a pair shares no items",
}
#: CSS pixels per inch (an SVG drawn at its natural size: matplotlib writes it in points).
CSS_PX_PER_INCH = 96


def _page_entry(
    key: str, title: str, fig: Figure | None, note: str, svg: str | None = None
) -> dict[str, Any]:
    """The page's entry of a figure; ``svg``: its markup where the figure was written already."""
    size = fig.get_size_inches() * CSS_PX_PER_INCH if fig else (None, None)
    if fig is not None and svg is None:
        svg = figure_svg(fig, rc=RC)
    return {
        "key": key,
        "title": title,
        "description": DESCRIPTIONS[key],
        "svg": svg,
        "note": None if fig else note,
        "width": round(size[0]) if fig else None,
        "height": round(size[1]) if fig else None,
    }


def svg_figures(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """[{key, title, description, svg or None, note, width, height}] for the report page
    (width and height: the figure's natural size in CSS pixels, None without a figure)."""
    with matplotlib.rc_context(RC):
        return [_page_entry(*drawn) for drawn in figures(results)]


#: What each figure file is written as: format -> (media type, savefig options).
FIGURE_FORMATS: dict[str, tuple[str, dict[str, Any]]] = {
    "svg": ("image/svg+xml", {"metadata": {"Date": None}}),
    "pdf": ("application/pdf", {"metadata": {"CreationDate": None}}),
    "png": ("image/png", {"dpi": 300}),  # print resolution
}


def figure_file(results: Mapping[str, Any], key: str, fmt: str) -> bytes | None:
    """Figure ``key`` of a report as a standalone SVG, PDF (vector, fonts embedded) or
    300-dpi PNG file; None where the report has no such figure."""
    if fmt not in FIGURE_FORMATS:
        return None
    with matplotlib.rc_context(RC):
        fig = next((f for k, _t, f, _n in figures(results) if k == key), None)
        if fig is None:
            return None
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, **FIGURE_FORMATS[fmt][1])
    return buffer.getvalue()


def _written(fig: Figure, fmt: str) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, **FIGURE_FORMATS[fmt][1])
    return buffer.getvalue()


def figure_files(
    results: Mapping[str, Any], formats: Collection[str] = tuple(FIGURE_FORMATS)
) -> dict[tuple[str, str], bytes]:
    """Every figure of a report in each of ``formats`` (default: every file format), keyed by
    (figure key, format): the figures are drawn once and each written out once per format."""
    return drawn_figures(results, formats)[1]


def drawn_figures(
    results: Mapping[str, Any], formats: Collection[str] = tuple(FIGURE_FORMATS)
) -> tuple[list[dict[str, Any]], dict[tuple[str, str], bytes]]:
    """What :func:`svg_figures` and :func:`figure_files` give, from one drawing of each
    figure: the report job stores both (agreement.services.renderings), and drawing is most
    of the cost of a figure. The page's entries carry the SVG whatever ``formats`` says."""
    unknown = set(formats) - set(FIGURE_FORMATS)
    if unknown:
        raise ValueError(f"figure formats are {sorted(FIGURE_FORMATS)}, got {sorted(unknown)}")
    page: list[dict[str, Any]] = []
    files: dict[tuple[str, str], bytes] = {}
    with matplotlib.rc_context(RC):
        for key, title, fig, note in figures(results):
            if fig is None:
                page.append(_page_entry(key, title, fig, note))
                continue
            # the SVG file is the page's markup too (written once, not twice); laid out by its
            # drawing, the other files keep that layout instead of solving it again in a draw
            # of their own (each save drew the figure twice)
            svg = _written(fig, "svg")
            fig.set_layout_engine("none")
            written = {"svg": svg} | {
                fmt: _written(fig, fmt) for fmt in FIGURE_FORMATS if fmt != "svg" and fmt in formats
            }
            files.update(
                {(key, fmt): content for fmt, content in written.items() if fmt in formats}
            )
            page.append(_page_entry(key, title, fig, note, svg=svg_markup(svg.decode())))
    return page, files
