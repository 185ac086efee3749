"""Helpers for the coordinator-page tests: a user allowed to create studies, an uploaded
taxonomy, the protocol form as a browser posts it, and the messages a page shows."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile

from delphi.models import DelphiStudy
from tests.delphi.flow import SMALL_TAXONOMY
from tests.factories import UserFactory


def staff_user(username: str = "delphi-staff") -> Any:
    user = UserFactory(username=username)
    user.user_permissions.add(Permission.objects.get(codename="add_delphistudy"))
    return user


def taxonomy_upload(tree: dict[str, Any] | None = None, name: str = "draft.json") -> Any:
    content = json.dumps(tree or SMALL_TAXONOMY).encode("utf-8")
    return SimpleUploadedFile(name, content, content_type="application/json")


def protocol_post(study: DelphiStudy, **changes: Any) -> dict[str, Any]:
    """The protocol form as a browser would post it, with `changes` on top."""
    data: dict[str, Any] = {
        "title": study.title,
        "aims": study.aims,
        "rate_kinds": ["subcategory"],
        "allow_unable_to_rate": "on",
        "placement": "agree",
        "comments": "on",
        "comprehensiveness": "on",
        "rule_preset": "percent_agreement",
        "pct_at_least": "75",
        "min_n": "3",
        "rule_json": "",
        "carry_over": "drop_resolved",
        "max_rounds": "2",
        "all_resolved": "on",
        "stability_pct": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def post(client: Any, url: str, data: dict[str, Any] | None = None) -> list[str]:
    """POST, follow the redirect, and return the messages shown on the page it lands on."""
    response = client.post(url, data or {}, follow=True)
    assert response.status_code == 200, response.content[:500]
    return messages_of(response)
