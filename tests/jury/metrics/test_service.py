"""The metric service: scores stored as machine raters, idempotent re-runs, force, the
Celery task and the compute_metrics command."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation import services as annotation_services
from annotation.models import AuditEvent, Item
from jury import metric_services, metrics
from jury.errors import JuryError
from jury.models import MetricScore
from jury.providers.local_models import minilm_model_dir
from tests.factories import make_study_with_members
from tests.jury.metrics.samples import PARAPHRASE, REF, ROUGE, UNRELATED


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
    with pytest.raises(JuryError, match=r"unknown metrics \['bleu'\]") as info:
        metric_services.compute_metrics(study=study, metrics=["bleu"], actor=None)
    assert info.value.field == "metrics"
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
    monkeypatch.setattr(
        metric_services.current_app,
        "send_task",
        lambda name, args: sent.append((name, *args)),
    )
    with django_capture_on_commit_callbacks(execute=True):
        metric_services.enqueue_compute_metrics(study=study, metrics=["rouge_l_f1"])
        assert sent == []
    assert sent == [("jury.compute_metrics", study.pk, ["rouge_l_f1"], None)]


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


def test_command_names_a_layer_the_model_does_not_have(study, bert_ready, no_network):
    with pytest.raises(CommandError, match="out of range"):
        call_command(
            "compute_metrics",
            "--study",
            str(study.pk),
            "--metric",
            "bertscore_f1",
            "--layer",
            "7",
            stdout=StringIO(),
        )
