"""A snapshot's renderings, produced once and stored (ReportRendering): the downloads and the
page's figures are read from storage, never recomputed from the snapshot on each open.

One registry names every rendering: its content type, its download file extension and how it
is produced from the stored snapshot alone. A snapshot computed before renderings were stored
(or by the foreground command) gets each one produced and stored on its first use."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from agreement import plots
from agreement.models import ReportRendering, ReportSnapshot
from agreement.services.exports import (
    export_csv,
    export_json,
    export_latex,
    export_markdown,
    export_pdf,
)
from agreement.services.report_page import render_body


@dataclass(frozen=True)
class Rendering:
    kind: str
    content_type: str
    extension: str  # of the downloaded file; "" for renderings only the page uses
    produce: Callable[[ReportSnapshot], bytes]


def _figures(snapshot: ReportSnapshot) -> bytes:
    return json.dumps(plots.svg_figures(snapshot.results)).encode()


def _page(snapshot: ReportSnapshot) -> bytes:
    return render_body(snapshot, page_figures(snapshot))


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
    """Produce and store every rendering of ``snapshot`` not stored yet."""
    for kind in RENDERINGS:
        rendering_of(snapshot, kind)


def rendering_of(snapshot: ReportSnapshot, kind: str) -> tuple[bytes, str]:
    """(content, content type) of one rendering: the stored one, or produced and stored now.
    Raises KeyError for a kind the registry does not name."""
    spec = RENDERINGS[kind]
    stored = (
        ReportRendering.objects.filter(snapshot=snapshot, kind=kind)
        .values_list("content", flat=True)
        .first()
    )
    if stored is not None:
        return bytes(stored), spec.content_type
    content = spec.produce(snapshot)
    try:
        with transaction.atomic():
            ReportRendering.objects.create(
                snapshot=snapshot, kind=kind, content_type=spec.content_type, content=content
            )
    except IntegrityError:  # another request stored it meanwhile: the same bytes
        pass
    return content, spec.content_type


def page_figures(snapshot: ReportSnapshot) -> list[dict[str, str | None]]:
    """The report page's figures (inline SVG), from storage."""
    content, _ = rendering_of(snapshot, "figures")
    return json.loads(content)


def page_body(snapshot: ReportSnapshot) -> bytes:
    """The report page's body (UTF-8 HTML rendered by the site's own template from the
    snapshot alone, every value escaped there), from storage."""
    content, _ = rendering_of(snapshot, "page")
    return content
