"""Test connection (jury.connection_check, `manage.py test_judge`, the admin action) against
the fake provider playing each server: the model id is checked against /v1/models, one probe
per structured-output mode, the first that gives a verdict is chosen and saved."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import AuditEvent
from jury.connection_check import AUDIT_ACTION, check_judge_connection
from jury.models import Judge
from tests.jury.factories import make_judge
from tests.support.fake_provider import FakeProvider

pytestmark = pytest.mark.django_db

MODEL = "gpt-judge-model"  # make_judge's model id for the name "gpt-judge"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")


def server(dialect: str, *, models=(MODEL,), follows_prompt: bool = False) -> FakeProvider:
    # A reply no schema held answers the probe's one criterion (as a model reading it would).
    return FakeProvider(
        dialect=dialect,
        follows_prompt=follows_prompt,
        served_models=models,
        default_criteria=[("accuracy", 1, 5)],
    )


@pytest.mark.parametrize(
    "dialect, chosen",
    [
        ("openai", "json_schema"),
        ("llama_cpp", "json_object_schema"),
        ("ollama", "ollama_format"),
        ("tgi", "tgi_grammar"),
        ("json_object_only", "json_object"),
    ],
)
def test_the_first_mode_that_gives_a_verdict_is_chosen_and_saved(dialect, chosen):
    with server(dialect) as fake:
        judge = make_judge(fake)
        report = check_judge_connection(judge=judge, save=True)
        sent = [r.body for r in fake.requests]
    assert report.failure is None, report.lines()
    assert report.chosen == chosen
    judge.refresh_from_db()
    assert judge.structured_output == ("" if chosen == "json_schema" else chosen)
    assert len(sent) == 6  # one probe per mode
    assert all(body["model"] == MODEL for body in sent)
    assert f"Model id {MODEL!r}: served." in report.lines()
    works = [r.mode for r in report.results if r.parsed]
    assert works[0] == chosen


def test_a_prompt_only_server_gets_mode_none_when_its_model_follows_the_prompt():
    with server("prompt_only", follows_prompt=True) as fake:
        report = check_judge_connection(judge=make_judge(fake), save=False)
    assert report.chosen == "none"
    assert [r.parsed for r in report.results] == [False] * 5 + [True]
    # It ignores Ollama's "format": the reply follows the prompt, and the probe tells.
    ignored = next(r for r in report.results if r.mode == "ollama_format")
    assert ignored.accepted and "ignored the mode" in ignored.detail


def test_the_report_gives_each_modes_outcome_latency_and_the_choice():
    with server("llama_cpp") as fake:
        judge = make_judge(fake)
        lines = check_judge_connection(judge=judge, save=False).lines()
    text = "\n".join(lines)
    assert "mode 'json_schema': refused in" in text and "HTTP 500" in text
    assert "mode 'json_object_schema': works (verdict parsed) in" in text
    assert "mode 'ollama_format': answered, not a verdict in" in text
    assert "Chosen mode: 'json_object_schema', not saved" in text
    judge.refresh_from_db()
    assert judge.structured_output == ""  # not saved without save=True


def test_a_model_id_the_server_does_not_serve_is_refused_and_nothing_is_probed():
    with server("llama_cpp", models=["smollm2-135m-instruct", "qwen2.5-7b"]) as fake:
        report = check_judge_connection(judge=make_judge(fake), save=True)
        probes = fake.total_requests
    assert probes == 0
    assert report.failure is not None
    assert f"does not serve the model {MODEL!r}" in report.failure
    assert "smollm2-135m-instruct, qwen2.5-7b" in report.failure


def test_a_server_without_a_model_list_is_still_probed():
    with server("openai", models=None) as fake:
        report = check_judge_connection(judge=make_judge(fake), save=False)
    assert report.chosen == "json_schema"
    assert any("lists none" in line and "not checked" in line for line in report.lines())


def test_saving_writes_an_audit_row_with_before_and_after():
    with server("tgi") as fake:
        judge = make_judge(fake)
        check_judge_connection(judge=judge, save=True)
    event = AuditEvent.objects.get(action=AUDIT_ACTION)
    assert event.target_id == str(judge.pk)
    assert (event.before, event.after) == (
        {"structured_output": ""},
        {"structured_output": "tgi_grammar"},
    )


def test_a_judge_the_rules_refuse_sends_nothing(settings):
    settings.JURY_ALLOWED_HOSTS = ["api.openai.com"]
    with server("openai") as fake:
        report = check_judge_connection(judge=make_judge(fake), save=True)
        sent = fake.total_requests
    assert sent == 0
    assert "nothing sent" in report.failure and "JURY_ALLOWED_HOSTS" in report.failure


def test_an_unreachable_server_ends_the_test():
    with server("openai") as fake:
        judge = make_judge(fake)
    report = check_judge_connection(judge=judge, save=True)  # the server is stopped
    assert "could not be reached" in report.failure


def test_anthropic_probes_the_forced_tool_then_the_prompt(fake_provider):
    judge = make_judge(fake_provider, name="claude", provider="anthropic")
    report = check_judge_connection(judge=judge, save=True)
    assert [r.mode for r in report.results] == ["tool", "none"]
    assert report.chosen == "tool"
    assert any("MEDHELM_JUDGE_KEY_FAKE is set" in line for line in report.lines())


def test_a_hosted_provider_without_its_key_is_not_called(monkeypatch):
    monkeypatch.delenv("MEDHELM_JUDGE_KEY_FAKE")
    judge = make_judge(None, name="claude", provider="anthropic")  # the provider's own API
    report = check_judge_connection(judge=judge, save=True)
    assert "MEDHELM_JUDGE_KEY_FAKE is not set" in report.failure
    assert report.results == []


def test_a_local_judge_checks_its_model_file_and_sends_nothing():
    judge = make_judge(None, name="local", provider="local", api_key_env="")
    report = check_judge_connection(judge=judge, save=True)
    assert report.failure is None and report.results == []
    assert any("Local model file" in line and "present" in line for line in report.lines())
    missing = make_judge(
        None, name="gone", provider="local", api_key_env="", params={"model_path": "/no.gguf"}
    )
    assert "is missing" in check_judge_connection(judge=missing).failure


def test_the_command_prints_the_report_and_saves_with_save(capsys):
    with server("llama_cpp") as fake:
        make_judge(fake)
        call_command("test_judge", "gpt-judge", "--save")
    out = capsys.readouterr().out
    assert "Chosen mode: 'json_object_schema', saved on the judge." in out
    assert Judge.objects.get(name="gpt-judge").structured_output == "json_object_schema"


def test_the_command_fails_on_a_model_the_server_does_not_serve():
    with server("llama_cpp", models=["other-model"]) as fake:
        make_judge(fake)
        with pytest.raises(CommandError, match="it serves: other-model"):
            call_command("test_judge", "gpt-judge")
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        call_command("test_judge", "nobody")


def test_the_admin_action_shows_the_report_and_saves_the_mode(admin_client):
    with server("ollama") as fake:
        judge = make_judge(fake)
        response = admin_client.post(
            reverse("admin:jury_judge_changelist"),
            {"action": "test_connection", "_selected_action": [judge.pk]},
            follow=True,
        )
    text = response.content.decode()
    assert "Chosen mode: &#x27;ollama_format&#x27;, saved on the judge." in text
    judge.refresh_from_db()
    assert judge.structured_output == "ollama_format"


def test_the_change_form_button_tests_the_judge_as_saved(admin_client):
    from tests.jury.factories import judge_admin_form

    with server("llama_cpp") as fake:
        judge = make_judge(fake)
        form = judge_admin_form(
            name=judge.name,
            model_id=MODEL,
            endpoint=fake.openai_url,
            api_key_env="MEDHELM_JUDGE_KEY_FAKE",
            structured_output="",
            _test_connection="Save and test connection",
        )
        url = reverse("admin:jury_judge_change", args=[judge.pk])
        page = admin_client.get(url).content.decode()
        response = admin_client.post(url, form, follow=True)
    assert 'name="_test_connection"' in page
    assert response.redirect_chain[-1][0] == url
    assert "Chosen mode: &#x27;json_object_schema&#x27;" in response.content.decode()
    judge.refresh_from_db()
    assert judge.structured_output == "json_object_schema"


def test_a_failed_test_is_an_error_message(admin_client):
    with server("openai", models=["other"]) as fake:
        judge = make_judge(fake)
        response = admin_client.post(
            reverse("admin:jury_judge_changelist"),
            {"action": "test_connection", "_selected_action": [judge.pk]},
            follow=True,
        )
    messages = list(response.context["messages"])
    assert [m.level_tag for m in messages] == ["error"]
    assert "does not serve the model" in str(messages[0])


def test_a_score_off_the_scale_still_shows_the_mode_works():
    """The server held the reply to the verdict's shape; a score off the scale is the
    model's doing, and the report says the probe did not parse as a valid verdict."""
    with server("openai") as fake:
        fake.enqueue("bad_verdict")
        report = check_judge_connection(judge=make_judge(fake), save=False)
    first = report.results[0]
    assert (first.mode, first.shaped, first.parsed) == ("json_schema", True, False)
    assert report.chosen == "json_schema"
    assert "works (verdict shape, but not a valid verdict)" in "\n".join(report.lines())
