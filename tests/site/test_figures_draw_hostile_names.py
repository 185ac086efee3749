"""Names that matplotlib could misread (`$` math, `\\`, `_`, `^`), 500-character names and
non-Latin scripts never make a figure fail: a stored agreement report answers 200 with
every figure on its page, its PDF and its API, and so do the Delphi report's HTML and PDF.

Glyphs missing from the bundled DejaVu fonts may warn; they must not fail.
"""

from __future__ import annotations

import re
import warnings

import pytest
from rest_framework.test import APIClient

from agreement import plots
from agreement import services as agreement_services
from annotation.models import Item, RubricCriterion, StudyMembership
from delphi import services as delphi_services
from delphi.models import DelphiStudy, TaxonomyNode
from jury.models import Judge
from tests.agreement.factories import Built, build_study
from tests.delphi.flow import BASE_URL, make_panel_study

NON_LATIN = "Ελληνικά русский 中文 日本語 한국어 العربية हिन्दी עברית ไทย 🩺"
LONG = ("Very long benchmark name with words " * 14)[:500]
LONG_WORD = "X" * 500
HOSTILE = {
    "dollar": "Costs $5 vs $10",
    "math": "$\\frac{a}{b}$ and $x^2$",
    "bad_math": "$\\notacommand{$",
    "underscore": "_leading_underscore_",
    "backslash": "C:\\temp\\new \\alpha \\",
    "caret": "x^2 ^{up} a_b",
    "long": LONG,
    "long_word": LONG_WORD,
    "non_latin": NON_LATIN,
    # A byte-order mark, as a name pasted from a file saved by a spreadsheet carries it.
    "bom": "\ufeffTriage notes",
}
PARAMS = {"n_resamples": 30, "seed": 11}


@pytest.fixture(autouse=True)
def _missing_glyphs_may_warn():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*[Gg]lyph .* missing from")
        warnings.filterwarnings("ignore", message=r".*Matplotlib currently does not support")
        yield


def _hostile_agreement_study() -> Built:
    """A rated study whose categories, tasks, benchmarks, judges, models, raters, criteria
    and title carry the hostile names."""
    built = build_study(n_items=12, n_clinicians=3, leave_pending=1)
    study = built.study
    study.name = f"Study {HOSTILE['math']} {NON_LATIN}"
    study.save(update_fields=["name"])
    version = Item.objects.filter(study=study).first().taxonomy_node.version
    names = iter(HOSTILE.values())
    for node in TaxonomyNode.objects.filter(version=version).order_by("pk"):
        node.name = next(names)
        node.save(update_fields=["name"])
    renames = {
        "MedCalc-Bench": HOSTILE["backslash"],
        "MEDIQA": HOSTILE["bom"] + " " + HOSTILE["caret"],
    }
    models = {"model-a": HOSTILE["non_latin"], "model-b": HOSTILE["underscore"] + " $b$"}
    for item in Item.objects.filter(study=study):
        item.benchmark = renames.get(item.benchmark, item.benchmark)
        item.model_name = models[item.model_name]
        item.save(update_fields=["benchmark", "model_name"])
    judges = sorted(built.judges, key=lambda j: j.pk)
    Judge.objects.filter(pk=judges[0].pk).update(name="_gpt$ judge_1^2 \\")
    Judge.objects.filter(pk=judges[1].pk).update(name=f"{NON_LATIN} $claude")
    clinicians = StudyMembership.objects.filter(
        study=study, role=StudyMembership.Role.CLINICIAN
    ).order_by("pk")
    for membership, name in zip(clinicians, ("_R$1$", "R^2 \\", NON_LATIN[:20]), strict=False):
        membership.pseudonym = name
        membership.save(update_fields=["pseudonym"])
    RubricCriterion.objects.filter(study=study, key="accuracy").update(label=HOSTILE["math"])
    return built


def _assert_pdf(content: bytes, where: str) -> None:
    assert content.startswith(b"%PDF") and len(content) > 5000, where


