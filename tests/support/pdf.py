"""A PDF's text as a reader's tool extracts it (pypdf), for tests on the typeset reports."""

from __future__ import annotations

import io
import re

from pypdf import PdfReader


def pdf_pages(data: bytes) -> list[str]:
    """The text of each page, whitespace runs (line breaks too) made single spaces."""
    reader = PdfReader(io.BytesIO(data))
    return [re.sub(r"\s+", " ", page.extract_text() or "").strip() for page in reader.pages]


def pdf_text(data: bytes) -> str:
    """The text of every page, as one string with single spaces."""
    return " ".join(pdf_pages(data))
