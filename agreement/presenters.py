"""What the report page draws around its stored body (agreement.services.report_page): the
header, which depends on the reader and on later snapshots, so it is rendered per request,
for the page and for the PDF typeset from the page."""

from __future__ import annotations

from typing import Any

from agreement import plots, selectors
from agreement.models import ReportSnapshot
from annotation.models import RatingStudy


def header_context(*, study: RatingStudy, snapshot: ReportSnapshot) -> dict[str, Any]:
    """Everything agreement/report.html draws outside the stored body (the viewer's role
    aside)."""
    return {
        "study": study,
        "snapshot": snapshot,
        "created_by": selectors.member_pseudonyms(study=study).get(
            snapshot.created_by_id, plots.DASH
        ),
        "later": selectors.recomputation_ids(snapshot=snapshot),
        "judge_notes": selectors.judges_with_notes(study=study),
    }
