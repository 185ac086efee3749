"""Attention checks: a coordinator marks an item with the answers that pass; each rater's
result (passed, failed, not yet rated, with the answers given) is on the dashboard, the
checks page and an export; check items stay out of the score table and the watch."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from agreement.selectors import score_data
from agreement.services.watch import watch_ratings
from annotation import services
from annotation.errors import AnnotationError
from annotation.models import Assignment, AttentionCheck, AuditEvent, Item, RubricCriterion
from annotation.selectors import check_results
from tests.annotation.item_list import assert_search_narrows_and_link_preselects
from tests.factories import FULL_ANSWERS, make_study_with_members

pytestmark = pytest.mark.django_db


def _answers(accuracy: int | None) -> dict[str, services.CriterionAnswer]:
    first = (
        services.CriterionAnswer(cannot_assess=True)
        if accuracy is None
        else services.CriterionAnswer(value=accuracy)
    )
    return {**FULL_ANSWERS, "accuracy": first}


def _mark(setup, item_id: int, expected=None) -> AttentionCheck:
    return services.mark_attention_check(
        study=setup.study,
        item_id=item_id,
        expected=expected or {"accuracy": (4, 5)},
        note="Output is the reference verbatim.",
        actor=setup.coordinator,
    )


def _raters_of(item_id: int) -> list[Assignment]:
    return list(
        Assignment.objects.filter(item_id=item_id).select_related("clinician").order_by("pk")
    )


def _submit(a: Assignment, accuracy: int | None) -> None:
    services.submit_assignment(
        assignment_id=a.pk, clinician=a.clinician, answers=_answers(accuracy)
    )


@pytest.fixture
def checked(setup):
    """Item 0 is a check (accuracy 4-5 passes): its first rater answers 4, its second 1."""
    item = setup.study.items.order_by("pk").first()
    _mark(setup, item.pk)
    first, second = _raters_of(item.pk)
    _submit(first, 4)
    _submit(second, 1)
    return setup, item, first, second


def test_each_rater_passes_or_fails_with_the_answers_given(checked):
    setup, _item, first, second = checked
    results = {r.rater: r for r in check_results(study=setup.study)}
    pseudonym = {m.user_id: m.pseudonym for m in setup.study.memberships.all()}
    good, bad = results[pseudonym[first.clinician_id]], results[pseudonym[second.clinician_id]]
    assert (good.passed, good.failed, good.not_rated) == (1, 0, 0)
    assert (bad.passed, bad.failed, bad.not_rated) == (0, 1, 0)
    assert bad.answers[0].answers["accuracy"] == 1
    assert set(results) == {pseudonym[first.clinician_id], pseudonym[second.clinician_id]}


def test_a_cannot_assess_answer_fails_and_an_open_assignment_is_not_yet_rated(setup):
    RubricCriterion.objects.filter(study=setup.study).update(allow_cannot_assess=True)
    item_a, item_b = setup.study.items.order_by("pk")[:2]
    _mark(setup, item_a.pk)
    _mark(setup, item_b.pk, expected={"clarity": (None, 2)})  # a lone bound: 1-2
    assert AttentionCheck.objects.get(item=item_b).expected == {"clarity": [1, 2]}
    first, _second = _raters_of(item_a.pk)
    _submit(first, None)
    statuses = {
        (r.rater, a.check.item_id): a.status
        for r in check_results(study=setup.study)
        for a in r.answers
    }
    assert sorted(statuses.values()).count("failed") == 1
    assert sorted(statuses.values()).count("not yet rated") == 3


@pytest.mark.parametrize(
    ("expected", "field", "says"),
    [
        ({"accuracy": (4, 9)}, "accuracy", "within the scale 1-5"),
        ({"accuracy": (5, 2)}, "accuracy", "ordered"),
        ({"nonsense": (1, 2)}, "nonsense", "no criterion"),
        ({"accuracy": (None, None)}, "expected", "at least one criterion"),
    ],
)
def test_a_bad_expected_answer_is_refused_naming_the_criterion(setup, expected, field, says):
    item = setup.study.items.first()
    with pytest.raises(AnnotationError) as err:
        _mark(setup, item.pk, expected=expected)
    assert err.value.field == field and says in err.value.message
    assert not AttentionCheck.objects.exists()


def test_only_a_coordinator_marks_and_every_change_is_audited(setup):
    item = setup.study.items.first()
    with pytest.raises(PermissionDenied):
        services.mark_attention_check(
            study=setup.study,
            item_id=item.pk,
            expected={"accuracy": (4, 5)},
            note="",
            actor=setup.clinicians[0],
        )
    with pytest.raises(AnnotationError, match="no item"):
        _mark(setup, 10**9)
    _mark(setup, item.pk)
    _mark(setup, item.pk, expected={"accuracy": (5, 5)})  # changed, still one check
    services.unmark_attention_check(study=setup.study, item_id=item.pk, actor=setup.coordinator)
    assert not AttentionCheck.objects.exists()
    actions = list(
        AuditEvent.objects.filter(
            study=setup.study, action__startswith="attention_check"
        ).values_list("action", flat=True)
    )
    assert actions == ["attention_check.mark"] * 2 + ["attention_check.unmark"]
    with pytest.raises(AnnotationError, match="not an attention check"):
        services.unmark_attention_check(study=setup.study, item_id=item.pk, actor=setup.coordinator)


def test_check_items_stay_out_of_the_score_table_and_the_watch(checked):
    setup, item, *_ = checked
    data = score_data(study=setup.study)
    assert item.pk not in set(data.table["item"])
    assert item.pk not in set(data.items["item"])
    assert data.coverage["attention_checks_excluded"] == 1
    assert data.coverage["n_items"] == setup.study.items.count() - 1
    assert item.pk not in set(watch_ratings(study_id=setup.study.pk)["item"])
    services.unmark_attention_check(study=setup.study, item_id=item.pk, actor=setup.coordinator)
    back = score_data(study=setup.study)
    assert item.pk in set(back.table["item"]) and back.coverage["attention_checks_excluded"] == 0


def test_the_coordinator_marks_on_the_checks_page_and_the_dashboard_shows_the_failing_rater(
    client, setup
):
    study = setup.study
    item = study.items.order_by("pk").first()
    client.force_login(setup.coordinator)
    url = reverse("annotation:checks", args=[study.pk])
    bad = client.post(url, {"item": item.pk, "low-accuracy": "5", "high-accuracy": "2"})
    assert bad.status_code == 400 and "ordered" in bad.content.decode()
    assert not AttentionCheck.objects.exists()
    done = client.post(url, {"item": item.pk, "low-accuracy": "4", "note": "verbatim"})
    assert done.status_code == 302
    assert AttentionCheck.objects.get(item=item).expected == {"accuracy": [4, 5]}
    first, second = _raters_of(item.pk)
    _submit(first, 5)
    _submit(second, 2)
    failing = study.memberships.get(user=second.clinician).pseudonym
    page = client.get(reverse("annotation:study", args=[study.pk])).content.decode()
    assert f'data-testid="check-rater-{failing}"' in page and "failed 1" in page


def test_the_export_gives_each_answer_against_its_range(client, checked):
    setup, *_ = checked
    client.force_login(setup.researcher)
    response = client.get(reverse("annotation:export-checks", args=[setup.study.pk]))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["status"], r["answer"], r["within"]) for r in rows] == [
        ("passed", "4", "yes"),
        ("failed", "1", "no"),
    ]
    assert {r["expected_low"] for r in rows} == {"4"} and {r["criterion"] for r in rows} == {
        "accuracy"
    }


def test_a_clinician_reaches_neither_the_checks_page_nor_the_export(client, checked):
    setup, *_ = checked
    client.force_login(setup.clinicians[0])
    for name in ("annotation:checks", "annotation:export-checks"):
        assert client.get(reverse(name, args=[setup.study.pk])).status_code in (403, 404)


def test_hostile_text_is_quoted_in_the_export(client):
    hostile = '=HYPERLINK("http://evil.example/","x")'
    built = make_study_with_members(n_items=1, n_clinicians=2, k=2)
    Item.objects.filter(study=built.study).update(external_id=hostile, model_name="+SUM(1)")
    item = built.study.items.get()
    _mark(built, item.pk)
    client.force_login(built.coordinator)
    response = client.get(reverse("annotation:export-checks", args=[built.study.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 2
    assert {r["external_id"] for r in rows} == {"'" + hostile}
    assert {r["model"] for r in rows} == {"'+SUM(1)"}


def test_the_item_page_links_to_planting_and_shows_a_check(client, setup):
    item = setup.study.items.first()
    client.force_login(setup.coordinator)
    url = reverse("annotation:item", args=[setup.study.pk, item.pk])
    page = client.get(url).content.decode()
    assert f"/checks/?item={item.pk}" in page and "An ordinary item" in page
    form = client.get(reverse("annotation:checks", args=[setup.study.pk]), {"item": item.pk})
    assert f'value="{item.pk}"' in form.content.decode()
    _mark(setup, item.pk)
    page = client.get(url).content.decode()
    assert "This item is an attention check" in page and "accuracy 4\N{EN DASH}5" in page


def test_the_coordinator_chooses_the_check_from_a_list_the_server_still_checks(client, setup):
    """The item is a select of the items dealt to clinicians (case, model; grouped by
    taxonomy), checks said so, calibration items left out; a search narrows it; the item
    page's link preselects its item; an item posted from outside the list is still refused,
    by the service, naming it."""
    study = setup.study
    checked, calibration, fresh = study.items.order_by("pk")[:3]
    _mark(setup, checked.pk)
    services.mark_calibration_item(
        study=study,
        item_id=calibration.pk,
        reference={"accuracy": 4},
        note="",
        actor=setup.coordinator,
    )
    client.force_login(setup.coordinator)
    url = reverse("annotation:checks", args=[study.pk])
    page = client.get(url).content.decode()
    select = page[page.index('<select name="item"') :].split("</select>")[0]
    assert '<optgroup label="(no category) / (no subcategory)">' in select
    assert (
        f'<option value="{fresh.pk}">{fresh.external_id} · {fresh.model_name} (#{fresh.pk})'
        in select
    )
    assert f"(#{checked.pk}, attention check)</option>" in select
    assert f'value="{calibration.pk}"' not in select  # the service would refuse it
    assert select.count("<option value=") == study.items.count()  # "" and all but one
    assert f"{study.items.count() - 1} items listed." in page

    assert_search_narrows_and_link_preselects(client, url, fresh)

    refused = client.post(url, {"item": calibration.pk, "low-accuracy": "4"})
    assert refused.status_code == 400
    assert f"item {calibration.pk} is a calibration item" in refused.content.decode()
    other = make_study_with_members(n_items=1, name="Other").study.items.get()
    refused = client.post(url, {"item": other.pk, "low-accuracy": "4"})
    assert refused.status_code == 400
    assert f"no item {other.pk} in this study" in refused.content.decode()
    missing = client.post(url, {"item": "", "low-accuracy": "4"})
    assert missing.status_code == 400
    assert "Choose the item from the list." in missing.content.decode()
    assert list(AttentionCheck.objects.values_list("item_id", flat=True)) == [checked.pk]
