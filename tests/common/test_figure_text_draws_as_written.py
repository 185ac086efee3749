"""`figure_text` makes any name drawable in every backend the reports use (SVG, PDF, PNG) and
keeps what a reader sees equal to what was typed."""

from __future__ import annotations

import io
import re
import warnings

import matplotlib
import pytest
from matplotlib.figure import Figure

from medhelm_site.common.figures import figure_svg, figure_text

NAMED = {
    "math": "$x$",
    "bad-math": "$\\notacommand{$",
    "dollars": "cost $5 and $6",
    "escaped-dollar": "a\\$b$",
    "backslash": "C:\\temp\\",
    "leading-underscore": "_leading underscore",
    "caret": "x^2 a_b",
    "500-characters": "y" * 500,
    "leading-bom": "\ufeffname after a byte-order mark",
    "inner-bom": "mid\ufeffdle",
    "non-latin": "Ελληνικά русский 中文 العربية हिन्दी 🩺",
}
NAMES = list(NAMED.values())
IDS = list(NAMED)


def _figure(name: str) -> Figure:
    fig = Figure()
    ax = fig.subplots()
    ax.scatter([1], [1], label=figure_text(name))
    ax.set_title(figure_text(name))
    ax.set_xticks([1], [figure_text(name)])
    ax.legend()
    return fig


@pytest.mark.parametrize("name", NAMES, ids=IDS)
@pytest.mark.parametrize("fmt", ["pdf", "png"])
def test_every_name_draws_in_pdf_and_png(name, fmt):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*[Gg]lyph .* missing from")
        with matplotlib.rc_context({"pdf.fonttype": 42}):
            _figure(name).savefig(buffer, format=fmt)
    assert len(buffer.getvalue()) > 1000


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_the_svg_shows_the_name_as_typed_in_title_tick_and_legend(name):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*[Gg]lyph .* missing from")
        svg = figure_svg(_figure(name), rc={"svg.fonttype": "none"})
    texts = [
        t.replace("&amp;", "&").replace("\u200b", "")
        for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    ]
    shown = name.replace("\ufeff", "")
    assert texts.count(shown) == 3, texts  # title, tick label, legend entry


def test_a_byte_order_mark_is_what_breaks_the_pdf_backend():
    fig = Figure()
    fig.text(0.5, 0.5, "a\ufeffb")
    with pytest.raises(IndexError):
        fig.savefig(io.BytesIO(), format="pdf")
