"""delphi.suggestions without a database: the plan of the next round, removed items, wording."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

from delphi import suggestions
from delphi.suggestions import Item, apply_suggestions


def uid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


@dataclass
class Round:
    number: int = 1


@dataclass
class Suggestion:
    kind: str
    target_identity: uuid.UUID | None = None
    details: dict[str, Any] = field(default_factory=dict)
    triage_reason: str = "ok"
    status: str = "accepted"
    round: Round = field(default_factory=Round)


# Care > Diagnosis > Differential; Care > Treatment; Admin > Billing
CARE, DIAGNOSIS, DIFFERENTIAL, TREATMENT, ADMIN, BILLING = (uid(n) for n in range(1, 7))
ITEMS = [
    Item(CARE, "category", None, "Care", "", 1),
    Item(DIAGNOSIS, "subcategory", CARE, "Diagnosis", "", 1),
    Item(DIFFERENTIAL, "task", DIAGNOSIS, "Differential", "", 2),
    Item(TREATMENT, "subcategory", CARE, "Treatment", "", 1),
    Item(ADMIN, "category", None, "Admin", "", 1),
    Item(BILLING, "subcategory", ADMIN, "Billing", "", 1),
]


def plan_of(*given: Suggestion) -> suggestions.Plan:
    counter = itertools.count(100)
    return apply_suggestions(ITEMS, given, new_identity=lambda: uid(next(counter)))


def by_name(plan: suggestions.Plan) -> dict[str, suggestions.PlannedItem]:
    return {item.name: item for item in plan.items}


def test_without_suggestions_every_item_carries_over_unchanged():
    plan = plan_of()
    assert [item.name for item in plan.items] == [item.name for item in ITEMS]
    assert all(not item.changed and item.change_note == "" for item in plan.items)
    assert by_name(plan)["Differential"].item_version == 2
    assert plan.removed == frozenset() and plan.added == ()


def test_rename_is_a_new_item_version_with_a_note():
    plan = plan_of(Suggestion("rename", TREATMENT, {"name": "Therapy"}, "clearer"))
    therapy = by_name(plan)["Therapy"]
    assert (therapy.identity, therapy.item_version, therapy.changed) == (TREATMENT, 2, True)
    assert therapy.change_note == "Renamed from 'Treatment' (clearer)"


def test_move_names_the_old_and_new_parent():
    plan = plan_of(Suggestion("move", BILLING, {"parent_identity": str(CARE)}, "care task"))
    billing = by_name(plan)["Billing"]
    assert billing.parent_identity == CARE and billing.item_version == 2
    assert billing.change_note == "Moved from 'Admin' to 'Care' (care task)"


def test_an_added_item_sits_after_its_parent_and_a_new_category_at_the_end():
    plan = plan_of(
        Suggestion(
            "add", details={"name": "Triage", "parent_identity": str(CARE)}, triage_reason="gap"
        ),
        Suggestion("add", details={"name": "Research", "kind": "category"}),
    )
    names = [item.name for item in plan.items]
    assert names == [
        "Care",
        "Triage",
        "Diagnosis",
        "Differential",
        "Treatment",
        "Admin",
        "Billing",
        "Research",
    ]
    triage = by_name(plan)["Triage"]
    assert (triage.kind, triage.item_version, triage.identity) == ("subcategory", 1, uid(100))
    assert triage.change_note == "Added at a panelist's suggestion (gap)"
    assert plan.added == (str(uid(100)), str(uid(101)))


def test_delete_removes_the_whole_branch():
    plan = plan_of(Suggestion("delete", CARE))
    assert [item.name for item in plan.items] == ["Admin", "Billing"]
    assert plan.removed == {str(CARE), str(DIAGNOSIS), str(DIFFERENTIAL), str(TREATMENT)}


def test_merge_moves_the_children_into_the_item_merged_into():
    plan = plan_of(Suggestion("merge", DIAGNOSIS, {"into_identity": str(TREATMENT)}, "overlap"))
    items = by_name(plan)
    assert "Diagnosis" not in items and plan.removed == {str(DIAGNOSIS)}
    assert items["Treatment"].change_note == "Merged with 'Diagnosis' (overlap)"
    assert items["Treatment"].item_version == 2
    differential = items["Differential"]
    assert differential.parent_identity == TREATMENT and differential.item_version == 3
    assert differential.change_note == (
        "moved under 'Treatment' as 'Diagnosis' merged into it (overlap)"
    )


def test_only_accepted_suggestions_about_items_of_the_round_apply():
    plan = plan_of(
        Suggestion("delete", CARE, status="rejected"),
        Suggestion("rename", uid(99), {"name": "Ghost"}),
    )
    assert [item.name for item in plan.items] == [item.name for item in ITEMS]


def test_carry_over_drops_resolved_items_unless_changed_or_re_rating_all():
    plan = plan_of(Suggestion("rename", TREATMENT, {"name": "Therapy"}))
    resolved = {str(CARE), str(TREATMENT), str(ADMIN)}
    dropped = [i.name for i in plan.to_rate(resolved=resolved, keep_resolved=False)]
    assert dropped == ["Diagnosis", "Differential", "Therapy", "Billing"]
    assert len(plan.to_rate(resolved=resolved, keep_resolved=True)) == len(ITEMS)


def test_removed_identities_say_how_and_why():
    removed = suggestions.removed_identities(
        [
            Suggestion("delete", BILLING, triage_reason="out of scope", round=Round(2)),
            Suggestion("merge", DIAGNOSIS, {"into_identity": str(TREATMENT)}, "overlap"),
            Suggestion("delete", ADMIN, status="rejected"),
            Suggestion("rename", CARE, {"name": "Clinical care"}),
        ]
    )
    assert set(removed) == {str(BILLING), str(DIAGNOSIS)}
    assert removed[str(BILLING)].summary == "deleted: out of scope"
    assert removed[str(BILLING)].explain() == "deleted after round 2: out of scope"
    merged = removed[str(DIAGNOSIS)]
    assert merged.into_identity == str(TREATMENT)
    assert merged.explain(into_name="Treatment") == "merged into 'Treatment' after round 1: overlap"
    assert merged.explain() == "merged after round 1: overlap"


def test_removed_ancestor_and_branches():
    parent_of = {
        str(i.identity): str(i.parent_identity) if i.parent_identity else None for i in ITEMS
    }
    assert suggestions.removed_ancestor(str(DIFFERENTIAL), {str(CARE)}, parent_of) == str(CARE)
    assert suggestions.removed_ancestor(str(BILLING), {str(CARE)}, parent_of) is None
    assert suggestions.removed_with_branches({str(DIAGNOSIS)}, parent_of) == {
        str(DIAGNOSIS),
        str(DIFFERENTIAL),
    }


def test_describe_suggestion():
    names = {str(i.identity): i.name for i in ITEMS}
    describe = suggestions.describe_suggestion
    assert describe(
        Suggestion("add", details={"name": "Triage", "parent_identity": str(CARE)}), names
    ) == ("add subcategory 'Triage' under 'Care'")
    assert describe(Suggestion("rename", TREATMENT, {"name": "Therapy"}), names) == (
        "rename 'Treatment' to 'Therapy'"
    )
    assert describe(Suggestion("move", BILLING, {"parent_identity": str(CARE)}), names) == (
        "move 'Billing' under 'Care'"
    )
    assert describe(Suggestion("merge", DIAGNOSIS, {"into_identity": str(uid(99))}), names) == (
        "merge 'Diagnosis' into 'an item no longer in the round'"
    )
    assert describe(Suggestion("delete", ADMIN), names) == "delete 'Admin'"
