"""A stored report's jury compositions: the judges' weights come from the judges, the
leave-one-judge-out juries are in the CSV, the JSON and the page."""

from __future__ import annotations

import csv
import io

from django.urls import reverse

from agreement import services
from jury.models import Judge, JudgeScore

PARAMS = {"n_resamples": 40, "seed": 3}


def test_three_judges_give_leave_one_out_juries_everywhere(built, client):
    third = Judge.objects.create(name="llama-judge", provider="imported", model_id="l", weight=2.0)
    for i, item in enumerate(built.items):
        for criterion in built.study.criteria.all():
            JudgeScore.objects.create(
                item=item, judge=third, criterion=criterion, value=float(1 + (i * 7) % 5)
            )
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    jury = snap.results["jury"]
    assert jury["weights"] == {"claude-judge": 3.0, "gpt-judge": 1.0, "llama-judge": 2.0}
    loo = {e["composition"] for e in jury["compositions"] if e["kind"] == "leave_one_out"}
    assert loo == {f"jury without {j}" for j in jury["weights"]}
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snap.pk}/report"
    rows = list(csv.DictReader(io.StringIO(client.get(base + ".csv").content.decode())))
    assert {r["column"] for r in rows if r["section"] == "jury_composition"} == loo
    assert client.get(base + ".json").json()["results"]["jury"] == jury
    page = client.get(reverse("agreement:report", args=[built.study.pk, snap.pk])).content
    assert b'data-testid="jury-composition"' in page
    assert b"jury without llama-judge" in page


def test_a_single_judge_report_names_the_jury_as_that_judge(built, client):
    JudgeScore.objects.filter(judge__name="gpt-judge").delete()
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    columns = [c["column"] for c in snap.results["columns"]]
    assert "claude-judge" not in columns
    client.force_login(built.members.researcher)
    page = client.get(reverse("agreement:report", args=[built.study.pk, snap.pk])).content
    assert b"= judge claude-judge alone (the only judge)" in page
