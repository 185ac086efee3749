"""The example judge definitions (fixtures/judges/*.json) of docs/judges.md: each loads,
passes the model's checks and the operator's rules as the page gives them, and
`manage.py load_judges` creates or updates them all, or none when a file is wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from jury.errors import JuryError
from jury.forms import JudgeAdminForm
from jury.judge_definitions import judge_from_definition
from jury.models import Judge
from jury.providers import structured

pytestmark = pytest.mark.django_db

ROOT = Path(django_settings.BASE_DIR)
EXAMPLES = sorted((ROOT / "fixtures" / "judges").glob("*.json"))
EXAMPLES_BY_NAME = {path.stem: path for path in EXAMPLES}
DOC = (ROOT / "docs" / "judges.md").read_text()


@pytest.fixture(autouse=True)
def documented_rules(settings):
    """The allowed hosts docs/judges.md gives, and no extra key variable."""
    hosts = re.search(r"^\s*JURY_ALLOWED_HOSTS=(\S+)$", DOC, re.M)
    assert hosts, "docs/judges.md gives JURY_ALLOWED_HOSTS"
    settings.JURY_ALLOWED_HOSTS = hosts.group(1).split(",")
    settings.JURY_ALLOWED_KEY_VARIABLES = []


def test_there_are_examples_for_every_server_the_page_names():
    names = {path.stem for path in EXAMPLES}
    assert {"llama-cpp-smollm2", "ollama-llama3.1-8b", "vllm-qwen2.5-7b"} <= names
    assert {"openai-gpt-4o-mini", "anthropic-claude-haiku", "tgi-llama3.1-8b"} <= names
    for path in EXAMPLES:
        assert f"`{path.name}`" in DOC, f"docs/judges.md does not describe {path.name}"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_each_example_is_a_valid_judge_under_the_documented_rules(path):
    data = json.loads(path.read_text())
    judge = judge_from_definition(data, source=path.name)  # full_clean: fields, policy, mode
    assert judge.name == path.stem
    assert judge.policy_problems() == {}
    assert judge.structured_output in structured.modes_for(judge.provider)
    assert f"`{judge.structured_output}`" in DOC


def test_the_command_loads_every_example_and_loading_again_updates(capsys):
    call_command("load_judges", *map(str, EXAMPLES))
    assert Judge.objects.count() == len(EXAMPLES)
    Judge.objects.filter(name="vllm-qwen2.5-7b").update(max_concurrency=1)
    call_command("load_judges", *map(str, EXAMPLES))
    assert Judge.objects.count() == len(EXAMPLES)
    assert Judge.objects.get(name="vllm-qwen2.5-7b").max_concurrency == 16
    out = capsys.readouterr().out
    assert "updated judge 'llama-cpp-smollm2'" in out


def test_a_wrong_file_loads_nothing(settings):
    settings.JURY_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]  # the hosted APIs are refused
    local = EXAMPLES_BY_NAME["llama-cpp-smollm2"]
    hosted = EXAMPLES_BY_NAME["openai-gpt-4o-mini"]
    with pytest.raises(CommandError, match="JURY_ALLOWED_HOSTS"):
        call_command("load_judges", str(local), str(hosted))
    assert not Judge.objects.exists()  # the valid first file is not kept either


@pytest.mark.parametrize(
    "change, field",
    [
        ({"api_key_env": "SECRET_KEY"}, "api_key_env"),
        ({"structured_output": "tool"}, "structured_output"),
        ({"temperature": 0}, "temperature"),
    ],
)
def test_a_definition_the_admin_would_refuse_is_refused(change, field):
    data = {**json.loads(EXAMPLES_BY_NAME["llama-cpp-smollm2"].read_text()), **change}
    with pytest.raises(JuryError) as info:
        judge_from_definition(data)
    assert info.value.field == field


def test_the_pages_field_table_lists_exactly_what_a_definition_and_the_admin_set():
    table = DOC.split("### The fields of a definition", 1)
    assert len(table) == 2, "docs/judges.md has a section 'The fields of a definition'"
    rows = re.findall(r"^\| `(\w+)` \|", table[1].split("\n#", 1)[0], re.M)
    assert len(rows) == len(set(rows)), "a field is listed twice"
    assert set(rows) == set(JudgeAdminForm.base_fields)
