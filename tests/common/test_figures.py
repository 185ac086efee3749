"""Figure text: hostile names draw, SVG markup fits in an HTML body."""

import io

import pytest
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure

from medhelm_site.common.figures import figure_svg, figure_text, text_page, wrap_line

HOSTILE = ["$x$", "cost $5 and $6", "a\\b", "under_score^2", "x" * 500, "心电图 ЭКГ عربى"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_draw_as_written(name):
    fig = Figure()
    ax = fig.subplots()
    ax.set_title(figure_text(name))
    ax.set_xticks([0], [figure_text(name)])
    svg = figure_svg(fig)
    assert svg.startswith("<svg")


def test_unescaped_dollars_are_what_breaks_a_figure():
    fig = Figure()
    fig.subplots().set_title("$\\notacommand$")
    with pytest.raises(ValueError):
        figure_svg(fig)


def test_text_pages_and_wrapping():
    assert wrap_line("short", width=20, indent=2) == ["  short"]
    long = wrap_line("word " * 20, width=30, indent=2, continuation_indent=4)
    assert all(len(line) <= 30 for line in long) and long[1].startswith("    ")
    buffer = io.BytesIO()
    with PdfPages(buffer) as pdf:
        text_page(
            pdf, ["$5 a $6", *HOSTILE], heading="$ heading", size=(8.27, 11.69), page_label="1"
        )
    assert buffer.getvalue().startswith(b"%PDF")
