"""The report of a Delphi study, as a standalone HTML page (inline CSS and SVG charts, no
JavaScript: it opens offline and can be attached to a submission) and as a PDF.

Both are drawn from one context (`report_context`) built on `delphi.exports.StudyData`, so
the page, the PDF and the CSV exports show the same numbers. Charts use matplotlib's object
API (no pyplot state) with the SVG and PDF canvases: a participation flow chart, outcomes
per round as stacked bars, and per item a histogram of the ratings in each round (small
multiples, a few items per figure so each stays legible).

Panelists appear by pseudonym only; nothing here reads a name, username or e-mail address.
"""

from __future__ import annotations

import io
import logging
import re
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from delphi import exports, protocol, stats
from delphi.exports import NO_GROUP, WHOLE_PANEL, StudyData
from delphi.models import DelphiStudy, PanelistRound

# matplotlib subsets fonts with fontTools, which logs every table of every font at INFO:
# hundreds of lines per PDF under the site's INFO root logger, and seconds of work.
if logging.getLogger("fontTools").level == logging.NOTSET:
    logging.getLogger("fontTools").setLevel(logging.WARNING)

RC = {
    "svg.fonttype": "none",  # text stays text: searchable, and far smaller than paths
    "svg.hashsalt": "medhelm-studio-delphi",  # stable ids, so a re-render diffs clean
    "font.size": 8,
    "axes.titlesize": 8,
    "pdf.fonttype": 42,
}
OUTCOME_ORDER = ("consensus_in", "no_consensus", "consensus_out", "too_few_ratings")
OUTCOME_COLOURS = {
    "consensus_in": "#2e7d32",
    "no_consensus": "#9e9e9e",
    "consensus_out": "#c62828",
    "too_few_ratings": "#ffb74d",
}
BAND_COLOURS = {**dict.fromkeys(stats.LOW_BAND, "#c62828"),
                **dict.fromkeys(stats.MID_BAND, "#9e9e9e"),
                **dict.fromkeys(stats.HIGH_BAND, "#2e7d32")}  # fmt: skip
ITEMS_PER_FIGURE = 8
PAGE = (8.27, 11.69)  # A4 portrait, inches
LINES_PER_PAGE = 84
LINE_WIDTH = 118
DASH = "\u2013"


def outcome_words(outcome: str) -> str:
    return outcome.replace("_", " ") if outcome else DASH


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return DASH
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _label(text: str) -> str:
    # "$" starts mathtext in matplotlib; an item name is plain text.
    return text.replace("$", r"\$")


# --------------------------------------------------------------------------- context


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
                "text": f"{outcome_words(row.outcome)}, median {_fmt(row.median)}, "
                f"{_fmt(row.pct_high)}% 7-9, n {row.n_rated}",
            }
        )
    return shown, withheld


