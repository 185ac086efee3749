"""The report's PDF: the report page's own template (agreement/report.html) rendered under a
print base (agreement/print_base.html: no site chrome, the print style sheet inline) around
the page's stored body, and typeset by WeasyPrint, so the PDF shows what the page shows,
columns added to the page included."""

from __future__ import annotations

from functools import cache

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from agreement import presenters
from agreement.models import ReportSnapshot
from agreement.renderings.pdf import html_pdf

STYLE_SHEETS = ("annotation/site.css", "agreement/print.css")


@cache
def print_styles() -> str:
    """The site's style sheet, then the print rules, as one text (read once per process)."""
    parts = []
    for name in STYLE_SHEETS:
        path = finders.find(name)
        if path is None:  # pragma: no cover - both ship with the apps
            raise FileNotFoundError(f"static file {name} not found")
        with open(path, encoding="utf-8") as f:
            parts.append(f.read())
    return "\n".join(parts)


def report_html(snapshot: ReportSnapshot, body: bytes) -> str:
    """The report page's HTML as the PDF typesets it, around the page's stored body (HTML the
    site's own template rendered, every value escaped there)."""
    context = presenters.header_context(study=snapshot.study, snapshot=snapshot)
    return render_to_string(
        "agreement/report.html",
        {
            **context,
            "body": mark_safe(body.decode()),
            "base_template": "agreement/print_base.html",
            "print_styles": print_styles(),
            "printing": True,
        },
    )


def report_pdf(snapshot: ReportSnapshot, body: bytes) -> bytes:
    """The report as a PDF typeset from its page."""
    return html_pdf(report_html(snapshot, body), title=snapshot.title or f"Report {snapshot.pk}")
