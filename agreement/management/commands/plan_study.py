"""How many items a rating study needs, as on the planning page (same forms, same planners).

manage.py plan_study precision --rho 0.85 --k 4 --width 0.2 [--confidence 0.95]
manage.py plan_study power --rho0 0.6 --rho1 0.8 --k 2 [--alpha 0.05 --power 0.8 --tails 1]
manage.py plan_study difference --rho-low 0.6 --difference 0.15 --k-low 2 --k-high 3
manage.py plan_study simulate --item-sd 1 --rater-sd 0.3 --error-sd 0.7 --n-items 60 \
    --raters-per-item 2 --n-raters 4 [--form "ICC(1,1)" --n-studies 500 --seed 1] [--json]
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement.planning_forms import QUESTIONS
from agreement.services import planning
from agreement.stats.planning import PlanningInputError


def _defaults(question: str) -> dict[str, Any]:
    fields = QUESTIONS[question].base_fields
    return {name: f.initial for name, f in fields.items() if f.initial is not None}


class Command(BaseCommand):
    help = "Items needed for an agreement study (Bonett 2002; Walter et al. 1998), or simulate one."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="question", required=True)
        p = sub.add_parser("precision", help="Items for a confidence interval of a given width.")
        p.add_argument("--rho", type=float, required=True, help="Planned ICC(1).")
        p.add_argument("--k", type=int, required=True, help="Raters per item.")
        p.add_argument("--width", type=float, required=True, help="Full interval width.")
        p.add_argument("--confidence", type=float, default=0.95)
        p.add_argument(
            "--no-small-k-correction",
            dest="small_k_correction",
            action="store_false",
            help="Leave out Bonett's 5 rho for k = 2 and rho >= 0.7.",
        )
        w = sub.add_parser("power", help="Items to show the ICC above rho0 (Walter et al.).")
        w.add_argument("--rho0", type=float, required=True)
        w.add_argument("--rho1", type=float, required=True)
        w.add_argument("--k", type=int, required=True)
        d = sub.add_parser("difference", help="Items to show one ICC above another by d.")
        d.add_argument("--rho-low", dest="rho_low", type=float, required=True)
        d.add_argument("--difference", type=float, required=True)
        d.add_argument("--k-low", dest="k_low", type=int, required=True)
        d.add_argument("--k-high", dest="k_high", type=int, required=True)
        for q in (w, d):
            q.add_argument("--alpha", type=float, default=0.05)
            q.add_argument("--power", type=float, default=0.8)
            q.add_argument("--tails", type=int, choices=[1, 2], default=1)
        s = sub.add_parser("simulate", help="Simulate a design from variance components.")
        for name in ("item_sd", "rater_sd", "error_sd"):
            s.add_argument("--" + name.replace("_", "-"), dest=name, type=float, required=True)
        for name in ("n_items", "raters_per_item", "n_raters"):
            s.add_argument("--" + name.replace("_", "-"), dest=name, type=int, required=True)
        s.add_argument("--form", default="ICC(1,1)")
        s.add_argument("--confidence", type=float, default=0.95)
        s.add_argument("--n-studies", dest="n_studies", type=int, default=500)
        s.add_argument("--seed", type=int, default=1)
        for q in (p, w, d, s):
            q.add_argument("--json", action="store_true", help="Print the answer as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        question = "simulation" if options["question"] == "simulate" else options["question"]
        form_class = QUESTIONS[question]
        data = _defaults(question) | {
            k: v for k, v in options.items() if k in form_class.base_fields and v is not None
        }
        form = form_class(data)
        if not form.is_valid():
            problems = "; ".join(f"{f}: {' '.join(m)}" for f, m in form.errors.items())
            raise CommandError(problems)
        try:
            if question == "simulation":
                spec = planning.design_spec(form.cleaned_data)
                self._print_simulation(planning.run_simulation(spec, study_id=0), options)
            else:
                self._print_answer(planning.answer(question, form.cleaned_data), options)
        except PlanningInputError as exc:
            raise CommandError(str(exc)) from exc

    def _print_answer(self, answer: planning.PlanAnswer, options: dict[str, Any]) -> None:
        if options["json"]:
            rows = [
                {
                    "n_items": s.n_items,
                    "exact": s.exact,
                    "method": s.method,
                    "source": s.source,
                    "formula": s.formula,
                    "inputs": s.inputs,
                    "notes": list(s.notes),
                }
                for s in answer.sizes
            ]
            self.stdout.write(json.dumps({"summary": answer.summary, "sizes": rows}, indent=2))
            return
        for s in answer.sizes:
            self.stdout.write(f"n = {s.n_items} items ({s.exact:.2f} unrounded), {s.method}")
            self.stdout.write(f"  formula: {s.formula}")
            self.stdout.write(f"  source: {s.source}")
            for note in s.notes:
                self.stdout.write(f"  note: {note}")
        self.stdout.write(answer.summary)

    def _print_simulation(self, result: dict[str, Any], options: dict[str, Any]) -> None:
        result.pop("study_id", None)
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
            return
        spec = result["spec"]
        self.stdout.write(
            f"{result['n_done']} simulated studies of {spec['n_items']} items, "
            f"{spec['raters_per_item']} of {spec['n_raters']} raters per item, seed {spec['seed']}"
        )
        self.stdout.write(f"  estimator: {result['estimator']}")
        self.stdout.write(f"  implied ICC: {result['true_icc']:.4f}")
        if result["width_median"] is None:
            self.stdout.write("  no per-study interval (the report bootstraps this statistic)")
        else:
            self.stdout.write(
                f"  interval width: median {result['width_median']:.4f}, "
                f"90th percentile {result['width_p90']:.4f}, mean {result['width_mean']:.4f}"
            )
        self.stdout.write(
            f"  ICC estimates: median {result['icc_median']:.4f} "
            f"(5th-95th percentile {result['icc_p05']:.4f} to {result['icc_p95']:.4f})"
        )
        coverage = "n/a" if result["coverage"] is None else f"{result['coverage']:.3f}"
        self.stdout.write(
            f"  estimates' 2.5th-97.5th percentile range {result['estimate_range95']:.4f}; "
            f"coverage {coverage}; undefined {result['n_undefined']}; {result['seconds']} s"
        )