def _rounds(data: StudyData) -> list[dict[str, Any]]:
    result = []
    for round_ in data.rounds:
        items = []
        withheld: set[str] = set()
        for item in data.items_of_round[round_.number]:
            row = data.stats_of.get((item.pk, ""))
            groups, withheld_here = _group_summary(data, item.pk)
            items.append(
                {
                    "identity": str(item.identity),
                    "name": item.name,
                    "kind": item.kind,
                    "version": item.item_version,
                    "change_note": item.change_note,
                    "stats": row,
                    "iqr_text": f"{_fmt(row.q1)}{DASH}{_fmt(row.q3)} ({_fmt(row.iqr)})"
                    if row is not None and row.q1 is not None
                    else DASH,
                    "outcome": outcome_words(row.outcome) if row is not None else "not analysed",
                    "outcome_key": row.outcome if row is not None else "",
                    "groups": groups,
                }
            )
            withheld.update(withheld_here)
        scores = [
            entry.comprehensiveness
            for entry in data.entries
            if entry.round_id == round_.pk and entry.status == PanelistRound.Status.SUBMITTED
        ]
        comprehensiveness = stats.comprehensiveness_summary(scores) if scores else None
        decision = round_.stopping_decision or {}
        outcome_counts = Counter(i["outcome_key"] for i in items if i["outcome_key"])
        result.append(
            {
                "number": round_.number,
                "status": round_.get_status_display(),
                "opened_at": round_.opened_at,
                "closed_at": round_.closed_at,
                "collects_suggestions": round_.collects_suggestions,
                "items": items,
                "outcome_counts": [
                    (outcome_words(k), outcome_counts[k])
                    for k in OUTCOME_ORDER
                    if outcome_counts[k]
                ],
                "stopping": decision,
                "stop": bool(decision.get("stop")),
                "stopping_reasons": list(decision.get("reasons", [])),
                "comprehensiveness": comprehensiveness,
                # One sentence instead of a "withheld" line per item and group.
                "withheld_note": (
                    f"Statistics of {', '.join(sorted(withheld))} withheld for some or all "
                    f"items: fewer than {data.min_group_raters} ratings in the group."
                    if withheld
                    else ""
                ),
                "comprehensiveness_counts": (
                    " · ".join(f"{k}: {v}" for k, v in comprehensiveness.counts.items())
                    if comprehensiveness
                    else ""
                ),
            }
        )
    return result


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
            nodes.append({"depth": depth, "kind": node.kind, "name": node.name,
                          "indent": "\u00a0" * 4 * depth})  # fmt: skip
            walk(node.pk, depth + 1)

    walk(None, 0)
    return {"name": version.name, "released_at": version.released_at, "nodes": nodes}


def report_context(
    study: DelphiStudy, *, data: StudyData | None = None, charts: bool = True
) -> dict[str, Any]:
    """Everything the HTML template and the PDF print, the charts as SVG text (left out with
    charts=False: the PDF draws them on its own canvas)."""
    data = data if data is not None else exports.load_study_data(study)
    study = data.study
    flow = exports.flow_rows(study=study, data=data)
    rounds = _rounds(data)
    items = exports.item_rows(study=study, data=data)
    flow_svg, outcomes_svg, histograms = "", None, []
    if charts:
        with matplotlib.rc_context(RC):
            flow_svg = _svg(flow_figure(data, flow))
            outcomes = outcomes_figure(rounds)
            outcomes_svg = _svg(outcomes) if outcomes else None
            histograms = [_svg(fig) for fig in histogram_figures(data)]
    checklist = exports.checklist_items(study=study, data=data)
    hash_matches = (
        protocol.protocol_hash(study.protocol_document) == study.protocol_hash
        if study.protocol_document is not None and study.protocol_hash
        else None
    )
    return {
        "study": study,
        "generated_at": timezone.now(),
        "locked": study.protocol_document is not None,
        "protocol_hash": study.protocol_hash,
        "protocol_locked_at": study.protocol_locked_at,
        "hash_matches": hash_matches,
        "protocol_settings": exports.protocol_settings(data),
        "panel": _panel(data),
        "flow": flow,
        "flow_whole": [row for row in flow if row["group"] == WHOLE_PANEL],
        # Safe: drawn here by matplotlib, whose SVG writer escapes every text it holds.
        "flow_svg": mark_safe(flow_svg),
        "outcomes_svg": mark_safe(outcomes_svg) if outcomes_svg else None,
        "histogram_svgs": [mark_safe(svg) for svg in histograms],
        "rounds": rounds,
        "status_paths": [
            {
                "name": row[f"r{row['last_round']}_name"],
                "kind": row["kind"],
                "path": row["status_path"].replace("_", " "),
                "final_status": row["final_status"].replace("_", " "),
                "final_reason": row["final_reason"],
            }
            for row in items
        ],
        "changes": exports.change_rows(study=study, data=data),
        "stability": exports.stability_rows(study=study, data=data),
        "stability_method": exports.stability_method(),
        "quantile_method": stats.describe_quantile_method(data.quantile_method),
        "final_taxonomy": _final_taxonomy(data),
        "finished_reason": study.finished_reason,
        "checklist": [
            {"source": exports.CHECKLIST_SOURCES[guideline], "sections": sections}
            for guideline, sections in exports.grouped_checklist(checklist)
        ],
        "checklist_note": exports.CHECKLIST_NOTE,
        "to_authors": exports.TO_AUTHORS,
        "min_group_raters": data.min_group_raters,
    }


