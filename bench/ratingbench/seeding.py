"""The rating bench's data, made in a subprocess with the site's settings: one study through
the services (2,000 items x k=2 over the clinicians by default, the MedHELM rubric), and the
clinicians' users, tokens and logged-in sessions in bulk (no password hashing)."""

from __future__ import annotations

import random
import time
from typing import Any

from _support import django_setup


def case_texts(i: int, rng: random.Random) -> tuple[str, str, str]:
    """Input, reference and output text of realistic length, with some of the markdown the
    rating page renders (lists, bold, code)."""
    age, sex = rng.randint(18, 92), rng.choice(["woman", "man"])
    drug = rng.choice(["metformin", "apixaban", "lisinopril", "amoxicillin", "atorvastatin"])
    input_text = (
        f"Case {i}. A {age}-year-old {sex} presents with two days of fever, productive cough and "
        f"pleuritic chest pain. Past history: type 2 diabetes on {drug}, hypertension. Vitals: "
        "temperature 38.6 C, heart rate 104, respiratory rate 24, SpO2 91% on room air, blood "
        "pressure 128/76. Chest X-ray shows right lower lobe consolidation. Creatinine 1.4 mg/dL, "
        "urea 9 mmol/L.\n\nWhat is the most appropriate initial management, and where should "
        "the patient be treated?"
    )
    reference = (
        "CURB-65 score 2 (urea > 7 mmol/L, respiratory rate >= 30 is absent, age): consider "
        "short inpatient stay. Start empirical antibiotics per local guidance for moderate "
        "community-acquired pneumonia (e.g. amoxicillin plus a macrolide), oxygen to target "
        f"94-98%, fluids, review {drug} given the creatinine, and reassess at 48 hours."
    )
    bullets = "\n".join(
        f"- **{head}**: {body}"
        for head, body in [
            (
                "Severity",
                "CURB-65 of 2 suggests moderate severity; hospital assessment is advised.",
            ),
            (
                "Antibiotics",
                "amoxicillin 500 mg three times daily plus clarithromycin 500 mg twice daily.",
            ),
            ("Oxygen", "titrate to SpO2 94-98%; monitor respiratory rate and mental status."),
            ("Kidneys", f"hold `{drug}` if eGFR falls; recheck creatinine in 24-48 hours."),
            (
                "Follow-up",
                "clinical review at 48-72 hours; repeat chest X-ray at 6 weeks if over 50.",
            ),
        ]
    )
    output = (
        f"## Assessment\n\nThis {age}-year-old {sex} most likely has *community-acquired "
        "pneumonia* of moderate severity.\n\n"
        f"## Plan\n\n{bullets}\n\n"
        "1. Admit to a general medical ward.\n2. Blood and sputum cultures before antibiotics.\n"
        "3. Safety-net advice on discharge.\n\n"
        + " ".join(["Reassess daily and step down to oral therapy when afebrile for 48 hours."] * 6)
    )
    return input_text, reference, output


def seed_users(count: int) -> tuple[Any, list, list, list[str]]:
    """(coordinator, clinicians, their API token secrets, their session keys). Unusable passwords:
    sessions are made here, so nobody logs in with a password."""
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.auth.hashers import make_password
    from django.contrib.sessions.backends.db import SessionStore

    from medhelm_site.accounts.services import create_token

    user_model = get_user_model()
    coordinator = user_model.objects.create(
        username="bench-coordinator", password=make_password(None)
    )
    users = user_model.objects.bulk_create(
        [
            user_model(
                username=f"bench-clinician-{n:03d}",
                email=f"bench-clinician-{n:03d}@example.org",
                password=make_password(None),
            )
            for n in range(count)
        ]
    )
    # API tokens are hashed (accounts.ApiToken): the secret exists only here, once.
    tokens = [create_token(user=u, name="bench")[1] for u in users]
    sessions = []
    for u in users:
        s = SessionStore()
        s[SESSION_KEY] = str(u.pk)
        s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        s[HASH_SESSION_KEY] = u.get_session_auth_hash()
        s.create()
        sessions.append(s.session_key)
    return coordinator, users, tokens, sessions


def seed_study(coordinator: Any, users: list, k: int) -> Any:
    """The study with the MedHELM rubric, k ratings per item, every user a clinician."""
    from annotation import services
    from annotation.models import StudyMembership

    template = services.ensure_medhelm_rubric_template()
    study = services.create_study(
        name="bench: rating under load",
        created_by=coordinator,
        criteria=template.criteria,
        ratings_per_item=k,
    )
    for u in users:
        services.add_member(
            study=study, user=u, role=StudyMembership.Role.CLINICIAN, actor=coordinator
        )
    return study


def seed_items(study: Any, coordinator: Any, n: int) -> None:
    """n items: each case answered by two models."""
    from annotation import services

    rng = random.Random(7)
    models = ("model-a", "model-b")
    rows = []
    for i in range(n):
        input_text, reference, output = case_texts(i // len(models), rng)
        rows.append(
            services.ItemRow(
                external_id=f"case-{i // len(models):05d}",
                input_text=input_text,
                reference_text=reference,
                output_text=output,
                model_name=models[i % len(models)],
            )
        )
    services.create_items(study=study, rows=rows, actor=coordinator)


def internal_seed(params: dict[str, Any]) -> dict[str, Any]:
    """Seed the bench database; what the load generator needs, and the time of each step."""
    django_setup()
    from annotation import services
    from annotation.models import Assignment

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    coordinator, users, tokens, sessions = seed_users(params["clinicians"])
    timings["users, tokens, sessions (bulk)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    study = seed_study(coordinator, users, params["k"])
    timings["create_study + add_member x clinicians"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    seed_items(study, coordinator, params["items"])
    timings["create_items"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    services.assign_items(study=study, actor=coordinator, seed=7)
    timings["assign_items"] = time.perf_counter() - t0
    return {
        "study_id": study.pk,
        "criteria": [
            {"key": c.key, "min": c.scale_min, "max": c.scale_max} for c in study.criteria.all()
        ],
        "items": study.items.count(),
        "assignments": Assignment.objects.filter(study=study).count(),
        "clinicians": [
            {"username": u.username, "user_id": u.pk, "token": t, "session": s}
            for u, t, s in zip(users, tokens, sessions, strict=True)
        ],
        "timings": timings,
    }
