"""The report's PDF is typeset from the report page (WeasyPrint): real text with the Table 2
values of the JSON, numbered pages, captions, vector figures, and no monospaced text dump."""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import pytest
from pypdf import PdfReader

from agreement import plots, services
from agreement.renderings.pdf import PdfFetchError, html_pdf
from annotation.models import Item
from tests.support.pdf import pdf_pages

PARAMS = {"n_resamples": 60, "seed": 5}


def _fonts(reader: PdfReader) -> set[str]:
    names = set()
    for page in reader.pages:
        fonts = page.get("/Resources", {}).get("/Font", {})
        names |= {str(f.get_object().get("/BaseFont")) for f in fonts.values()}
    return names


def test_the_pdf_is_the_page_typeset_with_table2_values_of_the_json(built, client, api_as):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    response = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/report.pdf")
    assert response["Content-Type"] == "application/pdf"
    data = response.content
    reader = PdfReader(io.BytesIO(data))
    pages = pdf_pages(data)
    assert len(pages) > 0
    text = " ".join(pages)
    # numbered pages, the report's title in the margin
    for n in range(1, len(pages) + 1):
        assert f"Page {n} of {len(pages)}" in pages[n - 1]
    assert reader.metadata.title == snap.title
    # Table 2 with its caption, every value of the JSON's overall cells, as the page writes it
    assert "Table 2. Agreement with clinicians: ICC(3,k)" in text
    cells = services.export_json(snap)["results"]["cells"]
    overall = [c for c in cells if c["section"] == "overall" and c["status"] == "ok"]
    assert overall
    for c in overall:
        shown = f"{plots.fmt(c['estimate'])} {plots.fmt_ci(c['ci_low'], c['ci_high'])}"
        assert shown in text, (c["row"], c["column"], shown)
    # the methods paragraph, the figures with captions, their labels as text (vector, not
    # pictures of text)
    assert " ".join(services.methods_text(snap).split()[:12]) in text
    for n in range(1, 5):
        assert f"Figure {n}." in text
    assert "clinician mean composite" in text and "jury z - clinician mean z" in text
    # not the old monospaced dump: set in a proportional font (monospace only for the
    # input hash), no JSON braces, none of the dump's table headings
    assert any(f.endswith("+DejaVu-Sans") for f in _fonts(reader)), _fonts(reader)
    assert not re.search(r'\{"[a-z_-]+": ', text)
    assert "Table 2: agreement with clinicians (ICC, bootstrap interval)" not in text
    # the API route serves the same document
    api = api_as(built.members.researcher)
    pdf = api.get(f"/api/studies/{built.study.pk}/agreement/reports/{snap.pk}/pdf/")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")


def test_the_pdf_fetches_nothing_a_name_points_to(built):
    # a short path, so the hostile name fits the model-name column on PostgreSQL too
    with tempfile.TemporaryDirectory(prefix="s", dir="/tmp") as folder:
        secret = Path(folder) / "secret.txt"
        secret.write_text("top secret contents")
        name = f'<img src="file://{secret}"><link rel="stylesheet" href="file://{secret}">'
        assert len(name) <= Item._meta.get_field("model_name").max_length
        built.study.items.filter(pk=built.items[0].pk).update(model_name=name)
        snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
        text = " ".join(pdf_pages(services.export_pdf(snap)))
    assert "top secret contents" not in text
    assert f'<img src="file://{secret}">' in text  # escaped: shown as the name it is


def test_the_pdf_reads_the_figure_files_it_is_given_and_nothing_else(tmp_path):
    svg = (
        b'<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40">'
        b'<text x="5" y="20">drawn from the given file</text></svg>'
    )
    given = {"/studies/1/agreement/2/figures/scatter.svg": (svg, "image/svg+xml")}
    html = '<p>Before</p><img src="/studies/1/agreement/2/figures/scatter.svg" alt="a figure">'
    text = " ".join(pdf_pages(html_pdf(html, title="t", files=given)))
    assert "drawn from the given file" in text  # the SVG as vector text, not a picture
    # a figure it was not given, or any other URL, stops the PDF: no gap in it
    secret = tmp_path / "secret.svg"
    secret.write_bytes(svg)
    for src in ("/studies/1/agreement/2/figures/forest.svg", f"file://{secret}"):
        with pytest.raises(PdfFetchError, match="names files it was not given"):
            html_pdf(f'<img src="{src}" alt="x">', title="t", files=given)


@pytest.mark.parametrize("attribute", ["href", "xlink:href"])
def test_an_inline_svg_image_outside_the_report_stops_the_pdf(tmp_path, attribute):
    # an inline SVG's <image> is fetched while the page is drawn, after layout
    secret = tmp_path / "secret.svg"
    secret.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40">'
        '<text x="5" y="20">top secret drawing</text></svg>'
    )
    for src in (f"file://{secret}", "https://example.invalid/figure.png"):
        html = (
            '<p>Before</p><svg xmlns="http://www.w3.org/2000/svg" '
            'xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">'
            f'<image {attribute}="{src}" width="50" height="50"/></svg>'
        )
        with pytest.raises(PdfFetchError, match="names files it was not given"):
            html_pdf(html, title="t")