# --------------------------------------------------------------------------- figures


def flow_figure(data: StudyData, flow: Sequence[Mapping[str, Any]]) -> Figure:
    """A CONSORT-style flow chart: the panel, then each round (invited, submitted, response
    rate) with those lost on the side (did not respond, withdrew, still pending)."""
    whole = [row for row in flow if row["group"] == WHOLE_PANEL]
    n_boxes = len(whole) + 1
    fig = Figure(figsize=(6.4, 1.0 + 1.05 * n_boxes))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, n_boxes * 1.4 + 0.2)
    ax.axis("off")
    box = {"boxstyle": "round,pad=0.4", "facecolor": "#eef3fb", "edgecolor": "#1f5fbf"}
    side = {"boxstyle": "round,pad=0.4", "facecolor": "#fff4e5", "edgecolor": "#a35b00"}
    panel = _panel(data)
    y = n_boxes * 1.4 - 0.5
    ax.text(3.2, y, f"Panel: {panel['n']} invited to the study\n{panel['joined']} joined, "
            f"{panel['withdrawn']} withdrew", ha="center", va="center", bbox=box)  # fmt: skip
    for row in whole:
        previous_y, y = y, y - 1.4
        ax.add_patch(FancyArrowPatch((3.2, previous_y - 0.42), (3.2, y + 0.42),
                                     arrowstyle="-|>", mutation_scale=10, color="#444"))  # fmt: skip
        ax.text(
            3.2, y,
            f"Round {row['round']} ({row['round_status'].replace('_', ' ')})\n"
            f"invited {row['invited']}, submitted {row['submitted']} "
            f"({_fmt(row['response_rate_pct'])}%)",
            ha="center", va="center", bbox=box,
        )  # fmt: skip
        lost = [f"did not respond: {row['non_responders']}", f"withdrew: {row['withdrawn']}"]
        if row["pending"]:
            lost.append(f"not submitted yet: {row['pending']}")
        if row["round"] > 1:
            lost.append(f"attrition vs round 1: {_fmt(row['attrition_vs_round_1_pct'])}%")
        ax.add_patch(FancyArrowPatch((5.3, y), (6.35, y), arrowstyle="-|>", mutation_scale=10,
                                     color="#a35b00"))  # fmt: skip
        ax.text(8.1, y, "\n".join(lost), ha="center", va="center", fontsize=7, bbox=side)
    if not whole:
        ax.text(3.2, y - 1.4, "no round opened yet", ha="center", va="center")
    return fig


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
        bars = ax.bar(labels, counts, bottom=bottoms, color=OUTCOME_COLOURS[outcome],
                      label=outcome_words(outcome), width=0.6)  # fmt: skip
        ax.bar_label(bars, labels=[str(c) if c else "" for c in counts], label_type="center",
                     color="white", fontsize=7)  # fmt: skip
        bottoms = [b + c for b, c in zip(bottoms, counts, strict=True)]
    ax.set_ylabel("items")
    ax.set_title("Outcome of the items rated in each round")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.spines[["top", "right"]].set_visible(False)
    return fig


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
    figures = []
    # Fixed geometry in inches, laid out by hand: constrained layout measures every text and
    # took seconds per figure on a large taxonomy.
    label_w, cell_w, cell_h, head_h, top_h, bottom_h = 1.9, 1.75, 0.62, 0.3, 0.3, 0.25
    for start in range(0, len(identities), ITEMS_PER_FIGURE):
        chunk = identities[start : start + ITEMS_PER_FIGURE]
        width = label_w + cell_w * len(analysed) + 0.15
        height = top_h + (cell_h + head_h) * len(chunk) + bottom_h
        fig = Figure(figsize=(width, height))
        for column, round_ in enumerate(analysed):
            fig.text((label_w + cell_w * (column + 0.5)) / width, 1 - 0.12 / height,
                     f"Round {round_.number}", ha="center", va="top", fontsize=8,
                     fontweight="bold")  # fmt: skip
        for row, identity in enumerate(chunk):
            latest = [data.item_at[(r.number, identity)] for r in analysed
                      if (r.number, identity) in data.item_at][-1]  # fmt: skip
            bottom = height - top_h - (row + 1) * (cell_h + head_h)
            fig.text((label_w - 0.1) / width, (bottom + cell_h / 2) / height,
                     _label(textwrap.fill(latest.name, 26, max_lines=3, placeholder="…")),
                     ha="right", va="center", fontsize=7)  # fmt: skip
            for column, round_ in enumerate(analysed):
                item = data.item_at.get((round_.number, identity))
                statistics = data.stats_of.get((item.pk, "")) if item else None
                left = label_w + cell_w * column + 0.12
                ax = fig.add_axes((left / width, bottom / height,
                                   (cell_w - 0.3) / width, cell_h / height))  # fmt: skip
                if statistics is None or item is None:
                    ax.axis("off")
                    ax.text(0.5, 0.5, "not rated in this round", ha="center", va="center",
                            fontsize=6, color="grey", transform=ax.transAxes)  # fmt: skip
                    continue
                counts = statistics.counts or {}
                values = [counts.get(str(p), 0) for p in stats.SCALE_POINTS]
                ax.bar(stats.SCALE_POINTS, values, width=0.8,
                       color=[BAND_COLOURS[p] for p in stats.SCALE_POINTS])  # fmt: skip
                ax.set_xlim(0.4, 9.6)
                ax.set_ylim(0, max(1, statistics.n_rated))
                ax.set_xticks(stats.SCALE_POINTS,
                              [str(p) for p in stats.SCALE_POINTS],
                              fontsize=5)  # fmt: skip
                ax.set_yticks([0, max(1, statistics.n_rated)])
                ax.tick_params(axis="y", labelsize=5, length=2, pad=1)
                ax.tick_params(axis="x", length=0, pad=1)
                ax.spines[["top", "right"]].set_visible(False)
                ax.set_title(f"v{item.item_version} \u00b7 n {statistics.n_rated} \u00b7 median "
                             f"{_fmt(statistics.median)} \u00b7 {outcome_words(statistics.outcome)}",
                             loc="left", fontsize=5.5, pad=2,
                             color=OUTCOME_COLOURS.get(statistics.outcome, "black"))  # fmt: skip
        figures.append(fig)
    return figures


