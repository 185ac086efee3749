"""MedHELM agreement method on a hand-computed case and on MedHELM-shaped simulated data.

Tolerances: hand arithmetic 1e-12; the vectorised resample path against the direct path on
an explicitly expanded table 1e-10.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agreement.stats import (
    ClinicianPairwiseStatistic,
    MachineVsClinicianStatistic,
    bootstrap_clinician_pairwise,
    bootstrap_machine_minus_clinicians,
    bootstrap_machine_vs_clinicians,
    clinician_pairwise,
    composite_scores,
    machine_vs_clinicians,
    zscore_within_rater,
)

from .factories import COLS, hand_case, medhelm_like_scores


def test_hand_case_composites_and_zscores() -> None:
    comp = composite_scores(hand_case())
    got = comp.set_index(["rater", "item"])["composite"]
    assert got[("A", "i1")] == 2 and got[("B", "i3")] == 3 and got[("J", "i3")] == 30
    assert comp.set_index(["rater", "item"])["n_criteria"][("J", "i1")] == 3
    z = zscore_within_rater(comp.loc[comp["rater_kind"] == "clinician"])
    zz = z.set_index(["rater", "item"])["z"]
    np.testing.assert_allclose(zz.loc["A"].to_numpy(), [-1, 0, 1], atol=1e-12)
    np.testing.assert_allclose(zz.loc["B"].to_numpy(), [-1, 0, 1], atol=1e-12)  # sd 2, ddof 1
    np.testing.assert_allclose(zz.loc["C"].to_numpy(), [0, 1, -1], atol=1e-12)


def test_hand_case_machine_vs_clinicians() -> None:
    # Study items i1..i4 (rated by a clinician); J scored i1..i3 of them.
    # Clinician mean z: i1 (A -1, C 0) = -1/2; i2 (A 0, B -1) = -1/2; i3 (A 1, B 0, C 1) = 2/3.
    # J z over i1..i3 (10, 20, 30): -1, 0, 1.  Items used: i1, i2, i3.
    # With u = clinician z, v = J z: a = u + v = (-3/2, -1/2, 5/3), d = u - v = (1/2, -1/2, -1/3)
    # mean a = -1/9 -> SS(a) = (25^2 + 7^2 + 32^2) / 18^2 = 1698 / 324
    # mean d = -1/9 -> SS(d) = (11^2 + 7^2 + 4^2) / 18^2 = 186 / 324
    # ICC(3,2) = (MSR - MSE) / MSR = 1 - SS(d) / SS(a) = 1 - 186/1698 = 252/283 = 0.890459...
    r = machine_vs_clinicians(hand_case(), machine="J")
    assert r.icc == pytest.approx(252 / 283, abs=1e-12)
    assert r.n_items == 3 and r.n_clinicians == 3
    np.testing.assert_allclose(r.table["clinician_z"], [-0.5, -0.5, 2 / 3], atol=1e-12)
    np.testing.assert_allclose(r.table["machine_z"], [-1, 0, 1], atol=1e-12)
    assert r.icc_table.get("ICC3k").icc == r.icc


def test_hand_case_clinician_pairs() -> None:
    # A-B share i2, i3: u = (0, 1), v = (-1, 0): a = (-1, 1), d = (1, 1) -> SS(d) = 0 -> ICC 1
    # A-C share i1, i3: u = (-1, 1), v = (0, 1): a = (-1, 2), d = (-1, 0)
    #   SS(a) = 4.5, SS(d) = 0.5 -> ICC = 1 - 0.5/4.5 = 8/9. Via mean squares on [[-1,0],[1,1]]:
    #   MSR = 2.25, MSE = (SST 2.75 - SSR 2.25 - SSC 0.25) / 1 = 0.25 -> (2.25-.25)/2.25 = 8/9
    # B-C share i3, i4: u = (0, 1), v = (1, -1): a = (1, 0), d = (-1, 2)
    #   SS(a) = 0.5, SS(d) = 4.5 -> ICC = 1 - 9 = -8 (ICC(3,2) on 2 items is very unstable)
    # plain mean over the 3 pairs = (1 + 8/9 - 8) / 3 = -55/27
    r = clinician_pairwise(hand_case())
    icc_by_pair = {(a, b): v for a, b, _, v in r.pairs.itertuples(index=False)}
    assert icc_by_pair[("A", "B")] == pytest.approx(1.0, abs=1e-12)
    assert icc_by_pair[("A", "C")] == pytest.approx(8 / 9, abs=1e-12)
    assert icc_by_pair[("B", "C")] == pytest.approx(-8.0, abs=1e-12)
    assert r.mean_icc == pytest.approx(-55 / 27, abs=1e-12)
    assert r.n_pairs == 3 and r.pairs["n_shared"].tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="no pair"):
        clinician_pairwise(hand_case(), min_shared_items=3)  # no pair shares 3 items
    with pytest.raises(ValueError, match="no pair"):
        clinician_pairwise(hand_case().query("item != 'i3'"), min_shared_items=2)


def test_statistics_at_unit_weights_equal_direct_results() -> None:
    scores = medhelm_like_scores(np.random.default_rng(0))
    ones = np.ones((1, 56))
    for restandardize in (True, False):
        m = MachineVsClinicianStatistic(scores, machine="jury", restandardize=restandardize)
        p = ClinicianPairwiseStatistic(scores, restandardize=restandardize)
        assert m.from_weights(ones)[0] == pytest.approx(
            machine_vs_clinicians(scores, machine="jury").icc, rel=1e-10
        )
        assert p.from_weights(ones)[0] == pytest.approx(
            clinician_pairwise(scores).mean_icc, rel=1e-10
        )


def _expanded(scores: pd.DataFrame, counts: np.ndarray, items: pd.Index) -> pd.DataFrame:
    """The table a resample stands for: item i repeated counts[i] times as distinct copies."""
    parts = []
    for item, c in zip(items, counts, strict=True):
        rows = scores.loc[scores["item"] == item]
        for j in range(int(c)):
            parts.append(rows.assign(item=f"{item}#{j}"))
    return pd.concat(parts, ignore_index=True)


def test_resample_path_equals_direct_method_on_the_expanded_table() -> None:
    # With restandardize=True, one resample = the whole method re-run on the resampled table.
    scores = medhelm_like_scores(np.random.default_rng(1), n_clinicians=5)
    m = MachineVsClinicianStatistic(scores, machine="jury")
    p = ClinicianPairwiseStatistic(scores)
    clin = composite_scores(scores).query("rater_kind == 'clinician'")
    items_of = clin.groupby("rater")["item"].apply(set)
    pairs = list(clinician_pairwise(scores).pairs[["rater_a", "rater_b"]].itertuples(index=False))
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(6):
        counts = np.bincount(rng.integers(0, m.n_items, m.n_items), minlength=m.n_items)
        big = _expanded(scores, counts, m.items)
        direct_m = machine_vs_clinicians(big, machine="jury").icc
        assert m.from_weights(counts[None, :].astype(float))[0] == pytest.approx(
            direct_m, rel=1e-10
        )
        # Pairs: the direct path treats copies as distinct items, so a pair whose only shared
        # item was drawn twice would count there; skip those rare resamples.
        direct_p = clinician_pairwise(big)
        drawn = set(m.items[counts > 0])
        present = sum(len(items_of[a] & items_of[b] & drawn) >= 2 for a, b in pairs)
        if direct_p.n_pairs == present:
            assert p.from_weights(counts[None, :].astype(float))[0] == pytest.approx(
                direct_p.mean_icc, rel=1e-10
            )
            checked += 1
    assert checked >= 3


def test_bootstraps_are_reproducible_and_the_difference_is_paired() -> None:
    scores = medhelm_like_scores(np.random.default_rng(2), n_clinicians=6)
    a = bootstrap_machine_vs_clinicians(scores, machine="jury", n_resamples=200, seed=7)
    b = bootstrap_machine_vs_clinicians(scores, machine="jury", n_resamples=200, seed=7)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    c = bootstrap_clinician_pairwise(scores, n_resamples=200, seed=7)
    d = bootstrap_machine_minus_clinicians(scores, machine="jury", n_resamples=200, seed=7)
    np.testing.assert_allclose(
        d.distribution, a.distribution - c.distribution, rtol=1e-12, equal_nan=True
    )
    assert d.estimate == pytest.approx(a.estimate - c.estimate, rel=1e-12)
    assert a.percentile_ci[0] < a.estimate < a.percentile_ci[1]
    assert a.n_valid == 200 and c.n_valid >= 195
    fixed = bootstrap_machine_vs_clinicians(
        scores, machine="jury", n_resamples=200, seed=7, restandardize=False
    )
    assert fixed.estimate == a.estimate
    assert not np.allclose(fixed.distribution, a.distribution)


def test_metric_machine_on_another_scale() -> None:
    scores = medhelm_like_scores(np.random.default_rng(4))
    r = machine_vs_clinicians(scores, machine="rougeL")
    assert -1 < r.icc < 1 and r.n_items == 56


def test_input_errors() -> None:
    scores = hand_case()
    with pytest.raises(ValueError, match="rater_kind"):
        composite_scores(scores.assign(rater_kind="robot"))
    two_kinds = scores.copy()
    two_kinds.loc[0, "rater_kind"] = "judge"
    with pytest.raises(ValueError, match="more than one rater_kind"):
        composite_scores(two_kinds)
    with pytest.raises(ValueError, match="duplicate"):
        composite_scores(pd.concat([scores, scores.iloc[[0]]]))
    with pytest.raises(ValueError, match="missing column"):
        composite_scores(scores.drop(columns="criterion"))
    with pytest.raises(ValueError, match="not a machine kind"):
        machine_vs_clinicians(scores, machine="A")
    with pytest.raises(ValueError, match="no scores"):
        machine_vs_clinicians(scores, machine="nobody")


def test_degenerate_rater_raises_or_is_dropped() -> None:
    scores = pd.concat(
        [
            hand_case(),
            pd.DataFrame(
                [("i1", "acc", "D", "clinician", 4), ("i2", "acc", "D", "clinician", 4)],
                columns=COLS,
            ),
        ]
    )  # D gives the same composite to both items: no SD
    with pytest.raises(ValueError, match="'D'"):
        clinician_pairwise(scores)
    r = clinician_pairwise(scores, on_degenerate="drop")
    assert r.dropped_raters == ("D",)
    assert r.mean_icc == pytest.approx(-55 / 27, abs=1e-12)  # as without D
    assert machine_vs_clinicians(scores, machine="J", on_degenerate="drop").icc == pytest.approx(
        252 / 283, abs=1e-12
    )
    comp = composite_scores(scores)
    z = zscore_within_rater(comp, on_degenerate="drop")
    assert "D" not in set(z["rater"]) and z.attrs["dropped_raters"] == ("D",)
