"""A panelist's answers: drafts, validation, submission, reasons outside the IQR, suggestions."""

from __future__ import annotations

import pytest

from delphi import services, suggestions
from delphi.models import PanelistRound, Response, Suggestion
from delphi.services import DelphiError
from tests.delphi.flow import BASE_URL, answer_all, make_panel_study, run_round


def _open(built, number=1):
    return services.open_round(
        round_=built.round(number), actor=built.coordinator, base_url=BASE_URL
    )


def _items(round_):
    return {item.name: item for item in round_.items.all()}


def _complete(round_, **extra):
    """A complete answer for every item of the round."""
    return {str(i.pk): {"rating": 8, "placement_agrees": True, **extra} for i in round_.items.all()}


@pytest.fixture
def open_study(db):
    built = make_panel_study(n_panelists=3)
    _open(built)
    return built


# --------------------------------------------------------------------------- drafts


@pytest.mark.django_db
def test_drafts_save_partial_answers(open_study):
    round_, panelist = open_study.round(1), open_study.panelists[0]
    items = _items(round_)
    entry = services.save_answers(
        panelist=panelist, round_=round_, answers={str(items["Diagnosis"].pk): {"rating": "7"}}
    )
    assert entry.status == "started" and entry.started_at is not None
    services.save_answers(
        panelist=panelist,
        round_=round_,
        answers={str(items["Billing"].pk): {"unable": "on", "comment": " unclear "}},
        comprehensiveness="3",
    )
    saved = {r.round_item.name: r for r in Response.objects.filter(panelist=panelist)}
    assert saved["Diagnosis"].rating == 7 and saved["Diagnosis"].is_draft
    assert saved["Billing"].unable_to_rate and saved["Billing"].rating is None
    assert saved["Billing"].comment == "unclear"
    entry.refresh_from_db()
    assert entry.comprehensiveness == 3 and entry.status == "started"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"rating": 10}, r"answers\['Treatment'\]\.rating: must be a whole number 1-9, got 10"),
        ({"rating": "7.5"}, r"answers\['Treatment'\]\.rating: must be a whole number 1-9"),
        ({"rating": True}, r"answers\['Treatment'\]\.rating"),
        ({"rating": 5, "unable": True}, r"answers\['Treatment'\]: give a rating or"),
        ({"placement_agrees": "perhaps"}, r"answers\['Treatment'\]\.placement_agrees"),
        ({"placement_choice": "not-a-uuid"}, r"answers\['Treatment'\]\.placement_choice"),
        ({"stars": 3}, r"answers\['Treatment'\]: unknown key\(s\) \['stars'\]"),
        ({"comment": "x" * 5001}, r"answers\['Treatment'\]: comment and reason are limited"),
    ],
)
def test_one_bad_answer_saves_none_and_names_the_item(open_study, bad, message):
    round_, panelist = open_study.round(1), open_study.panelists[0]
    items = _items(round_)
    answers = {str(items["Diagnosis"].pk): {"rating": 8}, str(items["Treatment"].pk): bad}
    with pytest.raises(DelphiError, match=message):
        services.save_answers(panelist=panelist, round_=round_, answers=answers)
    assert not Response.objects.filter(panelist=panelist).exists()
    assert PanelistRound.objects.get(panelist=panelist, round=round_).status == "invited"


@pytest.mark.django_db
def test_a_placement_outside_the_categories_saves_nothing(open_study):
    round_, panelist = open_study.round(1), open_study.panelists[0]
    items = _items(round_)
    answers = {
        str(items["Diagnosis"].pk): {"rating": 8},
        # A subcategory is not a category: refused, and Diagnosis is not saved either.
        str(items["Treatment"].pk): {"placement_choice": str(items["Billing"].identity)},
    }
    with pytest.raises(DelphiError, match=r"answers\['Treatment'\]\.placement_choice"):
        services.save_answers(panelist=panelist, round_=round_, answers=answers)
    assert not Response.objects.filter(panelist=panelist).exists()


