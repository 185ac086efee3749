"""delphi.suggestions.check_suggestion without a database: each rule, its message and field."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from delphi.errors import DelphiError
from delphi.suggestions import check_suggestion


@dataclass(frozen=True)
class Node:
    identity: uuid.UUID
    kind: str


CARE, DIAGNOSIS, ADMIN, BILLING, SCHEDULING = (str(uuid.UUID(int=n)) for n in range(1, 6))
ITEMS = {
    CARE: Node(uuid.UUID(CARE), "category"),
    DIAGNOSIS: Node(uuid.UUID(DIAGNOSIS), "subcategory"),
    ADMIN: Node(uuid.UUID(ADMIN), "category"),
    BILLING: Node(uuid.UUID(BILLING), "subcategory"),
    SCHEDULING: Node(uuid.UUID(SCHEDULING), "subcategory"),
}


def check(what, target=None, text="because", **details):
    return check_suggestion(
        kind=what, text=text, target_identity=target, details=details, items=ITEMS
    )


@pytest.mark.parametrize(
    ("what", "target", "details", "message", "field"),
    [
        ("split", None, {}, "kind must be one of", "kind"),
        ("add", None, {"kind": "subcategory"}, "give the new item's name", "name"),
        ("add", None, {"name": "X", "kind": "leaf"}, "kind must be category, subcategory", "kind"),
        (
            "add",
            None,
            {"name": "X", "kind": "subcategory", "parent_identity": BILLING},
            "parent_identity must be a category",
            "parent_identity",
        ),
        (
            "add",
            None,
            {"name": "X", "kind": "category", "parent_identity": BILLING},
            "a category has no parent",
            "parent_identity",
        ),
        ("rename", None, {}, "needs the item it is about", "target_identity"),
        ("rename", BILLING, {}, "give the new name", "name"),
        ("rename", BILLING, {"colour": "red"}, r"does not take \['colour'\]", "details"),
        (
            "move",
            ADMIN,
            {"parent_identity": DIAGNOSIS},
            "a category has no parent to move from",
            "target_identity",
        ),
        (
            "move",
            BILLING,
            {"parent_identity": DIAGNOSIS},
            "parent_identity must be a category",
            "parent_identity",
        ),
        (
            "merge",
            BILLING,
            {"into_identity": ADMIN},
            "another item of the same kind",
            "into_identity",
        ),
        (
            "merge",
            BILLING,
            {"into_identity": BILLING},
            "another item of the same kind",
            "into_identity",
        ),
        ("delete", str(uuid.UUID(int=99)), {}, "needs the item", "target_identity"),
    ],
)
def test_each_rule_names_its_field(what, target, details, message, field):
    with pytest.raises(DelphiError, match=message) as error:
        check(what, target, **details)
    assert error.value.field == field


def test_a_suggestion_needs_its_rationale():
    with pytest.raises(DelphiError, match="needs its rationale") as error:
        check("delete", BILLING, text=" ")
    assert error.value.field == "text"


def test_a_checked_suggestion_is_stripped_and_typed():
    added = check("add", text=" why ", name=" Triage ", kind="subcategory", parent_identity=CARE)
    assert added.details == {"name": "Triage", "kind": "subcategory", "parent_identity": CARE}
    assert (added.target_identity, added.text) == (None, "why")
    # Empty details count as not given; a new item is a subcategory unless said otherwise.
    default = check("add", name="Triage", parent_identity=CARE, description="")
    assert default.details == {"name": "Triage", "parent_identity": CARE, "kind": "subcategory"}
    moved = check("move", BILLING, parent_identity=CARE)
    assert moved.target_identity == uuid.UUID(BILLING)
    assert check("merge", BILLING, into_identity=SCHEDULING).kind == "merge"
