"""Content-Security-Policy for self-contained documents the site serves as they are.

The site's pages carry the site-wide policy (settings.CONTENT_SECURITY_POLICY, through
django-csp): everything from the site itself, no inline script or style. Two kinds of
response cannot link a style sheet because they must stand alone: the Delphi report and
checklist (HTML meant to open offline, with matplotlib's SVG figures inline) and the
stored SVG figures (shown as <img>, opened or downloaded on their own). matplotlib writes
one <style> element and `style` attributes into every SVG.

Such a response gets a policy of its own, built from its bytes: no script at all, nothing
fetched, and only the exact style texts the document holds, each allowed by its SHA-256
hash (`'unsafe-hashes'` lets a hash cover a style attribute, never 'unsafe-inline'). A
style injected into the document later, or changed by one byte, does not match and is
refused. A view setting the header itself is left alone by django-csp's middleware.
"""

from __future__ import annotations

import base64
import hashlib
from html.parser import HTMLParser

from django.http import HttpResponse

HEADER = "Content-Security-Policy"


class _StyleCollector(HTMLParser):
    """Every <style> element's text and every style attribute's value, as the browser
    hashes them (attribute values with their character references decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._in_style = False
        self._style_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs)
        if tag == "style":
            self.handle_endtag(tag)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.texts.extend(value for name, value in attrs if name == "style" and value is not None)
        if tag == "style":
            self._in_style = True
            self._style_text = []

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._style_text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style" and self._in_style:
            self.texts.append("".join(self._style_text))
            self._in_style = False


def style_hashes(markup: str) -> list[str]:
    """The CSP source expressions ('sha256-…') of every distinct style text in `markup`,
    in the order they first appear."""
    collector = _StyleCollector()
    collector.feed(markup)
    collector.close()
    seen: dict[str, None] = {}
    for text in collector.texts:
        digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
        seen.setdefault(f"'sha256-{digest}'", None)
    return list(seen)


def self_contained_policy(markup: str) -> str:
    """The policy of a document that needs nothing but itself: no script, no fetch, no form,
    no framing; images only from data: URLs; its own style texts by hash."""
    hashes = style_hashes(markup)
    style = " ".join(["'unsafe-hashes'", *hashes]) if hashes else "'none'"
    return "; ".join(
        [
            "default-src 'none'",
            f"style-src {style}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def with_self_contained_policy(response: HttpResponse, markup: str | bytes) -> HttpResponse:
    """`response` with the policy of the self-contained document `markup` (its own body)."""
    text = markup.decode("utf-8") if isinstance(markup, bytes) else markup
    response[HEADER] = self_contained_policy(text)
    return response
