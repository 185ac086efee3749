"""What every matplotlib figure and text page of the reports shares.

Matplotlib reads text between two `$` as math (mathtext): a `$` in a benchmark, judge or
category name would otherwise raise while drawing, and a stored report could never render
again. Its PDF backend fails on a byte-order mark (U+FEFF, which names pasted from a file
saved by a spreadsheet carry), and a legend silently drops a label that starts with "_".
Every user-supplied string drawn into a figure goes through `figure_text`.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure

_XML_HEAD = re.compile(r"^.*?(?=<svg)", re.S)


_BYTE_ORDER_MARK = "\ufeff"
_ZERO_WIDTH_SPACE = "\u200b"


def figure_text(text: Any) -> str:
    """`text` safe to draw as written: `$` escaped so matplotlib never reads it as math; a
    byte-order mark (which the PDF backend cannot draw) removed; a leading "_" (which a
    legend takes for "no label") preceded by an invisible zero-width space."""
    drawn = str(text).replace(_BYTE_ORDER_MARK, "").replace("$", r"\$")
    return _ZERO_WIDTH_SPACE + drawn if drawn.startswith("_") else drawn


def figure_svg(fig: Figure, *, rc: Mapping[str, Any] | None = None) -> str:
    """The figure as SVG markup ready to place in an HTML body (no XML declaration or
    DOCTYPE, which HTML does not allow there; no date, so the same figure gives the same
    bytes)."""
    buffer = io.StringIO()
    with matplotlib.rc_context(dict(rc or {})):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return svg_markup(buffer.getvalue())


def svg_markup(svg_file: str) -> str:
    """An SVG file's text without its XML declaration and DOCTYPE: markup for an HTML body."""
    return _XML_HEAD.sub("", svg_file, count=1)


def wrap_line(text: str, *, width: int, indent: int = 0, continuation_indent: int = 0) -> list[str]:
    """`text` wrapped to `width` columns for a monospaced page; never an empty list."""
    if len(text) + indent <= width:
        return [" " * indent + text]
    return textwrap.wrap(
        text,
        width,
        initial_indent=" " * indent,
        subsequent_indent=" " * continuation_indent,
    ) or [" " * indent + text]


def text_page(
    pdf: PdfPages,
    lines: Sequence[str],
    *,
    heading: str,
    size: tuple[float, float],
    page_label: str | None = None,
    font_size: float = 6.5,
) -> None:
    """One PDF page of monospaced `lines` under a grey `heading` (and a page label)."""
    fig = Figure(figsize=size)
    fig.text(0.04, 0.975, figure_text(heading), fontsize=7, color="grey", va="top")
    if page_label:
        fig.text(0.96, 0.975, page_label, fontsize=7, color="grey", va="top", ha="right")
    fig.text(
        0.04,
        0.955,
        figure_text("\n".join(lines)),
        family="monospace",
        fontsize=font_size,
        va="top",
        linespacing=1.28,
    )
    pdf.savefig(fig)
