"""HTML to PDF with WeasyPrint (pango does the text), fetching nothing outside what it is
given: the HTML carries its style sheets itself, and its figures are <img> elements whose
URLs the caller maps to the stored SVG files (drawn as vectors; a heat map's raster inside
the SVG as a data: URL). Every other URL is refused, so no name in a report can make the
renderer read a file or the network, and a figure it could not read stops the PDF instead
of leaving a gap in it."""

from __future__ import annotations

from collections.abc import Mapping

from weasyprint import HTML
from weasyprint.urls import URLFetcher, URLFetcherResponse

#: The base the HTML's site-relative URLs (/studies/...) are resolved against: a name no
#: network can answer (RFC 2606), and only ever looked up in the files given.
BASE_URL = "https://report.invalid/"


class PdfFetchError(RuntimeError):
    """A figure of the report could not be read while typesetting it."""


class _GivenFilesOnly(URLFetcher):
    """Reads data: URLs (the figures' embedded rasters) and the files given by their path
    (the figures), refuses every other URL and remembers what it refused."""

    def __init__(self, files: Mapping[str, tuple[bytes, str]]):
        super().__init__()
        self.files = dict(files)
        self.refused: list[str] = []

    def fetch(self, url, headers=None):
        if url.startswith("data:"):
            return super().fetch(url, headers)
        path = url.removeprefix(BASE_URL.rstrip("/")) if url.startswith(BASE_URL) else None
        if path is not None and path in self.files:
            content, content_type = self.files[path]
            return URLFetcherResponse(url, content, {"Content-Type": content_type})
        self.refused.append(url)
        raise ValueError(f"the report PDF fetches nothing outside itself ({url[:80]})")


def html_pdf(
    html: str, *, title: str, files: Mapping[str, tuple[bytes, str]] | None = None
) -> bytes:
    """``html`` typeset as a PDF whose document title is ``title``; ``files``: site paths
    (as the HTML's URLs name them) -> (content, media type), the only URLs it may read
    besides data: URLs. Raises PdfFetchError when the HTML names a URL that is not given."""
    fetcher = _GivenFilesOnly(files or {})
    document = HTML(string=html, base_url=BASE_URL, url_fetcher=fetcher).render()
    document.metadata.title = title
    document.metadata.generator = "medhelm-studio"
    # Checked once the PDF is written, not after layout: an inline SVG's <image> is fetched
    # while the page is drawn, and WeasyPrint leaves a refused one out without raising.
    pdf = document.write_pdf()
    if fetcher.refused:
        raise PdfFetchError(
            "The report PDF names files it was not given: " + ", ".join(fetcher.refused[:5])
        )
    return pdf
