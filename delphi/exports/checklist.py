"""The ACCORD / CREDES reporting checklist of a Delphi study, prefilled with what the tool
knows for certain and marked "to be completed by the authors" where it does not.

The item texts and answer templates are data (checklist_items/*.json, in guideline order);
this module states the study's facts one sentence each (`study_facts`), fills the
templates with them and writes the checklist as Markdown or HTML.
"""

from __future__ import annotations

import html
import json
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delphi.exports.answer_tables import flow_rows, stability_method
from delphi.exports.data import NO_GROUP, WHOLE_PANEL, StudyData
from delphi.exports.protocol_text import ProtocolText, protocol_text
from delphi.models import DelphiStudy, Round, Suggestion

ITEMS_DIR = Path(__file__).resolve().parent / "checklist_items"
CHECKLIST_SECTIONS = (
    "Title and abstract",
    "Introduction",
    "Methods",
    "Results",
    "Discussion",
    "Other information",
)
TO_AUTHORS = "to be completed by the authors"
PREFILLED = "prefilled"
PARTLY = "partly prefilled"
STATUS_WORDS = {"prefilled": PREFILLED, "partly": PARTLY, "to_authors": TO_AUTHORS}


@dataclass(frozen=True)
class ChecklistItem:
    guideline: str  # "ACCORD" or "CREDES"
    number: str
    section: str  # one of CHECKLIST_SECTIONS
    topic: str
    text: str  # our short paraphrase of the guideline item
    answer: str
    status: str  # PREFILLED, PARTLY or TO_AUTHORS