_XML_HEAD = re.compile(r"^.*?(?=<svg)", re.S)


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    # The XML declaration and DOCTYPE are not allowed inside an HTML body.
    return _XML_HEAD.sub("", buffer.getvalue(), count=1)


# --------------------------------------------------------------------------- HTML


def render_report_html(study: DelphiStudy, *, data: StudyData | None = None) -> str:
    """The report as one standalone HTML page (inline CSS and SVG, no JavaScript)."""
    return render_to_string("delphi/report.html", report_context(study, data=data))


# --------------------------------------------------------------------------- PDF


def _wrap(text: str, indent: int = 2) -> list[str]:
    return textwrap.wrap(text, LINE_WIDTH, initial_indent=" " * indent,
                         subsequent_indent=" " * (indent + 2)) or [""]  # fmt: skip


def _table(
    rows: Sequence[Sequence[Any]], header: Sequence[str], widths: Sequence[int]
) -> list[str]:
    def line(cells: Sequence[Any]) -> str:
        return (
            "  "
            + " ".join(f"{str(c)[:w]:<{w}}" for c, w in zip(cells, widths, strict=True)).rstrip()
        )

    return [line(header), "  " + "-" * min(LINE_WIDTH - 2, sum(widths) + len(widths) - 1),
            *(line(r) for r in rows)]  # fmt: skip


