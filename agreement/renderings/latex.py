"""Table 2 as a LaTeX (booktabs) table, with the methods paragraph.

Every piece of text that reaches the file (rater, category and benchmark names, reasons,
the caption, the methods paragraph) goes through :func:`latex_escape`, the one escaper: a
name such as ``rouge_l 100% & $x$ #1 {a}\\b`` prints as written and cannot break the
document. Numbers are written by the table builder, their minus signs as a math minus."""

from __future__ import annotations

import unicodedata

from agreement.plots.numbers import DASH
from agreement.renderings.table2 import GROUP_TITLES, Table2, Table2Cell

_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "%": r"\%",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    DASH: "--",
    "\u2014": "---",
    "\u00a0": "~",
}


def latex_escape(text: object) -> str:
    """``text`` as LaTeX that prints it as written: the ten special characters and < > |
    replaced by their commands, dashes and no-break spaces by their LaTeX spellings, line
    breaks and other control characters by a space (a blank line would end the paragraph,
    inside a table cell an error), a byte-order mark dropped. Other Unicode stays as UTF-8,
    which LaTeX reads natively since 2018 (non-Latin scripts need XeLaTeX or LuaLaTeX)."""
    out = []
    text = str(text).replace("\ufeff", "")
    for n, ch in enumerate(text):
        if ch == "-" and text[n + 1 : n + 2] == "-":  # "--" in a name: two hyphens, no en dash
            out.append("-{}")
        elif ch in _SPECIALS:
            out.append(_SPECIALS[ch])
        elif unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _number(text: str) -> str:
    """A formatted number with a math minus (a hyphen would print too short)."""
    return text.replace("-", "$-$") if text.startswith("-") else text


def _interval(text: str) -> str:
    return "(" + ", ".join(_number(p) for p in text.strip("()").split(", ")) + ")"


def _cells(cell: Table2Cell, notes: list[str]) -> str:
    """Two columns: the estimate (right-aligned) and its interval (left-aligned)."""
    if cell.estimate is None:
        mark = "--" if cell.mark == DASH else latex_escape(cell.mark)
        if cell.note is not None:
            mark += r"\textsuperscript{" + _note_mark(notes.index(cell.note)) + "}"
        return r"\multicolumn{2}{c}{" + mark + "}"
    interval = _interval(cell.interval) if cell.interval else "--"
    return f"{_number(cell.estimate)} & {{\\footnotesize {interval}}}"


def _alpha_cells(cell: Table2Cell, level: str) -> str:
    """The two columns of one alpha level beneath a cell's ICC (empty where it has none)."""
    alpha = next((a for a in cell.alphas if a.level == level), None)
    if alpha is None:
        return " & "
    interval = _interval(alpha.interval) if alpha.interval else "--"
    return f"{{\\footnotesize {_number(alpha.estimate)}}} & {{\\footnotesize {interval}}}"


def _note_mark(index: int) -> str:
    """a, b, ..., z, aa, ab, ... for the n-th note."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


def table2_latex(table: Table2, *, label: str = "tab:agreement") -> str:
    """A ``table`` environment (booktabs rules, one estimate and one interval column per
    rater) with its caption, label and notes."""
    n_cols = 2 + 2 * len(table.columns)
    spec = "@{}lr" + "r@{\\hspace{0.4em}}l" * len(table.columns) + "@{}"
    names = " & ".join(
        r"\multicolumn{2}{c}{" + latex_escape(name) + "}" for name, _ in table.columns
    )
    kinds = " & ".join(
        r"\multicolumn{2}{c}{\footnotesize " + latex_escape(kind) + "}" for _, kind in table.columns
    )
    rules = " ".join(
        f"\\cmidrule(lr){{{3 + 2 * i}-{4 + 2 * i}}}" for i in range(len(table.columns))
    )
    lines = [
        "% Table 2 of a medhelm-studio agreement report. Needs \\usepackage{booktabs}",
        "% (and, for names in non-Latin scripts, XeLaTeX or LuaLaTeX).",
        r"\begin{table}[htbp]",
        r"\centering",
        r"\caption{" + latex_escape(table.caption) + "}",
        r"\label{" + label + "}",
        r"\begin{tabular}{" + spec + "}",
        r"\toprule",
        f"Items & \\textit{{n}} & {names} \\\\",
        f" & & {kinds} \\\\",
        rules,
        r"\midrule",
    ]
    for group, rows in table.groups():
        if group in GROUP_TITLES:
            lines.append(r"\addlinespace")
            lines.append(
                f"\\multicolumn{{{n_cols}}}{{@{{}}l}}{{\\emph{{{latex_escape(GROUP_TITLES[group])}}}}} \\\\"
            )
        indent = "" if group == "all" else r"\quad "
        for row in rows:
            cells = " & ".join(_cells(c, table.notes) for c in row.cells)
            n = "--" if row.n_items == DASH else latex_escape(row.n_items)
            lines.append(f"{indent}{latex_escape(row.label)} & {n} & {cells} \\\\")
            for level in row.alpha_levels():  # alpha beneath the ICC, a smaller line per level
                alphas = " & ".join(_alpha_cells(c, level) for c in row.cells)
                lines.append(
                    f"{indent}\\quad{{\\footnotesize $\\alpha$ {latex_escape(level)}}} & & {alphas} \\\\"
                )
    lines += [r"\bottomrule", r"\end{tabular}"]
    if table.notes:
        lines.append(r"\par\smallskip{\footnotesize n.e.: not estimable; --: no estimate.")
        lines += [
            f"\\textsuperscript{{{_note_mark(i)}}}\\,{latex_escape(note)}"
            + (";" if i < len(table.notes) - 1 else ".")
            for i, note in enumerate(table.notes)
        ]
        lines.append("}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def latex_file(table: Table2, methods: str) -> str:
    """The LaTeX download: the table, then the methods paragraph ready to paste."""
    return (
        table2_latex(table)
        + "\n% Methods paragraph (generated from the report's stored method record)\n"
        + latex_escape(methods)
        + "\n"
    )
