"""The one check of what a database column stores of a user's text (NUL, lone surrogates,
max_length), and the model field it takes its limit from."""

from __future__ import annotations

import pytest

from delphi.errors import DelphiError
from delphi.models import TaxonomyNode
from medhelm_site.common.text_limits import (
    check_json_text,
    checked_column_text,
    checked_text,
    column_max_length,
    json_text_problem,
    text_problem,
)


def test_text_a_column_stores_passes_unchanged():
    text = "Ärztliche Dokumentation 医療 — $x$ \t\n"
    assert text_problem(text, max_length=len(text)) is None
    assert checked_text(text, field="name", max_length=len(text)) is text


@pytest.mark.parametrize(
    ("value", "max_length", "problem"),
    [
        ("a\x00b", None, r"contains a NUL character \(\\x00\)"),
        ("x" * 11, 10, "is 11 characters long; at most 10 fit"),
        ("ok \ud800", None, r"contains '\\ud800' at position 3, half of a character"),
        (42, None, "must be text, got int"),
    ],
)
def test_what_no_column_stores_is_named_with_the_field(value, max_length, problem):
    assert text_problem(value, max_length=max_length) is not None
    with pytest.raises(DelphiError, match=rf"^categories\[0\]\.name: {problem}") as raised:
        checked_text(
            value,
            field="taxonomy",
            error=DelphiError,
            max_length=max_length,
            where="categories[0].name",
        )
    assert raised.value.field == "taxonomy"


def test_the_limit_is_the_model_fields_own():
    limit = TaxonomyNode._meta.get_field("name").max_length
    assert column_max_length(TaxonomyNode, "name") == limit
    assert column_max_length(TaxonomyNode, "description") is None  # a TextField
    assert checked_column_text("n" * limit, model=TaxonomyNode, column="name") == "n" * limit
    with pytest.raises(DelphiError, match=f"^name: is {limit + 1} characters long") as raised:
        checked_column_text("n" * (limit + 1), model=TaxonomyNode, column="name", error=DelphiError)
    assert raised.value.field == "name"


def test_json_keys_and_strings_at_any_depth_are_checked():
    assert json_text_problem({"a": [1, 2.5, None, True, {"b": "fine"}]}, where="details") is None
    assert json_text_problem({"a": [{"b": "x\x00"}]}, where="details") == (
        "details.a[0].b: contains a NUL character (\\x00), which cannot be stored; remove it"
    )
    assert json_text_problem({"k\x00": 1}, where="params").startswith("params: a key contains")
    with pytest.raises(DelphiError, match=r"^details\.name: contains a NUL") as raised:
        check_json_text({"name": "\x00"}, field="details", error=DelphiError)
    assert raised.value.field == "details"


def test_a_deeply_nested_json_value_does_not_exhaust_the_stack():
    deep: list = ["\x00"]
    for _ in range(100_000):
        deep = [deep]
    problem = json_text_problem(deep, where="v")
    assert problem is not None and problem.endswith(
        "contains a NUL character (\\x00), which cannot be stored; remove it"
    )
