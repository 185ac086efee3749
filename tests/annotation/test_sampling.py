"""The pure sampler (annotation.sampling): allocation, proportionality, determinism, pairing."""

from __future__ import annotations

import pytest

from annotation.sampling import SamplingError, Unit, draw, largest_remainder, parse_quotas

MODELS = ("gpt", "llama", "mistral")


def units(
    cases_by_category: dict[str, int], *, models=MODELS, missing: dict[str, set] | None = None
) -> list[Unit]:
    """Cases per category, each answered by every model (unless ``missing`` says otherwise)."""
    out, next_id = [], 1
    for category, n in cases_by_category.items():
        for i in range(n):
            case = f"{category}-{i:03d}"
            for model in models:
                if model in (missing or {}).get(case, set()):
                    continue
                out.append(
                    Unit(
                        item_id=next_id,
                        case=case,
                        model=model,
                        values={
                            "category": category,
                            "subcategory": f"{category}.sub{i % 2}",
                            "model": model,
                            "benchmark": "b",
                        },
                    )
                )
                next_id += 1
    return out


def test_largest_remainder_hamilton_example():
    # exact shares need no rounding, then one unit handed out by the largest remainder
    assert largest_remainder({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    # exact shares 4.29, 2.57, 0.14: floors sum to 6, the one left goes to b (0.57)
    assert largest_remainder({"a": 60, "b": 36, "c": 2}, 7) == {"a": 4, "b": 3, "c": 0}


@pytest.mark.parametrize("total", [0, 1, 7, 33, 97, 150])
def test_proportional_counts_sum_to_total_and_stay_within_a_quota_of_the_exact_share(total):
    populations = {"a": 71, "b": 13, "c": 44, "d": 22}
    counts = largest_remainder(populations, total)
    assert sum(counts.values()) == total
    size = sum(populations.values())
    for label, n in counts.items():
        exact = total * populations[label] / size
        assert abs(n - exact) < 1
        assert n <= populations[label]


def test_total_larger_than_population_is_refused():
    with pytest.raises(SamplingError, match="more than the 5 units"):
        largest_remainder({"a": 2, "b": 3}, 6)


def test_paired_draw_takes_every_model_of_each_drawn_case():
    pool = units({"Diagnosis": 20, "Notes": 10})
    result = draw(pool, keys=["category", "model"], seed=5, total=9)
    by_id = {u.item_id: u for u in pool}
    cases = {}
    for item_id in result.item_ids:
        cases.setdefault(by_id[item_id].case, set()).add(by_id[item_id].model)
    assert len(cases) == 9  # counted in cases, the model left out of the strata
    assert all(models == set(MODELS) for models in cases.values())
    assert {s.label: s.drawn for s in result.strata} == {"Diagnosis": 6, "Notes": 3}
    assert {s.label: s.drawn_items for s in result.strata} == {"Diagnosis": 18, "Notes": 9}
    assert result.unpaired_cases == ()


def test_a_model_stratum_of_a_paired_draw_is_said_to_be_balanced_by_the_pairing():
    # asked for, it is not silently dropped: the draw records and words the balance
    pool = units({"Diagnosis": 20, "Notes": 10}, missing={"Notes-000": {"llama"}})
    asked = draw(pool, keys=["category", "model"], seed=5, total=30)
    assert asked.keys == ("category",) and asked.model_by_pairing
    assert asked.model_note == (
        "Model is not a stratum of a paired draw: each drawn case brings the output of every "
        "model, so the 3 models are balanced by construction (each answers the same 30 drawn "
        "cases), except 1 case that lacks a model."
    )
    not_asked = draw(pool, keys=["category"], seed=5, total=30)
    assert not not_asked.model_by_pairing and not_asked.model_note == ""
    unpaired = draw(pool, keys=["category", "model"], seed=5, total=30, paired=False)
    assert unpaired.keys == ("category", "model") and unpaired.model_note == ""


def test_paired_draw_prefers_complete_cases_and_names_the_incomplete_ones():
    missing = {"Notes-000": {"llama"}, "Notes-001": {"llama", "gpt"}}
    pool = units({"Notes": 4}, missing=missing)
    result = draw(pool, keys=["category"], seed=1, total=2)
    assert result.unpaired_cases == ()  # the two complete cases come first
    everything = draw(pool, keys=["category"], seed=1, total=4)
    assert sorted(everything.unpaired_cases) == [
        ("Notes", "Notes-000", ("llama",)),
        ("Notes", "Notes-001", ("gpt", "llama")),
    ]


def test_unpaired_draw_stratifies_by_model_and_counts_items():
    pool = units({"Diagnosis": 10, "Notes": 10})
    result = draw(pool, keys=["category", "model"], seed=3, total=12, paired=False)
    assert len(result.strata) == 6
    assert all(s.drawn == 2 and s.drawn_items == 2 for s in result.strata)
    assert len(result.item_ids) == 12


def test_same_seed_same_items_other_seed_other_items_input_order_irrelevant():
    pool = units({"Diagnosis": 40, "Notes": 25})
    first = draw(pool, keys=["category"], seed=42, total=20)
    again = draw(list(reversed(pool)), keys=["category"], seed=42, total=20)
    other = draw(pool, keys=["category"], seed=43, total=20)
    assert first.item_ids == again.item_ids
    assert first.item_ids != other.item_ids


def test_a_stratum_draw_does_not_depend_on_the_other_strata():
    pool = units({"Diagnosis": 40, "Notes": 25})
    only_diagnosis = [u for u in pool if u.values["category"] == "Diagnosis"]
    both = draw(pool, keys=["category"], seed=9, quotas={"Diagnosis": 5, "Notes": 0})
    alone = draw(only_diagnosis, keys=["category"], seed=9, quotas={"Diagnosis": 5})
    assert both.item_ids == alone.item_ids


def test_quota_above_a_stratum_size_names_the_stratum():
    pool = units({"Diagnosis": 4, "Notes": 3})
    with pytest.raises(SamplingError, match=r"stratum 'Notes' is more than its 3 units"):
        draw(pool, keys=["category"], seed=1, quotas={"Diagnosis": 2, "Notes": 4})


def test_quota_for_an_unknown_stratum_lists_the_known_ones():
    pool = units({"Diagnosis": 4})
    with pytest.raises(SamplingError, match=r"no stratum named 'Dx'.*Diagnosis"):
        draw(pool, keys=["category"], seed=1, quotas={"Dx": 1})


def test_quotas_leave_unnamed_strata_out_and_two_keys_join_labels():
    pool = units({"Diagnosis": 6})
    result = draw(
        pool, keys=["category", "subcategory"], seed=2, quotas={"Diagnosis / Diagnosis.sub0": 2}
    )
    assert {s.label: s.drawn for s in result.strata} == {
        "Diagnosis / Diagnosis.sub0": 2,
        "Diagnosis / Diagnosis.sub1": 0,
    }


def test_unknown_key_and_missing_rule_are_refused():
    with pytest.raises(SamplingError, match="unknown stratum key colour"):
        draw([], keys=["colour"], seed=1, total=0)
    with pytest.raises(SamplingError, match="either a total or quotas"):
        draw([], keys=["category"], seed=1)


def test_parse_quotas_reads_label_equals_n_and_names_bad_lines():
    assert parse_quotas("A / x = 3\n\nB=0\n") == {"A / x": 3, "B": 0}
    with pytest.raises(SamplingError, match="line 2: 'three' is not a whole number"):
        parse_quotas("A = 1\nB = three")
    with pytest.raises(SamplingError, match="line 1: write it as"):
        parse_quotas("just a label")


def test_the_sampler_imports_no_django():
    import subprocess
    import sys

    code = (
        "import sys, annotation.sampling; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
