"""Finishing a study and releasing its consensus taxonomy as a new version."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import selectors as annotation_selectors
from annotation import services as annotation_services
from delphi import services
from delphi.models import DelphiStudy, Suggestion, TaxonomyVersion
from delphi.services import DelphiError
from tests.delphi.flow import (
    BASE_URL,
    answer_all,
    make_panel_study,
    run_round,
)
from tests.delphi.flow import THREE_LEVEL_TAXONOMY as TREE
from tests.factories import MEDHELM_CRITERIA

CONTESTED = [1, 9, 1, 9, 5, 5]  # 33% high, 33% low: no consensus under COMET
LOW = [1, 1, 2, 2, 1, 1]  # 100% rate 1-3: consensus out


def _two_rounds():
    """Round 1: Imaging contested, Treatment out (so Dosing under it cannot stay), Admin
    renamed at a panelist's suggestion; round 2: Imaging and Administration rated in."""
    built = make_panel_study(n_panelists=6, taxonomy=TREE)
    first, actor = built.round(1), built.coordinator
    services.open_round(round_=first, actor=actor, base_url=BASE_URL)
    admin = first.items.get(name="Admin")
    rename = services.add_suggestion(
        panelist=built.panelists[0],
        round_=first,
        kind="rename",
        text="spell it out",
        target_identity=admin.identity,
        details={"name": "Administration"},
    )
    answer_all(built, first, {"Imaging": CONTESTED, "Treatment": LOW})
    services.close_round(round_=first, actor=actor)
    services.triage_suggestion(suggestion=rename, actor=actor, accept=True, reason="clearer")
    services.analyse_round(round_=first, actor=actor)
    services.release_feedback(round_=first, actor=actor)
    second = services.start_next_round(study=built.study, actor=actor)
    assert sorted(second.items.values_list("name", flat=True)) == ["Administration", "Imaging"]
    run_round(built, second, {})
    return built


@pytest.mark.django_db
def test_release_keeps_consensus_in_nodes_with_identity_order_and_history():
    built = _two_rounds()
    study = services.finish_study(study=built.study, actor=built.coordinator)
    assert study.finished_reason.startswith("stopping rule met: ")
    summary = services.release_taxonomy(study=study, actor=built.coordinator, name="Consensus 2025")

    version = summary.version
    assert (version.status, version.source) == ("released", "delphi")
    assert version.derived_from == study.draft_taxonomy and version.released_at is not None
    study.refresh_from_db()
    assert study.status == "released" and study.released_taxonomy == version
    assert summary.included == 7
    assert summary.excluded == {
        "Treatment": "consensus out in round 1",
        "Dosing": "its parent 'Treatment' is not in the consensus taxonomy",
    }
    tree = services.version_tree(version)
    # The draft's order, not the round in which an item was last rated.
    assert [(c["name"], [s["name"] for s in c.get("children", [])]) for c in tree["nodes"]] == [
        ("Care", ["Diagnosis"]),
        ("Administration", ["Billing"]),
    ]
    draft = {n.name: n for n in study.draft_taxonomy.nodes.all()}
    released = {n.name: n for n in version.nodes.all()}
    assert set(released) == {
        "Care",
        "Diagnosis",
        "Differential",
        "Imaging",
        "Administration",
        "Billing",
        "Coding",
    }
    assert released["Administration"].identity == draft["Admin"].identity
    for name in ("Care", "Imaging", "Coding"):
        assert released[name].identity == draft[name].identity
    assert released["Imaging"].parent == released["Diagnosis"]
    assert [c.name for c in released["Diagnosis"].children.order_by("position")] == [
        "Differential",
        "Imaging",
    ]

    imaging = released["Imaging"].history
    assert [(h["round"], h["outcome"], h["n_rated"]) for h in imaging] == [
        (1, "no_consensus", 6),
        (2, "consensus_in", 6),
    ]
    assert imaging[0]["median"] == 5 and imaging[1]["median"] == 8
    admin = released["Administration"].history
    assert [(h["round"], h["name"], h["item_version"]) for h in admin] == [
        (1, "Admin", 1),
        (2, "Administration", 2),
    ]
    assert admin[1]["change_note"] == "Renamed from 'Admin' (clearer)"