def _load_guideline(name: str) -> dict[str, Any]:
    guideline = json.loads((ITEMS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    for item in guideline["items"]:
        if item["section"] not in CHECKLIST_SECTIONS or item["status"] not in STATUS_WORDS:
            raise ValueError(f"{name}.json: bad section or status in {item['topic']!r}")
    return guideline


GUIDELINES = tuple(_load_guideline(name) for name in ("accord", "credes"))
CHECKLIST_SOURCES = {g["guideline"]: g["source"] for g in GUIDELINES}
CHECKLIST_NOTE = (
    "Item texts are short paraphrases, not the guidelines' wording; check them against the "
    "published checklists. Answers come from the study as stored in medhelm-studio; nothing "
    f"is filled in that the tool does not know: such parts say '{TO_AUTHORS}'."
)


class _AnswerFormatter(string.Formatter):
    """str.format with one extra spec, ":cap", that capitalises the first letter only
    (str.capitalize() would lower-case the rest: "RAND/UCLA" -> "rand/ucla")."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "cap":
            text = str(value)
            return text[:1].upper() + text[1:]
        return super().format_field(value, format_spec)


def checklist_items(data: StudyData) -> list[ChecklistItem]:
    """The ACCORD items (1-35) then the CREDES standards (C1...), each answer filled in from
    the study's facts."""
    facts = study_facts(data)
    formatter = _AnswerFormatter()
    return [
        ChecklistItem(
            guideline=guideline["guideline"],
            number=f"{guideline['number_prefix']}{number}",
            section=item["section"],
            topic=item["topic"],
            text=item["text"],
            answer=formatter.format(item["answer"], **facts),
            status=STATUS_WORDS[item["status"]],
        )
        for guideline in GUIDELINES
        for number, item in enumerate(guideline["items"], start=1)
    ]


# --------------------------------------------------------------------------- facts


def study_facts(data: StudyData) -> dict[str, str]:
    """What the tool knows for certain, one sentence each, by the names the answer
    templates use."""
    study = data.study
    text = protocol_text(data)
    whole = [row for row in flow_rows(data) if row["group"] == WHOLE_PANEL]
    run = [round_ for round_ in data.rounds if round_.status != Round.Status.DRAFT]
    lock = _lock(study)
    return {
        "title": study.title,
        "aims": study.aims.strip().rstrip(".") or "(none given)",
        "deviation": _deviation(study),
        "to_authors": TO_AUTHORS,
        "lock": lock,
        "rule": f"{text.consensus_rule} ({lock})",
        "stopping": text.stopping_rule,
        "carry_over": text.carry_over,
        "questions": f"{text.questions} Scale: {text.scale}.",
        "rounds": _rounds_run(study, run),
        "response": _response(whole),
        "attrition": _attrition(whole),
        "n_panel": f"{len(data.panelists)} panelists invited",
        "panel": _panel(data),
        "outcomes": _outcomes(data, run),
        "suggestions": _suggestions(data),
        "final": _final(data),
        "feedback": _feedback(data),
        "analysis": _analysis(text),
        "anonymity": "panelists are known to each other and in every export only by "
        "pseudonym; group feedback is anonymous; comments are fed back and exported without "
        "their author",
        "mode": _mode(data, run),
        "coordinators": f"{data.n_coordinators} coordinator(s) ran the study in the tool",
        "draft": f"the draft taxonomy put to round 1: {text.draft_taxonomy}",
    }


def _num(value: float | None) -> str:
    if value is None:
        return "\u2013"
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _lock(study: DelphiStudy) -> str:
    if not study.protocol_locked_at:
        return "the protocol is NOT locked yet"
    return (
        f"locked {study.protocol_locked_at:%Y-%m-%d %H:%M} UTC, before round 1 opened; "
        f"SHA-256 {study.protocol_hash}"
    )


def _deviation(study: DelphiStudy) -> str:
    # finish_study records "ended early by the coordinator: ..." when the locked stopping
    # rule was not met: the one deviation from the protocol the tool can see.
    if "ended early" in study.finished_reason:
        return f"Deviation: {study.finished_reason.rstrip('.')}."
    return "No deviation recorded by the tool."


def _rounds_run(study: DelphiStudy, run: list[Round]) -> str:
    ended = f"; the study ended: {study.finished_reason}" if study.finished_reason else ""
    return f"{len(run)} round(s) run{ended}"


def _response(whole: list[dict[str, Any]]) -> str:
    return (
        "; ".join(
            f"round {row['round']}: {row['submitted']}/{row['invited']} submitted "
            f"({_num(row['response_rate_pct'])}%"
            f"{', so far: the round is open' if row['round_status'] == 'open' else ''})"
            for row in whole
        )
        or "no round opened yet"
    )


def _attrition(whole: list[dict[str, Any]]) -> str:
    return (
        "; ".join(_attrition_of(row) for row in whole if row["round"] > 1)
        or "only one round so far"
    )


def _attrition_of(row: dict[str, Any]) -> str:
    if row["attrition_vs_round_1_pct"] is None:  # the round is still open
        return (
            f"round {row['round']}: still open, {row['retained_from_round_1']} of "
            f"{row['round_1_respondents']} round-1 respondents submitted so far, "
            f"{row['pending']} not yet (attrition not final)"
        )
    return (
        f"round {row['round']}: {row['retained_from_round_1']} of "
        f"{row['round_1_respondents']} round-1 respondents submitted "
        f"(attrition {_num(row['attrition_vs_round_1_pct'])}%), "
        f"{row['withdrawn']} withdrew, {row['non_responders']} did not respond"
    )


def _panel(data: StudyData) -> str:
    panelists = data.panelists
    groups = Counter(p.stakeholder_group or NO_GROUP for p in panelists)
    specialties = Counter(p.specialty or "(not recorded)" for p in panelists)
    return (
        f"{len(panelists)} panelists invited, "
        f"{sum(1 for p in panelists if p.joined_at)} joined, "
        f"{sum(1 for p in panelists if p.withdrawn_at)} withdrew; by stakeholder group: "
        + ", ".join(f"{g} {n}" for g, n in sorted(groups.items()))
        + "; by specialty: "
        + ", ".join(f"{s} {n}" for s, n in sorted(specialties.items()))
    )


def _outcomes(data: StudyData, run: list[Round]) -> str:
    outcomes = []
    for round_ in run:
        counts = Counter(
            row.outcome
            for row in data.statistics
            if row.group == "" and row.round_item.round_id == round_.pk
        )
        if counts:
            outcomes.append(
                f"round {round_.number}: "
                + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(counts.items()))
            )
    return "; ".join(outcomes) or "no round analysed yet"


def _suggestions(data: StudyData) -> str:
    decided = Counter(s.status for s in data.suggestions)
    return (
        f"round 1 collected panelists' suggestions (add, rename, move, merge, delete); "
        f"{len(data.suggestions)} made, {decided[Suggestion.Status.ACCEPTED]} accepted, "
        f"{decided[Suggestion.Status.REJECTED]} rejected, {decided[Suggestion.Status.PENDING]} "
        "pending; each decision has a recorded reason (changes.csv); a changed item is rated "
        "again as a new item version"
    )


def _final(data: StudyData) -> str:
    if not data.study.released_taxonomy_id:
        return "no taxonomy released yet"
    return (
        f"released as taxonomy version {data.study.released_taxonomy.name!r} with "
        f"{len(data.released_nodes)} nodes"
    )


def _feedback(data: StudyData) -> str:
    study = data.study
    asks_reason = (data.document or {}).get("ask_reason_outside_iqr", study.ask_reason_outside_iqr)
    return (
        "between rounds each panelist saw, per item, the whole panel's median, IQR and "
        "distribution of ratings, their own previous rating, and the anonymous comments"
        + ("; a rating outside the previous IQR required a reason" if asks_reason else "")
    )


def _analysis(text: ProtocolText) -> str:
    return (
        f"per item: median, Q1/Q3 and IQR, mean, SD, % in each band, P30/P70, IPR, IPRAS and "
        f"the RAND/UCLA disagreement flag; {text.quantile_method}; "
        "'unable to rate' is not a rating and is in no denominator; only submitted answers "
        f"count; {text.group_statistics}; stability between rounds: {stability_method()}"
    )


def _mode(data: StudyData, run: list[Round]) -> str:
    rounds = "; ".join(
        f"round {r.number} opened {r.opened_at:%Y-%m-%d}"
        + (f", closed {r.closed_at:%Y-%m-%d}" if r.closed_at else "")
        + f", {data.reminders[r.number]} reminder(s) sent"
        for r in run
        if r.opened_at
    )
    return (
        "online questionnaire in medhelm-studio, one-time personal invitation links, answers "
        "saved as drafts until submitted; rounds: " + (rounds or "none opened yet")
    )


# --------------------------------------------------------------------------- writing


def grouped_checklist(
    items: Sequence[ChecklistItem],
) -> list[tuple[str, list[tuple[str, list[ChecklistItem]]]]]:
    """(guideline, [(section, its items)]) in guideline and section order, empty sections
    left out."""
    result = []
    for guideline in CHECKLIST_SOURCES:
        mine = [item for item in items if item.guideline == guideline]
        sections = [
            (section, [item for item in mine if item.section == section])
            for section in CHECKLIST_SECTIONS
        ]
        result.append((guideline, [s for s in sections if s[1]]))
    return result


def checklist_markdown(data: StudyData) -> str:
    lines = [
        f"# Reporting checklist: {data.study.title}",
        "",
        f"Protocol hash (SHA-256): `{data.study.protocol_hash or 'not locked'}`",
        "",
        CHECKLIST_NOTE,
        "",
    ]
    for guideline, sections in grouped_checklist(checklist_items(data)):
        lines += [f"## {CHECKLIST_SOURCES[guideline]}", ""]
        for section, entries in sections:
            lines += [f"### {section}", "", "| # | Item | Answer | Status |", "|---|---|---|---|"]
            for item in entries:
                cells = [item.number, f"**{item.topic}**: {item.text}", item.answer, item.status]
                lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
            lines.append("")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def checklist_html(data: StudyData) -> str:
    """A standalone HTML page of the checklist (the report embeds the same table)."""
    body = checklist_html_fragment(checklist_items(data))
    title = html.escape(f"Reporting checklist: {data.study.title}")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        "<style>body{font:14px/1.45 system-ui,sans-serif;margin:2rem;max-width:70rem}"
        "table{border-collapse:collapse;width:100%;margin:0 0 1rem}"
        "th,td{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top;text-align:left}"
        ".todo{color:#a35b00}</style></head><body>"
        f"<h1>{title}</h1><p>Protocol hash (SHA-256): <code>"
        f"{html.escape(data.study.protocol_hash or 'not locked')}</code></p>"
        f"{body}</body></html>\n"
    )


