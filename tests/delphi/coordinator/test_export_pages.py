"""The export downloads: unknown names 404, a refused export is a 400 page, a file downloads."""

from __future__ import annotations

import pytest

from delphi import services


@pytest.mark.django_db
def test_exports_unknown_names_404_and_service_errors_400(client, setup_study):
    study = setup_study.study
    client.force_login(setup_study.coordinator)
    assert client.get(f"/delphi/{study.pk}/export/nothing.csv").status_code == 404
    response = client.get(f"/delphi/{study.pk}/export/protocol.json")  # not locked yet
    assert response.status_code == 400
    assert 'data-testid="export-error"' in response.content.decode()
    services.lock_protocol(study=study, actor=setup_study.coordinator)
    response = client.get(f"/delphi/{study.pk}/export/protocol.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == (
        f'attachment; filename="delphi-study-{study.pk}-protocol.json"'
    )
    assert "protocol.json" in client.get(f"/delphi/{study.pk}/").content.decode()
