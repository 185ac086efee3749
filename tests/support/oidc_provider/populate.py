"""Fill the test provider's database: its signing key, one client and its users.

Run as `python -m tests.support.oidc_provider.populate <spec.json>` with the provider's
settings (server.py does); the spec names the client and the users."""

from __future__ import annotations

import json
import sys

import django


def populate(spec: dict) -> None:
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from oidc_provider.models import Client, ResponseType

    call_command("creatersakey")
    client = Client.objects.create(
        name=spec["client"]["name"],
        client_type="confidential",
        client_id=spec["client"]["id"],
        client_secret=spec["client"]["secret"],
        jwt_alg="RS256",
        require_consent=False,
        reuse_consent=True,
    )
    client.redirect_uris = spec["client"]["redirect_uris"]
    client.post_logout_redirect_uris = spec["client"].get("post_logout_redirect_uris", [])
    client.save()
    client.response_types.add(ResponseType.objects.get(value="code"))
    verified, _ = Group.objects.get_or_create(name="email-verified")
    for user in spec["users"]:
        made = User.objects.create_user(
            username=user["username"], email=user["email"], password=user["password"]
        )
        if user["email_verified"]:
            made.groups.add(verified)


if __name__ == "__main__":
    django.setup()
    with open(sys.argv[1]) as spec_file:
        populate(json.load(spec_file))
