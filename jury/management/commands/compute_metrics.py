"""Score a study's items with the automatic metrics (ROUGE-L F1, BERTScore F1) and print the
report."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import RatingStudy
from jury.errors import JuryError
from jury.metric_services import ALL_METRICS, compute_metrics
from jury.metrics import MetricUnavailable
from jury.providers.local_models import LocalModelMissing


class Command(BaseCommand):
    help = "Compute ROUGE-L F1 and/or BERTScore F1 for a study's items against their references."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", type=int, required=True, help="study id")
        parser.add_argument(
            "--metric",
            action="append",
            choices=ALL_METRICS,
            help="metric to compute; repeat for several (default: all)",
        )
        parser.add_argument(
            "--force", action="store_true", help="score again and replace existing scores"
        )
        parser.add_argument(
            "--model-dir", help="BERTScore model directory (default: all-MiniLM-L6-v2's wheel)"
        )
        parser.add_argument(
            "--layer", type=int, help="BERTScore layer (default: the model's default layer)"
        )

    def handle(self, *args, **o) -> None:
        study = RatingStudy.objects.filter(pk=o["study"]).first()
        if study is None:
            raise CommandError(f"no study {o['study']}")
        try:
            report = compute_metrics(
                study=study,
                metrics=o["metric"] or ALL_METRICS,
                actor=None,
                model_dir=o["model_dir"],
                bertscore_layer=o["layer"],
                force=o["force"],
            )
        except (JuryError, MetricUnavailable, LocalModelMissing) as exc:
            raise CommandError(str(exc)) from exc
        for line in report.lines():
            self.stdout.write(line)
