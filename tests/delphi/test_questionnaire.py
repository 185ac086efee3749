"""What a panelist sees: the group's feedback, their own previous answer, anonymous comments."""

from __future__ import annotations

import dataclasses

import pytest

from delphi import selectors, services
from delphi.models import Round
from tests.delphi.flow import BASE_URL, make_panel_study

DIAGNOSIS = [1, 9, 1, 9, 5, 5]
COMMENTS = {0: "zebra: too broad", 3: "apple: keep it", 5: ""}


def _answer_round_1(built, first):
    """P01..P05 submit (P06 only drafts, with a comment that must never be shown)."""
    for i, panelist in enumerate(built.panelists):
        answers = {}
        for item in first.items.all():
            rating = DIAGNOSIS[i] if item.name == "Diagnosis" else 8
            comment = COMMENTS.get(i, "") if item.name == "Diagnosis" else ""
            answers[str(item.pk)] = {"rating": rating, "placement_agrees": True, "comment": comment}
        if i == 5:
            answers[str(first.items.get(name="Diagnosis").pk)]["comment"] = "draft: P06 was here"
            services.save_answers(panelist=panelist, round_=first, answers=answers)
        else:
            services.submit_round(
                panelist=panelist, round_=first, answers=answers, comprehensiveness=4
            )


@pytest.fixture
def two_rounds(db):
    built = make_panel_study(n_panelists=6, stopping_rule={"max_rounds": 3})
    first, actor = built.round(1), built.coordinator
    services.open_round(round_=first, actor=actor, base_url=BASE_URL)
    billing = first.items.get(name="Billing")
    rename = services.add_suggestion(
        panelist=built.panelists[1],
        round_=first,
        kind="rename",
        text="broader",
        target_identity=billing.identity,
        details={"name": "Billing and coding"},
    )
    _answer_round_1(built, first)
    services.close_round(round_=first, actor=actor)
    services.triage_suggestion(suggestion=rename, actor=actor, accept=True, reason="broader")
    services.analyse_round(round_=first, actor=actor)
    services.release_feedback(round_=first, actor=actor)
    second = services.start_next_round(study=built.study, actor=actor)
    services.open_round(round_=second, actor=actor, base_url=BASE_URL)
    return built, second


@pytest.mark.django_db
def test_round_1_has_no_feedback():
    built = make_panel_study(n_panelists=1)
    services.open_round(round_=built.round(1), actor=built.coordinator, base_url=BASE_URL)
    view = selectors.questionnaire(panelist=built.panelists[0], round_=built.round(1))
    assert [q.item.name for q in view][:2] == ["Clinical Decision Support", "Diagnosis"]
    assert all(q.feedback is None and q.previous_name == "" for q in view)


@pytest.mark.django_db
def test_feedback_shows_group_statistics_and_own_previous_answer(two_rounds):
    built, second = two_rounds
    view = {
        q.item.name: q for q in selectors.questionnaire(panelist=built.panelists[1], round_=second)
    }
    assert list(view) == ["Diagnosis", "Billing and coding"]
    feedback = view["Diagnosis"].feedback
    assert feedback.round_number == 1
    # Submitted ratings 1 9 1 9 5 (P06 never submitted): median 5, 2 of 5 high = 40%.
    stats = feedback.statistics
    shown = {
        "group": stats.group,
        "n_invited": stats.n_invited,
        "n_rated": stats.n_rated,
        "median": stats.median,
        "pct_high": stats.pct_high,
    }
    assert shown == {"group": "", "n_invited": 6, "n_rated": 5, "median": 5, "pct_high": 40}
    assert (feedback.own_rating, feedback.own_unable) == (9, False)
    other = selectors.questionnaire(panelist=built.panelists[0], round_=second)
    assert other[0].feedback.own_rating == 1
    # P06 did not submit round 1: no previous answer of theirs to show.
    late = selectors.questionnaire(panelist=built.panelists[5], round_=second)
    assert late[0].feedback.own_rating is None


