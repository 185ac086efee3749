"""A report leaves attention-check items out of every statistic and says how many, in the
method section of the page and in the methods paragraph."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agreement import services
from annotation import services as annotation_services
from tests.agreement.factories import build_study

PARAMS = {"n_resamples": 30, "seed": 3}


@pytest.fixture
def with_check(db):
    built = build_study(n_items=8, n_clinicians=3)
    annotation_services.mark_attention_check(
        study=built.study,
        item_id=built.items[0].pk,
        expected={"accuracy": (4, 5)},
        note="",
        actor=built.members.coordinator,
    )
    return built


def test_the_report_excludes_the_check_and_says_so(with_check, client):
    snapshot = services.create_snapshot(study=with_check.study, actor=None, parameters=PARAMS)
    assert snapshot.method["attention_checks_excluded"] == 1
    assert snapshot.method["n_items"]["study"] == 7
    assert snapshot.results["coverage"]["attention_checks_excluded"] == 1
    text = services.methods_text(snapshot)
    assert "1 attention-check item (planted" in text and "was excluded" in text
    client.force_login(with_check.members.researcher)
    page = client.get(reverse("agreement:report", args=[with_check.study.pk, snapshot.pk]))
    assert "1 attention-check item (planted, with an obvious answer) excluded" in (
        page.content.decode()
    )


def test_a_report_from_before_checks_says_nothing_was_recorded(with_check, client):
    snapshot = services.create_snapshot(study=with_check.study, actor=None, parameters=PARAMS)
    del snapshot.method["attention_checks_excluded"]
    snapshot.save()
    assert "attention-check" not in services.methods_text(snapshot)
