"""Study analyses on the long score table: MedHELM's Table 2 and per criterion
(comparison), the machine-minus-clinician differences, the leaderboard and the plots' data.
No database: pandas in, pandas out; every statistic comes from agreement.stats."""

from agreement.analysis.cells import CELL_COLUMNS, clinician_cell, difference_cell, machine_cell
from agreement.analysis.comparison import (
    DIFFERENCE_COLUMNS,
    Comparison,
    comparison_table,
    criteria_of,
    criterion_subset,
    machine_columns,
    row_subsets,
)
from agreement.analysis.leaderboard import COST_NOTES, Leaderboard, leaderboard
from agreement.analysis.plot_data import item_scores, plot_data
from agreement.analysis.settings import (
    CI_METHODS,
    CLINICIAN_COLUMN,
    DIFFERENCE_FORM,
    MACHINE_FORM,
    PAIRWISE_FORM,
    PAIRWISE_RULE,
    ROW_ALL,
    Settings,
)

__all__ = [
    "CELL_COLUMNS",
    "CI_METHODS",
    "CLINICIAN_COLUMN",
    "COST_NOTES",
    "DIFFERENCE_COLUMNS",
    "DIFFERENCE_FORM",
    "MACHINE_FORM",
    "PAIRWISE_FORM",
    "PAIRWISE_RULE",
    "ROW_ALL",
    "Comparison",
    "Leaderboard",
    "Settings",
    "clinician_cell",
    "comparison_table",
    "criteria_of",
    "criterion_subset",
    "difference_cell",
    "item_scores",
    "leaderboard",
    "machine_cell",
    "machine_columns",
    "plot_data",
    "row_subsets",
]
