"""The rating bench's check in the database: every submitted assignment has exactly one
complete rating per criterion and one audit row each, and the submitted set is the one the
clients were answered 200 for."""

from __future__ import annotations

from typing import Any

# Per submitted assignment: ratings, distinct criteria of this study, complete values.
BAD_ASSIGNMENTS = """
SELECT a.id, count(r.id), count(DISTINCT c.id),
       count(r.id) FILTER (WHERE r.value IS NOT NULL AND r.first_submitted_at IS NOT NULL)
FROM annotation_assignment a
LEFT JOIN annotation_rating r ON r.assignment_id = a.id
LEFT JOIN annotation_rubriccriterion c ON c.id = r.criterion_id AND c.study_id = a.study_id
WHERE a.study_id = %s AND a.status = 'submitted'
GROUP BY a.id
HAVING count(r.id) <> %s OR count(DISTINCT c.id) <> %s
    OR count(r.id) FILTER (WHERE r.value IS NOT NULL AND r.first_submitted_at IS NOT NULL) <> %s
"""


def integrity(url: str, study_id: int, ok_submits: set[str]) -> dict[str, Any]:
    """`ok_submits`: the handles of the assignments whose submit was answered 200."""
    import psycopg

    with psycopg.connect(url) as conn:
        n_criteria = conn.execute(
            "SELECT count(*) FROM annotation_rubriccriterion WHERE study_id = %s", (study_id,)
        ).fetchone()[0]
        submitted = {
            r[0]
            for r in conn.execute(
                "SELECT handle FROM annotation_assignment"
                " WHERE study_id = %s AND status = 'submitted'",
                (study_id,),
            )
        }
        bad = conn.execute(
            BAD_ASSIGNMENTS, (study_id, n_criteria, n_criteria, n_criteria)
        ).fetchall()
        stray = conn.execute(
            """SELECT count(*) FROM annotation_rating r JOIN annotation_assignment a
               ON a.id = r.assignment_id WHERE a.study_id = %s AND a.status <> 'submitted'""",
            (study_id,),
        ).fetchone()[0]
        audits = conn.execute(
            "SELECT count(*) FROM annotation_auditevent WHERE study_id = %s AND action = 'rating.submit'",
            (study_id,),
        ).fetchone()[0]
    return {
        "criteria": n_criteria,
        "submitted": len(submitted),
        "bad": bad,
        "stray_ratings": stray,
        "audit_rows": audits,
        "matches_client": submitted == ok_submits,
        "only_in_db": len(submitted - ok_submits),
        "only_in_client": len(ok_submits - submitted),
    }
