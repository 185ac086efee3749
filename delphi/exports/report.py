"""The report of a Delphi study, as a standalone HTML page (inline CSS and SVG charts, no
JavaScript: it opens offline and can be attached to a submission) and as a PDF.

Both are drawn from one context (`report_context`) built on the `StudyData` bundle, so the
page, the PDF and the CSV exports show the same numbers. Panelists appear by pseudonym
only; nothing here reads a name, username or e-mail address.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import matplotlib
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe
from matplotlib.backends.backend_pdf import PdfPages

from delphi import protocol, stats
from delphi.consensus import OUTCOME_ORDER
from delphi.exports.answer_tables import flow_rows, stability_method, stability_rows
from delphi.exports.charts import (
    DASH,
    RC,
    flow_figure,
    fmt,
    histogram_figures,
    outcome_words,
    outcomes_figure,
)
from delphi.exports.checklist import (
    CHECKLIST_NOTE,
    CHECKLIST_SOURCES,
    TO_AUTHORS,
    checklist_items,
    grouped_checklist,
)
from delphi.exports.data import NO_GROUP, WHOLE_PANEL, StudyData
from delphi.exports.protocol_text import protocol_text
from delphi.exports.report_text import LINE_WIDTH, LINES_PER_PAGE, report_lines
from delphi.exports.tables import change_rows, item_rows
from delphi.models import PanelistRound, Round, RoundItem
from delphi.stats import display
from medhelm_site.common.figures import figure_svg, text_page

PAGE = (8.27, 11.69)  # A4 portrait, inches
TEXT_FONT_SIZE = 6.4


def report_context(data: StudyData, *, charts: bool = True) -> dict[str, Any]:
    """Everything the HTML template and the PDF print, the charts as SVG text (left out with
    charts=False: the PDF draws them on its own canvas)."""
    study = data.study
    flow = flow_rows(data)
    rounds = [_round(data, round_) for round_ in data.rounds]
    panel = _panel(data)
    context = {
        "study": study,
        "generated_at": timezone.now(),
        "locked": study.protocol_document is not None,
        "protocol_hash": study.protocol_hash,
        "protocol_locked_at": study.protocol_locked_at,
        "hash_matches": _hash_matches(data),
        "protocol_settings": protocol_text(data).rows(),
        "panel": panel,
        "flow": flow,
        "flow_whole": [row for row in flow if row["group"] == WHOLE_PANEL],
        "rounds": rounds,
        "status_paths": _status_paths(data),
        "changes": change_rows(data),
        "stability": stability_rows(data),
        "stability_method": stability_method(),
        "quantile_method": stats.describe_quantile_method(data.quantile_method),
        "rounding_rule": display.ROUNDING_RULE,
        "final_taxonomy": _final_taxonomy(data),
        "finished_reason": study.finished_reason,
        "checklist": [
            {"source": CHECKLIST_SOURCES[guideline], "sections": sections}
            for guideline, sections in grouped_checklist(checklist_items(data))
        ],
        "checklist_note": CHECKLIST_NOTE,
        "to_authors": TO_AUTHORS,
        "min_group_raters": data.min_group_raters,
    }
    return context | _chart_svgs(data, panel, flow, rounds, charts=charts)


def _chart_svgs(
    data: StudyData,
    panel: dict[str, Any],
    flow: list[dict[str, Any]],
    rounds: list[dict[str, Any]],
    *,
    charts: bool,
) -> dict[str, Any]:
    flow_svg, outcomes_svg, histograms = "", None, []
    if charts:
        with matplotlib.rc_context(RC):
            flow_svg = figure_svg(flow_figure(panel, flow), rc=RC)
            outcomes = outcomes_figure(rounds)
            outcomes_svg = figure_svg(outcomes, rc=RC) if outcomes else None
            histograms = [figure_svg(fig, rc=RC) for fig in histogram_figures(data)]
    # Safe: drawn here by matplotlib, whose SVG writer escapes every text it holds.
    return {
        "flow_svg": mark_safe(flow_svg),
        "outcomes_svg": mark_safe(outcomes_svg) if outcomes_svg else None,
        "histogram_svgs": [mark_safe(svg) for svg in histograms],
    }


def _hash_matches(data: StudyData) -> bool | None:
    study = data.study
    if study.protocol_document is None or not study.protocol_hash:
        return None
    return protocol.protocol_hash(study.protocol_document) == study.protocol_hash


def _panel(data: StudyData) -> dict[str, Any]:
    panelists = data.panelists
    by_group = Counter(p.stakeholder_group or NO_GROUP for p in panelists)
    by_specialty = Counter(p.specialty or "(not recorded)" for p in panelists)
    by_both = Counter(
        (p.stakeholder_group or NO_GROUP, p.specialty or "(not recorded)") for p in panelists
    )
    return {
        "n": len(panelists),
        "joined": sum(1 for p in panelists if p.joined_at),
        "withdrawn": sum(1 for p in panelists if p.withdrawn_at),
        "by_group": sorted(by_group.items()),
        "by_specialty": sorted(by_specialty.items()),
        "by_group_specialty": [(g, s, n) for (g, s), n in sorted(by_both.items())],
        "members": [
            {
                "pseudonym": p.pseudonym,
                "group": p.stakeholder_group or NO_GROUP,
                "specialty": p.specialty or "(not recorded)",
                "status": "withdrawn" if p.withdrawn_at else "joined" if p.joined_at else "invited",
            }
            for p in panelists
        ],
    }


def _status_paths(data: StudyData) -> list[dict[str, Any]]:
    return [
        {
            "name": row[f"r{row['last_round']}_name"],
            "kind": row["kind"],
            "path": row["status_path"].replace("_", " "),
            "final_status": row["final_status"].replace("_", " "),
            "final_reason": row["final_reason"],
        }
        for row in item_rows(data)
    ]


# --------------------------------------------------------------------------- rounds


def _round(data: StudyData, round_: Round) -> dict[str, Any]:
    """One round as the report shows it: its items, outcomes, stopping decision and
    comprehensiveness."""
    items, withheld = [], set()
    for item in data.items_of_round[round_.number]:
        groups, withheld_here = _group_summary(data, item.pk)
        items.append(_round_item(data, item, groups))
        withheld.update(withheld_here)
    decision = round_.stopping_decision or {}
    outcome_counts = Counter(i["outcome_key"] for i in items if i["outcome_key"])
    return {
        "number": round_.number,
        "status": round_.get_status_display(),
        "opened_at": round_.opened_at,
        "closed_at": round_.closed_at,
        "collects_suggestions": round_.collects_suggestions,
        "items": items,
        "outcome_counts": [
            (outcome_words(k), outcome_counts[k]) for k in OUTCOME_ORDER if outcome_counts[k]
        ],
        "stopping": decision,
        "stop": bool(decision.get("stop")),
        "stopping_reasons": list(decision.get("reasons", [])),
        # One sentence instead of a "withheld" line per item and group.
        "withheld_note": (
            f"Statistics of {', '.join(sorted(withheld))} withheld for some or all "
            f"items: fewer than {data.min_group_raters} ratings in the group."
            if withheld
            else ""
        ),
        **_comprehensiveness(data, round_),
    }


def _round_item(data: StudyData, item: RoundItem, groups: list[dict[str, str]]) -> dict[str, Any]:
    row = data.whole_panel_stats(item)
    return {
        "identity": str(item.identity),
        "name": item.name,
        "kind": item.kind,
        "version": item.item_version,
        "change_note": item.change_note,
        "stats": row,
        "iqr_text": display.iqr_text(row.q1, row.q3) if row is not None else DASH,
        "outcome": outcome_words(row.outcome) if row is not None else "not analysed",
        "outcome_key": row.outcome if row is not None else "",
        "groups": groups,
    }


def _comprehensiveness(data: StudyData, round_: Round) -> dict[str, Any]:
    scores = [
        entry.comprehensiveness
        for entry in data.entries
        if entry.round_id == round_.pk and entry.status == PanelistRound.Status.SUBMITTED
    ]
    summary = stats.comprehensiveness_summary(scores) if scores else None
    counts = " · ".join(f"{k}: {v}" for k, v in summary.counts.items()) if summary else ""
    return {"comprehensiveness": summary, "comprehensiveness_counts": counts}


def _group_summary(data: StudyData, item_pk: int) -> tuple[list[dict[str, str]], list[str]]:
    """(shown group statistics, names of the groups withheld) of one round item."""
    shown, withheld = [], []
    for group in sorted({row.group for row in data.statistics if row.group}):
        row = data.stats_of.get((item_pk, group))
        if row is None:
            continue
        if row.outcome == "withheld":
            withheld.append(group)
            continue
        shown.append(
            {
                "group": group,
                "text": f"{outcome_words(row.outcome)}, median {display.stat_number(row.median)}, "
                f"{fmt(row.pct_high)}% 7-9, n {row.n_rated}",
            }
        )
    return shown, withheld


def _final_taxonomy(data: StudyData) -> dict[str, Any] | None:
    version = data.study.released_taxonomy
    if version is None:
        return None
    children: dict[int | None, list[Any]] = {}
    for node in data.released_nodes:
        children.setdefault(node.parent_id, []).append(node)
    nodes: list[dict[str, Any]] = []

    def walk(parent: int | None, depth: int) -> None:
        for node in children.get(parent, []):
            indent = "\u00a0" * 4 * depth
            nodes.append({"depth": depth, "kind": node.kind, "name": node.name, "indent": indent})
            walk(node.pk, depth + 1)

    walk(None, 0)
    return {"name": version.name, "released_at": version.released_at, "nodes": nodes}


# --------------------------------------------------------------------------- HTML, PDF


def render_report_html(data: StudyData) -> str:
    """The report as one standalone HTML page (inline CSS and SVG, no JavaScript)."""
    return render_to_string("delphi/report.html", report_context(data))


def render_report_pdf(data: StudyData) -> bytes:
    """The report as a PDF: the text as monospaced pages, then the same charts as the page."""
    context = report_context(data, charts=False)
    lines = report_lines(context)
    title = f"Delphi study report: {data.study.title}"
    heading = f"{title} · protocol SHA-256 {data.study.protocol_hash[:16] or 'not locked'}"
    metadata = {"Title": title, "Creator": "medhelm-studio", "CreationDate": None}
    buffer = io.BytesIO()
    with matplotlib.rc_context(RC), PdfPages(buffer, metadata=metadata) as pdf:
        for page, start in enumerate(range(0, len(lines), LINES_PER_PAGE), start=1):
            # A line must not exceed the page: the wrapper already holds to LINE_WIDTH, and
            # tables are clipped per column.
            chunk = [line[: LINE_WIDTH + 10] for line in lines[start : start + LINES_PER_PAGE]]
            text_page(
                pdf,
                chunk,
                heading=heading,
                size=PAGE,
                page_label=f"text page {page}",
                font_size=TEXT_FONT_SIZE,
            )
        pdf.savefig(flow_figure(context["panel"], context["flow"]))
        outcomes = outcomes_figure(context["rounds"])
        if outcomes is not None:
            pdf.savefig(outcomes)
        for fig in histogram_figures(data):
            pdf.savefig(fig)
    return buffer.getvalue()


__all__ = [
    "render_report_html",
    "render_report_pdf",
    "report_context",
]
