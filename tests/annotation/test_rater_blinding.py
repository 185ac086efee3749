"""Nothing a rater receives lets them tell which model wrote an output (issue 14, point 3b).

Items arrive one model at a time (a HELM run holds one model), so anything that follows
import order (an item id, an assignment id, a creation time) lets a clinician group outputs
by model without ever seeing a name. The study here is filled the way that leaks most:
every output of model A is imported and dealt, then every output of model B. Logged in as
one of its clinicians, the test follows every link and calls every API a rater can, the way
the rating page does, and checks that

1. no item or assignment id, model name, benchmark, external id or file name is in any of
   it, and
2. nothing that differs from one assignment to the next (its address, its place in the
   queue, a timestamp, any other field) sorts the outputs by model better than chance, and
3. nothing tells a planted attention check (issue 19) from an ordinary item: no word of it
   (its name, the coordinator's note) in any response, and nothing that varies between
   assignments sorts the checks from the others better than chance.

Which model wrote a page's output is looked up by that output's text, which is unique.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from rest_framework.test import APIClient

from annotation import imports, services
from annotation.models import Assignment, Item, StudyMembership
from tests.factories import MEDHELM_CRITERIA, UserFactory
from tests.support.ids import start_ids_at

MODELS = ("alphaquill-med-70b", "betazorn-clin-8b")
BENCHMARK = {MODELS[0]: "blindbench-north", MODELS[1]: "blindbench-south"}
FILE_NAME = {model: f"helm-run-{model}.jsonl" for model in MODELS}
# A quarter of the outputs are planted attention checks, drawn at random over both models.
N_CHECKS = 20
CHECK_NOTE = "planted-zq7: the output repeats the reference"
CHECK, ORDINARY = "check", "ordinary"
N_CASES = 40  # x 2 models, k = 2 over 2 clinicians: every clinician rates all 80
# Far above every number a rater's page shows (places, counts, scale points, years), so an
# id found in a response is an id.
FIRST_ITEM_ID = 9_100_000
FIRST_ASSIGNMENT_ID = 9_300_000
# How far a chance ordering may stray from 0.5 in standard errors: two-sided p < 1e-4 for a
# feature with no relation to the model (handles are random, so a tighter bound would flake).
Z_BOUND = 4.0
# Fields holding what the rater is there to read or what they typed: their order is the
# content's, not the study's bookkeeping.
CONTENT_FIELDS = {
    "input_text",
    "context_text",
    "output_text",
    "reference_text",
    "area",
    "taxonomy_node",
    "answers",
    "flag_reason",
}
ANSWERS = {"answers": {c["key"]: {"value": 3} for c in MEDHELM_CRITERIA}}


def _model_file(model: str, rng: random.Random) -> tuple[bytes, dict[str, str]]:
    """One model's outputs for every case, as a JSONL upload; and output text -> model."""
    lines, outputs = [], {}
    for case in range(N_CASES):
        output = f"Case {case} answer: check the ECG, then {rng.randrange(10**6):06d} units."
        outputs[output] = model
        lines.append(
            json.dumps(
                {
                    "external_id": f"blindcase-{case:03d}",
                    "model": model,
                    "benchmark": BENCHMARK[model],
                    "input": f"Case {case}: a patient with chest pain. What next?",
                    "output": output,
                    "reference": "An ECG within ten minutes.",
                }
            )
        )
    return "\n".join(lines).encode(), outputs


@dataclass
class ImportedStudy:
    study: Any
    clinician: Any
    model_of_output: dict[str, str]
    item_ids: set[int]
    assignment_ids: set[int]
    check_outputs: set[str]


@pytest.fixture
def imported(db, settings, tmp_path) -> ImportedStudy:
    settings.MEDIA_ROOT = tmp_path / "media"
    start_ids_at(Item, FIRST_ITEM_ID)
    start_ids_at(Assignment, FIRST_ASSIGNMENT_ID)
    coordinator = UserFactory()
    study = services.create_study(
        name="Blinding study", created_by=coordinator, criteria=MEDHELM_CRITERIA
    )
    clinicians = [UserFactory(), UserFactory()]
    for user in clinicians:
        services.add_member(
            study=study, user=user, role=StudyMembership.Role.CLINICIAN, actor=coordinator
        )
    rng = random.Random(3)
    model_of_output: dict[str, str] = {}
    for model in MODELS:  # one file per model, dealt after each import as a coordinator would
        data, outputs = _model_file(model, rng)
        model_of_output.update(outputs)
        job = imports.start_import(
            study=study,
            uploaded_name=FILE_NAME[model],
            content=data,
            file_format="jsonl",
            actor=coordinator,
        )
        assert job.status == "succeeded", job.errors
        services.assign_items(study=study, actor=coordinator, seed=5)
    ids = dict(Item.objects.filter(study=study).values_list("pk", "model_name"))
    checks = random.Random(11).sample(sorted(ids), N_CHECKS)
    for item_id in checks:  # marked after dealing, as a coordinator may
        services.mark_attention_check(
            study=study,
            item_id=item_id,
            expected={"accuracy": (4, 5)},
            note=CHECK_NOTE,
            actor=coordinator,
        )
    # The premise: ids follow import order, so an id alone would tell the models apart.
    assert max(pk for pk, m in ids.items() if m == MODELS[0]) < min(
        pk for pk, m in ids.items() if m == MODELS[1]
    )
    return ImportedStudy(
        study=study,
        clinician=clinicians[0],
        model_of_output=model_of_output,
        item_ids=set(ids),
        assignment_ids=set(Assignment.objects.filter(study=study).values_list("pk", flat=True)),
        check_outputs=set(Item.objects.filter(pk__in=checks).values_list("output_text", flat=True)),
    )


