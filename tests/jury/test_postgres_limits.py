"""The judge admin and the prompt form refuse what the database cannot store (a name longer
than its column, a NUL character, also inside the JSON parameters) as form errors, on
SQLite and on PostgreSQL alike, and save nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from jury.models import Judge, PromptTemplate
from medhelm_site.common.text_limits import column_max_length
from tests.factories import TEST_PASSWORD, make_study_with_members

JUDGE_NAME = column_max_length(Judge, "name")
PROMPT_NAME = column_max_length(PromptTemplate, "name")


@pytest.fixture
def admin_client(client, db):
    user = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(user)
    return client


def _judge_form(**overrides: str) -> dict[str, str]:
    data = {
        "name": "new-judge",
        "provider": "openai",
        "model_id": "gpt-4o",
        "endpoint": "https://api.openai.com/v1",
        "api_key_env": "MEDHELM_JUDGE_KEY_OPENAI",
        "params": "{}",
        "weight": "1",
        "price_input_per_mtok": "0",
        "price_output_per_mtok": "0",
        "max_concurrency": "4",
        "requests_per_minute": "",
        "timeout_seconds": "120",
        "is_active": "on",
    }
    data.update(overrides)
    return data


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
    response = admin_client.post(reverse("admin:jury_judge_add"), _judge_form(**overrides))
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
