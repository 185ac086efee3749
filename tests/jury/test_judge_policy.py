"""Which key variables and endpoints a judge may use: refused with a reason in the admin, and
again when a call is made (a judge written through the ORM never sends its key)."""

from __future__ import annotations

import json
import random

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from jury.execution import execute_call
from jury.models import Judge
from tests.factories import make_study_with_members
from tests.jury.factories import judge_admin_form, make_judge, one_item_run
from tests.support.fake_provider import FakeProvider

SITE_SECRET = "the-site-secret-key-value"


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=2, n_clinicians=2, k=2).study


def test_the_admin_saves_a_judge_within_the_rules(admin_client):
    response = admin_client.post(reverse("admin:jury_judge_add"), judge_admin_form())
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Judge.objects.filter(name="new-judge").exists()


def test_the_admin_refuses_the_site_secret_as_api_key_variable(admin_client):
    response = admin_client.post(
        reverse("admin:jury_judge_add"), judge_admin_form(api_key_env="SECRET_KEY")
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert "SECRET_KEY" in text and "MEDHELM_JUDGE_KEY_" in text
    assert "JURY_ALLOWED_KEY_VARIABLES" in text
    assert not Judge.objects.filter(name="new-judge").exists()


def test_the_admin_refuses_an_endpoint_on_a_host_not_allowed(admin_client):
    response = admin_client.post(
        reverse("admin:jury_judge_add"), judge_admin_form(endpoint="https://evil.example.com/v1")
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert "evil.example.com" in text and "JURY_ALLOWED_HOSTS" in text
    assert not Judge.objects.filter(name="new-judge").exists()


@pytest.mark.parametrize(
    "endpoint,why",
    [
        ("http://api.openai.com/v1", "https"),
        ("https://10.0.0.5/v1", "IP address"),
        ("http://169.254.169.254/latest", "IP address"),
        ("http://[::ffff:127.0.0.1]:8000/v1", "IP address"),
        ("https://user:pw@api.openai.com/v1", "user name"),
        ("https://api.openai.com.evil.example/v1", "JURY_ALLOWED_HOSTS"),
        ("https://a.b.openai.azure.com/", "JURY_ALLOWED_HOSTS"),
        ("ftp://localhost/v1", "http"),
    ],
)
def test_clean_refuses_endpoints_outside_the_rules(db, endpoint, why):
    judge = Judge(name="j", provider="openai", model_id="m", endpoint=endpoint)
    with pytest.raises(ValidationError) as info:
        judge.full_clean()
    assert why in " ".join(info.value.message_dict["endpoint"])


@pytest.mark.parametrize(
    "endpoint",
    [
        "",
        "https://api.openai.com/v1",
        "https://API.Anthropic.com",
        "https://myresource.openai.azure.com/",
        "http://127.0.0.1:8080/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8000/v1",
    ],
)
def test_clean_accepts_the_default_hosts(db, endpoint):
    Judge(name="j", provider="openai", model_id="m", endpoint=endpoint).full_clean()


def test_settings_extend_the_hosts_and_key_variables(db, settings):
    settings.JURY_ALLOWED_HOSTS = ["vllm.hospital.internal", "*.models.example.org"]
    settings.JURY_ALLOWED_KEY_VARIABLES = ["OPENAI_API_KEY"]
    for endpoint in ["https://vllm.hospital.internal/v1", "https://eu.models.example.org/v1"]:
        Judge(
            name="j",
            provider="openai",
            model_id="m",
            endpoint=endpoint,
            api_key_env="OPENAI_API_KEY",
        ).full_clean()
    with pytest.raises(ValidationError) as info:  # the setting replaces the defaults
        Judge(
            name="j", provider="openai", model_id="m", endpoint="https://api.openai.com"
        ).full_clean()
    assert "endpoint" in info.value.message_dict


@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "MEDHELM_JUDGE_KEY_", "lower"])
def test_clean_refuses_key_variables_outside_the_rules(db, variable):
    with pytest.raises(ValidationError) as info:
        Judge(name="j", provider="openai", model_id="m", api_key_env=variable).full_clean()
    assert "MEDHELM_JUDGE_KEY_" in " ".join(info.value.message_dict["api_key_env"])


def test_the_site_secret_is_refused_even_when_listed(db, settings):
    settings.JURY_ALLOWED_KEY_VARIABLES = ["SECRET_KEY"]
    with pytest.raises(ValidationError):
        Judge(name="j", provider="openai", model_id="m", api_key_env="SECRET_KEY").full_clean()


@pytest.mark.parametrize(
    "fields,hosts,reason",
    [
        ({"api_key_env": "SECRET_KEY"}, None, "SECRET_KEY"),
        ({}, ["api.openai.com"], "127.0.0.1"),  # the fake's loopback host, not listed here
    ],
)
def test_a_judge_written_through_the_orm_sends_nothing(
    study, fake_provider, monkeypatch, settings, fields, hosts, reason
):
    monkeypatch.setenv("SECRET_KEY", SITE_SECRET)
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")
    judge = make_judge(fake_provider, **fields)  # Judge.objects.create: no clean()
    if hosts is not None:
        settings.JURY_ALLOWED_HOSTS = hosts  # the rule changed after the judge was stored
    run = one_item_run(study, judge)
    for call in run.calls.all():
        execute_call(call_id=call.pk, sleep=lambda s: None, rng=random.Random(1))
    assert fake_provider.total_requests == 0
    for call in run.calls.all():
        assert call.status == "provider_error" and call.attempts == 0
        assert "not allowed" in call.error and reason in call.error
        assert SITE_SECRET not in call.error + call.raw_output


def test_a_500_with_a_long_body_is_stored_as_status_and_short_reason(study, monkeypatch):
    body = json.dumps(
        {
            "error": {"message": "Upstream failed for sk-live-abcdef0123456789", "type": "x"},
            "debug": "internal-host-10.1.2.3 " * 500,
        }
    )

    class LongErrors(FakeProvider):
        def extra_route(self, method, path, raw):
            self.total_requests += 1
            return 500, body.encode()

    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")
    with LongErrors() as fake:
        judge = make_judge(fake, params={"max_attempts": 1})
        run = one_item_run(study, judge)
        call = run.calls.get()
        execute_call(call_id=call.pk, sleep=lambda s: None, rng=random.Random(1))
        assert fake.total_requests == 1
    call.refresh_from_db()
    assert call.status == "provider_error"
    assert "HTTP 500" in call.error and "Upstream failed" in call.error
    assert "internal-host" not in call.error and "sk-live" not in call.error
    assert len(call.error) < 400