@pytest.mark.django_db
def test_items_of_another_round_are_refused(open_study):
    other = make_panel_study(
        n_panelists=0, lock=True, taxonomy={"name": "Other", "categories": [{"name": "X"}]}
    )
    foreign = other.round(1).items.get()
    with pytest.raises(DelphiError, match=rf"answers\[{foreign.pk}\]: no such item in round 1"):
        services.save_answers(
            panelist=open_study.panelists[0],
            round_=open_study.round(1),
            answers={str(foreign.pk): {"rating": 5}},
        )


@pytest.mark.django_db
def test_comprehensiveness_is_1_to_5(open_study):
    for value in (0, 6, "4.5", "x"):
        with pytest.raises(DelphiError, match="comprehensiveness: must be a whole number 1-5"):
            services.save_answers(
                panelist=open_study.panelists[0],
                round_=open_study.round(1),
                answers={},
                comprehensiveness=value,
            )


# --------------------------------------------------------------------------- submission


@pytest.mark.django_db
def test_submit_needs_every_question_the_protocol_asks(open_study):
    round_, panelist = open_study.round(1), open_study.panelists[0]
    items = _items(round_)
    answers = _complete(round_)
    answers[str(items["Diagnosis"].pk)] = {"rating": 8}  # no placement answer
    answers[str(items["Billing"].pk)] = {"placement_agrees": "no"}  # no rating
    # Categories have no parent: no placement question for them.
    answers[str(items["Administration"].pk)] = {"unable": True}
    with pytest.raises(DelphiError) as error:
        services.submit_round(panelist=panelist, round_=round_, answers=answers)
    problems = str(error.value)
    assert "round 1 is not complete" in problems
    assert "Diagnosis: say whether it belongs under its parent" in problems
    assert "Billing: no rating" in problems
    assert "comprehensiveness of the whole taxonomy: not rated" in problems
    assert "Administration" not in problems
    assert PanelistRound.objects.get(panelist=panelist, round=round_).status != "submitted"
    # What was given is kept as a draft, so nothing typed is lost.
    kept = Response.objects.get(panelist=panelist, round_item=items["Diagnosis"])
    assert kept.rating == 8 and kept.is_draft

    answers[str(items["Diagnosis"].pk)]["placement_agrees"] = "yes"
    answers[str(items["Billing"].pk)]["rating"] = 2
    entry = services.submit_round(
        panelist=panelist, round_=round_, answers=answers, comprehensiveness=5
    )
    assert entry.status == "submitted" and entry.submitted_at is not None
    assert not Response.objects.filter(panelist=panelist, is_draft=True).exists()


@pytest.mark.django_db
def test_submit_follows_the_question_settings():
    built = make_panel_study(
        n_panelists=1,
        questions={"placement": "none", "comprehensiveness": False, "comments": True},
    )
    round_ = _open(built)
    ratings_only = {str(i.pk): {"rating": 5} for i in round_.items.all()}
    entry = services.submit_round(panelist=built.panelists[0], round_=round_, answers=ratings_only)
    assert entry.status == "submitted" and entry.comprehensiveness is None


@pytest.mark.django_db
def test_choose_placement_needs_a_category_for_each_subcategory():
    built = make_panel_study(n_panelists=1, questions={"placement": "choose"})
    round_ = _open(built)
    items = _items(round_)
    answers = {str(i.pk): {"rating": 8} for i in items.values()}
    with pytest.raises(DelphiError, match="Diagnosis: choose its category"):
        services.submit_round(
            panelist=built.panelists[0], round_=round_, answers=answers, comprehensiveness=4
        )
    admin = str(items["Administration"].identity)
    for item in items.values():
        if item.kind == "subcategory":
            answers[str(item.pk)]["placement_choice"] = admin
    services.submit_round(
        panelist=built.panelists[0], round_=round_, answers=answers, comprehensiveness=4
    )
    saved = Response.objects.get(round_item=items["Diagnosis"])
    assert str(saved.placement_choice) == admin


