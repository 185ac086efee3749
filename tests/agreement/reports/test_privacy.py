"""No page, export or API answer names a clinician: pseudonyms only."""

from __future__ import annotations

from agreement import plots, services
from tests.support.pdf import pdf_text


def test_no_export_or_page_names_a_clinician(built, client, api_as, forbidden_strings):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.researcher, parameters={"n_resamples": 60, "seed": 5}
    )
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/"
    pdf = client.get(f"{base}{snap.pk}/report.pdf").content
    api = api_as(built.members.researcher)
    api_base = f"/api/studies/{built.study.pk}/agreement/reports/"
    texts = {
        "list": client.get(base).content.decode(),
        "page": client.get(f"{base}{snap.pk}/").content.decode(),
        "csv": client.get(f"{base}{snap.pk}/report.csv").content.decode(),
        "json": client.get(f"{base}{snap.pk}/report.json").content.decode(),
        "api": api.get(f"{api_base}{snap.pk}/").content.decode(),
        "api-list": api.get(api_base).content.decode(),
        "svg": "".join(f["svg"] or "" for f in plots.svg_figures(snap.results)),
        "pdf-text": pdf_text(pdf),
    }
    for secret in forbidden_strings:
        for name, text in texts.items():
            assert secret not in text, (secret, name)
        assert secret.encode() not in pdf
    # the pseudonyms are there instead
    assert "R01" in texts["page"] and "R01" in texts["json"] and "R01" in texts["pdf-text"]
