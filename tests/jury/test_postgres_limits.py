"""The judge admin and the prompt form refuse what the database cannot store (a name longer
than its column, a NUL character, also inside the JSON parameters) as form errors, on
SQLite and on PostgreSQL alike, and save nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from jury.models import Judge, PromptTemplate
from medhelm_site.common.text_limits import column_max_length
from tests.factories import TEST_PASSWORD, make_study_with_members
from tests.jury.factories import judge_admin_form

JUDGE_NAME = column_max_length(Judge, "name")
PROMPT_NAME = column_max_length(PromptTemplate, "name")


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"name": "j" * (JUDGE_NAME + 1)}, "name", f"at most {JUDGE_NAME} characters"),
        ({"name": "jud\x00ge"}, "name", "Null characters are not allowed."),
        ({"model_id": "gpt\x00"}, "model_id", "Null characters are not allowed."),
        (
            {"params": '{"stop": ["\\u0000"]}'},
            "params",
            "params.stop[0]: contains a NUL character",
        ),
    ],
    ids=["name-too-long", "nul-name", "nul-model", "nul-in-params"],
)
def test_the_judge_admin_refuses_what_the_database_cannot_store(
    admin_client, overrides, field, message
):
    response = admin_client.post(reverse("admin:jury_judge_add"), judge_admin_form(**overrides))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors[field])
    assert not Judge.objects.exists()


@pytest.mark.django_db
def test_the_prompt_form_refuses_a_name_longer_than_its_column(client):
    setup = make_study_with_members(n_items=0, n_clinicians=1, k=1)
    client.login(username=setup.coordinator.username, password=TEST_PASSWORD)
    response = client.post(
        f"/studies/{setup.study.pk}/jury/prompt/",
        {"name": "p" * (PROMPT_NAME + 1), "system_text": "", "body": "{input}"},
    )
    assert response.status_code == 200
    assert f"at most {PROMPT_NAME} characters" in " ".join(response.context["form"].errors["name"])
    assert not PromptTemplate.objects.filter(study=setup.study).exists()
