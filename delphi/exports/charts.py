"""The charts of the Delphi report, drawn with matplotlib's object API (no pyplot state):
a participation flow chart, outcomes per round as stacked bars, and per item a histogram
of the ratings in each round (small multiples, a few items per figure so each stays
legible). Every name a user typed goes through `figure_text`.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from delphi import stats
from delphi.consensus import OUTCOME_COLOURS, OUTCOME_ORDER
from delphi.exports.data import WHOLE_PANEL, StudyData
from delphi.models import Round, RoundItemStatistics
from delphi.stats import display
from medhelm_site.common.figures import figure_text

# matplotlib subsets fonts with fontTools, which logs every table of every font at INFO:
# under the site's INFO root logger that floods the log and slows every PDF.
if logging.getLogger("fontTools").level == logging.NOTSET:
    logging.getLogger("fontTools").setLevel(logging.WARNING)

RC = {
    "svg.fonttype": "none",  # text stays text: searchable, and far smaller than paths
    "svg.hashsalt": "medhelm-studio-delphi",  # stable ids, so a re-render diffs clean
    "font.size": 8,
    "axes.titlesize": 8,
    "pdf.fonttype": 42,
}
ITEMS_PER_FIGURE = 8
LABEL_CHARS, LABEL_LINES, LABEL_FONT, MIN_LABEL_FONT = 26, 3, 7.0, 4.5
DASH = "\u2013"
BOX = {"boxstyle": "round,pad=0.4", "facecolor": "#eef3fb", "edgecolor": "#1f5fbf"}
SIDE_BOX = {"boxstyle": "round,pad=0.4", "facecolor": "#fff4e5", "edgecolor": "#a35b00"}
# Histogram geometry in inches, laid out by hand: constrained layout measures every text
# and is slow on a large taxonomy.
LABEL_W, CELL_W, CELL_H, HEAD_H, TOP_H, BOTTOM_H = 1.9, 1.75, 0.62, 0.3, 0.3, 0.25


def outcome_words(outcome: str) -> str:
    return outcome.replace("_", " ") if outcome else DASH


def fmt(value: float | None, digits: int = 1) -> str:
    """A number as the report prints it: up to `digits` decimals, no trailing zeros."""
    if value is None:
        return DASH
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# --------------------------------------------------------------------------- flow


def flow_figure(panel: Mapping[str, Any], flow: Sequence[Mapping[str, Any]]) -> Figure:
    """A CONSORT-style flow chart: the panel, then each round (invited, submitted, response
    rate) with those lost on the side (did not respond, withdrew, still pending)."""
    whole = [row for row in flow if row["group"] == WHOLE_PANEL]
    n_boxes = len(whole) + 1
    fig = Figure(figsize=(6.4, 1.0 + 1.05 * n_boxes))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, n_boxes * 1.4 + 0.2)
    ax.axis("off")
    y = n_boxes * 1.4 - 0.5
    panel_text = (
        f"Panel: {panel['n']} invited to the study\n{panel['joined']} joined, "
        f"{panel['withdrawn']} withdrew"
    )
    ax.text(3.2, y, panel_text, ha="center", va="center", bbox=BOX)
    for row in whole:
        previous_y, y = y, y - 1.4
        _flow_round(ax, row, previous_y, y)
    if not whole:
        ax.text(3.2, y - 1.4, "no round opened yet", ha="center", va="center")
    return fig


def _flow_round(ax: Axes, row: Mapping[str, Any], previous_y: float, y: float) -> None:
    """One round's box, the arrow into it, and those lost on the side."""
    arrow = FancyArrowPatch(
        (3.2, previous_y - 0.42), (3.2, y + 0.42), arrowstyle="-|>", mutation_scale=10, color="#444"
    )
    ax.add_patch(arrow)
    text = (
        f"Round {row['round']} ({row['round_status'].replace('_', ' ')})\n"
        f"invited {row['invited']}, submitted {row['submitted']} "
        f"({fmt(row['response_rate_pct'])}%)"
    )
    ax.text(3.2, y, text, ha="center", va="center", bbox=BOX)
    lost = [f"did not respond: {row['non_responders']}", f"withdrew: {row['withdrawn']}"]
    if row["pending"]:
        lost.append(f"not submitted yet: {row['pending']}")
    if row["round"] > 1 and row["attrition_vs_round_1_pct"] is None:
        lost.append("attrition vs round 1: not final (round open)")
    elif row["round"] > 1:
        lost.append(f"attrition vs round 1: {fmt(row['attrition_vs_round_1_pct'])}%")
    side = FancyArrowPatch(
        (5.3, y), (6.35, y), arrowstyle="-|>", mutation_scale=10, color="#a35b00"
    )
    ax.add_patch(side)
    ax.text(8.1, y, "\n".join(lost), ha="center", va="center", fontsize=7, bbox=SIDE_BOX)


# --------------------------------------------------------------------------- outcomes