@pytest.mark.django_db
def test_unable_to_rate_only_when_offered():
    built = make_panel_study(n_panelists=1, questions={"allow_unable_to_rate": False})
    round_ = _open(built)
    item = _items(round_)["Diagnosis"]
    with pytest.raises(
        DelphiError, match=r"answers\['Diagnosis'\]: 'unable to rate' is not offered"
    ):
        services.save_answers(
            panelist=built.panelists[0], round_=round_, answers={str(item.pk): {"unable": True}}
        )


@pytest.mark.django_db
def test_comments_only_when_asked():
    built = make_panel_study(n_panelists=1, questions={"comments": False})
    round_ = _open(built)
    item = _items(round_)["Diagnosis"]
    with pytest.raises(
        DelphiError, match=r"answers\['Diagnosis'\]: this study asks for no comments"
    ):
        services.save_answers(
            panelist=built.panelists[0],
            round_=round_,
            answers={str(item.pk): {"rating": 4, "comment": "too broad"}},
        )
    # An empty comment field, as a form sends it, is fine.
    services.save_answers(
        panelist=built.panelists[0],
        round_=round_,
        answers={str(item.pk): {"rating": 4, "comment": ""}},
    )


@pytest.mark.django_db
def test_answers_are_final_after_submit_and_when_the_round_closes(open_study):
    round_ = open_study.round(1)
    first, second = open_study.panelists[:2]
    services.submit_round(
        panelist=first, round_=round_, answers=_complete(round_), comprehensiveness=4
    )
    with pytest.raises(DelphiError, match="submitted round 1 already"):
        services.save_answers(panelist=first, round_=round_, answers=_complete(round_))
    with pytest.raises(DelphiError, match="submitted round 1 already"):
        services.add_suggestion(
            panelist=first,
            round_=round_,
            kind="add",
            text="x",
            details={"name": "New", "kind": "category"},
        )
    services.close_round(round_=round_, actor=open_study.coordinator)
    with pytest.raises(DelphiError, match="round 1 is closed, not open"):
        services.save_answers(panelist=second, round_=round_, answers=_complete(round_))


@pytest.mark.django_db
def test_a_round_not_yet_open_and_a_withdrawn_panelist_are_refused():
    built = make_panel_study(n_panelists=2)
    round_ = built.round(1)
    with pytest.raises(DelphiError, match="round 1 is draft, not open"):
        services.save_answers(panelist=built.panelists[0], round_=round_, answers={})
    _open(built)
    services.withdraw_panelist(panelist=built.panelists[1], actor=built.coordinator)
    with pytest.raises(DelphiError, match="withdrawn from this panel"):
        services.save_answers(panelist=built.panelists[1], round_=round_, answers={})


# --------------------------------------------------------------------------- reason outside IQR


def _round_two(ask_reason: bool):
    """Round 2 open with "Diagnosis" carried over: its round-1 ratings 1, 2, 8, 8, 9, 9 give
    (numpy linear) Q1 = 2 + 0.25 * 6 = 3.5 and Q3 = 8 + 0.75 * 1 = 8.75; 4 of 6 rate 7-9 =
    66.7% < 70, so no consensus under COMET. Every other item is rated 8 by all (resolved)."""
    built = make_panel_study(n_panelists=6, ask_reason_outside_iqr=ask_reason)
    run_round(built, built.round(1), {"Diagnosis": [1, 2, 8, 8, 9, 9]})
    round_2 = services.start_next_round(study=built.study, actor=built.coordinator)
    _open(built, 2)
    return built, round_2