def report_lines(context: Mapping[str, Any]) -> list[str]:
    """The report's text as the PDF prints it (monospaced lines)."""
    study = context["study"]
    lines = [f"Delphi study report: {study.title}",
             f"Generated {context['generated_at']:%Y-%m-%d %H:%M} UTC by medhelm-studio", ""]  # fmt: skip
    lines.append("1. Protocol")
    if context["locked"]:
        lines += _wrap(f"Locked {context['protocol_locked_at']:%Y-%m-%d %H:%M:%S} UTC")
        lines += _wrap(f"SHA-256 {context['protocol_hash']}")
        lines += _wrap("Hash check: the stored document hashes to this value"
                       if context["hash_matches"]
                       else "Hash check: MISMATCH, the stored document does not hash to this value")  # fmt: skip
    else:
        lines += _wrap("The protocol is NOT locked yet: the settings below can still change.")
    for label, text in context["protocol_settings"]:
        lines += _wrap(f"{label}: {text}")
    panel = context["panel"]
    lines += ["", "2. Panel (pseudonyms only)"]
    lines += _wrap(f"{panel['n']} invited, {panel['joined']} joined, {panel['withdrawn']} withdrew")
    lines += _table(panel["by_group_specialty"], ["group", "specialty", "n"], [30, 40, 5])
    lines += _wrap("Panelists: " + ", ".join(
        f"{m['pseudonym']} ({m['group']}, {m['specialty']}, {m['status']})" for m in panel["members"]))  # fmt: skip
    lines += ["", "3. Flow of panelists per round"]
    lines += _table(
        [[r["round"], r["group"], r["invited"], r["submitted"], r["non_responders"], r["withdrawn"],
          r["pending"], _fmt(r["response_rate_pct"]), _fmt(r["attrition_vs_round_1_pct"])]
         for r in context["flow"]],
        ["round", "group", "invited", "submitted", "no resp.", "withdrew", "pending",
         "resp. %", "attrition %"],
        [5, 24, 7, 9, 8, 8, 7, 7, 11],
    )  # fmt: skip
    for round_ in context["rounds"]:
        lines += ["", f"4.{round_['number']} Round {round_['number']} ({round_['status']})"]
        lines += _table(
            [[i["name"], i["kind"][:4], i["version"],
              i["stats"].n_rated if i["stats"] else DASH,
              _fmt(i["stats"].median) if i["stats"] else DASH, i["iqr_text"],
              _fmt(i["stats"].pct_low) if i["stats"] else DASH,
              _fmt(i["stats"].pct_high) if i["stats"] else DASH, i["outcome"]]
             for i in round_["items"]],
            ["item", "kind", "v", "n", "median", "Q1-Q3 (IQR)", "% 1-3", "% 7-9", "outcome"],
            [34, 4, 2, 3, 6, 16, 6, 6, 16],
        )  # fmt: skip
        for item in round_["items"]:
            for group in item["groups"]:
                lines += _wrap(f"{item['name']} / {group['group']}: {group['text']}", 4)
            if item["change_note"]:
                lines += _wrap(f"{item['name']}: changed: {item['change_note']}", 4)
        if round_["withheld_note"]:
            lines += _wrap(round_["withheld_note"])
        if round_["stopping_reasons"]:
            verdict = "stop" if round_["stop"] else "continue"
            lines += _wrap(f"Stopping rule ({verdict}): " + "; ".join(round_["stopping_reasons"]))
        summary = round_["comprehensiveness"]
        if summary:
            lines += _wrap(f"Comprehensiveness (1-5): n {summary.n}, mean {_fmt(summary.mean, 2)}, "
                           f"SD {_fmt(summary.sd, 2)}, median {_fmt(summary.median)}; "
                           f"{round_['comprehensiveness_counts']}")  # fmt: skip
    lines += ["", "5. Changes to items, with reasons"]
    if not context["changes"]:
        lines += _wrap("(none)")
    for change in context["changes"]:
        lines += _wrap(
            f"Round {change['round']} {change['kind']} ({change['decision']}): "
            f"{change['item'] or DASH}: {change['from'] or DASH} -> {change['to'] or DASH}. "
            f"Reason: {change['reason']}"
        )
    lines += ["", "6. Stability between rounds"]
    lines += _wrap(context["stability_method"])
    lines += _table(
        [[f"{s['round_from']}->{s['round_to']}", s["item"], s["n_paired"],
          _fmt(s["pct_unchanged"]), _fmt(s["mean_abs_change"], 2), _fmt(s["wilcoxon_p"], 3),
          _fmt(s["weighted_kappa"], 2)] for s in context["stability"]],
        ["rounds", "item", "n", "% same", "mean |d|", "Wilcoxon p", "kappa"],
        [6, 40, 4, 7, 8, 10, 6],
    )  # fmt: skip
    lines += ["", "7. Final taxonomy"]
    final = context["final_taxonomy"]
    if final is None:
        lines += _wrap("Not released yet.")
    else:
        lines += _wrap(f"Released as {final['name']!r} ({len(final['nodes'])} nodes)")
        lines += [f"  {'    ' * n['depth']}{n['name']} ({n['kind']})" for n in final["nodes"]]
    if context["finished_reason"]:
        lines += _wrap(f"Study finished: {context['finished_reason']}")
    lines += ["", "8. Reporting checklist", *_wrap(context["checklist_note"])]
    for block in context["checklist"]:
        lines += ["", *_wrap(block["source"], 0)]
        for section, entries in block["sections"]:
            lines.append(f"  {section}")
            for item in entries:
                lines += _wrap(f"{item.number}. {item.topic}: {item.text}", 4)
                lines += _wrap(f"[{item.status}] {item.answer}", 8)
    return lines


