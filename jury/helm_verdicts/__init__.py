"""Importing the MedHELM jury's own verdicts from a HELM run as judge scores.

reading.py finds the verdicts in the run's request states, saving.py stores them all or
nothing, importing.py ties the two to the item import's reading of the same run.
"""

from jury.helm_verdicts.importing import import_helm_verdicts, import_suite_verdicts
from jury.helm_verdicts.report import JUDGE_PREFIX, HelmVerdictReport
from jury.helm_verdicts.saving import AUDIT_ACTION

__all__ = [
    "AUDIT_ACTION",
    "JUDGE_PREFIX",
    "HelmVerdictReport",
    "import_helm_verdicts",
    "import_suite_verdicts",
]
