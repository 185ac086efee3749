"""Setting a Delphi study up: protocol validation, locking, round 1, taxonomy import."""

from __future__ import annotations

import json

import pytest

from delphi import services
from delphi.models import DelphiAuditEvent, DelphiStudy, TaxonomyVersion
from delphi.protocol import protocol_hash
from delphi.services import DelphiError, TaxonomyFormatError
from tests.delphi.flow import SMALL_TAXONOMY, make_panel_study
from tests.factories import UserFactory

TREE_WITH_TASKS = {
    "name": "With tasks",
    "categories": [
        {
            "name": "B-category",
            "subcategories": [
                {"name": "B1", "tasks": ["B1-t1", "B1-t2"]},
                {"name": "B2", "tasks": [{"name": "B2-t1", "description": "d"}]},
            ],
        },
        {"name": "A-category", "subcategories": [{"name": "A1", "tasks": ["A1-t1"]}]},
    ],
}


@pytest.fixture
def draft(db):
    return services.create_taxonomy_version(tree=SMALL_TAXONOMY, source="import")


@pytest.fixture
def coordinator(db):
    return UserFactory(username="coord")


# --------------------------------------------------------------------------- validation


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "names"),
    [
        ({"questions": {"rate_kinds": ["leaf"]}}, "rate_kinds"),
        ({"questions": {"placement": "maybe"}}, "placement"),
        ({"questions": {"comments": "yes"}}, "comments"),
        ({"questions": {"colour": True}}, "colour"),
        ({"consensus_rule": {"preset": "comet_70_15", "oppose_pct_below": 90}}, "oppose_pct_below"),
        ({"consensus_rule": {"op": "and", "rules": [{"preset": "nope"}]}}, r"rules\[0\]\.preset"),
        ({"consensus_rule": {"preset": "median_iqr", "min_n": 0}}, "min_n"),
        ({"stopping_rule": {"max_rounds": 0}}, "max_rounds"),
        ({"stopping_rule": {"until": "tired"}}, "until"),
        ({"carry_over": "keep_some"}, "carry_over"),
        ({"title": "  "}, "title"),
        ({"panel_size": 12}, "panel_size"),
    ],
)
def test_protocol_errors_name_the_bad_key_and_change_nothing(draft, coordinator, changes, names):
    study = services.create_delphi_study(title="T", draft_taxonomy=draft, created_by=coordinator)
    before = DelphiStudy.objects.values().get(pk=study.pk)
    # DelphiError, so that pages catching the services' one error type catch these too.
    with pytest.raises(DelphiError, match=names):
        services.update_protocol(study=study, actor=coordinator, changes=changes)
    assert DelphiStudy.objects.values().get(pk=study.pk) == before


@pytest.mark.django_db
def test_create_refuses_a_bad_rule_with_the_services_error(draft, coordinator):
    with pytest.raises(DelphiError, match=r"rule\.pct_at_least"):
        services.create_delphi_study(
            title="T",
            draft_taxonomy=draft,
            created_by=coordinator,
            consensus_rule={"preset": "percent_agreement", "pct_at_least": 40},
        )
    assert not DelphiStudy.objects.exists()


@pytest.mark.django_db
def test_update_normalises_and_audits(draft, coordinator):
    study = services.create_delphi_study(title="T", draft_taxonomy=draft, created_by=coordinator)
    services.update_protocol(
        study=study,
        actor=coordinator,
        changes={
            "questions": {"rate_kinds": ["task", "category"]},
            "consensus_rule": {
                "op": "or",
                "min_n": 3,
                "rules": [{"preset": "median_iqr"}, {"preset": "percent_agreement"}],
            },
        },
    )
    study.refresh_from_db()
    # Kinds in tree order, defaults of the other questions filled in.
    assert study.questions["rate_kinds"] == ["category", "task"]
    assert study.questions["placement"] == "agree"
    # Thresholds written out so the locked rule does not depend on code defaults.
    assert study.consensus_rule["rules"][0] == {
        "preset": "median_iqr",
        "min_n": 1,
        "median_at_least": 7,
        "iqr_at_most": 1,
        "out_median_at_most": 3,
    }
    event = DelphiAuditEvent.objects.get(study=study, action="protocol.update")
    assert event.actor == coordinator
    assert event.before["consensus_rule"] == {
        "preset": "comet_70_15",
        "min_n": 1,
        "agree_pct_at_least": 70,
        "oppose_pct_below": 15,
    }