def _text_page(pdf: PdfPages, lines: Sequence[str], *, heading: str, page: int) -> None:
    fig = Figure(figsize=PAGE)
    fig.text(0.05, 0.975, heading, fontsize=7, color="grey", va="top")
    fig.text(0.95, 0.975, f"text page {page}", fontsize=7, color="grey", va="top", ha="right")
    fig.text(0.05, 0.955, "\n".join(lines), family="monospace", fontsize=6.4, va="top",
             linespacing=1.3)  # fmt: skip
    pdf.savefig(fig)


def render_report_pdf(study: DelphiStudy, *, data: StudyData | None = None) -> bytes:
    """The report as a PDF: the text as monospaced pages, then the same charts as the page."""
    data = data if data is not None else exports.load_study_data(study)
    context = report_context(data.study, data=data, charts=False)
    lines = report_lines(context)
    title = f"Delphi study report: {data.study.title}"
    heading = f"{title} · protocol SHA-256 {data.study.protocol_hash[:16] or 'not locked'}"
    buffer = io.BytesIO()
    with (
        matplotlib.rc_context(RC),
        PdfPages(buffer, metadata={"Title": title, "Creator": "medhelm-studio",
                                   "CreationDate": None}) as pdf,
    ):  # fmt: skip
        for page, start in enumerate(range(0, len(lines), LINES_PER_PAGE), start=1):
            # A line must not exceed the page: the wrapper already holds to LINE_WIDTH, and
            # tables are clipped per column.
            chunk = [line[: LINE_WIDTH + 10] for line in lines[start : start + LINES_PER_PAGE]]
            _text_page(pdf, chunk, heading=heading, page=page)
        pdf.savefig(flow_figure(data, context["flow"]))
        outcomes = outcomes_figure(context["rounds"])
        if outcomes is not None:
            pdf.savefig(outcomes)
        for fig in histogram_figures(data):
            pdf.savefig(fig)
    return buffer.getvalue()


__all__ = [
    "flow_figure",
    "histogram_figures",
    "outcomes_figure",
    "render_report_html",
    "render_report_pdf",
    "report_context",
    "report_lines",
]
