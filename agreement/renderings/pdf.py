"""HTML to PDF with WeasyPrint (pango does the text), fetching nothing outside the HTML: it
carries its style sheets and its figures (inline SVG, drawn as vectors; a heat map's raster
inside the SVG as a data: URL) itself, so no name in a report can make the renderer read a
file or the network."""

from __future__ import annotations

from weasyprint import HTML
from weasyprint.urls import URLFetcher


class _DataOnly(URLFetcher):
    """Reads data: URLs (the figures' embedded rasters) and refuses every other URL."""

    def fetch(self, url, headers=None):
        if not url.startswith("data:"):
            raise ValueError(f"the report PDF fetches nothing outside itself ({url[:80]})")
        return super().fetch(url, headers)


def html_pdf(html: str, *, title: str) -> bytes:
    """``html`` typeset as a PDF whose document title is ``title``."""
    document = HTML(string=html, url_fetcher=_DataOnly()).render()
    document.metadata.title = title
    document.metadata.generator = "medhelm-studio"
    return document.write_pdf()