@pytest.mark.django_db
def test_a_taxonomy_without_nodes_cannot_be_the_draft(coordinator):
    empty = TaxonomyVersion.objects.create(name="Empty")
    with pytest.raises(DelphiError, match=r"Empty.*no nodes"):
        services.create_delphi_study(title="T", draft_taxonomy=empty, created_by=coordinator)


@pytest.mark.django_db
def test_draft_from_medhelm_fixture_or_an_earlier_version(draft, coordinator):
    medhelm = services.ensure_medhelm_taxonomy()
    study = services.create_delphi_study(title="T", draft_taxonomy=medhelm, created_by=coordinator)
    services.set_draft_taxonomy(study=study, actor=coordinator, taxonomy=draft)
    study.refresh_from_db()
    assert study.draft_taxonomy == draft
    assert study.coordinators.get().user == coordinator


# --------------------------------------------------------------------------- locking


@pytest.mark.django_db
def test_lock_stores_the_document_and_its_sha256():
    built = make_panel_study(n_panelists=2)
    study = DelphiStudy.objects.get(pk=built.study.pk)
    assert study.status == DelphiStudy.Status.LOCKED
    assert study.protocol_locked_at is not None
    assert len(study.protocol_hash) == 64
    assert study.protocol_hash == protocol_hash(study.protocol_document)
    document = study.protocol_document
    assert document["title"] == "Consensus on a small taxonomy"
    assert document["consensus_rule"]["preset"] == "comet_70_15"
    assert document["stopping_rule"] == {"max_rounds": 3, "all_resolved": True}
    assert document["statistics"] == {"quantile_method": "linear", "min_group_raters": 5}
    names = [n["name"] for n in document["taxonomy_draft"]["nodes"]]
    assert names == ["Clinical Decision Support", "Administration"]
    # The stored document survives a JSON round trip unchanged: what was hashed is stored.
    assert json.loads(json.dumps(document)) == document
    event = DelphiAuditEvent.objects.get(study=study, action="protocol.lock")
    assert event.after == {"protocol_hash": study.protocol_hash, "round_1_items": 6}


@pytest.mark.django_db
def test_after_locking_nothing_of_the_protocol_changes():
    built = make_panel_study(n_panelists=1)
    draft = services.create_taxonomy_version(tree=TREE_WITH_TASKS, source="import")
    study, actor = built.study, built.coordinator
    for changes in ({"title": "New"}, {"consensus_rule": {"preset": "rand_ucla"}}):
        with pytest.raises(DelphiError, match="locked"):
            services.update_protocol(study=study, actor=actor, changes=changes)
    with pytest.raises(DelphiError, match="locked"):
        services.set_draft_taxonomy(study=study, actor=actor, taxonomy=draft)
    with pytest.raises(DelphiError, match="locked"):
        services.lock_protocol(study=study, actor=actor)
    study.refresh_from_db()
    assert study.title == "Consensus on a small taxonomy"
    assert study.rounds.count() == 1
    # The locked document is what current_protocol_document returns from now on.
    assert services.current_protocol_document(study) == study.protocol_document


@pytest.mark.django_db
def test_round_1_items_follow_rate_kinds_in_tree_order():
    built = make_panel_study(
        n_panelists=1, taxonomy=TREE_WITH_TASKS, questions={"rate_kinds": ["subcategory", "task"]}
    )
    first = built.round(1)
    assert first.collects_suggestions and first.status == "draft"
    items = list(first.items.order_by("position"))
    # Depth first by position; categories not rated, so not items.
    assert [(i.name, i.kind) for i in items] == [
        ("B1", "subcategory"),
        ("B1-t1", "task"),
        ("B1-t2", "task"),
        ("B2", "subcategory"),
        ("B2-t1", "task"),
        ("A1", "subcategory"),
        ("A1-t1", "task"),
    ]
    assert [i.position for i in items] == list(range(7))
    nodes = {n.name: n for n in built.study.draft_taxonomy.nodes.all()}
    for item in items:
        node = nodes[item.name]
        assert item.identity == node.identity
        assert item.parent_identity == node.parent.identity
        assert item.item_version == 1
    assert nodes["B2-t1"].description == "d" == first.items.get(name="B2-t1").description


