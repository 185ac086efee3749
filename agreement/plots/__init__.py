"""Report figures, drawn from a snapshot's stored results (never the ratings), so a report
reopened later draws exactly the numbers it was computed with.

- :func:`svg_figures`: each figure's title, one-line description (the page's text
  alternative), natural size and SVG (text kept as text), or the reason it has none; the page
  shows each figure as an image of its stored SVG file, and the PDF, typeset from that page
  (agreement.printing), draws the same file as vectors.
- :func:`figure_file`: one figure as a file for a paper (SVG, PDF, 300-dpi PNG);
  :func:`figure_files`: all of them in every format at once; :func:`drawn_figures`: both
  lists from one drawing of each figure (what a report job stores).
"""

from agreement.plots.figures import (
    FIGURE_FORMATS,
    drawn_figures,
    figure_file,
    figure_files,
    figures,
    svg_figures,
)
from agreement.plots.numbers import DASH, fmt, fmt_ci

__all__ = [
    "DASH",
    "FIGURE_FORMATS",
    "drawn_figures",
    "figure_file",
    "figure_files",
    "figures",
    "fmt",
    "fmt_ci",
    "svg_figures",
]
