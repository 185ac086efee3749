"""Exports of a Delphi study: the locked protocol, the flow of panelists, the item x round
table, every change to an item, anonymised comments, long-format raw data, the stored
statistics, between-round stability, a prefilled ACCORD / CREDES checklist and the report.

data.py loads one bundle (`StudyData`); tables.py and answer_tables.py build the CSV
tables from it; protocol_text.py states the protocol in words; checklist.py fills the
checklist; report.py, report_text.py and charts.py draw the report; registry.py maps an
export name to its renderer. Only counted answers appear, and panelists by pseudonym only.
"""

from delphi.exports.protocol_text import describe_stopping_rule
from delphi.exports.registry import EXPORT_NAMES, render_export

__all__ = ["EXPORT_NAMES", "describe_stopping_rule", "render_export"]
