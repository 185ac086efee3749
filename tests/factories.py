"""Factories for test data. Studies, members and items are made through the services, so
tests exercise the same paths as the site."""

from __future__ import annotations

from dataclasses import dataclass

import factory
from django.contrib.auth import get_user_model

from annotation import services
from annotation.models import RatingStudy, StudyMembership
from delphi.models import TaxonomyNode, TaxonomyVersion

TEST_PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.PostGenerationMethodCall("set_password", TEST_PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


MEDHELM_CRITERIA = [
    {
        "key": key,
        "label": key.title(),
        "scale_min": 1,
        "scale_max": 5,
        "anchors": {"1": "Very poor", "5": "Excellent"},
    }
    for key in ("accuracy", "completeness", "clarity")
]


def item_rows(
    n: int, *, models: tuple[str, ...] = ("model-a",), prefix: str = "case"
) -> list[services.ItemRow]:
    return [
        services.ItemRow(
            external_id=f"{prefix}-{i:04d}",
            input_text=f"Question {i}: what is the treatment?",
            reference_text=f"Reference answer {i}.",
            output_text=f"Output {i} of {model}.",
            model_name=model,
        )
        for i in range(n)
        for model in models
    ]


# A complete, valid set of answers to MEDHELM_CRITERIA.
FULL_ANSWERS = {
    "accuracy": services.CriterionAnswer(value=4),
    "completeness": services.CriterionAnswer(value=3),
    "clarity": services.CriterionAnswer(value=5),
}


@dataclass
class StudyWithMembers:
    study: RatingStudy
    coordinator: object
    clinicians: list
    researcher: object
    outsider: object


def make_study_with_members(
    *, n_items: int = 6, n_clinicians: int = 3, k: int = 2, name: str = "Test study", **study_kwargs
) -> StudyWithMembers:
    coordinator = UserFactory()
    study = services.create_study(
        name=name,
        created_by=coordinator,
        criteria=MEDHELM_CRITERIA,
        ratings_per_item=k,
        **study_kwargs,
    )
    clinicians = [UserFactory() for _ in range(n_clinicians)]
    for c in clinicians:
        services.add_member(
            study=study, user=c, role=StudyMembership.Role.CLINICIAN, actor=coordinator
        )
    researcher = UserFactory()
    services.add_member(
        study=study, user=researcher, role=StudyMembership.Role.RESEARCHER, actor=coordinator
    )
    services.create_items(study=study, rows=item_rows(n_items), actor=coordinator)
    services.assign_items(study=study, actor=coordinator, seed=7)
    return StudyWithMembers(
        study=study,
        coordinator=coordinator,
        clinicians=clinicians,
        researcher=researcher,
        outsider=UserFactory(),
    )


SAMPLING_MODELS = ("gpt", "llama", "mistral")
# category -> subcategory -> cases
SAMPLING_LAYOUT = {"Diagnosis": {"Differential": 12, "Imaging": 6}, "Notes": {"Discharge": 9}}


def make_sampling_study(missing: dict[str, str] | None = None):
    """A study of 27 cases x 3 models filed under subcategories, 3 clinicians, k = 2.
    ``missing``: case external id -> a model that did not answer it."""
    coordinator = UserFactory()
    study = services.create_study(
        name="Sampled", created_by=coordinator, criteria=MEDHELM_CRITERIA, ratings_per_item=2
    )
    clinicians = [UserFactory() for _ in range(3)]
    for c in clinicians:
        services.add_member(
            study=study, user=c, role=StudyMembership.Role.CLINICIAN, actor=coordinator
        )
    version = TaxonomyVersion.objects.create(name="sampling test taxonomy")
    rows = []
    for category, subs in SAMPLING_LAYOUT.items():
        cat = TaxonomyNode.objects.create(
            version=version, kind=TaxonomyNode.Kind.CATEGORY, name=category
        )
        for sub, n in subs.items():
            node = TaxonomyNode.objects.create(
                version=version, kind=TaxonomyNode.Kind.SUBCATEGORY, name=sub, parent=cat
            )
            for i in range(n):
                case = f"{sub}-{i:02d}"
                for model in SAMPLING_MODELS:
                    if (missing or {}).get(case) == model:
                        continue
                    rows.append(
                        services.ItemRow(
                            external_id=case,
                            input_text=f"Input of {case}",
                            output_text=f"{model} answers {case}",
                            model_name=model,
                            taxonomy_node_id=node.pk,
                        )
                    )
    services.create_items(study=study, rows=rows, actor=coordinator)
    return study, coordinator, clinicians
