"""The agreement watch's statistics on constructed panels: a planted lenient (or careless)
clinician is flagged and honest ones are not, too few shared items flag no one, and a
clinician who turns lenient half way shows in the drift by batch."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agreement.stats.watch import WatchRule, batch_labels, panel_offsets, watch_summary

CRITERIA = ("accuracy", "completeness", "clarity")


def panel(
    *,
    n_items: int = 60,
    raters: int = 4,
    per_item: int = 3,
    bias: dict[int, float] | None = None,
    careless: tuple[int, ...] = (),
    late_bias: dict[int, float] | None = None,
    seed: int = 1,
) -> pd.DataFrame:
    """Ratings 1-5 of ``per_item`` of ``raters`` clinicians per item: the item's quality plus
    the rater's bias plus noise (a careless rater: noise only); ``late_bias`` applies from
    the second half of submission order on."""
    rng = np.random.default_rng(seed)
    quality = rng.uniform(1.6, 3.8, n_items)
    bias, late_bias = bias or {}, late_bias or {}
    rows = []
    order = 0
    for item in range(n_items):
        chosen = [(item + j) % raters for j in range(per_item)]
        for r in chosen:
            late = order >= n_items * per_item / 2
            for c in CRITERIA:
                base = rng.uniform(1, 5) if r in careless else quality[item]
                x = base + bias.get(r, 0.0) + (late_bias.get(r, 0.0) if late else 0.0)
                value = float(np.clip(np.rint(x + rng.normal(0, 0.45)), 1, 5))
                rows.append((item, c, f"C{r + 1}", value, order))
            order += 1
    return pd.DataFrame(rows, columns=["item", "criterion", "rater", "value", "submitted_at"])


def by_rater(summary: dict) -> dict[str, dict]:
    return {r["rater"]: r for r in summary["raters"]}


def test_a_planted_lenient_rater_is_flagged_and_the_honest_ones_are_not():
    summary = watch_summary(panel(bias={2: 1.2}), n_resamples=200, seed=0)
    raters = by_rater(summary)
    assert raters["C3"]["flags"] == ["lenient"]
    lenient = raters["C3"]["leniency"]["composite"]
    assert lenient["mean_offset"] > 0.5 and lenient["ci_low"] > 0
    for honest in ("C1", "C2", "C4"):
        assert raters[honest]["flags"] == [], raters[honest]
        assert raters[honest]["leniency"]["composite"]["mean_offset"] < 0
    # Each criterion shows the shift too.
    assert all(raters["C3"]["leniency"][c]["mean_offset"] > 0.5 for c in CRITERIA)


def test_a_severe_rater_is_flagged_severe():
    raters = by_rater(watch_summary(panel(bias={0: -1.2}), n_resamples=200))
    assert raters["C1"]["flags"] == ["severe"]
    assert [r for r, v in raters.items() if v["flags"]] == ["C1"]


def test_an_honest_panel_flags_no_one_and_reports_agreement_with_its_interval():
    summary = watch_summary(panel(), n_resamples=300, seed=0)
    assert all(not r["flags"] for r in summary["raters"])
    p = summary["panel"]
    assert p["n_items"] == 60 and p["n_clinicians"] == 4 and p["n_pairs"] == 6
    assert 0.6 < p["estimate"] < 1
    assert p["ci_low"] < p["estimate"] < p["ci_high"] <= 1


def test_a_careless_rater_is_flagged_for_low_agreement_not_leniency():
    raters = by_rater(watch_summary(panel(careless=(1,)), n_resamples=200))
    assert "low agreement" in raters["C2"]["flags"]
    assert raters["C2"]["agreement"]["mean_icc"] < raters["C2"]["agreement"]["others_mean_icc"]
    for honest in ("C1", "C3", "C4"):
        assert raters[honest]["flags"] == []


def test_nobody_is_flagged_before_sharing_enough_items():
    ratings = panel(n_items=8, bias={2: 1.5})
    raters = by_rater(watch_summary(ratings, rule=WatchRule(min_shared_items=10), n_resamples=100))
    assert raters["C3"]["leniency"]["composite"]["n_items"] == 6
    assert raters["C3"]["flags"] == []
    # The same ratings with a lower minimum flag the planted rater: the minimum decided.
    raters = by_rater(watch_summary(ratings, rule=WatchRule(min_shared_items=5), n_resamples=100))
    assert raters["C3"]["flags"] == ["lenient"]


def test_drift_shows_a_rater_turning_lenient_in_the_later_batches():
    summary = watch_summary(panel(n_items=80, late_bias={3: 1.3}), n_resamples=100)
    drift = summary["drift"]
    assert len(drift) == 4 and sum(b["n_items"] for b in drift) == 80
    early, late = drift[0]["leniency"]["C4"], drift[-1]["leniency"]["C4"]
    assert late - early > 0.7
    assert all(b["agreement"] is not None for b in drift)


def test_offsets_are_against_the_others_mean_on_the_panels_scale():
    ratings = pd.DataFrame(
        [
            (1, "a", "X", 1.0, 0),
            (1, "a", "Y", 3.0, 1),
            (2, "a", "X", 2.0, 2),
            (2, "a", "Y", 4.0, 3),
        ],
        columns=["item", "criterion", "rater", "value", "submitted_at"],
    )
    out = panel_offsets(ratings)
    sd = np.std([1, 3, 2, 4], ddof=1)
    y = out[(out["rater"] == "Y") & (out["criterion"] == "a")]["offset"]
    assert y.tolist() == pytest.approx([2 / sd, 2 / sd])


def test_one_rater_so_far_gives_no_agreement_and_says_why():
    ratings = panel(raters=1, per_item=1, n_items=5)
    summary = watch_summary(ratings, n_resamples=50)
    assert summary["panel"]["estimate"] is None
    assert "pair" in summary["panel"]["reason"]
    assert summary["raters"][0]["flags"] == []


def test_batches_are_iso_weeks_when_submissions_span_two_weeks():
    times = pd.Series(pd.to_datetime(["2026-01-05", "2026-01-06", "2026-01-14", "2026-01-21"]))
    assert batch_labels(times).tolist() == ["2026-W02", "2026-W02", "2026-W03", "2026-W04"]
    order = pd.Series(range(40))
    labels = batch_labels(order)
    assert labels.iloc[0] == "ratings 1-10" and labels.iloc[-1] == "ratings 31-40"


def test_a_batch_with_no_pair_sharing_enough_items_has_no_agreement():
    summary = watch_summary(panel(n_items=30), rule=WatchRule(min_shared_items=10), n_resamples=50)
    # 90 submissions in 4 batches of about 7 items each: no pair shares 10 items in one batch.
    assert [b["agreement"] for b in summary["drift"]] == [None] * 4
    assert [b["n_pairs"] for b in summary["drift"]] == [0] * 4
