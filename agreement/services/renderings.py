"""A snapshot's renderings, produced once and stored (ReportRendering): the downloads and the
page's figures are read from storage, never recomputed from the snapshot on each open.

One registry names every rendering: its content type, its download file extension and how it
is produced from the stored snapshot alone. A snapshot computed before renderings were stored
(or by the foreground command) gets each one produced and stored on its first use.

This registry is the top of the report's renderings: it calls the text exports (exports), the
page body (report_page) and the PDF typesetting (agreement.printing), and none of them
imports it; the PDF and the figure files, which read stored renderings, are given here."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from agreement import plots
from agreement.models import ReportRendering, ReportSnapshot
from agreement.processes import process_count, processes
from agreement.services.exports import (
    export_csv,
    export_json,
    export_latex,
    export_markdown,
)
from agreement.services.report_page import render_body


@dataclass(frozen=True)
class Rendering:
    kind: str
    content_type: str
    extension: str  # of the downloaded file; "" for renderings only the page uses
    produce: Callable[[ReportSnapshot], bytes]


#: The figure files the page and the report's PDF read (stored with the page's figures); the
#: others are for downloads, drawn beside them by the report job (store_renderings).
PAGE_FORMATS = ("svg",)
DOWNLOAD_FORMATS = tuple(fmt for fmt in plots.FIGURE_FORMATS if fmt not in PAGE_FORMATS)


def _figures(snapshot: ReportSnapshot, formats: Collection[str] = PAGE_FORMATS) -> bytes:
    # One drawing of each figure gives the page's SVGs and the figure files in ``formats``,
    # stored here too: the PDF reads the SVGs without drawing again. The download formats
    # follow on first use (_store_figure_files) where a report job has not stored them.
    page, files = plots.drawn_figures(snapshot.results, formats)
    _store_files(snapshot, page, files, formats=formats)
    return json.dumps(page).encode()


def _page(snapshot: ReportSnapshot) -> bytes:
    return render_body(snapshot, page_figures(snapshot))


def export_pdf(snapshot: ReportSnapshot) -> bytes:
    """The report as a PDF typeset from the report page's HTML (agreement.printing) around the
    page's stored body, its figures drawn from their stored SVG files (each produced and
    stored now if it is not yet)."""
    # imported here, not for a circle (printing imports no service): printing loads WeasyPrint,
    # about half a second and its log lines, which a process that never prints need not pay
    from agreement import printing

    body = page_body(snapshot)
    svg_files = {}
    for figure in page_figures(snapshot):
        content = export_figure(snapshot, figure["key"], "svg")
        if content is not None:
            svg_files[figure["key"]] = content
    return printing.report_pdf(snapshot, body, svg_files)


def _json(snapshot: ReportSnapshot) -> bytes:
    return json.dumps(export_json(snapshot), indent=2).encode()


RENDERINGS: dict[str, Rendering] = {
    r.kind: r
    for r in (
        Rendering("csv", "text/csv; charset=utf-8", "csv", lambda s: export_csv(s).encode()),
        Rendering("json", "application/json", "json", _json),
        Rendering(
            "tex", "application/x-tex; charset=utf-8", "tex", lambda s: export_latex(s).encode()
        ),
        Rendering(
            "md", "text/markdown; charset=utf-8", "md", lambda s: export_markdown(s).encode()
        ),
        Rendering("figures", "application/json", "", _figures),
        # After the figures, which it includes: the page's body as HTML (report_page).
        Rendering("page", "text/html; charset=utf-8", "", _page),
        # After the page, whose stored body it typesets.
        Rendering("pdf", "application/pdf", "pdf", export_pdf),
    )
}
#: What a reader can download, by the file extension in the URL.
DOWNLOADS = {r.extension: r.kind for r in RENDERINGS.values() if r.extension}


def store_renderings(snapshot: ReportSnapshot) -> None:
    """Produce and store every rendering of ``snapshot`` not stored yet, the figure files
    (each figure as SVG, PDF and PNG) included. The figures' PDF and PNG files are drawn in
    another process (agreement.processes) while this one draws the page's figures and typesets
    the report's PDF: neither waits for the other (bench/README.md, issue 32)."""
    n = process_count(settings.AGREEMENT_REPORT_PROCESSES)
    with processes(n) as submit:
        if n > 1:
            downloads = submit(partial(plots.figure_files, snapshot.results, DOWNLOAD_FORMATS))
            formats = PAGE_FORMATS
        else:  # one process: one drawing of each figure gives every file
            downloads, formats = None, tuple(plots.FIGURE_FORMATS)
        for kind in RENDERINGS:
            figures = partial(_figures, formats=formats) if kind == "figures" else None
            rendering_of(snapshot, kind, produce=figures)
        drawn = downloads.result() if downloads is not None else None
    _store_figure_files(snapshot, drawn)


