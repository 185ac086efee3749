"""Render model and case text safely: everything is escaped first, then a small markdown
subset (paragraphs, line breaks, **bold**, *italic*, `code`, bullet and numbered lists,
# headings) is turned into tags. Model text is data: no HTML it contains is ever executed."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\*\w])\*(?=\S)(.+?)(?<=\S)\*(?![\*\w])")
_CODE = re.compile(r"`([^`\n]+)`")
_BULLET = re.compile(r"^\s*[-*]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_HEADING = re.compile(r"^(#{1,4})\s+(.*)$")


def _inline(text: str) -> str:
    text = _CODE.sub(r"<code>\1</code>", text)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    return _ITALIC.sub(r"<em>\1</em>", text)


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
