"""Report figures, drawn from a snapshot's stored results (never the ratings), so a report
reopened later draws exactly the numbers it was computed with.

- :func:`svg_figures`: inline SVG for the report page (text kept as text: searchable, light);
  the PDF is typeset from that page (agreement.printing), so it draws the same SVG.
"""

from agreement.plots.figures import figures, svg_figures
from agreement.plots.numbers import DASH, fmt, fmt_ci

__all__ = ["DASH", "figures", "fmt", "fmt_ci", "svg_figures"]
