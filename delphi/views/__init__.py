"""Pages of the Delphi app. The coordinator's: setup, panelists, rounds, release, exports
(helpers shared by them in coordinator.py). The panel's: join, panel (the questionnaire)."""