@pytest.mark.django_db
def test_a_rating_study_can_file_items_under_the_released_version():
    built = _two_rounds()
    study = services.finish_study(study=built.study, actor=built.coordinator)
    version = services.release_taxonomy(
        study=study, actor=built.coordinator, name="Released"
    ).version
    rating = annotation_services.create_study(
        name="Rating on the consensus taxonomy",
        created_by=built.coordinator,
        criteria=MEDHELM_CRITERIA,
        taxonomy_version=version,
    )
    node = annotation_selectors.taxonomy_node_for(study=rating, name="Imaging")
    assert node is not None and node.version == version
    assert annotation_selectors.taxonomy_node_for(study=rating, name="Dosing") is None
    annotation_services.create_items(
        study=rating,
        actor=built.coordinator,
        rows=[
            annotation_services.ItemRow(
                external_id="c1",
                input_text="q",
                output_text="a",
                model_name="m",
                taxonomy_node_id=node.pk,
            )
        ],
    )
    assert rating.items.get().taxonomy_node == node


@pytest.mark.django_db
def test_finishing_early_needs_a_reason():
    built = make_panel_study(n_panelists=6)
    run_round(built, built.round(1), {"Diagnosis": CONTESTED})
    with pytest.raises(DelphiError, match=r"stopping rule is not met .*give the reason"):
        services.finish_study(study=built.study, actor=built.coordinator)
    study = services.finish_study(
        study=built.study, actor=built.coordinator, reason="funding ended"
    )
    assert study.status == "finished" and study.finished_at is not None
    assert study.finished_reason == "ended early by the coordinator: funding ended"
    with pytest.raises(DelphiError, match="cannot finish a study that is finished"):
        services.finish_study(study=study, actor=built.coordinator, reason="again")
    summary = services.release_taxonomy(study=study, actor=built.coordinator, name="Early")
    assert summary.excluded == {"Diagnosis": "no consensus in round 1"}


@pytest.mark.django_db
def test_release_needs_a_finished_study_and_a_free_name():
    built = make_panel_study(n_panelists=2)
    run_round(built, built.round(1), {})
    with pytest.raises(DelphiError, match="finish the study"):
        services.release_taxonomy(study=built.study, actor=built.coordinator, name="X")
    study = services.finish_study(study=built.study, actor=built.coordinator)
    with pytest.raises(DelphiError, match="give the released taxonomy version a name"):
        services.release_taxonomy(study=study, actor=built.coordinator, name=" ")
    with pytest.raises(DelphiError, match="'Small draft' exists already"):
        services.release_taxonomy(study=study, actor=built.coordinator, name="Small draft")
    assert DelphiStudy.objects.get(pk=study.pk).status == "finished"


@pytest.mark.django_db
def test_nothing_in_means_nothing_to_release():
    built = make_panel_study(n_panelists=6)
    everything_low = {name: LOW for name in built.round(1).items.values_list("name", flat=True)}
    run_round(built, built.round(1), everything_low)
    study = services.finish_study(study=built.study, actor=built.coordinator)
    with pytest.raises(DelphiError, match="no item reached consensus in"):
        services.release_taxonomy(study=study, actor=built.coordinator, name="Empty")
    assert not TaxonomyVersion.objects.filter(name="Empty").exists()


@pytest.mark.django_db
def test_unrated_categories_come_from_the_draft_when_a_child_is_in():
    built = make_panel_study(n_panelists=6, questions={"rate_kinds": ["subcategory"]})
    run_round(built, built.round(1), {"Scheduling": LOW, "Billing": LOW})
    study = services.finish_study(study=built.study, actor=built.coordinator)
    summary = services.release_taxonomy(study=study, actor=built.coordinator, name="Subs")
    names = {n.name: n for n in summary.version.nodes.all()}
    # Administration has no subcategory in, so it is not carried without content.
    assert set(names) == {"Clinical Decision Support", "Diagnosis", "Treatment"}
    assert names["Clinical Decision Support"].history == []
    assert names["Diagnosis"].parent == names["Clinical Decision Support"]