def test_a_stored_agreement_report_with_hostile_names_renders_everywhere(db, client):
    built = _hostile_agreement_study()
    snapshot = agreement_services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    study, report = built.study.pk, snapshot.pk

    page = client.get(f"/studies/{study}/agreement/{report}/")
    assert page.status_code == 200
    html = page.content.decode()
    # every figure is on the page as an image of its stored SVG file, which answers
    images = re.findall(r'<img class="plot-image" src="([^"]+\.svg)"', html)
    assert len(images) == 4, "every figure is drawn on the page"
    for src in images:
        svg = client.get(src)
        assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml", src
    assert "Costs $5 vs $10" in html and "中文" in html
    _assert_pdf(client.get(f"/studies/{study}/agreement/{report}/report.pdf").content, "page pdf")
    assert client.get(f"/studies/{study}/agreement/{report}/report.json").status_code == 200

    api = APIClient()
    api.force_authenticate(built.members.researcher)
    base = f"/api/studies/{study}/agreement/reports/{report}/"
    assert api.get(base).status_code == 200
    pdf = api.get(base + "pdf/")
    assert pdf.status_code == 200
    _assert_pdf(pdf.content, "api pdf")


def test_the_figures_draw_the_names_as_written(db):
    built = _hostile_agreement_study()
    snapshot = agreement_services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    figures = {f["key"]: f["svg"] for f in plots.svg_figures(snapshot.results)}
    assert all(figures.values()) and len(figures) == 4
    drawn = {key: svg.replace("&amp;", "&") for key, svg in figures.items()}
    # text, not math: dollars, carets and backslashes are drawn as typed; a name that starts
    # with "_" keeps its legend entry (matplotlib hides such labels)
    assert {"Costs $5 vs $10", "_leading_underscore_"} <= _legend_texts(drawn["scatter"])
    assert "_gpt$ judge_1^2 \\" in _legend_texts(drawn["forest"])
    for text in ("Costs $5 vs $10", "C:\\temp\\new", "Triage notes x^2 ^{up}"):
        assert text in drawn["forest"], text
    assert "_R$1$" in drawn["heatmap"] and "R^2 \\" in drawn["heatmap"]


def _legend_texts(svg: str) -> set[str]:
    """The texts of the figure's legend (matplotlib groups them under id="legend_1")."""
    start = svg.index('id="legend_1"')
    legend = svg[start : svg.index("</g>\n  </g>", start)]
    return {t.replace("\u200b", "") for t in re.findall(r"<text[^>]*>([^<]*)</text>", legend)}


def _hostile_delphi_study() -> tuple[DelphiStudy, object]:
    taxonomy = {
        "name": "Hostile figures",
        "categories": [
            {
                "name": HOSTILE["dollar"],
                "subcategories": [HOSTILE["math"], HOSTILE["bad_math"], HOSTILE["long"][:300]],
            },
            {
                "name": HOSTILE["non_latin"],
                "subcategories": [
                    HOSTILE["backslash"],
                    HOSTILE["caret"],
                    HOSTILE["long_word"][:300],
                    "_" + HOSTILE["underscore"],
                    HOSTILE["bom"],
                ],
            },
        ],
    }
    groups = ("$group$ a_1", NON_LATIN[:30])
    built = make_panel_study(n_panelists=4, groups=groups, taxonomy=taxonomy)
    actor, r1 = built.coordinator, built.round(1)
    delphi_services.open_round(round_=r1, actor=actor, base_url=BASE_URL)
    for i, panelist in enumerate(built.panelists):
        answers = {
            str(item.pk): {
                "placement_agrees": True,
                "rating": (2, 8, 5, 9)[(i + n) % 4],
                "comment": f"{HOSTILE['math']} {NON_LATIN}",
            }
            for n, item in enumerate(r1.items.order_by("pk"))
        }
        delphi_services.submit_round(
            panelist=panelist, round_=r1, answers=answers, comprehensiveness=4
        )
    delphi_services.close_round(round_=r1, actor=actor)
    delphi_services.analyse_round(round_=r1, actor=actor)
    delphi_services.release_feedback(round_=r1, actor=actor)
    return DelphiStudy.objects.get(pk=built.study.pk), actor


def test_the_delphi_report_with_hostile_names_renders_as_html_and_pdf(db, client):
    study, coordinator = _hostile_delphi_study()
    client.force_login(coordinator)
    html = client.get(f"/delphi/{study.pk}/export/report.html")
    assert html.status_code == 200
    body = html.content.decode()
    assert len(re.findall(r"<svg\b", body)) >= 3, "flow, outcomes and histograms"
    assert "Costs $5 vs $10" in body and "中文" in body
    pdf = client.get(f"/delphi/{study.pk}/export/report.pdf")
    assert pdf.status_code == 200
    _assert_pdf(pdf.content, "delphi pdf")
