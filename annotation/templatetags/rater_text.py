"""Render model and case text safely: everything is escaped first, then a small markdown
subset (paragraphs, line breaks, **bold**, *italic*, `code`, bullet and numbered lists,
# headings) is turned into tags. Model text is data: no HTML it contains is ever executed.

Item texts have no length limit, so every step runs in time linear in the text. The bold
and italic patterns search lazily for their closing marker; alone, an opening marker with
no closing one after it scans to the end of the line, and a line of many such markers
("*a *a *a ...") took quadratic time. Each line is therefore cut after the last closing
marker it holds (found by one search of the reversed line): before that cut every opening
marker finds a closing one, so each search ends where its match does, and after it no
marker can match, so the rest is kept as it is. The HTML is the same as the uncut
patterns give. Inside `code` a star is text, not a marker.
"""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# Each pattern starts with its star (a character before it is checked after it), so that the
# search skips to the next star at once instead of trying the pattern at every character.
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"\*(?<![\*\w]\*)(?=\S)(.+?)(?<=\S)\*(?![\*\w])")
# The closing markers of _BOLD and _ITALIC as they read in the reversed line: the first
# match there is the last closing marker of the line.
_LAST_BOLD_CLOSE = re.compile(r"\*\*(?=\S)")
_LAST_ITALIC_CLOSE = re.compile(r"\*(?<![\*\w]\*)(?=\S)")
_CODE = re.compile(r"`(?!`)([^`\n]+)`")  # (?!`): a run of backticks fails at once
_BULLET = re.compile(r"^\s*[-*]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_HEADING = re.compile(r"^(#{1,4})\s+(.*)$")
# A star inside a code span, as a character reference: shown as "*", never a marker.
_CODE_STAR = "&#42;"


def _code_spans(text: str) -> str:
    """`code` spans as <code> tags, their stars made character references. Done on the
    whole line at once (no Python step per span): the spans' texts, which hold no backtick,
    are joined by backticks, changed together and split again."""
    parts = _CODE.split(text)  # text, code, text, code, ..., text
    if len(parts) == 1:
        return text
    codes = "`".join(parts[1::2]).replace("*", _CODE_STAR)
    parts[1::2] = ("<code>" + codes.replace("`", "</code>\n<code>") + "</code>").split("\n")
    return "".join(parts)


def _cut_sub(pattern: re.Pattern[str], last_close: re.Pattern[str], tag: str, text: str) -> str:
    """pattern.sub(<tag>...</tag>) on `text` up to the end of its last closing marker (see
    the module's docstring)."""
    found = last_close.search(text[::-1])
    if found is None:
        return text
    end = len(text) - found.start()  # just after the last closing marker
    return pattern.sub(rf"<{tag}>\1</{tag}>", text[:end]) + text[end:]


def _inline(text: str) -> str:
    text = _code_spans(text)
    text = _cut_sub(_BOLD, _LAST_BOLD_CLOSE, "strong", text)
    return _cut_sub(_ITALIC, _LAST_ITALIC_CLOSE, "em", text)


@register.filter(name="rater_markdown")
def rater_markdown(value: str | None) -> SafeString:
    if not value:
        return mark_safe("")
    lines = escape(value).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    html: list[str] = []
    paragraph: list[str] = []
    list_tag: str | None = None

    def close_paragraph() -> None:
        if paragraph:
            html.append("<p>" + "<br>".join(_inline(p) for p in paragraph) + "</p>")
            paragraph.clear()

    def close_list() -> None:
        nonlocal list_tag
        if list_tag:
            html.append(f"</{list_tag}>")
            list_tag = None

    for line in lines:
        bullet, numbered, heading = _BULLET.match(line), _NUMBERED.match(line), _HEADING.match(line)
        if bullet or numbered:
            close_paragraph()
            tag = "ul" if bullet else "ol"
            if list_tag != tag:
                close_list()
                html.append(f"<{tag}>")
                list_tag = tag
            html.append(f"<li>{_inline((bullet or numbered).group(1))}</li>")
        elif heading:
            close_paragraph()
            close_list()
            level = len(heading.group(1)) + 2  # h3..h6: below the page's own headings
            html.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif not line.strip():
            close_paragraph()
            close_list()
        else:
            close_list()
            paragraph.append(line)
    close_paragraph()
    close_list()
    return mark_safe("\n".join(html))  # every piece above was escaped before tags were added
