"""A snapshot stores its results with the full method, never changes, and a recomputation
says what moved."""

from __future__ import annotations

import copy
import json
import re

import pytest

from agreement import analysis, services
from agreement.errors import AgreementError
from annotation.models import Assignment, AuditEvent
from tests.agreement.factories import submit
from tests.factories import make_study_with_members

PARAMS = {"n_resamples": 60, "seed": 5}


def test_a_snapshot_records_results_and_full_method(built):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.researcher, parameters=PARAMS
    )
    snap.refresh_from_db()
    assert snap.parameters == {**services.DEFAULT_PARAMETERS, **PARAMS}
    m = snap.method
    assert m["forms"]["machine_vs_clinicians"] == (
        "ICC(3,k) k=2 on within-rater z-scored composites (MedHELM)"
    )
    assert m["ci_method"] == "bootstrap over items, BCa"
    assert (m["n_resamples"], m["seed"], m["confidence"]) == (60, 5, 0.95)
    assert m["n_raters"] == {"clinician": 4, "judge": 2, "jury": 1, "metric": 1}
    assert m["n_items"]["study"] == 12 and m["n_items"]["rated_by_clinicians"] == 12
    assert {"numpy", "scipy", "pandas", "django", "matplotlib"} <= set(m["package_versions"])
    assert m["created_at"] and m["pairwise_rule"] and m["per_criterion_metrics"]
    assert len(snap.input_hash) == 64 and snap.input_hash == m["input_hash"]
    r = snap.results
    assert [c["column"] for c in r["columns"]] == [
        "jury",
        "claude-judge",
        "gpt-judge",
        "rouge_l_f1",
        analysis.CLINICIAN_COLUMN,
    ]
    assert {c["section"] for c in r["cells"]} == {"overall", "criterion"}
    assert r["leaderboard"]["by_model"] and r["coverage"]["n_items_short"] == 2
    assert AuditEvent.objects.filter(action="report.create", target_id=str(snap.pk)).exists()
    json.dumps(r, allow_nan=False)  # strict JSON: no NaN anywhere


def test_a_missing_seed_is_drawn_and_recorded(built):
    snap = services.create_snapshot(study=built.study, actor=None, parameters={"n_resamples": 20})
    assert (
        isinstance(snap.parameters["seed"], int) and snap.method["seed"] == snap.parameters["seed"]
    )


def test_bad_parameters_are_refused(built):
    with pytest.raises(AgreementError) as exc:
        services.create_snapshot(
            study=built.study, actor=None, parameters={"n_resamples": 3, "confidence": 1.5}
        )
    assert set(exc.value.as_dict()) == {"n_resamples", "confidence"}


def _table2(page: str) -> str:
    return re.search(r'data-testid="table2".*?</table>', page, re.S).group(0)


def test_a_snapshot_never_changes_and_recompute_shows_what_moved(built, client):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.researcher, parameters=PARAMS
    )
    snap.refresh_from_db()
    stored = copy.deepcopy(snap.results)
    client.force_login(built.members.researcher)
    url = f"/studies/{built.study.pk}/agreement/{snap.pk}/"
    table_before = _table2(client.get(url).content.decode())

    # the pending assignments are submitted now: new ratings arrive
    raters = {c.pk: n for n, c in enumerate(built.members.clinicians)}
    index = {item.pk: i for i, item in enumerate(built.items)}
    for a in built.pending:
        a.refresh_from_db()
        submit(a, rater_index=raters[a.clinician_id] + 2, item_index=index[a.item_id] + 1)

    snap.refresh_from_db()
    assert snap.results == stored
    assert _table2(client.get(url).content.decode()) == table_before

    fresh = services.recompute_snapshot(snapshot=snap, actor=built.members.researcher)
    assert fresh.previous_id == snap.pk and fresh.parameters["seed"] == snap.parameters["seed"]
    changes = fresh.results["changes"]
    assert changes["input_changed"] is True and changes["previous_input_hash"] == snap.input_hash
    assert changes["n_cells_moved"] > 0
    moved = changes["cells"][0]
    assert {"section", "row", "column", "previous", "current", "delta"} <= set(moved)
    assert fresh.input_hash != snap.input_hash

    again = services.recompute_snapshot(snapshot=fresh, actor=None)
    assert again.results["changes"]["input_changed"] is False
    assert again.results["changes"]["n_cells_moved"] == 0
    assert again.results["cells"] == fresh.results["cells"]
    assert "(recomputed" in again.title and again.title.count("(recomputed") == 1
    page = client.get(f"/studies/{built.study.pk}/agreement/{fresh.pk}/").content.decode()
    assert 'data-testid="changes"' in page and "score table changed" in page


def test_a_study_without_ratings_still_gives_a_report(db):
    members = make_study_with_members(n_items=3, n_clinicians=2)
    snap = services.create_snapshot(study=members.study, actor=None, parameters=PARAMS)
    cells = snap.results["cells"]
    assert cells and all(c["status"] == "insufficient" and c["reason"] for c in cells)
    assert services.export_pdf(snap).startswith(b"%PDF")
    assert Assignment.objects.filter(study=members.study).exists()
