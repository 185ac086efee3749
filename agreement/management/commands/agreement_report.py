"""Compute a study's agreement report (a new snapshot), or export a stored one.

manage.py agreement_report --study 3 --resamples 2000 --seed 7 --format pdf --output r.pdf
manage.py agreement_report --study 3 --snapshot 12 --format csv
manage.py agreement_report --study 3 --snapshot 12 --format tex --output table2.tex
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement import analysis, selectors, services
from agreement.errors import AgreementError
from agreement.stats.medhelm import REQUESTABLE_FORMS
from annotation.models import RatingStudy


class Command(BaseCommand):
    help = "Compute a new agreement report snapshot for a study (or export --snapshot ID)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="Rating study id.")
        parser.add_argument("--snapshot", type=int, help="Export this stored snapshot instead.")
        parser.add_argument("--resamples", type=int, help="Bootstrap resamples (default 1000).")
        parser.add_argument("--seed", type=int, help="Bootstrap seed (default: random, recorded).")
        parser.add_argument("--confidence", type=float, help="Interval level (default 0.95).")
        parser.add_argument("--ci-method", choices=sorted(analysis.CI_METHODS))
        parser.add_argument("--values", choices=["latest", "first"])
        parser.add_argument(
            "--min-shared-items",
            type=int,
            help="Estimability rule: fewest shared items of a cell or clinician pair (default 2).",
        )
        parser.add_argument(
            "--max-ci-width",
            type=float,
            help="Estimability rule: widest interval still estimable (default 1.0).",
        )
        parser.add_argument(
            "--clinician-form",
            choices=list(REQUESTABLE_FORMS),
            help="Clinician-clinician form: decided per cell by the design (default), or "
            "MedHELM's pair mean (medhelm_pairwise) or the one-way form (oneway_z) everywhere.",
        )
        parser.add_argument(
            "--exclude-flagged",
            action="store_true",
            help="Leave out judge verdicts flagged as steered by the evaluated output.",
        )
        parser.add_argument("--title", help="Report title.")
        parser.add_argument(
            "--format",
            choices=["json", "csv", "pdf", "tex", "md"],
            default="json",
            help="tex, md: Table 2 (LaTeX booktabs, Markdown) with the methods paragraph",
        )
        parser.add_argument("--output", type=Path, help="File to write (default: stdout).")

    def handle(self, *args: Any, **options: Any) -> None:
        study = RatingStudy.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']}")
        if options["format"] == "pdf" and options["output"] is None:
            raise CommandError("a PDF needs --output PATH")
        if options["snapshot"] is not None:
            snapshot = selectors.study_snapshot(study=study, report_id=options["snapshot"])
            if snapshot is None:
                raise CommandError(f"study {study.pk} has no report snapshot {options['snapshot']}")
        else:
            parameters = {
                "n_resamples": options["resamples"],
                "seed": options["seed"],
                "confidence": options["confidence"],
                "ci_method": options["ci_method"],
                "values": options["values"],
                "min_shared_items": options["min_shared_items"],
                "max_ci_width": options["max_ci_width"],
                "exclude_flagged": options["exclude_flagged"],
                "clinician_form": options["clinician_form"],
                "title": options["title"],
            }
            try:
                snapshot = services.create_snapshot(
                    study=study,
                    actor=None,
                    parameters={k: v for k, v in parameters.items() if v is not None},
                )
            except AgreementError as exc:
                raise CommandError(f"invalid parameters: {exc.as_dict()}") from exc
            self.stderr.write(
                f"report snapshot #{snapshot.pk} computed: seed {snapshot.parameters['seed']}, "
                f"{snapshot.parameters['n_resamples']} resamples, "
                f"input {snapshot.input_hash[:16]}"
            )
        fmt = options["format"]
        if fmt == "pdf":
            payload: str | bytes = services.export_pdf(snapshot)
        elif fmt == "csv":
            payload = services.export_csv(snapshot)
        elif fmt == "tex":
            payload = services.export_latex(snapshot)
        elif fmt == "md":
            payload = services.export_markdown(snapshot)
        else:
            payload = json.dumps(services.export_json(snapshot), indent=2) + "\n"
        if options["output"] is None:
            self.stdout.write(payload, ending="")
        elif isinstance(payload, bytes):
            options["output"].write_bytes(payload)
        else:
            options["output"].write_text(payload, encoding="utf-8")
        if options["output"] is not None:
            self.stderr.write(f"wrote {options['output']}")