def outcomes_figure(rounds: Sequence[Mapping[str, Any]]) -> Figure | None:
    """Items per outcome in each analysed round, stacked."""
    analysed = [r for r in rounds if any(i["outcome_key"] for i in r["items"])]
    if not analysed:
        return None
    fig = Figure(figsize=(5.6, 3.2), layout="constrained")
    ax = fig.add_subplot()
    labels = [f"Round {r['number']}" for r in analysed]
    bottoms = [0] * len(analysed)
    for outcome in OUTCOME_ORDER:
        counts = [sum(1 for i in r["items"] if i["outcome_key"] == outcome) for r in analysed]
        if not any(counts):
            continue
        bars = ax.bar(
            labels,
            counts,
            bottom=bottoms,
            color=OUTCOME_COLOURS[outcome],
            label=outcome_words(outcome),
            width=0.6,
        )
        bar_labels = [str(c) if c else "" for c in counts]
        ax.bar_label(bars, labels=bar_labels, label_type="center", color="white", fontsize=7)
        bottoms = [b + c for b, c in zip(bottoms, counts, strict=True)]
    ax.set_ylabel("items")
    ax.set_title("Outcome of the items rated in each round")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.spines[["top", "right"]].set_visible(False)
    return fig


# --------------------------------------------------------------------------- histograms


def histogram_figures(data: StudyData) -> list[Figure]:
    """Small multiples: one row per item, one column per analysed round, the whole panel's
    ratings 1-9 coloured by band; a few items per figure."""
    analysed = [
        r
        for r in data.rounds
        if any((i.pk, "") in data.stats_of for i in data.items_of_round[r.number])
    ]
    identities = [
        identity
        for identity in data.identities_in_order()
        if any((r.number, identity) in data.item_at for r in analysed)
    ]
    return [
        _histogram_figure(data, analysed, identities[start : start + ITEMS_PER_FIGURE])
        for start in range(0, len(identities), ITEMS_PER_FIGURE)
    ]


def _label_lines(name: str) -> tuple[list[str], float]:
    """An item's name for the small multiples, whole (never cut): past three lines the type
    gets smaller and the lines longer, down to MIN_LABEL_FONT."""
    lines = textwrap.wrap(name, LABEL_CHARS) or [""]
    if len(lines) <= LABEL_LINES:
        return lines, LABEL_FONT
    size = max(MIN_LABEL_FONT, LABEL_FONT * LABEL_LINES / len(lines))
    return textwrap.wrap(name, int(LABEL_CHARS * LABEL_FONT / size)), size


def _histogram_figure(data: StudyData, analysed: list[Round], chunk: list[str]) -> Figure:
    width = LABEL_W + CELL_W * len(analysed) + 0.15
    height = TOP_H + (CELL_H + HEAD_H) * len(chunk) + BOTTOM_H
    fig = Figure(figsize=(width, height))
    for column, round_ in enumerate(analysed):
        x = (LABEL_W + CELL_W * (column + 0.5)) / width
        fig.text(
            x,
            1 - 0.12 / height,
            f"Round {round_.number}",
            ha="center",
            va="top",
            fontsize=8,
            fontweight="bold",
        )
    for row, identity in enumerate(chunk):
        latest = [
            data.item_at[(r.number, identity)]
            for r in analysed
            if (r.number, identity) in data.item_at
        ][-1]
        bottom = height - TOP_H - (row + 1) * (CELL_H + HEAD_H)
        lines, size = _label_lines(latest.name)
        y = (bottom + CELL_H / 2) / height
        fig.text(
            (LABEL_W - 0.1) / width,
            y,
            figure_text("\n".join(lines)),
            ha="right",
            va="center",
            fontsize=size,
        )
        for column, round_ in enumerate(analysed):
            left = LABEL_W + CELL_W * column + 0.12
            box = (left / width, bottom / height, (CELL_W - 0.3) / width, CELL_H / height)
            ax = fig.add_axes(box)
            item = data.item_at.get((round_.number, identity))
            statistics = data.whole_panel_stats(item) if item else None
            if statistics is None or item is None:
                ax.axis("off")
                ax.text(
                    0.5,
                    0.5,
                    "not rated in this round",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="grey",
                    transform=ax.transAxes,
                )
                continue
            _histogram(ax, statistics, item.item_version)
    return fig


def _histogram(ax: Axes, statistics: RoundItemStatistics, version: int) -> None:
    """One item's ratings in one round, titled with its version, n, median and outcome."""
    counts = statistics.counts or {}
    values = [counts.get(str(p), 0) for p in stats.SCALE_POINTS]
    colours = [stats.BAND_COLOURS[stats.band_of(p)] for p in stats.SCALE_POINTS]
    ax.bar(stats.SCALE_POINTS, values, width=0.8, color=colours)
    ax.set_xlim(0.4, 9.6)
    ax.set_ylim(0, max(1, statistics.n_rated))
    ax.set_xticks(stats.SCALE_POINTS, [str(p) for p in stats.SCALE_POINTS], fontsize=5)
    ax.set_yticks([0, max(1, statistics.n_rated)])
    ax.tick_params(axis="y", labelsize=5, length=2, pad=1)
    ax.tick_params(axis="x", length=0, pad=1)
    ax.spines[["top", "right"]].set_visible(False)
    title = (
        f"v{version} \u00b7 n {statistics.n_rated} \u00b7 median "
        f"{display.stat_number(statistics.median)} \u00b7 {outcome_words(statistics.outcome)}"
    )
    colour = OUTCOME_COLOURS.get(statistics.outcome, "black")
    ax.set_title(title, loc="left", fontsize=5.5, pad=2, color=colour)


__all__ = [
    "ITEMS_PER_FIGURE",
    "RC",
    "flow_figure",
    "fmt",
    "histogram_figures",
    "outcome_words",
    "outcomes_figure",
]