def _stored(snapshot: ReportSnapshot, kind: str) -> bytes | None:
    stored = (
        ReportRendering.objects.filter(snapshot=snapshot, kind=kind)
        .values_list("content", flat=True)
        .first()
    )
    return None if stored is None else bytes(stored)


def _store(snapshot: ReportSnapshot, kind: str, content_type: str, content: bytes) -> None:
    try:
        with transaction.atomic():
            ReportRendering.objects.create(
                snapshot=snapshot, kind=kind, content_type=content_type, content=content
            )
    except IntegrityError:
        # Another request stored it meanwhile (the same bytes): the one clash this expects.
        # Any other integrity error (the snapshot gone, a constraint broken) is raised.
        if not ReportRendering.objects.filter(snapshot=snapshot, kind=kind).exists():
            raise


def rendering_of(
    snapshot: ReportSnapshot,
    kind: str,
    *,
    produce: Callable[[ReportSnapshot], bytes] | None = None,
) -> tuple[bytes, str]:
    """(content, content type) of one rendering: the stored one, or produced (by the
    registry's function, or ``produce``) and stored now. Raises KeyError for a kind the
    registry does not name."""
    spec = RENDERINGS[kind]
    stored = _stored(snapshot, kind)
    if stored is not None:
        return stored, spec.content_type
    content = (produce or spec.produce)(snapshot)
    _store(snapshot, kind, spec.content_type, content)
    return content, spec.content_type


#: Marks the stored figure files: "figure:" + key + "." + format (an empty file: the report
#: has no data for that figure, so its download answers 404 without drawing anything).
FIGURE_KIND = "figure:{key}.{fmt}"


def _store_figure_files(
    snapshot: ReportSnapshot, drawn: dict[tuple[str, str], bytes] | None = None
) -> None:
    """Store every figure file of the snapshot not stored yet: from ``drawn`` (the download
    formats' files, by (key, format), drawn already) where only those are missing, else drawn
    now."""
    page = page_figures(snapshot)
    kinds = {
        FIGURE_KIND.format(key=f["key"], fmt=fmt) for f in page for fmt in plots.FIGURE_FORMATS
    }
    have = set(
        ReportRendering.objects.filter(snapshot=snapshot, kind__in=kinds).values_list(
            "kind", flat=True
        )
    )
    if have >= kinds:
        return
    missing_formats = {kind.rpartition(".")[2] for kind in kinds - have}
    if drawn is None or not missing_formats <= set(DOWNLOAD_FORMATS):
        drawn = plots.figure_files(snapshot.results)
    _store_files(snapshot, page, drawn, have)


def _store_files(
    snapshot: ReportSnapshot,
    page: list[dict[str, Any]],
    files: dict[tuple[str, str], bytes],
    have: Collection[str] = (),
    formats: Collection[str] = tuple(plots.FIGURE_FORMATS),
) -> None:
    """Store each figure file of the page's figures in ``formats`` not in ``have`` (an empty
    file where the report has no data for the figure)."""
    for figure in page:
        for fmt, (media_type, _options) in plots.FIGURE_FORMATS.items():
            if fmt not in formats:
                continue
            kind = FIGURE_KIND.format(key=figure["key"], fmt=fmt)
            if kind not in have:
                _store(snapshot, kind, media_type, files.get((figure["key"], fmt), b""))


def export_figure(snapshot: ReportSnapshot, key: str, fmt: str) -> bytes | None:
    """Figure ``key`` of the snapshot as a stored SVG, PDF or 300-dpi PNG file (all of them
    produced and stored on first use for a snapshot the job did not store them for); None
    where the report has no such figure or no data to draw it."""
    if fmt not in plots.FIGURE_FORMATS:
        return None
    kind = FIGURE_KIND.format(key=key, fmt=fmt)
    stored = _stored(snapshot, kind)
    if stored is None:
        if key not in {f["key"] for f in page_figures(snapshot)}:
            return None
        _store_figure_files(snapshot)
        stored = _stored(snapshot, kind)
    return stored or None


def page_figures(snapshot: ReportSnapshot) -> list[dict[str, str | None]]:
    """The report page's figures (key, title, description, size, SVG or the reason there is
    none), from storage; the page shows each as an image of its stored SVG file."""
    content, _ = rendering_of(snapshot, "figures")
    return json.loads(content)


def page_body(snapshot: ReportSnapshot) -> bytes:
    """The report page's body (UTF-8 HTML rendered by the site's own template from the
    snapshot alone, every value escaped there), from storage."""
    content, _ = rendering_of(snapshot, "page")
    return content