@pytest.mark.django_db
def test_deleted_items_are_excluded_with_the_triage_reason():
    built = make_panel_study(n_panelists=2, stopping_rule={"max_rounds": 1})
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    billing = first.items.get(name="Billing")
    suggestion = services.add_suggestion(
        panelist=built.panelists[0],
        round_=first,
        kind="delete",
        text="not clinical",
        target_identity=billing.identity,
    )
    answer_all(built, first, {})
    services.close_round(round_=first, actor=built.coordinator)
    services.triage_suggestion(
        suggestion=suggestion, actor=built.coordinator, accept=True, reason="out of scope"
    )
    assert Suggestion.objects.get().status == "accepted"
    services.analyse_round(round_=first, actor=built.coordinator)
    study = services.finish_study(study=built.study, actor=built.coordinator)
    summary = services.release_taxonomy(study=study, actor=built.coordinator, name="R")
    assert summary.excluded == {"Billing": "deleted: out of scope"}
    assert not summary.version.nodes.filter(name="Billing").exists()


@pytest.mark.django_db
def test_a_node_re_rated_later_keeps_its_place_in_the_tree():
    built = make_panel_study(n_panelists=2)
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    cds = first.items.get(name="Clinical Decision Support")
    rename = services.add_suggestion(
        panelist=built.panelists[0],
        round_=first,
        kind="rename",
        text="shorter",
        target_identity=cds.identity,
        details={"name": "Decision support"},
    )
    answer_all(built, first, {})
    services.close_round(round_=first, actor=built.coordinator)
    services.triage_suggestion(suggestion=rename, actor=built.coordinator, accept=True, reason="ok")
    services.analyse_round(round_=first, actor=built.coordinator)
    services.release_feedback(round_=first, actor=built.coordinator)
    # Every item reached consensus, but the new wording has not been rated yet.
    assert first.__class__.objects.get(pk=first.pk).stopping_decision["stop"] is True
    second = services.start_next_round(study=built.study, actor=built.coordinator)
    run_round(built, second, {})
    study = services.finish_study(study=built.study, actor=built.coordinator)
    version = services.release_taxonomy(study=study, actor=built.coordinator, name="R").version
    tree = services.version_tree(version)
    assert [(c["name"], [s["name"] for s in c["children"]]) for c in tree["nodes"]] == [
        ("Decision support", ["Diagnosis", "Treatment"]),
        ("Administration", ["Scheduling", "Billing"]),
    ]
    positions = {n.name: n.position for n in version.nodes.all()}
    # Positions count among siblings, as in an imported version.
    assert positions == {
        "Decision support": 0,
        "Administration": 1,
        "Diagnosis": 0,
        "Treatment": 1,
        "Scheduling": 0,
        "Billing": 1,
    }


LARGE_TREE = {
    "name": "Large",
    "categories": [
        {
            "name": f"Category {c}",
            "subcategories": [
                {"name": f"Sub {c}.{s}", "tasks": [f"Task {c}.{s}.{t}" for t in range(3)]}
                for s in range(3)
            ],
        }
        for c in range(3)
    ],
}


def _released_queries(taxonomy, name):
    built = make_panel_study(n_panelists=2, taxonomy=taxonomy, stopping_rule={"max_rounds": 1})
    run_round(built, built.round(1), {})
    study = services.finish_study(study=built.study, actor=built.coordinator)
    with CaptureQueriesContext(connection) as queries:
        summary = services.release_taxonomy(study=study, actor=built.coordinator, name=name)
    return summary.included, len(queries)


@pytest.mark.django_db
def test_release_takes_the_same_number_of_queries_whatever_the_tree_size():
    # Both trees have three levels: the writes are one bulk insert per level.
    small_nodes, small_queries = _released_queries(TREE, "Small consensus")
    DelphiStudy.objects.all().delete()
    get_user_model().objects.all().delete()
    large_nodes, large_queries = _released_queries(LARGE_TREE, "Large consensus")
    assert large_nodes > small_nodes
    assert large_queries == small_queries
