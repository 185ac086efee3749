"""Report figures and text pages, drawn from a snapshot's stored results (never the ratings),
so a report reopened later draws exactly the numbers it was computed with.

- :func:`svg_figures`: inline SVG for the report page (text kept as text: searchable, light).
- :func:`pdf_bytes`: the PDF: title and method, the tables as monospaced pages, the plots.
"""

from agreement.plots.figures import figures, svg_figures
from agreement.plots.numbers import DASH, fmt, fmt_ci
from agreement.plots.pdf import pdf_bytes
from agreement.plots.text_pages import report_lines

__all__ = ["DASH", "figures", "fmt", "fmt_ci", "pdf_bytes", "report_lines", "svg_figures"]
