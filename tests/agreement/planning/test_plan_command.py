"""manage.py plan_study: the same answers as the planners, errors naming the input."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from agreement.stats.planning import bonett_items, exact_items, walter_items


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("plan_study", *args, stdout=out)
    return out.getvalue()


def test_precision_prints_n_and_source() -> None:
    text = run("precision", "--rho", "0.85", "--k", "4", "--width", "0.2")
    assert text.startswith("n = 20 items (19.15 unrounded)")
    assert "Bonett (2002)" in text


def test_precision_without_the_small_k_correction() -> None:
    plain = json.loads(
        run(
            "precision",
            "--rho",
            "0.8",
            "--k",
            "2",
            "--width",
            "0.2",
            "--no-small-k-correction",
            "--json",
        )
    )
    corrected = json.loads(run("precision", "--rho", "0.8", "--k", "2", "--width", "0.2", "--json"))
    assert plain["sizes"][0]["n_items"] == 51
    assert corrected["sizes"][0]["n_items"] == bonett_items(0.8, 2, 0.2).n_items == 55


def test_power_gives_walter_and_exact() -> None:
    body = json.loads(
        run("power", "--rho0", "0.5", "--rho1", "0.7", "--k", "3", "--tails", "2", "--json")
    )
    walter, exact = body["sizes"]
    assert walter["n_items"] == walter_items(0.5, 0.7, 3, tails=2).n_items
    assert exact["n_items"] == exact_items(0.5, 0.7, 3, tails=2).n_items
    assert "Walter" in walter["source"] and "two-sided" in walter["notes"][0]


def test_simulate_is_seeded() -> None:
    args = (
        "simulate", "--item-sd", "1", "--rater-sd", "0.2", "--error-sd", "0.8",
        "--n-items", "30", "--raters-per-item", "3", "--n-raters", "3",
        "--form", "ICC(A,1)", "--n-studies", "40", "--seed", "9", "--json",
    )  # fmt: skip
    first, second = json.loads(run(*args)), json.loads(run(*args))
    first.pop("seconds"), second.pop("seconds")
    assert first == second
    assert first["estimator"].startswith("agreement.stats.icc, ICC(A,1)")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("power", "--rho0", "0.8", "--rho1", "0.7", "--k", "2"), "rho1: must be above rho0"),
        (("precision", "--rho", "1.2", "--k", "3", "--width", "0.2"), "rho: Ensure"),
        (("difference", "--rho-low", "0.9", "--difference", "0.2", "--k-low", "2", "--k-high", "2"),
         "difference: must be above 0 and below"),
        (("simulate", "--item-sd", "1", "--rater-sd", "0", "--error-sd", "1", "--n-items", "30",
          "--raters-per-item", "4", "--n-raters", "3"), "raters_per_item: cannot exceed"),
    ],
)  # fmt: skip
def test_errors_name_the_input(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run(*args)
