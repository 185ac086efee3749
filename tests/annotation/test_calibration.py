"""Calibration items: a coordinator marks items with a reference rating; every rater rates
them first (ordinary work waits), then sees their ratings beside the reference; each
rater's agreement is stored at completion, on the dashboard and in the report's method;
calibration items stay out of the design's pool, the score table and the watch."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from agreement.selectors import score_data
from agreement.services.watch import watch_ratings
from annotation import selectors, services
from annotation.errors import AnnotationError
from annotation.models import (
    Assignment,
    AuditEvent,
    CalibrationCompletion,
    CalibrationItem,
    Item,
    items_to_rate,
)
from medhelm_site.accounts.services import create_token
from tests.annotation.item_list import assert_search_narrows_and_link_preselects
from tests.factories import FULL_ANSWERS, make_study_with_members

pytestmark = pytest.mark.django_db

REFERENCE = {"accuracy": 4, "completeness": 3, "clarity": None}


@pytest.fixture
def built():
    return make_study_with_members(n_items=8, n_clinicians=3, k=2)


def _mark(built, item, reference=None):
    return services.mark_calibration_item(
        study=built.study,
        item_id=item.pk,
        reference=REFERENCE if reference is None else reference,
        note="Agreed by two senior clinicians.",
        actor=built.coordinator,
    )


def _two_calibration_items(built):
    first, second = built.study.items.order_by("pk")[:2]
    _mark(built, first)
    _mark(built, second, {"accuracy": 2, "completeness": 5})
    return first, second


def _answers(accuracy, completeness=3):
    return {
        **FULL_ANSWERS,
        "accuracy": services.CriterionAnswer(value=accuracy),
        "completeness": services.CriterionAnswer(value=completeness),
    }


def _calibration_of(user):
    return list(
        Assignment.objects.filter(clinician=user, item__calibration_item__isnull=False)
        .exclude(status="withdrawn")
        .order_by("position")
    )


@pytest.mark.parametrize(
    ("reference", "field", "says"),
    [
        ({"accuracy": 7}, "accuracy", "Accuracy: the reference 7 lies outside the scale 1-5"),
        ({"accuracy": 0}, "accuracy", "Accuracy: the reference 0 lies outside the scale 1-5"),
        ({"accuracy": 3.5}, "accuracy", "Accuracy: the reference must be a whole scale point"),
        ({"nonsense": 2}, "nonsense", "no criterion 'nonsense'"),
        ({"accuracy": None}, "reference", "at least one criterion"),
    ],
)
def test_a_bad_reference_is_refused_naming_the_criterion_and_value(built, reference, field, says):
    item = built.study.items.first()
    with pytest.raises(AnnotationError) as err:
        _mark(built, item, reference)
    assert err.value.field == field and says in err.value.message
    assert not CalibrationItem.objects.exists()


def test_marking_takes_the_item_out_of_the_pool_and_deals_it_to_every_rater(built):
    item = built.study.items.order_by("pk").first()
    ordinary_before = Assignment.objects.filter(item=item).count()
    assert ordinary_before == 2  # k = 2 raters were dealt it as ordinary work
    calibration = _mark(built, item)
    assert calibration.reference == {"accuracy": 4, "completeness": 3}
    assert calibration.set_by == built.coordinator and calibration.set_at is not None
    assert not items_to_rate(built.study).filter(pk=item.pk).exists()
    raters = set(Assignment.objects.filter(item=item).values_list("clinician_id", flat=True))
    assert raters == {c.pk for c in built.clinicians}
    # a rebalance keeps dealing it to everyone, apart from the design
    services.assign_items(study=built.study, actor=built.coordinator)
    assert Assignment.objects.filter(item=item).exclude(status="withdrawn").count() == 3


def test_only_a_coordinator_marks_and_every_change_is_audited(built):
    item = built.study.items.first()
    with pytest.raises(PermissionDenied):
        services.mark_calibration_item(
            study=built.study,
            item_id=item.pk,
            reference=REFERENCE,
            note="",
            actor=built.clinicians[0],
        )
    _mark(built, item)
    _mark(built, item, {"accuracy": 5})  # the reference changed, still one item
    services.unmark_calibration_item(study=built.study, item_id=item.pk, actor=built.coordinator)
    actions = list(
        AuditEvent.objects.filter(study=built.study, action__startswith="calibration_item")
        .order_by("pk")
        .values_list("action", "before", "after")
    )
    assert [a for a, _b, _c in actions] == ["calibration_item.mark"] * 2 + [
        "calibration_item.unmark"
    ]
    assert actions[1][1]["reference"] == {"accuracy": 4, "completeness": 3}
    assert actions[1][2]["reference"] == {"accuracy": 5}
    assert not CalibrationItem.objects.exists()
    assert items_to_rate(built.study).filter(pk=item.pk).exists()
    assert not Assignment.objects.filter(item=item).exclude(status="withdrawn").exists()


def test_an_item_already_rated_as_ordinary_work_or_a_check_cannot_be_marked(built):
    started, checked = built.study.items.order_by("pk")[:2]
    a = Assignment.objects.filter(item=started).select_related("clinician").first()
    services.submit_assignment(assignment_id=a.pk, clinician=a.clinician, answers=FULL_ANSWERS)
    with pytest.raises(AnnotationError, match="already being rated as an ordinary item by 1"):
        _mark(built, started)
    services.mark_attention_check(
        study=built.study,
        item_id=checked.pk,
        expected={"accuracy": (4, 5)},
        note="",
        actor=built.coordinator,
    )
    with pytest.raises(AnnotationError, match="is an attention check"):
        _mark(built, checked)


def test_a_rater_resumes_at_calibration_and_ordinary_work_waits(client, built):
    first, second = _two_calibration_items(built)
    Item.objects.filter(pk__in=[first.pk, second.pk]).update(model_name="hidden-model-x")
    rater = built.clinicians[0]
    mine = _calibration_of(rater)
    client.force_login(rater)
    study = built.study
    resume = client.get(reverse("annotation:resume", args=[study.pk]))
    assert resume["Location"].endswith(f"/{mine[0].handle}/")
    ordinary = (
        Assignment.objects.filter(clinician=rater, item__calibration_item__isnull=True)
        .exclude(status="withdrawn")
        .first()
    )
    page = client.get(reverse("annotation:rate", args=[study.pk, ordinary.handle]))
    assert page.status_code == 302 and page["Location"].endswith(f"/studies/{study.pk}/rate/")
    token = create_token(user=rater, name="t")[1]
    api = client.get(f"/api/assignments/{ordinary.handle}/", HTTP_AUTHORIZATION=f"Token {token}")
    assert api.status_code == 403
    rating_page = client.get(reverse("annotation:rate", args=[study.pk, mine[0].handle]))
    html = rating_page.content.decode()
    assert rating_page.status_code == 200 and 'data-testid="calibration-notice"' in html
    assert "hidden-model-x" not in html  # blinded as usual


def test_the_reference_stays_hidden_until_every_calibration_item_is_rated(client, built):
    first, second = _two_calibration_items(built)
    rater = built.clinicians[0]
    a, b = _calibration_of(rater)
    client.force_login(rater)
    url = reverse("annotation:rate", args=[built.study.pk, a.handle])
    form = {"c-accuracy": "5", "c-completeness": "3", "c-clarity": "4"}
    after_first = client.post(url, form)
    assert after_first["Location"].endswith(f"/{b.handle}/")  # on to the next calibration item
    mine = client.get(reverse("annotation:my-calibration", args=[built.study.pk]))
    html = mine.content.decode()
    assert 'data-testid="calibration-progress"' in html
    assert 'data-testid="calibration-item"' not in html and "<th>Reference</th>" not in html
    assert selectors.rater_calibration(study=built.study, user=rater).items == []
    last = client.post(
        reverse("annotation:rate", args=[built.study.pk, b.handle]),
        {"c-accuracy": "2", "c-completeness": "4", "c-clarity": "4"},
    )
    assert last["Location"] == reverse("annotation:my-calibration", args=[built.study.pk])
    shown = client.get(last["Location"]).content.decode()
    # accuracy 5 against 4 (+1) and 2 against 2; completeness 3 against 3 and 4 against 5 (-1)
    assert shown.count('data-testid="calibration-item"') == 2
    assert "+1" in shown and "-1" in shown
    assert 'data-testid="open-queue"' in shown
    # the queue is open now: resume goes to ordinary work
    resume = client.get(reverse("annotation:resume", args=[built.study.pk]))
    handle = resume["Location"].rstrip("/").rsplit("/", 1)[-1]
    next_item = Assignment.objects.get(handle=handle).item_id
    assert next_item not in {first.pk, second.pk}
    assert not CalibrationItem.objects.filter(item_id=next_item).exists()


def test_completion_is_stored_once_with_the_agreement_from_first_values(built):
    _two_calibration_items(built)
    rater = built.clinicians[0]
    a, b = _calibration_of(rater)
    services.submit_assignment(assignment_id=a.pk, clinician=rater, answers=_answers(5, 3))
    assert services.advance_calibration(study=built.study, clinician=rater) == b.handle
    services.submit_assignment(assignment_id=b.pk, clinician=rater, answers=_answers(2, 4))
    assert services.advance_calibration(study=built.study, clinician=rater) is None
    completion = CalibrationCompletion.objects.get(clinician=rater)
    # pairs: accuracy (5, 4), completeness (3, 3), accuracy (2, 2), completeness (4, 5)
    assert completion.n_items == 2
    assert completion.summary["n"] == 4
    assert completion.summary["exact"] == pytest.approx(0.5)
    assert completion.summary["mean_abs_diff"] == pytest.approx(0.5)
    assert completion.summary["mean_diff"] == pytest.approx(0.0)
    assert AuditEvent.objects.filter(action="calibration.complete", actor=rater).count() == 1
    # a revision after seeing the reference changes neither the record nor the result
    services.submit_assignment(assignment_id=a.pk, clinician=rater, answers=_answers(4, 3))
    services.advance_calibration(study=built.study, clinician=rater)
    assert CalibrationCompletion.objects.filter(clinician=rater).count() == 1
    by_rater = {r.rater: r for r in selectors.calibration_results(study=built.study)}
    pseudonym = built.study.memberships.get(user=rater, role="clinician").pseudonym
    mine = by_rater[pseudonym]
    assert (mine.dealt, mine.submitted) == (2, 2) and mine.completed_at is not None
    assert mine.overall.exact == pytest.approx(0.5)  # first values: the revision is ignored
    assert mine.by_criterion["accuracy"].mean_diff == pytest.approx(0.5)
    assert mine.by_criterion["completeness"].mean_diff == pytest.approx(-0.5)
    others = [r for r in by_rater.values() if r.rater != pseudonym]
    assert all(r.submitted == 0 and r.overall.n == 0 for r in others) and len(others) == 2


def test_calibration_items_stay_out_of_the_score_table_and_the_watch(built):
    first, _second = _two_calibration_items(built)
    for a in Assignment.objects.filter(item=first).select_related("clinician"):
        services.submit_assignment(
            assignment_id=a.pk, clinician=a.clinician, answers=_answers(4, 3)
        )
    data = score_data(study=built.study)
    assert first.pk not in set(data.table["item"]) and first.pk not in set(data.items["item"])
    assert data.coverage["calibration_items_excluded"] == 2
    assert data.coverage["n_items"] == built.study.items.count() - 2
    assert first.pk not in set(watch_ratings(study_id=built.study.pk)["item"])


def test_a_rater_who_completed_is_not_sent_back_by_a_later_calibration_item(built):
    first, _second, later = built.study.items.order_by("pk")[:3]
    _mark(built, first)
    rater = built.clinicians[0]
    (a,) = _calibration_of(rater)
    services.submit_assignment(assignment_id=a.pk, clinician=rater, answers=FULL_ANSWERS)
    services.advance_calibration(study=built.study, clinician=rater)
    _mark(built, later)
    assert len(_calibration_of(rater)) == 1
    assert len(_calibration_of(built.clinicians[1])) == 2


def test_the_coordinator_page_marks_with_clear_errors_and_the_dashboard_reports(client, built):
    study = built.study
    item = study.items.order_by("pk").first()
    client.force_login(built.coordinator)
    url = reverse("annotation:calibration", args=[study.pk])
    bad = client.post(url, {"item": item.pk, "ref-accuracy": "9"})
    assert bad.status_code == 400
    assert "Accuracy: the reference 9 lies outside the scale 1-5" in bad.content.decode()
    done = client.post(url, {"item": item.pk, "ref-accuracy": "4", "note": "panel of two"})
    assert done.status_code == 302
    assert CalibrationItem.objects.get(item=item).reference == {"accuracy": 4}
    page = client.get(url).content.decode()
    assert 'data-testid="calibration-count">1<' in page and "Accuracy 4" in page
    rater = built.clinicians[0]
    (a,) = _calibration_of(rater)
    services.submit_assignment(assignment_id=a.pk, clinician=rater, answers=_answers(5))
    services.advance_calibration(study=study, clinician=rater)
    pseudonym = study.memberships.get(user=rater, role="clinician").pseudonym
    dashboard = client.get(reverse("annotation:study", args=[study.pk])).content.decode()
    assert f'data-testid="calibration-rater-{pseudonym}"' in dashboard
    unmark = client.post(url, {"action": "unmark", "item": item.pk})
    assert unmark.status_code == 302 and not CalibrationItem.objects.exists()


def test_the_coordinator_chooses_the_item_from_a_list_the_server_still_checks(client, built):
    """The item is a select of the study's items (case, model, benchmark; grouped by taxonomy),
    leaving out the ones the service would refuse; a search narrows it; an item posted from
    outside the list (another study's, one being rated) is still refused, by the service."""
    study = built.study
    rated, fresh = study.items.order_by("pk")[:2]
    rater = Assignment.objects.filter(item=rated).first()
    services.submit_assignment(
        assignment_id=rater.pk, clinician=rater.clinician, answers=FULL_ANSWERS
    )
    client.force_login(built.coordinator)
    url = reverse("annotation:calibration", args=[study.pk])
    page = client.get(url).content.decode()
    select = page[page.index('<select name="item"') :].split("</select>")[0]
    assert '<optgroup label="(no category) / (no subcategory)">' in select
    assert f'<option value="{fresh.pk}">{fresh.external_id} · {fresh.model_name} (#{fresh.pk})' in (
        select
    )
    assert f'value="{rated.pk}"' not in select  # being rated: the service would refuse it
    assert select.count("<option value=") == study.items.count()  # "" and all but one
    assert_search_narrows_and_link_preselects(client, url, fresh)

    other = make_study_with_members(n_items=1, name="Other").study.items.get()
    refused = client.post(url, {"item": other.pk, "ref-accuracy": "4"})
    assert refused.status_code == 400
    assert f"no item {other.pk} in this study" in refused.content.decode()
    refused = client.post(url, {"item": rated.pk, "ref-accuracy": "4"})
    assert refused.status_code == 400 and "already being rated" in refused.content.decode()
    missing = client.post(url, {"item": "", "ref-accuracy": "4"})
    assert (
        missing.status_code == 400 and "Choose the item from the list." in missing.content.decode()
    )
    assert not CalibrationItem.objects.exists()


def test_raters_and_researchers_cannot_reach_the_coordinator_page(client, built):
    _mark(built, built.study.items.first())
    url = reverse("annotation:calibration", args=[built.study.pk])
    for user in (built.clinicians[0], built.researcher):
        client.force_login(user)
        assert client.get(url).status_code == 403
        assert client.post(url, {"item": 1, "ref-accuracy": "1"}).status_code == 403
    client.force_login(built.coordinator)
    mine = client.get(reverse("annotation:my-calibration", args=[built.study.pk]))
    assert mine.status_code == 403


def test_the_api_submit_records_completion(client, built):
    item = built.study.items.order_by("pk").first()
    _mark(built, item)
    rater = built.clinicians[1]
    (a,) = _calibration_of(rater)
    token = create_token(user=rater, name="t")[1]
    answers = {"accuracy": {"value": 4}, "completeness": {"value": 3}, "clarity": {"value": 5}}
    response = client.post(
        f"/api/assignments/{a.handle}/submit/",
        data=json.dumps({"answers": answers, "time_spent_seconds": 5.0}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert response.status_code == 200
    assert CalibrationCompletion.objects.get(clinician=rater).summary["exact"] == 1.0