def checklist_html_fragment(items: Sequence[ChecklistItem]) -> str:
    parts = [f"<p>{html.escape(CHECKLIST_NOTE)}</p>"]
    for guideline, sections in grouped_checklist(items):
        parts.append(f"<h3>{html.escape(CHECKLIST_SOURCES[guideline])}</h3>")
        for section, entries in sections:
            parts.append(
                f"<h4>{html.escape(section)}</h4><table><thead><tr><th>#</th><th>Item</th>"
                "<th>Answer</th><th>Status</th></tr></thead><tbody>"
            )
            for item in entries:
                css = ' class="todo"' if item.status != PREFILLED else ""
                parts.append(
                    f"<tr><td>{html.escape(item.number)}</td><td><b>{html.escape(item.topic)}"
                    f"</b>: {html.escape(item.text)}</td><td>{html.escape(item.answer)}</td>"
                    f"<td{css}>{html.escape(item.status)}</td></tr>"
                )
            parts.append("</tbody></table>")
    return "".join(parts)


__all__ = [
    "CHECKLIST_NOTE",
    "CHECKLIST_SECTIONS",
    "CHECKLIST_SOURCES",
    "PARTLY",
    "PREFILLED",
    "TO_AUTHORS",
    "ChecklistItem",
    "checklist_html",
    "checklist_items",
    "checklist_markdown",
    "grouped_checklist",
    "study_facts",
]
