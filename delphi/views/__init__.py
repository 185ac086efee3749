"""Pages of the Delphi app, one module per audience: coordinator (set-up, panel, rounds,
exports) and panel (joining, the questionnaire)."""
