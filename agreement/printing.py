"""The report's PDF: the report page's own template (agreement/report.html) rendered under a
print base (agreement/print_base.html: no site chrome, the print style sheet inline) around
the page's stored body, and typeset by WeasyPrint, so the PDF shows what the page shows,
columns added to the page included; the body's figures (<img> of the stored SVG files) are
drawn as vectors from the files given.

This module typesets what it is given and reads no stored rendering itself: the renderings
registry (agreement.services.renderings) reads the stored body and figure files and calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from agreement import plots, presenters
from agreement.models import ReportSnapshot
from agreement.renderings.pdf import html_pdf

STYLE_SHEETS = ("annotation/site.css", "agreement/print.css", "agreement/report.css")


@cache
def print_styles() -> str:
    """The site's style sheet, the print rules, then the report page's own rules
    (agreement/report.css, which the page links), as one text (read once per process)."""
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


def figure_files(
    snapshot: ReportSnapshot, svg_files: Mapping[str, bytes]
) -> dict[str, tuple[bytes, str]]:
    """The page's figures as the PDF reads them: each figure's URL on the page -> its SVG file,
    from ``svg_files`` (figure key -> the figure's stored SVG file)."""
    media_type = plots.FIGURE_FORMATS["svg"][0]
    files: dict[str, tuple[bytes, str]] = {}
    for key, content in svg_files.items():
        url = reverse("agreement:figure", args=(snapshot.study_id, snapshot.pk, key, "svg"))
        files[url] = (content, media_type)
    return files


def report_pdf(snapshot: ReportSnapshot, body: bytes, svg_files: Mapping[str, bytes]) -> bytes:
    """The report as a PDF typeset from its page around ``body`` (the page's stored body), its
    figures drawn from ``svg_files`` (figure key -> stored SVG file; nothing else outside the
    HTML is read)."""
    return html_pdf(
        report_html(snapshot, body),
        title=snapshot.title or f"Report {snapshot.pk}",
        files=figure_files(snapshot, svg_files),
    )
