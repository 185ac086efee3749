"""Study analyses on the long score table: MedHELM's Table 2 and per criterion
(comparison), the machine-minus-clinician differences, the leaderboard and the plots' data.
No database: pandas in, pandas out; every statistic comes from agreement.stats."""

from agreement.analysis.cells import (
    ALPHA_COLUMNS,
    CELL_COLUMNS,
    NOT_ESTIMABLE,
    clinician_cell,
    machine_cell,
)
from agreement.analysis.comparison import (
    DIFFERENCE_COLUMNS,
    Comparison,
    comparison_table,
    criteria_of,
    criterion_subset,
    machine_columns,
    row_subsets,
)
from agreement.analysis.difference_cells import difference_cell
from agreement.analysis.leaderboard import COST_NOTES, Leaderboard, leaderboard
from agreement.analysis.plot_data import item_scores, plot_data
from agreement.analysis.sensitivity import (
    SENSITIVITY_COLUMNS,
    WITHOUT_RULE,
    Sensitivity,
    headline_sensitivity,
    sensitivity_line,
)
from agreement.analysis.settings import (
    ALPHA_FORM,
    BCA_ACCELERATION,
    CI_METHODS,
    CLINICIAN_COLUMN,
    CLINICIAN_FORM_CHOICES,
    CLINICIAN_FORM_RULE,
    DEFAULT_MAX_CI_WIDTH,
    DIFFERENCE_FORM,
    FITTED_CI_METHOD,
    MACHINE_FORM,
    PAIRWISE_FORM,
    PAIRWISE_RULE,
    ROW_ALL,
    RULE_NOT_APPLIED,
    RULE_NOT_APPLIED_RECORD,
    Settings,
    clinician_form_rule,
)
from agreement.analysis.tidy import TIDY_COLUMNS, dictionary_rows, tidy_scores

__all__ = [
    "ALPHA_COLUMNS",
    "ALPHA_FORM",
    "BCA_ACCELERATION",
    "CELL_COLUMNS",
    "CI_METHODS",
    "CLINICIAN_COLUMN",
    "CLINICIAN_FORM_CHOICES",
    "CLINICIAN_FORM_RULE",
    "COST_NOTES",
    "DEFAULT_MAX_CI_WIDTH",
    "DIFFERENCE_COLUMNS",
    "DIFFERENCE_FORM",
    "FITTED_CI_METHOD",
    "MACHINE_FORM",
    "NOT_ESTIMABLE",
    "PAIRWISE_FORM",
    "PAIRWISE_RULE",
    "ROW_ALL",
    "RULE_NOT_APPLIED",
    "RULE_NOT_APPLIED_RECORD",
    "SENSITIVITY_COLUMNS",
    "TIDY_COLUMNS",
    "WITHOUT_RULE",
    "Comparison",
    "Leaderboard",
    "Sensitivity",
    "Settings",
    "clinician_cell",
    "clinician_form_rule",
    "comparison_table",
    "criteria_of",
    "criterion_subset",
    "dictionary_rows",
    "difference_cell",
    "headline_sensitivity",
    "item_scores",
    "leaderboard",
    "machine_cell",
    "machine_columns",
    "plot_data",
    "row_subsets",
    "sensitivity_line",
    "tidy_scores",
]