# --------------------------------------------------------------------------- import


def _parse(filename: str, text: str, **kwargs):
    return services.parse_taxonomy_file(filename=filename, content=text.encode(), **kwargs)


@pytest.mark.django_db
def test_json_import_round_trips_into_a_version():
    tree = _parse("draft.json", json.dumps(TREE_WITH_TASKS), name="Renamed")
    version = services.create_taxonomy_version(tree=tree, source="import")
    assert version.name == "Renamed" and version.source == "import"
    assert version.nodes.filter(kind="task").count() == 4
    subs = version.nodes.get(name="B-category").children.order_by("position")
    assert [s.name for s in subs] == ["B1", "B2"]


@pytest.mark.django_db
def test_csv_import_groups_rows_into_the_tree():
    text = (
        "Category,Subcategory,Task,Description\n"
        "Care,Diagnosis,Differential,list causes\n"
        "Care,Diagnosis,Triage,\n"
        "Care,Treatment,,\n"
        "Admin,,,\n"
    )
    tree = _parse("panel draft.csv", text)
    assert tree == {
        "name": "panel draft",
        "categories": [
            {
                "name": "Care",
                "subcategories": [
                    {
                        "name": "Diagnosis",
                        "tasks": [
                            {"name": "Differential", "description": "list causes"},
                            {"name": "Triage", "description": ""},
                        ],
                    },
                    {"name": "Treatment", "tasks": []},
                ],
            },
            {"name": "Admin", "subcategories": []},
        ],
    }
    version = services.create_taxonomy_version(tree=tree, source="import")
    assert version.nodes.count() == 6


@pytest.mark.parametrize(
    ("filename", "text", "message"),
    [
        ("t.json", '{"name": "x",\n "categories": [}', r"t\.json: invalid JSON at line 2, column"),
        ("t.json", "[1, 2]", r"t\.json: the top level must be a JSON object"),
        ("t.csv", "category,subcategory\nA,B\n,C\n", r"t\.csv, line 3, column category: empty"),
        (
            "t.csv",
            "category,subcategory,task\nA,B,x\nA,,y\n",
            r"t\.csv, line 3, column subcategory: a task needs its subcategory",
        ),
        (
            "t.csv",
            "category,task\nA,x\n",
            r"t\.csv: the header needs the column\(s\) \['subcategory'\]",
        ),
        (
            "t.csv",
            "category,subcategory,owner\nA,B,me\n",
            r"t\.csv: unknown column\(s\) \['owner'\]",
        ),
        ("t.csv", "category,subcategory\n", r"t\.csv: no rows"),
        ("t.xlsx", "x", r"t\.xlsx: give a \.json or \.csv file"),
    ],
)
def test_import_errors_name_file_line_and_column(filename, text, message):
    with pytest.raises(TaxonomyFormatError, match=message):
        _parse(filename, text)


def test_import_refuses_non_utf8():
    with pytest.raises(TaxonomyFormatError, match=r"t\.csv: not UTF-8 text .* at byte 8"):
        services.parse_taxonomy_file(filename="t.csv", content=b"category\xff,x")


@pytest.mark.django_db
def test_json_tree_errors_name_the_place_and_save_nothing():
    tree = _parse(
        "t.json",
        json.dumps(
            {
                "name": "Bad",
                "categories": [
                    {"name": "A", "subcategories": [{"name": "S", "tasks": [{"name": ""}]}]}
                ],
            }
        ),
    )
    with pytest.raises(
        TaxonomyFormatError, match=r"categories\[0\]\.subcategories\[0\]\.tasks\[0\]"
    ):
        services.create_taxonomy_version(tree=tree, source="import")
    assert not TaxonomyVersion.objects.filter(name="Bad").exists()


@pytest.mark.django_db
def test_a_taken_version_name_is_a_format_error_not_a_crash(draft):
    with pytest.raises(TaxonomyFormatError, match="'Small draft' exists already"):
        services.create_taxonomy_version(tree=SMALL_TAXONOMY, source="import")
    assert TaxonomyVersion.objects.filter(name="Small draft").count() == 1
