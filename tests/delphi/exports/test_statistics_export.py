"""statistics.csv and stability.csv against values computed here from the answers."""

from __future__ import annotations

import pytest

from delphi import services, stats
from tests.delphi.exports.scenarios import GROUPS, R1, R2, num, read_csv


@pytest.mark.django_db
def test_statistics_has_every_row_with_groups_withheld_and_the_quantile_method(scenario):
    rows = read_csv(scenario.study, "statistics.csv")
    # 7 + 4 items, each for the whole panel and two groups.
    assert len(rows) == (7 + 4) * 3
    assert {r["quantile_method"] for r in rows} == {stats.describe_quantile_method("linear")}
    groups = [r for r in rows if r["group"] != "all"]
    assert {r["group"] for r in groups} == set(GROUPS)
    assert {r["outcome"] for r in groups} == {"withheld"}  # 3 per group < 5
    assert {r["median"] for r in groups} == {""}
    coding = next(r for r in rows if r["item"] == "Coding" and r["group"] == "all")
    expected = stats.item_statistics(R1["Coding"], n_invited=6)
    assert num(coding["q1"]) == pytest.approx(expected.q1)
    assert num(coding["p70"]) == pytest.approx(expected.p70)
    assert coding["count_5"] == "2" and coding["count_9"] == "0"


@pytest.mark.django_db
def test_statistics_show_groups_of_five_or_more(large_group_study):
    built = large_group_study
    rows = read_csv(built.study, "statistics.csv")
    diagnosis = {r["group"]: r for r in rows if r["item"] == "Diagnosis"}
    assert set(diagnosis) == {"all", "nurse", "physician"}
    nurses = [2, 3, 2, 3, 2]  # panelists 0, 2, 4, 6, 8
    assert diagnosis["nurse"]["n_rated"] == "5"
    assert num(diagnosis["nurse"]["median"]) == stats.item_statistics(nurses, n_invited=5).median
    assert diagnosis["nurse"]["outcome"] == "consensus_out"
    assert diagnosis["physician"]["outcome"] == "consensus_in"
    assert diagnosis["all"]["outcome"] == "no_consensus"


@pytest.mark.django_db
def test_stability_pairs_the_same_item_version_in_consecutive_rounds(scenario):
    rows = {r["item"]: r for r in read_csv(scenario.study, "stability.csv")}
    # Billing was renamed (version 2) and Triage is new: neither is paired.
    assert set(rows) == {"Treatment", "Scheduling"}
    for name in ("Treatment", "Scheduling"):
        expected = stats.rating_stability(dict(enumerate(R1[name][:4])), dict(enumerate(R2[name])))
        row = rows[name]
        assert (row["round_from"], row["round_to"]) == ("1", "2")
        assert int(row["n_paired"]) == expected.n_paired == 4
        assert num(row["pct_unchanged"]) == pytest.approx(expected.pct_unchanged)
        assert num(row["mean_abs_change"]) == pytest.approx(expected.mean_abs_change)
        assert num(row["wilcoxon_p"]) == pytest.approx(expected.wilcoxon_p)
        assert row["wilcoxon_note"] == expected.wilcoxon_note
        if expected.weighted_kappa is None:
            assert row["weighted_kappa"] == ""
        else:
            assert num(row["weighted_kappa"]) == pytest.approx(expected.weighted_kappa)
    assert "Wilcoxon" in rows["Treatment"]["method"]


@pytest.mark.django_db
def test_stability_agrees_with_the_services_pairing(scenario):
    pairs = services.paired_ratings(earlier=scenario.r1, later=scenario.r2)
    rows = {r["item_identity"]: r for r in read_csv(scenario.study, "stability.csv")}
    assert set(rows) == set(pairs)
    for identity, (before, after) in pairs.items():
        assert int(rows[identity]["n_paired"]) == stats.rating_stability(before, after).n_paired
