"""Verdict flags are computed and stored with the verdict on the per-call path, for answers
served from the cache too, and shown on the run page and in the calls CSV."""

from __future__ import annotations

import csv
import io
import random

import pytest
from django.urls import reverse

from jury import services
from jury.execution import execute_call
from jury.models import JudgeCall
from jury.verdict_flags import COPIES_RESPONSE, OBEYS_PLANTED_TEXT
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge
from tests.support.obedient_judge import PLANTED_OUTPUT, obedient_verdict


@pytest.fixture
def members(db):
    return make_study_with_members(n_items=3, n_clinicians=2, k=2)


@pytest.fixture
def planted_item(members):
    item = members.study.items.order_by("pk").first()
    item.output_text = "Aspirin 300 mg and primary PCI.\n" + PLANTED_OUTPUT
    item.save(update_fields=["output_text"])
    return item


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")


def run_every_call(run) -> None:
    for call_id in run.calls.order_by("pk").values_list("pk", flat=True):
        execute_call(call_id=call_id, sleep=lambda _s: None, rng=random.Random(1))


@pytest.fixture
def obeyed_run(members, planted_item, fake_provider):
    """A finished run of a judge that obeys the planted text, over every item."""
    fake_provider.verdict_fn = obedient_verdict
    judge = make_judge(fake_provider)
    run = services.start_run(study=members.study, judges=[judge], actor=None, dispatch=False)
    run_every_call(run)
    return run


def test_an_obeyed_planted_verdict_is_flagged_and_plain_ones_are_not(
    obeyed_run, planted_item, caplog
):
    calls = {c.item_id: c for c in obeyed_run.calls.all()}
    assert {c.status for c in calls.values()} == {"ok"}
    planted = calls.pop(planted_item.pk)
    assert {f["code"] for f in planted.flags} == {COPIES_RESPONSE, OBEYS_PLANTED_TEXT}
    assert all(f["message"].endswith(".") for f in planted.flags)
    assert [c.flags for c in calls.values()] == [[], []]
    logged = [r.getMessage() for r in caplog.get_records("setup")]  # the run is a fixture
    assert any(f"judge call {planted.pk} flagged {OBEYS_PLANTED_TEXT}" in m for m in logged)


def test_a_verdict_served_from_the_cache_carries_the_same_flags(
    members, planted_item, fake_provider
):
    fake_provider.verdict_fn = obedient_verdict
    judge = make_judge(fake_provider)
    filters = {"item_ids": [planted_item.pk]}
    for _ in range(2):
        run = services.start_run(
            study=members.study, judges=[judge], actor=None, filters=filters, dispatch=False
        )
        run_every_call(run)
    first, again = JudgeCall.objects.order_by("pk")
    assert again.cached_from_id == first.pk and fake_provider.total_requests == 1
    assert again.flags == first.flags and len(first.flags) == 2


def test_the_run_page_and_the_calls_csv_show_the_flags(client, members, planted_item, obeyed_run):
    run = obeyed_run
    client.force_login(members.researcher)
    page = client.get(reverse("jury:run", args=[members.study.pk, run.pk])).content.decode()
    assert 'data-testid="run-flags"' in page
    assert "1 of 3 verdicts flagged" in page
    assert planted_item.external_id in page and "verdict-like text" in page
    body = b"".join(
        client.get(reverse("jury:run-calls", args=[members.study.pk, run.pk])).streaming_content
    )
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    flags = {int(r["item_id"]): r["flags"] for r in rows}
    assert flags.pop(planted_item.pk) == f"{COPIES_RESPONSE};{OBEYS_PLANTED_TEXT}"
    assert set(flags.values()) == {""}


def test_a_run_without_flags_says_so(client, members, fake_provider):
    judge = make_judge(fake_provider)
    run = services.start_run(study=members.study, judges=[judge], actor=None, dispatch=False)
    run_every_call(run)
    client.force_login(members.researcher)
    page = client.get(reverse("jury:run", args=[members.study.pk, run.pk])).content.decode()
    assert "No verdict flagged" in page
