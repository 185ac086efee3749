"""The coordinator's panel page: invitation errors, renewing a link, withdrawing a panelist."""

from __future__ import annotations

import pytest
from django.core import mail

from delphi.models import DelphiAuditEvent
from tests.delphi.coordinator.pages import post
from tests.delphi.flow import make_panel_study


@pytest.mark.django_db
def test_panel_invite_errors_renew_and_withdraw(client, django_capture_on_commit_callbacks):
    built = make_panel_study(n_panelists=1, lock=False)
    study = built.study
    client.force_login(built.coordinator)
    url = f"/delphi/{study.pk}/panel/"
    response = client.post(url, {"email": "panelist0@example.org"})
    assert response.status_code == 200
    assert "Panelist0@example.org is already on the panel" in response.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        post(client, url, {"email": "late@example.org", "stakeholder_group": "nurse"})
    late = study.panelists.get(email="late@example.org")
    first_link = mail.outbox[-1].body
    with django_capture_on_commit_callbacks(execute=True):
        shown = post(client, f"{url}{late.pk}/renew/")
    assert shown == ["A new link went to late@example.org; the old one no longer works."]
    assert mail.outbox[-1].body != first_link
    # Someone who joined logs in as usual: no new link.
    joined = built.panelists[0]
    assert post(client, f"{url}{joined.pk}/renew/") == [
        "P01 has already joined; they log in as usual"
    ]
    shown = post(client, f"{url}{joined.pk}/withdraw/", {"reason": "Moved abroad."})
    assert shown == ["P01 withdrawn; answers already submitted stay in their rounds."]
    event = DelphiAuditEvent.objects.get(action="panelist.withdraw")
    assert event.reason == "Moved abroad." and event.actor == built.coordinator
    assert client.post(f"{url}999999/withdraw/").status_code == 404  # not on this panel
