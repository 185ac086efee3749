"""A small structural reader for the LaTeX tables the reports write, for tests on machines
without a TeX installation: it tokenises the source as TeX would (commands, escaped
characters, groups, math shifts, alignment tabs, row ends, comments), fails on anything that
would break a document, and reads a tabular's rows back into plain text."""

from __future__ import annotations

import re
from dataclasses import dataclass

ESCAPED = {"{", "}", "$", "&", "#", "%", "_", "\\", " ", ","}
#: Commands whose output is a character of the original text (the escaper's replacements).
TEXT_COMMANDS = {
    "textbackslash": "\\",
    "textasciicircum": "^",
    "textasciitilde": "~",
    "textless": "<",
    "textgreater": ">",
    "textbar": "|",
}
#: Characters TeX gives a special meaning that must never appear unescaped in text.
FORBIDDEN_IN_TEXT = {"#", "^", "_"}


@dataclass
class Token:
    kind: str  # cmd, escaped, open, close, math, tab, row, text, comment
    value: str
    line: int


def tokens(src: str) -> list[Token]:
    out: list[Token] = []
    i, line = 0, 1
    while i < len(src):
        ch = src[i]
        if ch == "\n":
            line += 1
        if ch == "\\":
            nxt = src[i + 1 : i + 2]
            if nxt == "\\":
                out.append(Token("row", "\\\\", line))
                i += 2
                continue
            m = re.match(r"[A-Za-z]+", src[i + 1 :])
            if m:
                out.append(Token("cmd", m.group(0), line))
                i += 1 + len(m.group(0))
                continue
            assert nxt in ESCAPED, f"line {line}: unknown control symbol \\{nxt!r}"
            out.append(Token("escaped", nxt, line))
            i += 2
            continue
        if ch == "%":
            end = src.find("\n", i)
            end = len(src) if end < 0 else end
            out.append(Token("comment", src[i:end], line))
            i = end
            continue
        kind = {"{": "open", "}": "close", "$": "math", "&": "tab"}.get(ch, "text")
        out.append(Token(kind, ch, line))
        i += 1
    return out


def check_structure(src: str) -> None:
    """Fail on unbalanced groups, environments or math; special characters in text; a
    comment that swallows part of a line; a tabular row with the wrong number of cells."""
    depth, envs, in_math = 0, [], False
    toks = tokens(src)
    for n, t in enumerate(toks):
        if t.kind == "open":
            depth += 1
        elif t.kind == "close":
            depth -= 1
            assert depth >= 0, f"line {t.line}: unbalanced }}"
        elif t.kind == "math":
            in_math = not in_math
        elif t.kind == "comment":
            line_start = n == 0 or toks[n - 1].value == "\n"
            assert line_start, f"line {t.line}: % comments out the rest of a line"
        elif t.kind == "text" and t.value in FORBIDDEN_IN_TEXT:
            assert in_math, f"line {t.line}: unescaped {t.value!r} outside math"
        elif t.kind == "cmd" and t.value in ("begin", "end"):
            name = _group_arg(toks, n + 1)
            if t.value == "begin":
                envs.append(name)
            else:
                assert envs and envs.pop() == name, f"line {t.line}: \\end{{{name}}} unmatched"
        if t.kind in ("math",) or in_math:
            # only a minus and the writer's own alpha label are written in math mode
            assert (t.kind in ("math", "text") and t.value in "$-") or (
                t.kind == "cmd" and t.value == "alpha"
            ), f"line {t.line}: math mode holds {t.value!r} (only a minus or alpha)"
    assert depth == 0, "unbalanced {"
    assert not envs, f"unclosed environments {envs}"
    assert not in_math, "unclosed $"
    for row in tabular_rows(src) if r"\begin{tabular}" in src else []:
        assert sum(span for span, _ in row) == tabular_columns(src), f"row {row!r}"


def _group_arg(toks: list[Token], start: int) -> str:
    assert toks[start].kind == "open"
    depth, out = 0, []
    for t in toks[start:]:
        if t.kind == "open":
            depth += 1
            if depth == 1:
                continue
        elif t.kind == "close":
            depth -= 1
            if depth == 0:
                return "".join(out)
        out.append(t.value)
    raise AssertionError("unterminated group")


def tabular_columns(src: str) -> int:
    spec = re.search(r"\\begin\{tabular\}\{(.*)\}\n", src).group(1)
    spec = re.sub(r"@\{(?:[^{}]|\{[^{}]*\})*\}", "", spec)
    return len(re.findall(r"[lrc]", spec))


def tabular_rows(src: str) -> list[list[tuple[int, str]]]:
    """The tabular's rows (not rules), each a list of (columns spanned, cell source)."""
    body = src.split(r"\begin{tabular}", 1)[1].split(r"\end{tabular}", 1)[0]
    body = body.split("\n", 1)[1]
    rows = []
    for raw in re.split(r"(?<!\\)\\\\", body):
        lines = [
            ln
            for ln in raw.strip().splitlines()
            if not re.fullmatch(
                r"\s*(\\(toprule|midrule|bottomrule|addlinespace)|(\\cmidrule\S*\s*)+)\s*", ln
            )
        ]
        text = "\n".join(lines).strip()
        if not text:
            continue
        cells = []
        for cell in _split_tabs(text):
            cell = cell.strip()
            if cell.startswith("\\multicolumn"):
                span, _spec, content, rest = _groups(cell[len("\\multicolumn") :], 3)
                assert not rest.strip(), f"text after a multicolumn: {rest!r}"
                cells.append((int(span), content))
            else:
                cells.append((1, cell))
        rows.append(cells)
    return rows


def _groups(text: str, n: int) -> list[str]:
    """The first ``n`` brace groups of ``text`` (their content), then the rest."""
    out, i = [], 0
    for _ in range(n):
        assert text[i] == "{", f"expected a group in {text!r}"
        depth, start = 0, i
        while True:
            if text[i] == "\\":
                i += 2
                continue
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        out.append(text[start + 1 : i - 1])
    return [*out, text[i:]]


def _split_tabs(text: str) -> list[str]:
    """``text`` split at alignment tabs that are not escaped and not inside a group."""
    out, depth, cur, i = [], 0, [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            cur.append(text[i : i + 2])
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "&" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def plain_text(src: str) -> str:
    """What a cell prints, as plain text: escapes undone, formatting commands dropped,
    ``$-$`` as "-", ``--`` as an en dash, ``-{}-`` as two hyphens."""
    src = re.sub(r"\\textsuperscript\{[^}]*\}", "", src)
    src = src.replace("$-$", "-").replace("-{}", "\x00")  # a hyphen kept from ligatures
    out, i = [], 0
    while i < len(src):
        ch = src[i]
        if ch == "\\":
            m = re.match(r"[A-Za-z]+", src[i + 1 :])
            if m:
                name = m.group(0)
                i += 1 + len(name)
                if src[i : i + 2] == "{}":
                    i += 2
                if name in TEXT_COMMANDS:
                    out.append(TEXT_COMMANDS[name])
                elif src[i : i + 1] == " ":
                    i += 1  # the space that ends a command (\quad , \footnotesize )
                continue
            out.append(src[i + 1])
            i += 2
            continue
        if ch in "{}":
            i += 1
            continue
        out.append("\u00a0" if ch == "~" else ch)
        i += 1
    text = "".join(out).replace("---", "\u2014").replace("--", "\u2013")
    return text.replace("\x00", "-").strip()
