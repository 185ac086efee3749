"""BERTScore from the real all-MiniLM-L6-v2 files, offline: equal to bert-score called
directly, loaded once per process, never given a hub name."""

from __future__ import annotations

import os

import pytest

from jury import metrics
from jury.errors import JuryError
from jury.providers.local_models import LocalModelMissing, minilm_model_dir
from tests.jury.metrics.samples import PARAPHRASE, REF, UNRELATED


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
    with pytest.raises(JuryError, match="out of range") as info:
        metrics.bertscore_f1(["a"], ["a"], num_layers=7)
    assert info.value.field == "layer"
