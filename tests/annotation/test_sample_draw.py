"""Recording a sample draw (annotation.services.sampling), assignment of only the drawn
items, the draw_sample command and the sampling page."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import selectors, services
from annotation.errors import AnnotationError
from annotation.models import Assignment, AuditEvent, Item, SampleDraw
from tests.factories import FULL_ANSWERS, TEST_PASSWORD
from tests.factories import SAMPLING_MODELS as MODELS
from tests.factories import make_sampling_study as _study

KEYS = ["category", "subcategory", "model"]


@pytest.mark.django_db
def test_draw_records_strata_seed_items_and_audit_and_pairs_models():
    study, coordinator, _ = _study()
    record = services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=11, total=9)
    assert record.strata_keys == ["category", "subcategory"]  # paired: model is within case
    assert [(s["label"], s["population"], s["drawn"]) for s in record.strata] == [
        ("Diagnosis / Differential", 12, 4),
        ("Diagnosis / Imaging", 6, 2),
        ("Notes / Discharge", 9, 3),
    ]
    drawn = Item.objects.filter(sample_draws=record)
    assert drawn.count() == 27
    by_case: dict[str, set[str]] = {}
    for ext, model in drawn.values_list("external_id", "model_name"):
        by_case.setdefault(ext, set()).add(model)
    assert len(by_case) == 9 and all(m == set(MODELS) for m in by_case.values())
    event = AuditEvent.objects.get(action="sample.draw")
    assert event.actor == coordinator and event.after["seed"] == 11
    assert event.after["items_drawn"] == 27
    assert record.summary["unpaired_cases"] == []
    # the model asked for is recorded as balanced by the pairing, not dropped without a word
    assert record.summary["model_by_pairing"] is True
    assert event.after["model_by_pairing"] is True
    assert "the 3 models are balanced by construction" in selectors.model_note(draw=record)


@pytest.mark.django_db
def test_a_draw_without_a_model_stratum_records_none():
    study, coordinator, _ = _study()
    record = services.draw_sample(
        study=study, actor=coordinator, keys=["category"], seed=11, total=9
    )
    assert record.summary["model_by_pairing"] is False
    assert selectors.model_note(draw=record) == ""
    assert selectors.sample_record(study=study)["model_by_pairing"] is False


@pytest.mark.django_db
def test_same_seed_same_items_and_assignment_deals_only_drawn_items():
    study, coordinator, _ = _study()
    first = services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=5, total=6)
    again = services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=5, total=6)
    ids = set(first.items.values_list("pk", flat=True))
    assert ids == set(again.items.values_list("pk", flat=True))
    services.assign_items(study=study, actor=coordinator, seed=1)
    dealt = set(Assignment.objects.filter(study=study).values_list("item_id", flat=True))
    assert dealt == ids
    assert Assignment.objects.filter(study=study).count() == len(ids) * 2
    # a new draw on an assigned study deals the new items (nothing was started yet)
    third = services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=6, total=6)
    dealt = set(Assignment.objects.filter(study=study).values_list("item_id", flat=True))
    assert dealt == set(third.items.values_list("pk", flat=True)) != ids


@pytest.mark.django_db
def test_a_missing_model_is_named_in_the_summary():
    study, coordinator, _ = _study(missing={"Imaging-03": "llama"})
    record = services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=2, total=27)
    assert record.summary["unpaired_cases"] == [
        {"stratum": "Diagnosis / Imaging", "case": "Imaging-03", "missing_models": ["llama"]}
    ]


@pytest.mark.django_db
def test_quota_above_stratum_size_is_refused_naming_it_and_nothing_is_recorded():
    study, coordinator, _ = _study()
    quotas = {"Diagnosis / Differential": 3, "Diagnosis / Imaging": 7}
    with pytest.raises(AnnotationError, match="'Diagnosis / Imaging' is more than its 6 units"):
        services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=1, quotas=quotas)
    assert not SampleDraw.objects.exists()


@pytest.mark.django_db
def test_draw_that_would_drop_rated_items_is_refused_and_the_old_draw_stays():
    study, coordinator, clinicians = _study()
    first = services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=3, total=6)
    services.assign_items(study=study, actor=coordinator, seed=1)
    a = Assignment.objects.filter(study=study, clinician=clinicians[0]).first()
    services.submit_assignment(assignment_id=a.pk, clinician=clinicians[0], answers=FULL_ANSWERS)
    rated = Item.objects.get(pk=a.item_id)
    with pytest.raises(
        AnnotationError, match=rf"drop \d+ items? on which clinicians .*{rated.external_id}"
    ):
        services.draw_sample(
            study=study, actor=coordinator, keys=KEYS, seed=3, quotas={"Notes / Discharge": 0}
        )
    assert selectors.current_draw(study=study) == first
    # the same draw again keeps the rated item: allowed, and the submitted work stays
    services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=3, total=6)
    assert Assignment.objects.get(pk=a.pk).status == Assignment.Status.SUBMITTED


@pytest.mark.django_db
def test_command_previews_then_records():
    study, _, _ = _study()
    out = io.StringIO()
    call_command("draw_sample", study=study.pk, total=3, seed=4, preview=True, stdout=out)
    assert "Diagnosis / Differential: 1 of 12 cases (3 of 36 items)" in out.getvalue()
    # the default strata name the model: the command says what the paired draw does with it
    assert "the 3 models are balanced by construction" in out.getvalue()
    assert not SampleDraw.objects.exists()
    out = io.StringIO()
    call_command("draw_sample", study=study.pk, quota=["Notes / Discharge = 2"], seed=4, stdout=out)
    assert "6 items to rate" in out.getvalue()
    assert SampleDraw.objects.get().rule == "quotas"
    with pytest.raises(CommandError, match="no stratum named 'Nope'"):
        call_command("draw_sample", study=study.pk, quota=["Nope=1"], stdout=io.StringIO())


@pytest.mark.django_db
def test_report_method_states_the_draw():
    from agreement.renderings.methods import methods_paragraph

    study, coordinator, _ = _study()
    services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=77, total=9)
    record = selectors.sample_record(study=study)
    text = methods_paragraph({"sample": record}, input_hash="h")
    assert "(27 of 81 items; draw" in text and "seed 77" in text
    assert "stratified by category, subcategory" in text
    assert "Diagnosis / Imaging 2/6" in text and "paired design" in text
    assert (
        "The model, asked for as a stratum, was not stratified on: the pairing balances it, "
        "each of the 3 models answering the same drawn cases."
    ) in text


@pytest.mark.django_db
def test_page_previews_then_confirms_and_shows_errors(client):
    study, coordinator, clinicians = _study()
    url = reverse("annotation:sample", kwargs={"study_id": study.pk})
    client.login(username=clinicians[0].username, password=TEST_PASSWORD)
    assert client.get(url).status_code == 403
    client.login(username=coordinator.username, password=TEST_PASSWORD)
    form = {
        "strata": ["category", "subcategory", "model"],
        "rule": "proportional",
        "total": "9",
        "seed": "",
        "paired": "on",
        "case_key": "external_id",
        "action": "preview",
    }
    page = client.post(url, form)
    assert page.status_code == 200 and not SampleDraw.objects.exists()
    seed = page.context["seed"]
    assert page.context["preview"].total == 9
    assert 'data-testid="preview-model-by-pairing"' in page.content.decode()
    confirm = client.post(url, {**form, "seed": str(seed), "paired": "True", "action": "confirm"})
    assert confirm.status_code == 302
    assert SampleDraw.objects.get().seed == seed
    # the page offers the draw in force again, to repeat or vary it
    again = client.get(url)
    assert again.context["form"].initial["seed"] == seed
    assert "model" in again.context["form"].initial["strata"]
    assert "the 3 models are balanced by construction" in again.content.decode()
    bad = client.post(url, {**form, "rule": "quotas", "quotas": "Notes / Discharge = 10"})
    assert bad.status_code == 400
    assert "more than its 9 units" in bad.content.decode()


@pytest.mark.django_db
def test_items_short_of_k_counts_only_the_drawn_items():
    study, coordinator, _ = _study()
    services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=8, total=3)
    services.assign_items(study=study, actor=coordinator, seed=1)
    total, _rows = selectors.items_short_of_k(study=study)
    assert total == 9  # 3 cases x 3 models, none rated yet; the 72 others are not dealt


@pytest.mark.django_db
def test_page_says_a_first_draw_is_not_dealt_and_offers_to_deal_it(client):
    """A first draw deals nothing (clinicians have no queue until Assign): the message and
    the page say so and offer the assignment; a draw over assignments says they were dealt
    again over the drawn items."""
    study, coordinator, clinicians = _study()
    url = reverse("annotation:sample", kwargs={"study_id": study.pk})
    assign_url = reverse("annotation:assign", kwargs={"study_id": study.pk})
    client.login(username=coordinator.username, password=TEST_PASSWORD)
    form = {
        "strata": ["category", "subcategory"],
        "rule": "proportional",
        "total": "3",
        "seed": "5",
        "paired": "on",
        "case_key": "external_id",
        "action": "confirm",
    }
    page = client.post(url, form, follow=True)
    text = page.content.decode()
    assert "Nothing is dealt to the clinicians yet" in text
    # no model stratum was asked: the form offers none again, and no note speaks of one
    assert page.context["form"].initial["strata"] == ["category", "subcategory"]
    assert "draw-model-by-pairing" not in text
    assert 'data-testid="draw-not-dealt"' in text and f'action="{assign_url}"' in text
    assert f"Deal the drawn items to the {len(clinicians)} clinicians" in text
    assert not Assignment.objects.filter(study=study).exists()

    client.post(assign_url)
    dealt = Assignment.objects.filter(study=study).count()
    assert dealt == 9 * study.ratings_per_item  # 3 cases x 3 models, k each
    page = client.get(url)
    assert "draw-not-dealt" not in page.content.decode()
    assert f"Dealt to the clinicians: {dealt} assignments, 0 submitted" in page.content.decode()

    again = client.post(url, {**form, "total": "4", "seed": "6"}, follow=True)
    redealt = Assignment.objects.filter(study=study).exclude(status="withdrawn").count()
    assert redealt == 12 * study.ratings_per_item
    assert f"unstarted work was dealt again over them ({redealt} assignments now)" in (
        again.content.decode()
    )


@pytest.mark.django_db
def test_dashboard_says_how_many_items_the_draw_deals(client):
    """The dashboard's summary counts every imported item; with a draw in force it also says
    how many are drawn for clinicians (the rest are not dealt), with the draw's seed."""
    study, coordinator, _ = _study()
    url = reverse("annotation:study", kwargs={"study_id": study.pk})
    client.login(username=coordinator.username, password=TEST_PASSWORD)
    assert 'data-testid="drawn"' not in client.get(url).content.decode()
    record = services.draw_sample(study=study, actor=coordinator, keys=KEYS, seed=8, total=3)
    text = client.get(url).content.decode()
    n_items = Item.objects.filter(study=study).count()
    assert f"{n_items} items · " in text
    sample_url = reverse("annotation:sample", kwargs={"study_id": study.pk})
    assert (
        f'<a href="{sample_url}">{record.items.count()} drawn for clinicians</a> '
        f"(stratified sample, seed 8)"
    ) in text
