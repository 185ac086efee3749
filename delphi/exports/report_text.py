"""The Delphi report's text as the PDF prints it: monospaced lines, section by section,
from the same context as the HTML page (`report.report_context`)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from delphi.exports.charts import DASH, fmt
from delphi.stats import display
from medhelm_site.common.figures import wrap_line

LINES_PER_PAGE = 84
LINE_WIDTH = 118


def _wrap(text: str, indent: int = 2) -> list[str]:
    # One paragraph per call: a newline a user typed (a change note, a reason) would
    # otherwise break the monospaced page's line count.
    one_line = re.sub(r"\s", " ", text)
    return wrap_line(one_line, width=LINE_WIDTH, indent=indent, continuation_indent=indent + 2)


def _table(
    rows: Sequence[Sequence[Any]], header: Sequence[str], widths: Sequence[int]
) -> list[str]:
    """A monospaced table; a cell longer than its column wraps onto further lines of its row
    (never cut: an item's name is printed whole)."""

    def lines(cells: Sequence[Any]) -> list[str]:
        wrapped = [
            textwrap.wrap(re.sub(r"\s", " ", str(c)), w, break_on_hyphens=False) or [""]
            for c, w in zip(cells, widths, strict=True)
        ]
        out = []
        for i in range(max(len(parts) for parts in wrapped)):
            parts = [p[i] if i < len(p) else "" for p in wrapped]
            text = " ".join(f"{part:<{w}}" for part, w in zip(parts, widths, strict=True))
            out.append("  " + text.rstrip())
        return out

    rule = "  " + "-" * min(LINE_WIDTH - 2, sum(widths) + len(widths) - 1)
    return [*lines(header), rule, *(line for r in rows for line in lines(r))]


def report_lines(context: Mapping[str, Any]) -> list[str]:
    """The report's text as the PDF prints it (monospaced lines)."""
    study = context["study"]
    return [
        f"Delphi study report: {study.title}",
        f"Generated {context['generated_at']:%Y-%m-%d %H:%M} UTC by medhelm-studio",
        "",
        *_protocol(context),
        *_panel(context["panel"]),
        *_flow(context["flow"]),
        *(
            line
            for round_ in context["rounds"]
            for line in _round(round_, context["quantile_method"])
        ),
        *_changes(context["changes"]),
        *_stability(context),
        *_final(context),
        *_checklist(context),
    ]


def _protocol(context: Mapping[str, Any]) -> list[str]:
    lines = ["1. Protocol"]
    if context["locked"]:
        lines += _wrap(f"Locked {context['protocol_locked_at']:%Y-%m-%d %H:%M:%S} UTC")
        lines += _wrap(f"SHA-256 {context['protocol_hash']}")
        lines += _wrap(
            "Hash check: the stored document hashes to this value"
            if context["hash_matches"]
            else "Hash check: MISMATCH, the stored document does not hash to this value"
        )
    else:
        lines += _wrap("The protocol is NOT locked yet: the settings below can still change.")
    for label, text in context["protocol_settings"]:
        lines += _wrap(f"{label}: {text}")
    return lines


def _panel(panel: Mapping[str, Any]) -> list[str]:
    members = ", ".join(
        f"{m['pseudonym']} ({m['group']}, {m['specialty']}, {m['status']})"
        for m in panel["members"]
    )
    return [
        "",
        "2. Panel (pseudonyms only)",
        *_wrap(f"{panel['n']} invited, {panel['joined']} joined, {panel['withdrawn']} withdrew"),
        *_table(panel["by_group_specialty"], ["group", "specialty", "n"], [30, 40, 5]),
        *_wrap("Panelists: " + members),
    ]


FLOW_HEADER = [
    "round",
    "group",
    "invited",
    "submitted",
    "no resp.",
    "withdrew",
    "pending",
    "resp. %",
    "attrition %",
]
FLOW_WIDTHS = [5, 24, 7, 9, 8, 8, 7, 7, 11]


def _flow(flow: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = [
        [
            r["round"],
            r["group"],
            r["invited"],
            r["submitted"],
            r["non_responders"],
            r["withdrawn"],
            r["pending"],
            fmt(r["response_rate_pct"]),
            "open"
            if r["round_status"] == "open" and r["round"] > 1
            else fmt(r["attrition_vs_round_1_pct"]),
        ]
        for r in flow
    ]
    return ["", "3. Flow of panelists per round", *_table(rows, FLOW_HEADER, FLOW_WIDTHS)]


ROUND_HEADER = ["item", "kind", "v", "n", "median", "Q1-Q3 (IQR)", "% 1-3", "% 7-9", "outcome"]
ROUND_WIDTHS = [34, 4, 2, 3, 6, 16, 6, 6, 16]


def _round_row(item: Mapping[str, Any]) -> list[Any]:
    row = item["stats"]
    return [
        item["name"],
        item["kind"][:4],
        item["version"],
        row.n_rated if row else DASH,
        display.stat_number(row.median) if row else DASH,
        item["iqr_text"],
        fmt(row.pct_low) if row else DASH,
        fmt(row.pct_high) if row else DASH,
        item["outcome"],
    ]


def _round(round_: Mapping[str, Any], quantile_method: str) -> list[str]:
    lines = ["", f"4.{round_['number']} Round {round_['number']} ({round_['status']})"]
    lines += _wrap(f"Statistics of the whole panel; {quantile_method}. {display.ROUNDING_RULE}")
    lines += _table([_round_row(i) for i in round_["items"]], ROUND_HEADER, ROUND_WIDTHS)
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
        lines += _wrap(
            f"Comprehensiveness (1-5): n {summary.n}, mean {fmt(summary.mean, 2)}, "
            f"SD {fmt(summary.sd, 2)}, median {display.stat_number(summary.median)}; "
            f"{round_['comprehensiveness_counts']}"
        )
    return lines


def _changes(changes: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["", "5. Changes to items, with reasons"]
    if not changes:
        lines += _wrap("(none)")
    for change in changes:
        lines += _wrap(
            f"Round {change['round']} {change['kind']} ({change['decision']}): "
            f"{change['item'] or DASH}: {change['from'] or DASH} -> {change['to'] or DASH}. "
            f"Reason: {change['reason']}"
        )
    return lines


STABILITY_HEADER = ["rounds", "item", "n", "% same", "mean |d|", "Wilcoxon p", "kappa"]
STABILITY_WIDTHS = [6, 40, 4, 7, 8, 10, 6]


def _stability(context: Mapping[str, Any]) -> list[str]:
    rows = [
        [
            f"{s['round_from']}->{s['round_to']}",
            s["item"],
            s["n_paired"],
            fmt(s["pct_unchanged"]),
            fmt(s["mean_abs_change"], 2),
            fmt(s["wilcoxon_p"], 3),
            fmt(s["weighted_kappa"], 2),
        ]
        for s in context["stability"]
    ]
    return [
        "",
        "6. Stability between rounds",
        *_wrap(context["stability_method"]),
        *_table(rows, STABILITY_HEADER, STABILITY_WIDTHS),
    ]


def _final(context: Mapping[str, Any]) -> list[str]:
    lines = ["", "7. Final taxonomy"]
    final = context["final_taxonomy"]
    if final is None:
        lines += _wrap("Not released yet.")
    else:
        lines += _wrap(f"Released as {final['name']!r} ({len(final['nodes'])} nodes)")
        lines += [f"  {'    ' * n['depth']}{n['name']} ({n['kind']})" for n in final["nodes"]]
    if context["finished_reason"]:
        lines += _wrap(f"Study finished: {context['finished_reason']}")
    return lines


def _checklist(context: Mapping[str, Any]) -> list[str]:
    lines = ["", "8. Reporting checklist", *_wrap(context["checklist_note"])]
    for block in context["checklist"]:
        lines += ["", *_wrap(block["source"], 0)]
        for section, entries in block["sections"]:
            lines.append(f"  {section}")
            for item in entries:
                lines += _wrap(f"{item.number}. {item.topic}: {item.text}", 4)
                lines += _wrap(f"[{item.status}] {item.answer}", 8)
    return lines


__all__ = ["LINES_PER_PAGE", "LINE_WIDTH", "report_lines"]