class _Page(HTMLParser):
    """The links of a page, the attributes of its rating form, and its title."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.links: list[str] = []
        self.form: dict[str, str] = {}
        self.title = ""
        self._in_title = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        if tag == "form" and values.get("id") == "rating-form":
            self.form = values
        self._in_title = tag == "title"

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False


@dataclass
class Received:
    """Everything the rater's client received, and per assignment what varies with it."""

    texts: list[tuple[str, str]] = field(default_factory=list)  # (what, text)
    features: dict[str, list[Any]] = field(default_factory=dict)  # name -> value per assignment
    models: list[str] = field(default_factory=list)  # the model of each assignment, in order
    kinds: list[str] = field(default_factory=list)  # CHECK or ORDINARY, per assignment

    def keep(self, what: str, response) -> Any:
        assert response.status_code < 400, (what, response.status_code, response.content[:300])
        self.texts.append((what, response.content.decode()))
        for header in ("Location", "Content-Disposition", "Link"):
            if response.has_header(header):
                self.texts.append((f"{what} {header}", response[header]))
        if response.get("Content-Type", "").startswith("application/json"):
            return response.json()
        return response

    def feature(self, name: str, index: int, value: Any) -> None:
        self.features.setdefault(name, [None] * len(self.models))[index] = value


def _leaves(data: Any, prefix: str = "") -> Iterable[tuple[str, Any]]:
    """The scalar values of a JSON document by path, leaving out content fields."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            if key not in CONTENT_FIELDS:
                yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, f"{prefix}[{i}]")
    else:
        yield prefix, data


def _fetch_everything(client, api: APIClient, s: ImportedStudy) -> Received:
    """Walk the study as its clinician: home, queue, every rating page and every API call
    the page makes (read, draft, flag, unflag, submit by API or by the page's form)."""
    got = Received()
    sid = s.study.pk
    got.keep("home", client.get("/"))
    got.keep("resume", client.get(f"/studies/{sid}/rate/"))
    for path in ("/api/studies/", f"/api/studies/{sid}/", f"/api/studies/{sid}/criteria/"):
        got.keep(path, api.get(path))
    queue_page = got.keep("queue page", client.get(f"/studies/{sid}/queue/"))
    rate_prefix = f"/studies/{sid}/rate/"
    pages = [u for u in _Page(queue_page.content.decode()).links if u.startswith(rate_prefix)]
    pages = [u for u in pages if u != rate_prefix]
    queue_api = got.keep("queue API", api.get(f"/api/studies/{sid}/queue/"))
    assert len(pages) == len(queue_api) == 2 * N_CASES  # k = 2 of 2: the rater has them all

    htmls = [
        got.keep(f"rating page {i}", client.get(url)).content.decode()
        for i, url in enumerate(pages)
    ]
    for html in htmls:
        output = next(o for o in s.model_of_output if o in html)
        got.models.append(s.model_of_output[output])
        got.kinds.append(CHECK if output in s.check_outputs else ORDINARY)
    for index, (url, html) in enumerate(zip(pages, htmls, strict=True)):
        got.feature("place in the queue page", index, index)
        got.feature("rating page address", index, url)
        parsed = _Page(html)
        for name, value in parsed.form.items():
            got.feature(f"rating page form {name}", index, value)
        got.feature("rating page title", index, parsed.title)
        for path, value in _leaves(queue_api[index]):
            got.feature(f"queue API {path}", index, value)

        base = parsed.form["data-draft-url"].removesuffix("draft/")
        calls = [
            ("read", api.get(base)),
            ("draft", api.put(f"{base}draft/", {"answers": {"accuracy": {"value": 2}}}, "json")),
            (
                "flag",
                api.post(parsed.form["data-flag-url"], {"flagged": True, "reason": "r"}, "json"),
            ),
            ("unflag", api.post(parsed.form["data-flag-url"], {"flagged": False}, "json")),
        ]
        if index % 2:
            calls.append(("submit", api.post(f"{base}submit/", ANSWERS, "json")))
        else:  # the page's own form, which answers with a redirect to the next item
            form = {f"c-{c['key']}": "4" for c in MEDHELM_CRITERIA} | {"time_spent": "9"}
            got.keep(f"page submit {index}", client.post(url, form))
        for name, response in calls:
            body = got.keep(f"{name} API {index}", response)
            for path, value in _leaves(body):
                got.feature(f"{name} API {path}", index, value)

    got.keep("queue page after", client.get(f"/studies/{sid}/queue/"))
    for index, entry in enumerate(
        got.keep("queue API after", api.get(f"/api/studies/{sid}/queue/"))
    ):
        for path, value in _leaves(entry):
            got.feature(f"queue API after {path}", index, value)
    return got


@pytest.fixture
def received(client, imported) -> Received:
    client.force_login(imported.clinician)
    api = APIClient()
    api.force_authenticate(imported.clinician)
    return _fetch_everything(client, api, imported)


def test_no_id_name_benchmark_or_file_reaches_the_rater(imported, received):
    addresses = {v.rstrip("/").rsplit("/", 1)[1] for v in received.features["rating page address"]}
    handles = {a for a in addresses if not a.isdigit()}  # an all-digit address is an id
    ids = imported.item_ids | imported.assignment_ids
    secrets = [*MODELS, *BENCHMARK.values(), *FILE_NAME.values(), "blindcase-"]
    found = []
    for what, text in received.texts:
        for handle in handles:  # an opaque handle may hold digits; it is no id
            text = text.replace(handle, "<handle>")
        leaked = ids & {int(run) for run in re.findall(r"\d+", text)}
        found += [(what, f"id {pk}") for pk in sorted(leaked)]
        found += [(what, s) for s in secrets if s.lower() in text.lower()]
    kinds = Counter((re.sub(r" \d+", "", what), leak.split(" ")[0]) for what, leak in found)
    assert not found, f"{len(found)} leaks, by response and kind: {dict(kinds)}"


def _separation(values: list[Any], models: list[str], groups: tuple[str, str] = MODELS) -> float:
    """Mann-Whitney AUC: the chance that an assignment of groups[0] (by default MODELS[0])
    sorts after one of groups[1] by this value (ties count half). 0.5: no relation; 0 or 1:
    a perfect split."""
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    keys = values if numeric else [str(v) for v in values]
    a = [k for k, m in zip(keys, models, strict=True) if m == groups[0]]
    b = [k for k, m in zip(keys, models, strict=True) if m == groups[1]]
    wins = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    return wins / (len(a) * len(b))


def _chance_bound(n_a: int, n_b: int) -> float:
    """Z_BOUND standard errors of the AUC of a value unrelated to the model (no ties)."""
    return Z_BOUND * math.sqrt((n_a + n_b + 1) / (12 * n_a * n_b))


def test_nothing_that_varies_between_assignments_sorts_them_by_model(received):
    models = received.models
    n_a = models.count(MODELS[0])
    bound = _chance_bound(n_a, len(models) - n_a)
    varying = {
        name: values
        for name, values in received.features.items()
        if None not in values and len({json.dumps(v, default=str) for v in values}) > 1
    }
    # The rater's order itself, and every address they are given, are among what is checked.
    assert {"place in the queue page", "rating page address"} <= set(varying)
    assert any("data-draft-url" in name for name in varying)
    separating = {
        name: round(auc, 3)
        for name, values in varying.items()
        if abs((auc := _separation(values, models)) - 0.5) > bound
    }
    assert not separating, f"these sort outputs by model (AUC, bound 0.5±{bound:.3f}): {separating}"


def test_nothing_a_rater_receives_tells_an_attention_check_apart(received):
    kinds = received.kinds
    assert kinds.count(CHECK) == N_CHECKS  # the rater was dealt every check (k = 2 of 2)
    words = ("attention", "planted", CHECK_NOTE)
    found = [(what, w) for what, text in received.texts for w in words if w in text.lower()]
    assert not found, f"attention checks named to the rater: {found[:5]}"
    bound = _chance_bound(N_CHECKS, len(kinds) - N_CHECKS)
    varying = {
        name: values
        for name, values in received.features.items()
        if None not in values and len({json.dumps(v, default=str) for v in values}) > 1
    }
    assert {"place in the queue page", "rating page address"} <= set(varying)
    separating = {
        name: round(auc, 3)
        for name, values in varying.items()
        if abs((auc := _separation(values, kinds, (CHECK, ORDINARY))) - 0.5) > bound
    }
    assert not separating, (
        f"these sort checks from items (AUC, bound 0.5±{bound:.3f}): {separating}"
    )
