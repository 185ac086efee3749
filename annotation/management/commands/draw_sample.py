"""manage.py draw_sample --study ID (--total N | --quota "STRATUM=N" ...) [--strata category,
subcategory,model] [--seed S] [--unpaired] [--case-key external_id|input_text] [--preview]
[--as USERNAME]

The same service as the sampling page: prints the allocation per stratum (population and
drawn), the cases where pairing was not possible, and records the draw unless --preview.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation import selectors, services
from annotation.errors import AnnotationError
from annotation.models import RatingStudy
from annotation.sampling import Draw, parse_quotas


class Command(BaseCommand):
    help = (
        "Draw the items clinicians will rate: stratified, seeded, paired across models where "
        "the data allow it, and recorded with the study."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="Rating study id.")
        rule = parser.add_mutually_exclusive_group(required=True)
        rule.add_argument("--total", type=int, help="Units to draw, shared in proportion.")
        rule.add_argument("--quota", action="append", help='"stratum label = n", once per stratum.')
        parser.add_argument("--strata", default="category,subcategory,model")
        parser.add_argument("--seed", type=int, help="Default: a new random seed, printed.")
        parser.add_argument(
            "--unpaired", action="store_true", help="Draw items, not cases across models."
        )
        parser.add_argument("--case-key", dest="case_key", default="external_id")
        parser.add_argument("--preview", action="store_true", help="Show it, record nothing.")
        parser.add_argument("--as", dest="username", help="Default: the study's creator.")

    def handle(self, *args, **options) -> None:
        study = RatingStudy.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no rating study {options['study']}")
        actor = study.created_by
        if options["username"]:
            actor = get_user_model().objects.filter(username=options["username"]).first()
            if actor is None:
                raise CommandError(f"no user {options['username']!r}")
        keys = [k.strip() for k in options["strata"].split(",") if k.strip()]
        seed = options["seed"] if options["seed"] is not None else services.new_seed()
        settings = {
            "study": study,
            "keys": keys,
            "seed": seed,
            "paired": not options["unpaired"],
            "case_key": options["case_key"],
        }
        try:
            if options["quota"]:
                settings["quotas"] = parse_quotas("\n".join(options["quota"]))
            else:
                settings["total"] = options["total"]
            draw = services.plan_draw(**settings)
            self._print(draw, seed)
            if options["preview"]:
                self.stdout.write("Preview only: nothing recorded.")
                return
            record = services.draw_sample(actor=actor, **settings)
        except AnnotationError as exc:
            raise CommandError(exc.message) from exc
        n = len(selectors.items_to_rate(study=study))
        self.stdout.write(
            self.style.SUCCESS(f"Draw {record.pk} recorded (seed {seed}): {n} items to rate.")
        )

    def _print(self, draw: Draw, seed: int) -> None:
        unit = "cases" if draw.paired else "items"
        self.stdout.write(f"Seed {seed}; strata by {', '.join(draw.keys) or 'nothing'}; {unit}.")
        if draw.model_note:
            self.stdout.write(draw.model_note)
        for s in draw.strata:
            self.stdout.write(
                f"  {s.label}: {s.drawn} of {s.population} {unit} "
                f"({s.drawn_items} of {s.population_items} items)"
            )
        for label, case, lacks in draw.unpaired_cases:
            self.stdout.write(
                f"  not paired: case {case[:60]!r} in {label} lacks {', '.join(lacks)}"
            )
        self.stdout.write(f"Total: {draw.total} {unit}, {len(draw.item_ids)} items.")
