"""Report figures, drawn from a snapshot's stored results (never the ratings), so a report
reopened later draws exactly the numbers it was computed with.

- :func:`svg_figures`: inline SVG for the report page (text kept as text: searchable, light);
  the PDF is typeset from that page (agreement.printing), so it draws the same SVG.
- :func:`figure_file`: one figure as a file for a paper (SVG, PDF, 300-dpi PNG);
  :func:`figure_files`: all of them in every format at once.
"""

from agreement.plots.figures import (
    FIGURE_FORMATS,
    figure_file,
    figure_files,
    figures,
    svg_figures,
)
from agreement.plots.numbers import DASH, fmt, fmt_ci

__all__ = [
    "DASH",
    "FIGURE_FORMATS",
    "figure_file",
    "figure_files",
    "figures",
    "fmt",
    "fmt_ci",
    "svg_figures",
]
