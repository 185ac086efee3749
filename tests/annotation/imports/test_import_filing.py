"""After an import the import page sums up where the study's items are filed: per taxonomy
category and subcategory, per model, and those filed under no node, so a coordinator sees at
once whether the file's tasks landed where they meant them."""

from __future__ import annotations

import json
import re

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import selectors, services


def _lines(rows: list[tuple[str, str, str]]) -> bytes:
    return "\n".join(
        json.dumps({"id": ext, "model": model, "task": task, "input": "q", "output": "a"})
        for ext, model, task in rows
    ).encode()


def _cells(html: str) -> list[list[str]]:
    table = html[html.index('data-testid="import-filing"') :].split("</table>")[0]
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in table.split("<tr>")[1:]]


def test_the_import_page_shows_items_per_category_subcategory_and_model(client, study, coordinator):
    rows = [
        ("c1", "gpt", "Treatment planning QA"),
        ("c1", "llama", "Treatment planning QA"),
        ("c2", "gpt", "Planning Treatments"),
        ("c3", "gpt", ""),  # no task: filed nowhere
    ]
    client.force_login(coordinator)
    url = reverse("annotation:import", args=[study.pk])
    upload = SimpleUploadedFile("items.jsonl", _lines(rows))
    response = client.post(url, {"file": upload, "file_format": "auto"})
    assert response.status_code == 302, response.content.decode()[:2000]
    html = client.get(response["Location"]).content.decode()

    assert "Where the study's 4 items are filed now" in html
    assert _cells(html) == [
        ["Category", "Subcategory", "gpt", "llama", "All models"],
        ["Clinical Decision Support", "Planning Treatments", "2", "1", "3"],
        ["(not filed under the taxonomy)", "", "1", "0", "1"],
    ]
    assert 'data-testid="filing-not-filed"' in html
    assert "1 item is filed under no taxonomy node" in html
    # the page without a finished import shows no summary
    assert 'data-testid="import-filing"' not in client.get(url).content.decode()


def test_the_summary_counts_by_model_and_needs_one_query_per_part(
    study, coordinator, django_assert_max_num_queries
):
    rows = [("c1", "gpt", "Treatment planning QA"), ("c2", "gpt", "Treatment planning QA")]
    node = selectors.task_names_for(study=study)["Treatment planning QA"]
    services.create_items(
        study=study,
        rows=[
            services.ItemRow(
                external_id=ext,
                input_text="q",
                output_text="a",
                model_name=m,
                taxonomy_node_id=node,
            )
            for ext, m, _ in rows
        ],
        actor=coordinator,
    )
    with django_assert_max_num_queries(3):
        filing = selectors.filing_summary(study=study)
    assert filing.models == ["gpt"] and filing.n_items == 2 and filing.n_not_filed == 0
    [row] = filing.rows
    assert (row.category, row.subcategory, row.per_model, row.total) == (
        "Clinical Decision Support",
        "Planning Treatments",
        [2],
        2,
    )