@pytest.mark.django_db
def test_reason_needed_only_for_a_rating_outside_the_previous_iqr():
    built, round_2 = _round_two(ask_reason=True)
    item = round_2.items.get()
    assert item.name == "Diagnosis"
    assert services.previous_iqr(round_item=item) == (3.5, 8.75)
    key = str(item.pk)

    def submit(panelist, answer):
        return services.submit_round(
            panelist=panelist,
            round_=round_2,
            answers={key: {"placement_agrees": True, **answer}},
            comprehensiveness=4,
        )

    with pytest.raises(
        DelphiError, match=r"rating 3 is outside the panel's IQR 3\.5\u20138\.75 \(5\.25\)"
    ):
        submit(built.panelists[0], {"rating": 3})
    with pytest.raises(DelphiError, match=r"rating 9 is outside"):
        submit(built.panelists[1], {"rating": 9})
    submit(built.panelists[0], {"rating": 3, "reason": "it is rarely done by clinicians"})
    submit(built.panelists[1], {"rating": 4})  # inside: no reason asked
    submit(built.panelists[2], {"rating": 8})
    submit(built.panelists[3], {"unable": True})  # no rating, nothing to explain


@pytest.mark.django_db
def test_no_reason_asked_when_the_study_does_not_ask():
    built, round_2 = _round_two(ask_reason=False)
    item = round_2.items.get()
    entry = services.submit_round(
        panelist=built.panelists[0],
        round_=round_2,
        answers={str(item.pk): {"rating": 1, "placement_agrees": True}},
        comprehensiveness=4,
    )
    assert entry.status == "submitted"


# --------------------------------------------------------------------------- suggestions


@pytest.mark.django_db
def test_suggestions_are_checked_and_stored(open_study):
    round_, panelist = open_study.round(1), open_study.panelists[0]
    items = {name: str(item.identity) for name, item in _items(round_).items()}

    def suggest(what, target=None, **details):
        return services.add_suggestion(
            panelist=panelist,
            round_=round_,
            kind=what,
            text="because",
            target_identity=target,
            details=details,
        )

    # Each rule is tested without a database in test_suggestion_checks.py.
    with pytest.raises(DelphiError, match="kind must be one of"):
        suggest("split")
    with pytest.raises(DelphiError, match="needs its rationale"):
        services.add_suggestion(
            panelist=panelist,
            round_=round_,
            kind="delete",
            text=" ",
            target_identity=items["Billing"],
        )
    assert not Suggestion.objects.exists()

    added = suggest(
        "add",
        name=" Triage ",
        kind="subcategory",
        parent_identity=items["Clinical Decision Support"],
    )
    assert added.details == {
        "name": "Triage",
        "kind": "subcategory",
        "parent_identity": items["Clinical Decision Support"],
    }
    assert added.status == "pending" and added.target_identity is None
    moved = suggest("move", items["Billing"], parent_identity=items["Clinical Decision Support"])
    assert str(moved.target_identity) == items["Billing"]
    suggest("merge", items["Billing"], into_identity=items["Scheduling"])
    suggest("delete", items["Treatment"])
    assert Suggestion.objects.count() == 4


@pytest.mark.django_db
def test_only_round_1_collects_suggestions():
    built, round_2 = _round_two(ask_reason=False)
    item = round_2.items.get()
    with pytest.raises(DelphiError, match="round 2 does not collect suggestions"):
        services.add_suggestion(
            panelist=built.panelists[0],
            round_=round_2,
            kind="delete",
            text="why",
            target_identity=item.identity,
        )


@pytest.mark.django_db
def test_answer_all_helper_submits_everyone(open_study):
    answer_all(open_study, open_study.round(1), {})
    assert set(
        PanelistRound.objects.filter(round=open_study.round(1)).values_list("status", flat=True)
    ) == {"submitted"}


def test_the_pure_suggestion_rules_know_the_models_kinds():
    assert list(suggestions.DETAIL_KEYS) == Suggestion.Kind.values
    assert suggestions.ACCEPTED == Suggestion.Status.ACCEPTED
