"""The report pages: the list with its form, one report with every section, recompute."""

from __future__ import annotations

import re

from django.utils.html import escape as html_escape

from agreement import analysis, plots, services
from agreement.models import ReportSnapshot
from annotation.models import Item

PARAMS = {"n_resamples": 60, "seed": 5}


def test_reports_page_computes_a_new_report(built, client):
    client.force_login(built.members.researcher)
    url = f"/studies/{built.study.pk}/agreement/"
    page = client.get(url)
    assert page.status_code == 200 and 'data-testid="new-report"' in page.content.decode()
    assert 'value="1000"' in page.content.decode() and 'value="0.95"' in page.content.decode()
    form = {
        "n_resamples": 40,
        "seed": "",
        "confidence": 0.9,
        "ci_method": "percentile",
        "values": "latest",
        "title": "First look",
    }
    response = client.post(url, form)
    snap = ReportSnapshot.objects.get(study=built.study)
    assert snap.parameters["min_shared_items"] == 2  # left out: the default
    assert response.status_code == 302 and response["Location"].endswith(f"/agreement/{snap.pk}/")
    assert snap.title == "First look" and snap.parameters["ci_method"] == "percentile"
    assert snap.created_by == built.members.researcher and isinstance(snap.parameters["seed"], int)
    listing = client.get(url).content.decode()
    assert "First look" in listing and str(snap.parameters["seed"]) in listing
    bad = client.post(
        url, {"n_resamples": 1, "confidence": 0.95, "ci_method": "bca", "values": "latest"}
    )
    assert bad.status_code == 200 and ReportSnapshot.objects.count() == 1


SECTIONS = (
    "report-head",
    "method",
    "table2",
    "per-criterion",
    "differences",
    "leaderboard",
    "coverage",
    "plots",
)


def test_the_report_page_has_every_section_and_its_plots_as_images_of_the_stored_files(
    built, client
):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.coordinator, parameters=PARAMS
    )
    client.force_login(built.members.coordinator)
    html = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/").content.decode()
    for testid in SECTIONS:
        assert f'data-testid="{testid}"' in html, testid
    assert "<svg" not in html  # the page carries no figure itself: it stays small
    svgs = {}
    for key in ("scatter", "bland_altman", "forest", "heatmap"):
        block = re.search(rf'data-testid="plot-{key}".*?</figure>', html, re.S).group(0)
        img = re.search(r"<img [^>]*>", block).group(0)
        src = re.search(r'src="([^"]+)"', img).group(1)
        assert src == f"/studies/{built.study.pk}/agreement/{snap.pk}/figures/{key}.svg", key
        alt = re.search(r'alt="([^"]+)"', img).group(1)
        title = next(f["title"] for f in plots.svg_figures(snap.results) if f["key"] == key)
        assert alt.startswith(html_escape(title) + ", ") and len(alt) > len(title) + 20, alt
        assert re.search(r'width="\d+" height="\d+"', img) and 'loading="lazy"' in img, img
        image = client.get(src)
        assert image.status_code == 200 and image["Content-Type"] == "image/svg+xml"
        assert image.content == services.export_figure(snap, key, "svg")
        svgs[key] = image.content.decode()
    # server-rendered: the scripts are the copy button (the paragraph it copies is on the
    # page without it) and the status panel's reader (a link without it), none inline
    assert re.findall(r"<script[^>]*>", html) == [
        '<script src="/static/agreement/copy_text.js">',
        '<script src="/static/agreement/machine_status.js">',
    ]
    assert "bootstrap over items, BCa" in html and "seed 5" in html
    assert "R01" in svgs["heatmap"]  # clinicians by pseudonym in the heat map
    cell = next(
        c for c in snap.results["cells"] if c["column"] == "jury" and c["row"] == analysis.ROW_ALL
    )
    assert plots.fmt(cell["estimate"]) in html


def test_text_in_model_names_is_escaped_everywhere(built, client):
    Item.objects.filter(pk=built.items[1].pk).update(model_name="<script>alert(1)</script>")
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    html = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


def test_recompute_button(built, client):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    response = client.post(f"/studies/{built.study.pk}/agreement/{snap.pk}/recompute/")
    fresh = ReportSnapshot.objects.exclude(pk=snap.pk).get()
    assert response.status_code == 302 and fresh.previous == snap
    assert (
        client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/recompute/").status_code == 405
    )
