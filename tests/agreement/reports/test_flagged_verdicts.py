"""Flagged judge verdicts (jury.verdict_flags) in the score table and in reports: counted per
judge in the coverage, included by default, and left out, jury included, on request."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from agreement import selectors, services
from agreement.errors import AgreementError
from agreement.models import ReportSnapshot
from jury.models import JudgeCall, JudgeScore
from tests.agreement.factories import build_study
from tests.agreement.reports.jobs import created_report
from tests.support.pdf import pdf_text

FLAG = [{"code": "obeys_planted_text", "message": "Planted text obeyed."}]
PARAMS = {"n_resamples": 30, "seed": 3}


@pytest.fixture
def flagged(db):
    """The study of the agreement tests with two flagged verdicts: gpt-judge's latest call
    on item 2 (its older run's scores stay unflagged) and claude-judge's imported verdict
    on item 3."""
    built = build_study(n_items=8, n_clinicians=3)
    gpt, claude = built.judges
    items = built.items
    latest = JudgeCall.objects.filter(judge=gpt, item=items[2], status="ok").order_by("pk").last()
    JudgeCall.objects.filter(pk=latest.pk).update(flags=FLAG)
    JudgeScore.objects.filter(judge=claude, item=items[3]).update(flags=FLAG)
    return built


def judge_rows(table, kind="judge"):
    rows = table.loc[table["rater_kind"] == kind]
    return {(r.item, r.criterion, r.rater): r.value for r in rows.itertuples()}


def test_flagged_verdicts_are_counted_and_kept_by_default(flagged):
    data = selectors.score_data(study=flagged.study)
    assert data.coverage["flagged_verdicts"] == {"claude-judge": 1, "gpt-judge": 1}
    assert data.coverage["flagged_verdicts_excluded"] is False
    scores = judge_rows(data.table)
    item2, item3 = flagged.items[2].pk, flagged.items[3].pk
    assert scores[(item2, "accuracy", "gpt-judge")] == 3.0  # run 2's score, flagged
    assert (item3, "accuracy", "claude-judge") in scores


def test_excluding_drops_the_flagged_rows_and_rebuilds_the_jury_without_them(flagged):
    kept = selectors.score_data(study=flagged.study)
    dropped = selectors.score_data(study=flagged.study, exclude_flagged=True)
    assert dropped.coverage["flagged_verdicts"] == kept.coverage["flagged_verdicts"]
    assert dropped.coverage["flagged_verdicts_excluded"] is True
    item2, item3 = flagged.items[2].pk, flagged.items[3].pk
    before, after = judge_rows(kept.table), judge_rows(dropped.table)
    gone = {k for k in before if k not in after}
    assert gone == {
        *((item2, c, "gpt-judge") for c in flagged.study.criteria.values_list("key", flat=True)),
        *((item3, c, "claude-judge") for c in flagged.study.criteria.values_list("key", flat=True)),
    }
    assert all(after[k] == before[k] for k in after)  # no older score stands in
    jury_before, jury_after = judge_rows(kept.table, "jury"), judge_rows(dropped.table, "jury")
    for c in flagged.study.criteria.values_list("key", flat=True):
        # gpt weighs 1, claude 3: the jury was their weighted mean, now the one judge left
        gpt2, claude2 = before[(item2, c, "gpt-judge")], before[(item2, c, "claude-judge")]
        assert jury_before[(item2, c, "jury")] == pytest.approx((gpt2 + 3 * claude2) / 4)
        assert jury_after[(item2, c, "jury")] == claude2
        assert jury_after[(item3, c, "jury")] == before[(item3, c, "gpt-judge")]
    untouched = {k for k in jury_before if k[0] not in (item2, item3)}
    assert all(jury_after[k] == jury_before[k] for k in untouched)


def csv_column(snapshot, name):
    return {row[name] for row in csv.DictReader(io.StringIO(services.export_csv(snapshot)))}


def test_a_report_states_the_default_and_the_exclusion(flagged, client):
    default = services.create_snapshot(study=flagged.study, actor=None, parameters=PARAMS)
    assert default.parameters["exclude_flagged"] is False
    assert default.method["exclude_flagged"] is False
    assert default.method["flagged_verdicts"].startswith("included (the default)")
    assert csv_column(default, "flagged_verdicts") == {"included"}
    excluded = services.create_snapshot(
        study=flagged.study, actor=None, parameters={**PARAMS, "exclude_flagged": True}
    )
    assert excluded.parameters["exclude_flagged"] is True
    assert excluded.method["flagged_verdicts"].startswith("excluded")
    assert excluded.input_hash != default.input_hash
    assert csv_column(excluded, "flagged_verdicts") == {"excluded"}
    assert services.export_json(excluded)["parameters"]["exclude_flagged"] is True
    assert excluded.results["coverage"]["flagged_verdicts_excluded"] is True
    # the recomputation keeps the option
    again = services.recompute_snapshot(snapshot=excluded, actor=None)
    assert again.parameters["exclude_flagged"] is True
    assert again.input_hash == excluded.input_hash

    client.force_login(flagged.members.researcher)
    url = reverse("agreement:report", args=[flagged.study.pk, default.pk])
    page = client.get(url).content.decode()
    assert "included (the default)" in page
    assert "claude-judge 1 item, gpt-judge 1 item" in page
    page = client.get(reverse("agreement:report", args=[flagged.study.pk, excluded.pk]))
    assert "excluded: judge scores from flagged verdicts" in page.content.decode()


def test_the_pdf_text_states_the_flagged_verdicts(flagged):
    snapshot = services.create_snapshot(
        study=flagged.study, actor=None, parameters={**PARAMS, "exclude_flagged": True}
    )
    text = pdf_text(services.export_pdf(snapshot))
    assert "Flagged judge verdicts excluded: judge scores from flagged verdicts are dropped" in text
    assert "excluded): claude-judge 1 item, gpt-judge 1 item." in text


def test_a_report_from_before_flags_says_every_verdict_was_in(flagged, client):
    snapshot = services.create_snapshot(study=flagged.study, actor=None, parameters=PARAMS)
    del snapshot.method["flagged_verdicts"]
    del snapshot.parameters["exclude_flagged"]
    del snapshot.results["coverage"]["flagged_verdicts"]
    snapshot.save()
    assert services.stated_method(snapshot)["flagged_verdicts"] == (
        "included: this report was computed before judge verdicts were flagged"
    )
    assert csv_column(snapshot, "flagged_verdicts") == {"included"}
    client.force_login(flagged.members.researcher)
    page = client.get(reverse("agreement:report", args=[flagged.study.pk, snapshot.pk]))
    text = page.content.decode()
    assert "Flagged judge verdicts: not checked" in text
    assert "this report was computed before judge verdicts were flagged" in text


def test_the_form_api_and_parameters_take_the_option(flagged, client, api_as):
    client.force_login(flagged.members.researcher)
    response = client.post(
        reverse("agreement:reports", args=[flagged.study.pk]),
        {
            "n_resamples": 30,
            "seed": 1,
            "confidence": 0.95,
            "ci_method": "bca",
            "values": "latest",
            "exclude_flagged": "on",
        },
    )
    assert response.status_code == 302
    assert ReportSnapshot.objects.get().parameters["exclude_flagged"] is True
    api = api_as(flagged.members.researcher)
    body = created_report(
        api,
        api.post(
            f"/api/studies/{flagged.study.pk}/agreement/reports/",
            {**PARAMS, "exclude_flagged": False},
            format="json",
        ),
    )
    assert body["parameters"]["exclude_flagged"] is False
    with pytest.raises(AgreementError) as exc:
        services.normalise_parameters({"exclude_flagged": "yes"})
    assert exc.value.as_dict() == {"exclude_flagged": ["must be true or false"]}


def test_the_command_takes_the_option(flagged):
    out = io.StringIO()
    args = ["--study", str(flagged.study.pk), "--resamples", "20", "--seed", "1"]
    call_command("agreement_report", *args, "--exclude-flagged", stdout=out, stderr=io.StringIO())
    data = json.loads(out.getvalue())
    assert data["parameters"]["exclude_flagged"] is True
    assert data["method"]["flagged_verdicts"].startswith("excluded")
