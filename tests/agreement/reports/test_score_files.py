"""The long score table as tidy CSV and Parquet with a data dictionary: the table the report
was computed on (refused once the scores changed), its composites and z-scores the report's."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from agreement import analysis, selectors, services
from annotation.models import Rating

PARAMS = {"n_resamples": 40, "seed": 9}


@pytest.fixture
def snapshot(built):
    return services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)


def test_csv_and_parquet_hold_the_score_table_with_composites_and_z(snapshot, built, client):
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snapshot.pk}/scores/"
    response = client.get(base + "csv/")
    assert response["Content-Type"].startswith("text/csv")
    assert (
        f'agreement-{built.study.pk}-{snapshot.pk}-scores.csv"' in (response["Content-Disposition"])
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == list(analysis.TIDY_COLUMNS)
    table = selectors.score_data(study=built.study).table
    assert len(rows) == len(table)
    # every value of the score table, as the report read it
    key = ["item", "criterion", "rater"]
    got = pd.DataFrame(rows).astype({"item": int, "value": float}).set_index(key)["value"]
    expected = table.set_index(key)["value"].astype(float)
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False)
    # the Parquet file: the same rows, typed, each column described, the report's hash
    parquet = client.get(base + "parquet/")
    assert parquet["Content-Type"] == "application/vnd.apache.parquet"
    frame = pd.read_parquet(io.BytesIO(parquet.content))
    assert list(frame.columns) == list(analysis.TIDY_COLUMNS)
    assert frame["item"].dtype == "int64" and frame["composite_z"].dtype == "float64"
    from_csv = pd.read_csv(io.StringIO(response.content.decode()), keep_default_na=False)
    assert frame["value"].tolist() == pytest.approx(from_csv["value"].astype(float).tolist())
    assert frame["rater"].tolist() == from_csv["rater"].astype(str).tolist()
    schema = pq.read_schema(io.BytesIO(parquet.content))
    for name, (_kind, text) in analysis.TIDY_COLUMNS.items():
        assert schema.field(name).metadata[b"description"].decode() == text
    meta = json.loads(schema.metadata[b"medhelm_studio"])
    assert meta == {
        "report": snapshot.pk,
        "study": built.study.pk,
        "input_hash": snapshot.input_hash,
    }
    # composites: the mean over criteria; the jury's z-scores: the report's own (plot data)
    jury = frame.loc[frame["rater"] == "jury"]
    means = jury.groupby("item")["value"].mean()
    assert jury.groupby("item")["composite"].first().tolist() == pytest.approx(means.tolist())
    stored = {
        p["item"]: p["jury_z"]
        for p in snapshot.results["plot_data"]["items"]
        if p.get("jury_z") is not None
    }
    z = jury.groupby("item")["composite_z"].first()
    assert stored and {i: z[i] for i in stored} == pytest.approx(stored)
    # the data dictionary describes every column
    dictionary = client.get(base + "dictionary/").content.decode()
    for name, (kind, text) in analysis.TIDY_COLUMNS.items():
        assert f"| `{name}` | {kind} | {text} |" in dictionary


def test_changed_scores_refuse_the_download_with_the_reason(snapshot, built, client, api_as):
    rating = Rating.objects.filter(assignment__item__study=built.study, value__isnull=False)[0]
    rating.value = rating.value % 5 + 1
    rating.save(update_fields=["value"])
    client.force_login(built.members.researcher)
    response = client.get(f"/studies/{built.study.pk}/agreement/{snapshot.pk}/scores/csv/")
    assert response.status_code == 409
    assert "changed since report" in response.content.decode()
    assert "recompute the report" in response.content.decode()
    api = api_as(built.members.researcher)
    root = f"/api/studies/{built.study.pk}/agreement/reports/{snapshot.pk}/scores/"
    assert api.get(root + "parquet/").status_code == 409
    assert api.get(root + "xlsx/").status_code == 404
    assert api_as(built.members.clinicians[0]).get(root + "csv/").status_code == 403
