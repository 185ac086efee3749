"""Test data for the browser tests of the rating page."""

from __future__ import annotations

from dataclasses import dataclass

from annotation import services
from annotation.models import Assignment, RatingStudy, StudyMembership
from tests.factories import MEDHELM_CRITERIA, UserFactory

# Distinctive names, so that finding one in a response cannot be a coincidence.
MODEL_NAMES = ("zorblax-med-70b", "quillion-clin-8b")
RATER = "dr-ana-rater"
OTHER_RATERS = ("dr-ben-rater", "dr-cleo-rater")
N_CASES = 6  # x 2 models = 12 items, k = 2 over 3 clinicians: 8 assignments each


@dataclass
class KeyboardStudy:
    study: RatingStudy
    coordinator: object
    rater: object
    queue: list[Assignment]  # the rater's assignments in their own order


def make_keyboard_study() -> KeyboardStudy:
    """A study of 12 items (6 cases x 2 models) dealt to RATER and two other clinicians."""
    coordinator = UserFactory(username="coord-keyboard")
    study = services.create_study(
        name="Keyboard rating study",
        created_by=coordinator,
        criteria=MEDHELM_CRITERIA,
        ratings_per_item=2,
        instructions="Rate each response from 1 (very poor) to 5 (excellent).",
    )
    rater = UserFactory(username=RATER)
    for user in [rater, *(UserFactory(username=u) for u in OTHER_RATERS)]:
        services.add_member(
            study=study, user=user, role=StudyMembership.Role.CLINICIAN, actor=coordinator
        )
    rows = [
        services.ItemRow(
            external_id=f"kb-{case:02d}",
            input_text=f"Case {case}: a 58-year-old with chest pain. What is the next step?",
            reference_text=f"Reference for case {case}: ECG within ten minutes.",
            output_text=f"Response {variant} to case {case}: obtain an ECG, then troponin.",
            model_name=model,
            benchmark="KeyboardBench",
            metadata={"source_model": model},
        )
        for case in range(N_CASES)
        for variant, model in enumerate(MODEL_NAMES, start=1)
    ]
    services.create_items(study=study, rows=rows, actor=coordinator)
    services.assign_items(study=study, actor=coordinator, seed=11)
    queue = list(Assignment.objects.filter(study=study, clinician=rater).order_by("position"))
    assert len(queue) >= 6, "the scenarios need at least six items in the rater's queue"
    return KeyboardStudy(study=study, coordinator=coordinator, rater=rater, queue=queue)
