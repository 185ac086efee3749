"""A stored report as a paper needs it: Table 2 (LaTeX with booktabs, Markdown) and the
methods paragraph, all drawn from the snapshot's stored results and method record."""

from agreement.renderings.latex import latex_escape, latex_file, table2_latex
from agreement.renderings.markdown import markdown_escape, markdown_file, table2_markdown
from agreement.renderings.methods import methods_paragraph
from agreement.renderings.table2 import Table2, Table2Cell, Table2Row, table2

__all__ = [
    "Table2",
    "Table2Cell",
    "Table2Row",
    "latex_escape",
    "latex_file",
    "markdown_escape",
    "markdown_file",
    "methods_paragraph",
    "table2",
    "table2_latex",
    "table2_markdown",
]
