"""The demo: accounts, a synthetic rating study and simulated clinician ratings.

Idempotent: loading twice reuses what exists and adds nothing.

A rating is clip(round(model quality + case effect + criterion offset + the clinician's
leniency + noise), 1, 5), drawn from a fixed seed so that every start shows the same data
(the constants below). Each clinician submits the first SUBMITTED_SHARE of their own queue
and leaves one draft, so the queue page has both done and open work on first start.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction

from annotation import selectors, services
from annotation.demo_cases import DEMO_CASES, DEMO_MODELS
from annotation.models import Assignment, RatingStudy, StudyMembership
from delphi.services import ensure_medhelm_taxonomy

DEMO_STUDY_NAME = "Demo: synthetic MedHELM-style rating study"
DEMO_SEED = 2025
COORDINATOR = "coordinator"
CLINICIANS = ("clinician1", "clinician2", "clinician3", "clinician4")
RESEARCHER = "researcher"
MODEL_QUALITY_MEAN = {"strong": 4.3, "partial": 3.4, "weak": 2.2}
# The partial and weak outputs leave things out: completeness scores lower.
CRITERION_OFFSET = {"accuracy": 0.0, "completeness": -0.2, "clarity": 0.1}
CASE_SD = 0.35  # standard deviation of a case's effect
LENIENCY_SD = 0.3  # of a clinician's leniency
NOISE_SD = 0.55  # of one rating's noise
SUBMITTED_SHARE = 0.7


@dataclass(frozen=True)
class DemoLogin:
    username: str
    role: str
    password: str


def credentials_path() -> Path:
    return Path(settings.DATA_DIR) / "demo-logins.json"


def _ensure_users() -> list[DemoLogin]:
    """Demo accounts with random passwords, kept in a file only the owner can read."""
    path = credentials_path()
    stored: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    User = get_user_model()
    wanted = [
        (COORDINATOR, "coordinator"),
        *[(c, "clinician") for c in CLINICIANS],
        (RESEARCHER, "researcher"),
    ]
    logins = []
    for username, role in wanted:
        user, created = User.objects.get_or_create(
            username=username,
            defaults={"email": f"{username}@demo.invalid", "first_name": username.title()},
        )
        if created or username not in stored:
            stored[username] = secrets.token_urlsafe(9)
            user.set_password(stored[username])
            user.save(update_fields=["password"])
        if role == "coordinator":
            user.user_permissions.add(
                Permission.objects.get(
                    codename="add_ratingstudy", content_type__app_label="annotation"
                )
            )
        logins.append(DemoLogin(username=username, role=role, password=stored[username]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(stored, indent=2))
    os.chmod(tmp, 0o600)
    tmp.replace(path)  # atomic: a crash never leaves a half-written credentials file
    return logins


def _demo_rows(study: RatingStudy) -> list[services.ItemRow]:
    rows = []
    for case_no, (subcategory, benchmark, prompt, reference, *outputs) in enumerate(
        DEMO_CASES, start=1
    ):
        node = selectors.taxonomy_node_for(study=study, name=subcategory)
        for quality, output in zip(("strong", "partial", "weak"), outputs, strict=True):
            rows.append(
                services.ItemRow(
                    external_id=f"demo-{case_no:03d}",
                    input_text=prompt,
                    reference_text=reference,
                    output_text=output,
                    model_name=DEMO_MODELS[quality],
                    benchmark=benchmark,
                    taxonomy_node_id=node.pk if node else None,
                    metadata={"synthetic": True, "case": case_no},
                )
            )
    return rows


def _simulate_ratings(study: RatingStudy) -> None:
    rng = np.random.default_rng(DEMO_SEED)
    quality_of = {model: q for q, model in DEMO_MODELS.items()}
    case_effect = dict(enumerate(rng.normal(0, CASE_SD, size=len(DEMO_CASES)), start=1))
    User = get_user_model()
    for username in CLINICIANS:
        clinician = User.objects.get(username=username)
        leniency = rng.normal(0, LENIENCY_SD)
        queue = list(
            Assignment.objects.filter(study=study, clinician=clinician)
            .select_related("item")
            .order_by("position")
        )
        n_submit = round(SUBMITTED_SHARE * len(queue))
        for position, assignment in enumerate(queue):
            if position > n_submit:
                break
            item = assignment.item
            base = (
                MODEL_QUALITY_MEAN[quality_of[item.model_name]] + case_effect[item.metadata["case"]]
            )
            answers = {}
            for key, offset in CRITERION_OFFSET.items():
                value = int(
                    np.clip(np.rint(base + offset + leniency + rng.normal(0, NOISE_SD)), 1, 5)
                )
                answers[key] = services.CriterionAnswer(value=value)
            seconds = float(rng.uniform(40, 180))
            if position < n_submit:
                services.submit_assignment(
                    assignment_id=assignment.pk,
                    clinician=clinician,
                    answers=answers,
                    time_spent_seconds=seconds,
                )
            else:  # one draft left open, as a clinician who stopped mid-item would
                first_key = next(iter(answers))
                services.save_draft(
                    assignment_id=assignment.pk,
                    clinician=clinician,
                    answers={first_key: answers[first_key]},
                    time_spent_seconds=seconds / 3,
                )


@transaction.atomic
def load_demo() -> list[DemoLogin]:
    """Create everything the demo needs, once. Returns the demo logins."""
    logins = _ensure_users()
    taxonomy = ensure_medhelm_taxonomy()
    rubric = services.ensure_medhelm_rubric_template()
    if RatingStudy.objects.filter(name=DEMO_STUDY_NAME).exists():
        return logins
    User = get_user_model()
    coordinator = User.objects.get(username=COORDINATOR)
    study = services.create_study(
        name=DEMO_STUDY_NAME,
        created_by=coordinator,
        criteria=rubric.criteria,
        taxonomy_version=taxonomy,
        instructions=(
            "Synthetic demo data: invented cases and invented models.\n"
            "Rate each response on accuracy, completeness and clarity from 1 (very poor) to 5 (excellent)."
        ),
        ratings_per_item=2,
        show_reference=True,
    )
    for username in CLINICIANS:
        services.add_member(
            study=study,
            user=User.objects.get(username=username),
            role=StudyMembership.Role.CLINICIAN,
            actor=coordinator,
        )
    services.add_member(
        study=study,
        user=User.objects.get(username=RESEARCHER),
        role=StudyMembership.Role.RESEARCHER,
        actor=coordinator,
    )
    services.create_items(study=study, rows=_demo_rows(study), actor=coordinator)
    services.assign_items(study=study, actor=coordinator, seed=DEMO_SEED)
    _simulate_ratings(study)
    return logins
