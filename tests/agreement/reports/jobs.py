"""Following a report job from the API's 202 to the report it made."""

from __future__ import annotations


def created_report(api, response) -> dict:
    """The report a 202 from the create or recompute endpoint led to, through its status URL
    (computed in the request here: tests/agreement/reports/conftest.py)."""
    assert response.status_code == 202, response.content
    state = response.json()
    assert response["Location"] == state["status_url"]
    status = api.get(state["status_url"]).json()
    assert status["status"] == "finished", status
    return api.get(status["report_url"]).json()
