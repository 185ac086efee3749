from __future__ import annotations

import stat
from collections import Counter

import pytest
from django.contrib.auth import get_user_model

from annotation.demo import CLINICIANS, DEMO_STUDY_NAME, credentials_path, load_demo
from annotation.models import Assignment, AuditEvent, Item, Rating, RatingStudy


def _counts():
    return {
        model.__name__: model.objects.count()
        for model in (get_user_model(), RatingStudy, Item, Assignment, Rating, AuditEvent)
    }


@pytest.mark.django_db
def test_demo_loader_is_idempotent():
    first_logins = load_demo()
    first = _counts()
    second_logins = load_demo()
    assert _counts() == first
    # Passwords are kept, so logins printed on the first start still work.
    assert first_logins == second_logins
    user = get_user_model().objects.get(username="clinician1")
    password = {login.username: login.password for login in second_logins}["clinician1"]
    assert user.check_password(password)


@pytest.mark.django_db
def test_demo_credentials_file_is_private():
    load_demo()
    assert stat.S_IMODE(credentials_path().stat().st_mode) == 0o600


@pytest.mark.django_db
def test_demo_study_has_the_promised_shape():
    load_demo()
    study = RatingStudy.objects.get(name=DEMO_STUDY_NAME)
    items = list(study.items.select_related("taxonomy_node__parent__parent"))
    assert len(items) >= 40
    assert len({i.model_name for i in items}) == 3
    categories = {i.taxonomy_node.parent.name for i in items}
    assert len(categories) >= 3
    assert all(i.input_text and i.reference_text and i.output_text for i in items)
    # every item goes to exactly two of the four clinicians; workloads differ by at most one
    per_item = Counter(Assignment.objects.filter(study=study).values_list("item_id", flat=True))
    assert set(per_item.values()) == {2}
    per_clinician = Counter(
        Assignment.objects.filter(study=study).values_list("clinician__username", flat=True)
    )
    assert set(per_clinician) == set(CLINICIANS)
    assert max(per_clinician.values()) - min(per_clinician.values()) <= 1
    # simulated ratings exist, stay on the 1-5 scale, and leave work in every queue
    values = list(
        Rating.objects.filter(assignment__study=study, assignment__status="submitted").values_list(
            "value", flat=True
        )
    )
    assert values and min(values) >= 1 and max(values) <= 5
    assert len(set(values)) >= 3  # the noise model spreads scores, not one constant
    for username in CLINICIANS:
        statuses = Counter(
            Assignment.objects.filter(study=study, clinician__username=username).values_list(
                "status", flat=True
            )
        )
        assert (
            statuses["submitted"] > 0 and statuses["pending"] > 0 and statuses["in_progress"] == 1
        )


@pytest.mark.django_db
def test_demo_ratings_follow_the_noise_model_ordering():
    """The simulated clinicians score the strong model above the weak one on average."""
    from annotation.demo_cases import DEMO_MODELS

    load_demo()

    def mean_for(model):
        vals = Rating.objects.filter(
            assignment__item__model_name=model, assignment__status="submitted"
        ).values_list("value", flat=True)
        return sum(vals) / len(vals)

    assert (
        mean_for(DEMO_MODELS["strong"])
        > mean_for(DEMO_MODELS["partial"])
        > mean_for(DEMO_MODELS["weak"])
    )
