"""The coverage of a report counts a judge call as failed by the jury's own list of failed
statuses, so a status added there (truncated) is never counted as a success here."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from agreement.coverage import coverage_of
from jury.models import JudgeCall


def test_every_failed_status_of_the_jury_counts_as_failed():
    statuses = [s.value for s in JudgeCall.Status]
    cov = coverage_of(
        table=pd.DataFrame(columns=["item", "criterion", "rater", "rater_kind", "value"]),
        items=pd.DataFrame(columns=["item", "external_id", "model"]),
        calls=pd.DataFrame({"judge": ["gpt"] * len(statuses), "status": statuses}),
        cannot_assess=Counter(),
        missing=0,
        invalid=Counter(),
        min_rater_items=2,
    )
    [gpt] = cov["judge_calls"]
    assert gpt["total"] == len(statuses)
    assert gpt["failed"] == len(statuses) - 2  # all but pending and ok
    assert gpt["by_status"]["truncated"] == 1