@pytest.mark.django_db
def test_comments_are_anonymous_and_only_from_submitted_answers(two_rounds):
    built, second = two_rounds
    view = selectors.questionnaire(panelist=built.panelists[2], round_=second)
    comments = view[0].feedback.comments
    # Sorted by text, not by who wrote them; empty comments and drafts are left out.
    assert comments == ["apple: keep it", "zebra: too broad"]
    # Nothing in the feedback names or points to a panelist.
    fields = {f.name for f in dataclasses.fields(view[0].feedback)}
    assert fields == {"round_number", "statistics", "own_rating", "own_unable", "comments"}
    assert all(isinstance(comment, str) for comment in comments)


@pytest.mark.django_db
def test_previous_wording_is_shown_for_changed_items(two_rounds):
    built, second = two_rounds
    view = {
        q.item.name: q for q in selectors.questionnaire(panelist=built.panelists[0], round_=second)
    }
    changed = view["Billing and coding"]
    assert changed.item.item_version == 2 and changed.previous_name == "Billing"
    assert changed.item.change_note == "Renamed from 'Billing' (broader)"
    assert view["Diagnosis"].previous_name == ""
    # Billing was resolved in round 1 (all 8): its feedback is the old wording's statistics.
    assert changed.feedback.statistics.round_item.name == "Billing"
    assert changed.feedback.statistics.outcome == "consensus_in"


@pytest.mark.django_db
def test_no_feedback_before_it_is_released(two_rounds):
    built, second = two_rounds
    Round.objects.filter(pk=built.round(1).pk).update(status=Round.Status.ANALYSED)
    view = selectors.questionnaire(panelist=built.panelists[0], round_=second)
    assert all(q.feedback is None for q in view)
    assert all(q.previous_name == "" for q in view)


@pytest.mark.django_db
def test_the_saved_draft_is_the_panelists_own(two_rounds):
    built, second = two_rounds
    item = second.items.get(name="Diagnosis")
    services.save_answers(
        panelist=built.panelists[0], round_=second, answers={str(item.pk): {"rating": 6}}
    )
    mine = selectors.questionnaire(panelist=built.panelists[0], round_=second)
    theirs = selectors.questionnaire(panelist=built.panelists[1], round_=second)
    assert mine[0].response.rating == 6
    assert theirs[0].response is None


@pytest.mark.django_db
def test_placement_categories_follow_the_taxonomy_as_it_stands():
    built = make_panel_study(
        n_panelists=6, questions={"placement": "choose"}, stopping_rule={"max_rounds": 3}
    )
    first, actor = built.round(1), built.coordinator
    services.open_round(round_=first, actor=actor, base_url=BASE_URL)
    categories = {i.name: i.identity for i in first.items.filter(kind="category")}
    cds = str(categories["Clinical Decision Support"])
    delete = services.add_suggestion(
        panelist=built.panelists[0],
        round_=first,
        kind="delete",
        text="not clinical",
        target_identity=categories["Administration"],
    )
    for i, panelist in enumerate(built.panelists):
        answers = {
            str(item.pk): {
                "rating": DIAGNOSIS[i] if item.name == "Diagnosis" else 8,
                "placement_choice": cds,
            }
            for item in first.items.all()
        }
        services.submit_round(panelist=panelist, round_=first, answers=answers, comprehensiveness=3)
    services.close_round(round_=first, actor=actor)
    services.triage_suggestion(suggestion=delete, actor=actor, accept=True, reason="agreed")
    services.analyse_round(round_=first, actor=actor)
    services.release_feedback(round_=first, actor=actor)
    second = services.start_next_round(study=built.study, actor=actor)
    services.open_round(round_=second, actor=actor, base_url=BASE_URL)
    # The resolved category is not re-rated but is still a place to put Diagnosis; the deleted
    # one is gone.
    assert [i.name for i in second.items.all()] == ["Diagnosis"]
    assert selectors.placement_categories(round_=second) == {
        categories["Clinical Decision Support"]: "Clinical Decision Support"
    }
    key = str(second.items.get().pk)
    elsewhere = {key: {"placement_choice": str(categories["Administration"])}}
    with pytest.raises(services.DelphiError, match="not a category of this taxonomy"):
        services.save_answers(panelist=built.panelists[0], round_=second, answers=elsewhere)
    entry = services.submit_round(
        panelist=built.panelists[0],
        round_=second,
        answers={key: {"rating": 5, "placement_choice": cds}},
        comprehensiveness=3,
    )
    assert entry.status == "submitted"
