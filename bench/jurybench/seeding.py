"""The jury bench's data, through the services: three studies with distinct item texts
(phase 1, phase 2, warm-up) and three judges pointed at the fake provider."""

from __future__ import annotations

import random
from typing import Any

from jurybench.config import API_KEY_ENV, JUDGES, WARMUP_ITEMS


def case_texts(tag: str, i: int, rng: random.Random) -> tuple[str, str, str]:
    """Input, reference and output of realistic length; `tag` and `i` make every prompt unique."""
    age, sex = rng.randint(18, 92), rng.choice(["woman", "man"])
    drug = rng.choice(["metformin", "apixaban", "lisinopril", "amoxicillin", "atorvastatin"])
    input_text = (
        f"Case {tag}-{i}. A {age}-year-old {sex} presents with two days of fever, productive "
        f"cough and pleuritic chest pain. Past history: type 2 diabetes on {drug}, hypertension. "
        "Vitals: temperature 38.6 C, heart rate 104, respiratory rate 24, SpO2 91% on room air, "
        "blood pressure 128/76. Chest X-ray shows right lower lobe consolidation. Creatinine "
        "1.4 mg/dL, urea 9 mmol/L.\n\nWhat is the most appropriate initial management, and "
        "where should the patient be treated?"
    )
    reference = (
        "CURB-65 score 2: consider short inpatient stay. Start empirical antibiotics per local "
        "guidance for moderate community-acquired pneumonia (e.g. amoxicillin plus a macrolide), "
        f"oxygen to target 94-98%, fluids, review {drug} given the creatinine, reassess at 48 h."
    )
    output = (
        f"## Assessment\n\nThis {age}-year-old {sex} most likely has community-acquired "
        "pneumonia of moderate severity (CURB-65 of 2).\n\n## Plan\n\n"
        "- **Antibiotics**: amoxicillin 500 mg three times daily plus clarithromycin.\n"
        "- **Oxygen**: titrate to SpO2 94-98%.\n"
        f"- **Kidneys**: hold `{drug}` if eGFR falls; recheck creatinine in 24-48 hours.\n"
        "- **Follow-up**: clinical review at 48-72 hours.\n\n"
        + " ".join(["Reassess daily and step down to oral therapy when afebrile for 48 h."] * 3)
    )
    return input_text, reference, output


def seed_study(tag: str, n: int, user: Any, criteria: Any) -> Any:
    """A study named after `tag` with `n` items of its own texts."""
    from annotation import services

    study = services.create_study(name=f"bench jury: {tag}", created_by=user, criteria=criteria)
    rng = random.Random(tag)
    rows = []
    for i in range(n):
        input_text, reference, output = case_texts(tag, i, rng)
        rows.append(
            services.ItemRow(
                external_id=f"{tag}-{i:05d}",
                input_text=input_text,
                reference_text=reference,
                output_text=output,
                model_name="model-under-test",
            )
        )
    services.create_items(study=study, rows=rows, actor=user)
    return study


def seed_judges(fake_url: str, concurrency: int) -> list[Any]:
    """The three judges, each with its limiter, `concurrency` requests in flight, no RPM."""
    from jury import limits
    from jury.models import Judge

    judges = []
    for name, provider, model_id, p_in, p_out in JUDGES:
        judge = Judge.objects.create(
            name=name,
            provider=provider,
            model_id=model_id,
            endpoint=f"{fake_url}/v1" if provider == "openai" else fake_url,
            api_key_env=API_KEY_ENV,
            params={"max_attempts": 6},
            price_input_per_mtok=p_in,
            price_output_per_mtok=p_out,
            max_concurrency=concurrency,
            requests_per_minute=None,
            timeout_seconds=60,
        )
        limits.ensure_limiter(judge)
        judges.append(judge)
    return judges


def seed(items: int, fake_url: str, concurrency: int) -> dict[str, Any]:
    """{"user": the coordinator, "studies": by tag, "judges": [...]}."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from annotation import services

    user = get_user_model().objects.create(
        username="bench-jury-coordinator", password=make_password(None)
    )
    template = services.ensure_medhelm_rubric_template()
    studies = {
        tag: seed_study(tag, n, user, template.criteria)
        for tag, n in (("phase1", items), ("phase2", items), ("warmup", WARMUP_ITEMS))
    }
    return {"user": user, "studies": studies, "judges": seed_judges(fake_url, concurrency)}
