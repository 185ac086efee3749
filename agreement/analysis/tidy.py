"""The long score table as a tidy data set for R and pandas users: one row per item,
criterion and rater, with the item's attributes, the rater's composite for the item and its
within-rater z-score, and a data dictionary saying what every column holds."""

from __future__ import annotations

import pandas as pd

from agreement.stats import composite_scores, zscore_within_rater

#: column -> (type, what it holds), in file order: the data dictionary.
TIDY_COLUMNS: dict[str, tuple[str, str]] = {
    "report": ("integer", "The report (snapshot) id whose score table this is."),
    "item": ("integer", "The item's id in the study."),
    "external_id": ("string", "The item's id as imported (the study's own identifier)."),
    "model": ("string", "The model whose output was rated (hidden from the raters)."),
    "benchmark": ("string", "The item's benchmark; '(no benchmark)' where it has none."),
    "category": ("string", "The item's taxonomy category; '(no category)' where none."),
    "criterion": (
        "string",
        "The rubric criterion key; 'overall' for an automatic metric (one value per item).",
    ),
    "rater": (
        "string",
        "Who scored: a clinician's study pseudonym, a judge's name, 'jury', or a metric key.",
    ),
    "rater_kind": ("string", "clinician, judge, jury (the judges' weighted mean) or metric."),
    "value": ("number", "The score on the criterion's scale (a metric: its own scale)."),
    "composite": (
        "number",
        "The rater's composite for the item: the mean of its values over criteria "
        "(repeated on each criterion row of the item and rater).",
    ),
    "n_criteria": ("integer", "How many criterion values the composite averages."),
    "composite_z": (
        "number",
        "The composite z-scored within rater: (composite - rater mean) / rater SD (ddof = 1) "
        "over the items that have a clinician composite, as the report's All items row "
        "standardises; empty for items no clinician rated and for a rater with no SD there. "
        "Category and benchmark rows of the report standardise within their own items.",
    ),
}


def tidy_scores(table: pd.DataFrame, items: pd.DataFrame, *, report: int) -> pd.DataFrame:
    """``table`` (the long score table) with ``items``' external ids, the composites and
    their z-scores, in the columns of TIDY_COLUMNS, sorted by item, criterion, rater."""
    comp = composite_scores(table)
    rated = comp.loc[comp["rater_kind"] == "clinician", "item"].unique()
    on_rated = comp.loc[comp["item"].isin(rated)]
    z = zscore_within_rater(on_rated, on_degenerate="drop")[["item", "rater", "z"]]
    out = (
        table.merge(items[["item", "external_id"]], on="item", how="left")
        .merge(comp[["item", "rater", "composite", "n_criteria"]], on=["item", "rater"], how="left")
        .merge(z.rename(columns={"z": "composite_z"}), on=["item", "rater"], how="left")
    )
    out.insert(0, "report", report)
    out = out.sort_values(["item", "criterion", "rater"], kind="stable").reset_index(drop=True)
    return out.loc[:, list(TIDY_COLUMNS)]


def dictionary_rows() -> list[dict[str, str]]:
    """The data dictionary as rows: column, type, description."""
    return [
        {"column": name, "type": kind, "description": text}
        for name, (kind, text) in TIDY_COLUMNS.items()
    ]
