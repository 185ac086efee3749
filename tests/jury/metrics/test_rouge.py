"""ROUGE-L: values checked against hand-computed LCS arithmetic and against rouge-score
itself, bit for bit, and the bit-parallel LCS against the dynamic-programming table."""

from __future__ import annotations

import random

import pytest

from jury import metrics
from tests.jury.metrics.samples import ROUGE

# rouge-score lowercases, keeps [a-z0-9] runs, Porter-stems tokens longer than 3 characters,
# then P = LCS / len(candidate), R = LCS / len(reference), F = 2PR / (P + R).


def test_rouge_identical_and_disjoint(rouge_ready):
    assert metrics.rouge_l_f1(["Start aspirin 81 mg daily."], ["Start aspirin 81 mg daily."]) == [
        1.0
    ]
    assert metrics.rouge_l_f1(["cough and fever"], ["rash on legs"]) == [0.0]
    # Case and punctuation are not tokens: "Fever!" and "fever" are the same one token.
    assert metrics.rouge_l_f1(["Fever!"], ["fever"]) == [1.0]


def test_rouge_lcs_is_a_subsequence_not_a_substring(rouge_ready):
    # candidate: patient has fever and cough            -> 5 tokens ("has" is too short to stem)
    # reference: patient reports high fever with dry cough -> 7 tokens (report, high, ...)
    # LCS = patient . fever . cough = 3, with gaps in the reference.
    # P = 3/5, R = 3/7, F = 2 * (9/35) / (3/5 + 3/7) = (18/35) / (36/35) = 1/2
    [f] = metrics.rouge_l_f1(
        ["patient has fever and cough"], ["patient reports high fever with dry cough"]
    )
    assert f == pytest.approx(0.5, abs=1e-12)


def test_rouge_stemming_makes_inflections_match(rouge_ready):
    # Stemmed: doctors -> doctor, treated -> treat, fevers -> fever; treats -> treat.
    # candidate [doctor, treat, fever] (3), reference [the, doctor, treat, fever] (4)
    # LCS = 3: P = 3/3 = 1, R = 3/4, F = 2 * 3/4 / (1 + 3/4) = 6/7
    # (Without stemming no token would match and F would be 0.)
    [f] = metrics.rouge_l_f1(["Doctors treated fevers"], ["the doctor treats fever"])
    assert f == pytest.approx(6 / 7, abs=1e-12)


def test_rouge_porter_does_not_join_treats_and_treatment(rouge_ready):
    # Porter: treats -> treat, but treatment stays treatment ("ment" is only stripped from a
    # longer stem), so they do not match.
    # candidate [aspirin, treat, pain] (3), reference [aspirin, treatment, for, pain] (4)
    # LCS = aspirin . pain = 2: P = 2/3, R = 2/4, F = 2 * (1/3) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7
    [f] = metrics.rouge_l_f1(["aspirin treats pain"], ["aspirin treatment for pain"])
    assert f == pytest.approx(4 / 7, abs=1e-12)


def test_rouge_order_matters_and_empty_is_zero(rouge_ready):
    # candidate [cough, then, fever], reference [fever, then, cough]: LCS = 1 (any one word)
    # P = R = 1/3, F = 1/3
    [f, empty] = metrics.rouge_l_f1(["cough then fever", ""], ["fever then cough", "fever"])
    assert f == pytest.approx(1 / 3, abs=1e-12)
    assert empty == 0.0


def test_rouge_pairs_must_match(rouge_ready):
    with pytest.raises(ValueError, match="pair up"):
        metrics.rouge_l_f1(["a", "b"], ["a"])
    with pytest.raises(TypeError):
        metrics.rouge_l_f1("a", "a")
    assert metrics.rouge_l_f1([], []) == []


def _lcs_by_table(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev, row = row, [0]
        for j, y in enumerate(b, start=1):
            row.append(prev[j - 1] + 1 if x == y else max(prev[j], row[j - 1]))
    return row[-1]


def test_lcs_length_equals_the_dynamic_programming_table():
    rng = random.Random(11)
    assert metrics.lcs_length([], ["a"]) == metrics.lcs_length(["a"], []) == 0
    assert metrics.lcs_length(list("abcbdab"), list("bdcaba")) == 4  # CLRS: "bcba"
    for _ in range(400):
        alphabet = "abcdefgh"[: rng.randint(1, 8)]
        a = [rng.choice(alphabet) for _ in range(rng.randint(0, 150))]
        b = [rng.choice(alphabet) for _ in range(rng.randint(0, 150))]
        assert metrics.lcs_length(a, b) == _lcs_by_table(a, b), (a, b)


def test_rouge_equals_rouge_scorer_exactly(rouge_ready):
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    rng = random.Random(5)
    words = [
        "The",
        "patient",
        "treats",
        "treated",
        "treatment",
        "fevers",
        "fever",
        "was",
        "is",
        "81",
        "mg",
        "daily,",
        "ACE-inhibitor",
        "café",
        "Überweisung",
        "running",
        "runs",
        "cough!",
        "(dyspnea)",
        "blood-pressure",
        "BP",
        "120/80",
        "mmHg",
        "follow-up",
    ]
    candidates, references = ["", "   ", "!!!", "fever"], ["fever", "fever", "fever", ""]
    for _ in range(300):
        candidates.append(" ".join(rng.choice(words) for _ in range(rng.randint(0, 400))))
        references.append(" ".join(rng.choice(words) for _ in range(rng.randint(0, 400))))
    expected = [
        scorer.score(ref, cand)["rougeL"].fmeasure
        for cand, ref in zip(candidates, references, strict=True)
    ]
    assert metrics.rouge_l_f1(candidates, references) == expected  # bit for bit


def test_rouge_scorer_name_and_params(rouge_ready):
    assert metrics.rouge_scorer_name() == ROUGE
    params = metrics.rouge_params()
    assert params["package_version"] == "0.1.2"
    assert params["use_stemmer"] is True
    assert params["rouge_type"] == "rougeL"
