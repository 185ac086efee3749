"""Each figure of a stored report downloads as SVG, PDF (vector) and 300-dpi PNG, names
drawn as written. The report is computed once for the module."""

from __future__ import annotations

import copy
import io
import struct
import xml.etree.ElementTree as ET

import pytest
from pypdf import PdfReader

from agreement import services
from agreement.models import ReportSnapshot
from delphi.models import TaxonomyNode

PARAMS = {"n_resamples": 20, "seed": 3}
KEYS = ("scatter", "bland_altman", "forest", "heatmap")
CATEGORY = "Costs $5 & <b>_x_</b> 100%"


def _png_info(data: bytes) -> tuple[int, int, float]:
    """(width px, height px, dots per inch) of a PNG."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    at = data.index(b"pHYs")
    per_metre, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1  # metres
    return width, height, per_metre * 0.0254


@pytest.fixture(scope="module")
def snapshot_once(module_db, built_once) -> ReportSnapshot:
    """A report of the module's study, a category renamed to CATEGORY first."""
    with module_db():
        TaxonomyNode.objects.filter(kind="category", name__startswith="Clinical").update(
            name=CATEGORY
        )
        return services.create_snapshot(study=built_once.study, actor=None, parameters=PARAMS)


@pytest.fixture
def snapshot(built, snapshot_once) -> ReportSnapshot:
    return copy.deepcopy(snapshot_once)


def test_every_figure_in_every_format(snapshot, built, client):
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snapshot.pk}/figures/"
    page = client.get(f"/studies/{built.study.pk}/agreement/{snapshot.pk}/").content.decode()
    for key in KEYS:
        assert f'href="{base}{key}.png"' in page
        svg = client.get(f"{base}{key}.svg")
        assert svg["Content-Type"] == "image/svg+xml"
        assert (
            f'filename="agreement-{built.study.pk}-{snapshot.pk}-{key}.svg"'
            in (svg["Content-Disposition"])
        )
        root = ET.fromstring(svg.content)  # a well-formed standalone SVG document
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        pdf = client.get(f"{base}{key}.pdf")
        assert pdf["Content-Type"] == "application/pdf"
        reader = PdfReader(io.BytesIO(pdf.content))
        assert len(reader.pages) == 1
        assert reader.pages[0].extract_text().strip()  # text as text: a vector figure
        png = client.get(f"{base}{key}.png")
        assert png["Content-Type"] == "image/png"
        width, height, dpi = _png_info(png.content)
        assert round(dpi) == 300
        inches = [float(root.get(side).removesuffix("pt")) / 72 for side in ("width", "height")]
        assert abs(width - inches[0] * 300) <= 2 and abs(height - inches[1] * 300) <= 2, key
    scatter = client.get(f"{base}scatter.svg").content.decode()
    assert CATEGORY.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in scatter
    scatter_pdf = PdfReader(io.BytesIO(client.get(f"{base}scatter.pdf").content))
    assert "Costs $5 & <b>_x_</b> 100%" in scatter_pdf.pages[0].extract_text()


def test_unknown_figures_and_formats_are_404(snapshot, built, client, api_as):
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snapshot.pk}/figures/"
    assert client.get(f"{base}scatter.jpg").status_code == 404
    assert client.get(f"{base}nosuch.svg").status_code == 404
    api = api_as(built.members.researcher)
    root = f"/api/studies/{built.study.pk}/agreement/reports/{snapshot.pk}/figures/"
    response = api.get(root + "forest/png/")
    assert response.status_code == 200 and response.content.startswith(b"\x89PNG")
    assert api.get(root + "forest/gif/").status_code == 404
    assert api_as(built.members.clinicians[0]).get(root + "forest/png/").status_code == 403
