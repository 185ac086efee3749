"""Table 2 as a Markdown (pipe) table, with the methods paragraph.

Every piece of text in a cell goes through :func:`markdown_escape`, the one escaper: a pipe
would split the cell, ``*``/``_``/backticks would start emphasis or code, ``<`` a HTML tag,
``[`` a link, ``$`` math on sites that render it, a line break would end the row."""

from __future__ import annotations

import re

from agreement.renderings.table2 import GROUP_TITLES, Table2, Table2Cell

_ESCAPED = re.compile(r"([\\`*_\[\]<>|$~&])")
_BREAKS = re.compile(r"[\r\n\t\v\f\u0085\u2028\u2029]+")


def markdown_escape(text: object) -> str:
    """``text`` as Markdown that shows it as written, on one line (CommonMark escapes any
    ASCII punctuation with a backslash)."""
    one_line = _BREAKS.sub(" ", str(text).replace("\ufeff", ""))
    return _ESCAPED.sub(r"\\\1", one_line)


def _note_number(notes: list[str], note: str) -> str:
    return f"<sup>{notes.index(note) + 1}</sup>"


def _cell(cell: Table2Cell, notes: list[str]) -> str:
    """The ICC with its interval, then on a line of its own (a ``<br>``, which GitHub and
    pandoc keep inside a table cell) each level of alpha."""
    if cell.estimate is None:
        mark = markdown_escape(cell.mark)
        return mark + (_note_number(notes, cell.note) if cell.note is not None else "")
    text = f"{cell.estimate} {cell.interval}" if cell.interval else cell.estimate
    for alpha in cell.alphas:
        interval = f" {alpha.interval}" if alpha.interval else ""
        text += f"<br>\u03b1 {alpha.level} {alpha.estimate}{interval}"
    return text


def table2_markdown(table: Table2) -> str:
    """The caption, the pipe table (numbers right-aligned) and the numbered notes."""
    head = [
        "Items",
        "n",
        *(f"{markdown_escape(n)} ({markdown_escape(k)})" for n, k in table.columns),
    ]
    lines = [
        f"**Table 2.** {markdown_escape(table.caption)}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join([":---", "---:", *["---:"] * len(table.columns)]) + "|",
    ]
    for group, rows in table.groups():
        if group in GROUP_TITLES:
            lines.append(
                "| " + " | ".join([f"*{GROUP_TITLES[group]}*", *[""] * (len(head) - 1)]) + " |"
            )
        for row in rows:
            cells = [_cell(c, table.notes) for c in row.cells]
            label = markdown_escape(row.label)
            label = label if group == "all" else "&emsp;" + label
            lines.append("| " + " | ".join([label, markdown_escape(row.n_items), *cells]) + " |")
    if table.notes:
        lines += ["", "n.e.: not estimable; \u2013: no estimate."]
        lines += [
            f"<sup>{i + 1}</sup> {markdown_escape(note)}  " for i, note in enumerate(table.notes)
        ]
    return "\n".join(lines) + "\n"


def markdown_file(table: Table2, methods: str) -> str:
    """The Markdown download: the table, then the methods paragraph."""
    return table2_markdown(table) + "\n## Methods\n\n" + markdown_escape(methods) + "\n"
