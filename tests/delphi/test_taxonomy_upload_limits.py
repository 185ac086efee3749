"""An uploaded taxonomy that the database cannot store (a NUL character, a name longer than
its column) or that no parser should follow (JSON nested thousands deep, a CSV cell over the
csv module's limit) is a TaxonomyFormatError naming the place, on every database, and no
version is written.

SQLite stores such names silently; PostgreSQL raises a DataError (a 500). These tests run
on both: `DATABASE_URL=postgres://... pytest tests/delphi/test_taxonomy_upload_limits.py`.
"""

from __future__ import annotations

import json

import pytest

from delphi import services
from delphi.models import TaxonomyNode, TaxonomyVersion
from delphi.services import TaxonomyFormatError
from medhelm_site.common.text_limits import column_max_length

NODE_NAME = column_max_length(TaxonomyNode, "name")
VERSION_NAME = column_max_length(TaxonomyVersion, "name")


def _tree(**changes):
    tree = {
        "name": "Uploaded",
        "categories": [
            {"name": "Care", "subcategories": ["Diagnosis", {"name": "Treatment", "tasks": []}]}
        ],
    }
    tree.update(changes)
    return tree


def _parse(filename: str, content: str | bytes):
    data = content.encode() if isinstance(content, str) else content
    return services.parse_taxonomy_file(filename=filename, content=data)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("tree", "message"),
    [
        (
            _tree(
                categories=[{"name": "Care", "subcategories": ["Diagnosis", "x" * (NODE_NAME + 1)]}]
            ),
            rf"^categories\[0\]\.subcategories\[1\]\.name: is {NODE_NAME + 1} characters long; "
            rf"at most {NODE_NAME} fit",
        ),
        (
            _tree(name="v" * (VERSION_NAME + 1)),
            rf"^taxonomy\.name: is {VERSION_NAME + 1} characters long; at most {VERSION_NAME}",
        ),
        (
            _tree(categories=[{"name": "Ca\x00re"}]),
            r"^categories\[0\]\.name: contains a NUL character",
        ),
        (
            _tree(
                categories=[
                    {"name": "Care", "subcategories": [{"name": "D", "description": "a\x00"}]}
                ]
            ),
            r"^categories\[0\]\.subcategories\[0\]\.description: contains a NUL character",
        ),
        (
            _tree(categories=[{"name": "Care", "subcategories": [{"name": "D", "tasks": "T"}]}]),
            r"^categories\[0\]\.subcategories\[0\]\.tasks: must be a list",
        ),
    ],
    ids=["node-name-too-long", "version-name-too-long", "nul-name", "nul-description", "shape"],
)
def test_a_tree_the_database_cannot_store_is_refused_whole(tree, message):
    parsed = _parse("draft.json", json.dumps(tree))
    with pytest.raises(TaxonomyFormatError, match=message):
        services.create_taxonomy_version(tree=parsed, source="import")
    assert not TaxonomyVersion.objects.exists()
    # The same check without writing, for forms.
    with pytest.raises(TaxonomyFormatError, match=message):
        services.checked_taxonomy_tree(parsed)


@pytest.mark.django_db
def test_a_name_exactly_as_long_as_its_column_is_kept_whole():
    longest = "x" * NODE_NAME
    version = services.create_taxonomy_version(
        tree=_tree(name="v" * VERSION_NAME, categories=[{"name": longest}]), source="import"
    )
    assert version.name == "v" * VERSION_NAME
    assert version.nodes.get().name == longest


@pytest.mark.django_db
def test_a_category_given_as_a_bare_name_is_a_category_without_subcategories():
    version = services.create_taxonomy_version(
        tree=_parse("draft.json", json.dumps(_tree(categories=["Only a name"]))), source="import"
    )
    assert list(version.nodes.values_list("name", "kind")) == [("Only a name", "category")]


def test_deeply_nested_json_is_a_format_error_not_a_crash():
    with pytest.raises(TaxonomyFormatError, match=r"^draft\.json: the JSON is nested too deeply"):
        _parse("draft.json", '{"name": "x", "categories": ' + "[" * 100_000 + "]" * 100_000 + "}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "category,subcategory,task\nCare,Diagnosis,Diff\x00erential\n",
            r"^draft\.csv, line 2, column task: contains a NUL character",
        ),
        (
            f"category,subcategory\nCare,{'s' * (NODE_NAME + 1)}\n",
            rf"^draft\.csv, line 2, column subcategory: is {NODE_NAME + 1} characters long",
        ),
        (
            f"category,subcategory\nCare,Diagnosis\nCare,{'s' * 200_000}\n",
            # The csv module's cap is process-wide and the item import raises it, so which
            # check speaks first depends on what ran before; either names line 3.
            r"^draft\.csv, line 3(: field larger than field limit"
            rf"|, column subcategory: is 200000 characters long; at most {NODE_NAME} fit)",
        ),
    ],
    ids=["nul", "too-long", "over-the-csv-field-limit"],
)
def test_csv_cells_the_database_cannot_store_name_their_line_and_column(text, message):
    with pytest.raises(TaxonomyFormatError, match=message):
        _parse("draft.csv", text)
