"""Taxonomies and the Delphi studies that bring a clinician panel to consensus on them."""

from delphi.models.rounds import (
    PanelistRound,
    Response,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
)
from delphi.models.studies import DelphiAuditEvent, DelphiCoordinator, DelphiStudy, Panelist
from delphi.models.taxonomy import TaxonomyNode, TaxonomyVersion

__all__ = [
    "DelphiAuditEvent",
    "DelphiCoordinator",
    "DelphiStudy",
    "Panelist",
    "PanelistRound",
    "Response",
    "Round",
    "RoundItem",
    "RoundItemStatistics",
    "Suggestion",
    "TaxonomyNode",
    "TaxonomyVersion",
]
