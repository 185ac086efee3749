"""The home page lists Delphi studies by the user's role in them."""

from __future__ import annotations

import pytest

from tests.delphi.flow import make_panel_study


@pytest.mark.django_db
def test_home_lists_delphi_studies_by_role(client):
    built = make_panel_study(n_panelists=1)
    client.force_login(built.coordinator)
    page = client.get("/").content.decode()
    assert f'href="/delphi/{built.study.pk}/"' in page
    client.force_login(built.panelists[0].user)
    page = client.get("/").content.decode()
    assert f'href="/delphi/{built.study.pk}/round/"' in page
    assert f'href="/delphi/{built.study.pk}/"' not in page
