"""The report as a PDF: the title and method pages, the tables as text pages, every plot."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure

from agreement.plots.figures import RC, figures
from agreement.plots.text_pages import report_lines
from medhelm_site.common.figures import figure_text, text_page

PAGE = (11.69, 8.27)  # A4 landscape, inches
LINES_PER_PAGE = 58


def _text_pages(pdf: PdfPages, lines: Sequence[str], *, heading: str) -> None:
    for start in range(0, max(len(lines), 1), LINES_PER_PAGE):
        text_page(pdf, lines[start : start + LINES_PER_PAGE], heading=heading, size=PAGE)


def pdf_bytes(
    *, header: Mapping[str, Any], results: Mapping[str, Any], method: Mapping[str, Any]
) -> bytes:
    """The report as a PDF: title and method, the tables as text pages, then every plot."""
    first, lines = report_lines(header=header, results=results, method=method)
    title = str(header.get("title", "Agreement report"))
    buf = io.BytesIO()
    with (
        matplotlib.rc_context(RC),
        PdfPages(buf, metadata={"Title": title, "Creator": "medhelm-studio"}) as pdf,
    ):
        _text_pages(pdf, first, heading=title)
        _text_pages(pdf, lines, heading=f"{title}: tables")
        for _key, fig_title, fig, note in figures(results):
            if fig is None:
                fig = Figure(figsize=PAGE)
                fig.text(0.5, 0.5, figure_text(f"{fig_title}: {note}"), ha="center", va="center")
            pdf.savefig(fig)
    return buf.getvalue()
