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


NOTE_SECTIONS = (
    (
        "HISTORY OF PRESENT ILLNESS",
        "Patient reports intermittent substernal chest pressure radiating to the left arm, worse on exertion and relieved by rest; associated diaphoresis and mild dyspnoea. Denies syncope, palpitations or pleuritic pain. Symptoms began three days before admission and recurred at rest on the morning of presentation.",
    ),
    (
        "PAST MEDICAL HISTORY",
        "Type 2 diabetes mellitus (HbA1c 8.1% six months ago), essential hypertension, hyperlipidaemia, chronic kidney disease stage 3a (baseline creatinine 1.4 mg/dL), obstructive sleep apnoea on CPAP, remote left knee arthroscopy.",
    ),
    (
        "MEDICATIONS",
        "Metformin 1000 mg twice daily; lisinopril 20 mg daily; atorvastatin 40 mg nightly; amlodipine 5 mg daily; aspirin 81 mg daily; insulin glargine 18 units at bedtime; omeprazole 20 mg daily as needed.",
    ),
    (
        "PHYSICAL EXAMINATION",
        "BP 162/94, HR 98, RR 20, SpO2 95% on room air, T 36.9 C. Alert, diaphoretic. JVP not raised. Heart sounds regular, no murmurs or rubs. Chest clear bilaterally. Abdomen soft, non-tender. Peripheral pulses intact; no oedema.",
    ),
    (
        "INVESTIGATIONS",
        "ECG: sinus tachycardia, 1.5 mm ST depression in V4 to V6. High-sensitivity troponin T 48 ng/L at 0 h, 112 ng/L at 3 h. Potassium 4.9 mmol/L, creatinine 1.6 mg/dL, eGFR 44. Chest radiograph without consolidation or effusion.",
    ),
    (
        "ASSESSMENT AND PLAN",
        "Non-ST-elevation myocardial infarction in a patient with multiple risk factors. Dual antiplatelet therapy, anticoagulation adjusted for renal function, early invasive strategy within 24 hours, hold metformin around contrast, monitor renal function and potassium daily.",
    ),
)


def long_clinical_note(min_chars: int = 17_000) -> str:
    """A clinical note of at least min_chars characters: the sections of an admission note,
    repeated as daily progress entries until long enough (the long-note layout tests)."""
    parts: list[str] = []
    day = 0
    while sum(len(p) + 2 for p in parts) < min_chars:
        day += 1
        parts.append(f"# Hospital day {day}")
        parts.extend(f"**{title}.** {text}" for title, text in NOTE_SECTIONS)
    return "\n\n".join(parts)


def give_long_note(assignment: Assignment, note: str) -> None:
    """Put a long clinical note into the assignment's item as its input."""
    from annotation.models import Item

    Item.objects.filter(pk=assignment.item_id).update(input_text=note)
