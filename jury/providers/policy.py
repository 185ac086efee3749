"""Which environment variables may hold a judge's key and which hosts a judge may call.

A judge is defined by staff users, the server's environment and network by the operator: a
judge must not be able to send the site's own secrets (SECRET_KEY, DATABASE_URL) as its
"API key", nor make the server call an address of the user's choice. Pure Python: the allow
lists come in as arguments (the settings JURY_ALLOWED_KEY_VARIABLES and JURY_ALLOWED_HOSTS).
Each check returns None when allowed, else a sentence that says why and how to allow it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from urllib.parse import urlsplit

KEY_VARIABLE_PREFIX = "MEDHELM_JUDGE_KEY_"
# The site's own secrets: never a judge's key, even when listed.
NEVER_KEY_VARIABLES = frozenset(
    {
        "SECRET_KEY",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
        "EMAIL_HOST_PASSWORD",
        "JURY_LIMITER_REDIS_URL",
    }
)
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]*")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")


def key_variable_problem(name: str, *, allowed: Collection[str]) -> str | None:
    """Why a judge may not read its key from the environment variable `name` (None: it may).
    Allowed: empty (no key), a name starting with MEDHELM_JUDGE_KEY_, or a name listed in
    `allowed`; never one of the site's own secrets."""
    if not name:
        return None
    if name in NEVER_KEY_VARIABLES:
        return (
            f"{name} holds one of the site's own secrets and is never sent to a judge; put "
            f"the judge's key in a variable named {KEY_VARIABLE_PREFIX}<NAME>."
        )
    if name in allowed:
        return None
    well_formed = _VARIABLE.fullmatch(name) is not None
    if (
        well_formed
        and name.startswith(KEY_VARIABLE_PREFIX)
        and len(name) > len(KEY_VARIABLE_PREFIX)
    ):
        return None
    return (
        f"{name} is not allowed as a key variable: a judge's key must be in a variable named "
        f"{KEY_VARIABLE_PREFIX}<NAME> (capitals, digits, _), or in a variable the operator "
        "lists in the JURY_ALLOWED_KEY_VARIABLES setting (comma-separated), so that a judge "
        "cannot be given another secret of the server."
    )


def host_allowed(host: str, allowed: Collection[str]) -> bool:
    """`host` (lower case) is listed, or matches a listed `*.domain` (one label in place of
    the star)."""
    for pattern in allowed:
        pattern = pattern.strip().lower().rstrip(".").strip("[]")
        if pattern.startswith("*."):
            label, _, rest = host.partition(".")
            if rest == pattern[2:] and _LABEL.fullmatch(label):
                return True
        elif host == pattern:
            return True
    return False


def endpoint_problem(url: str, *, allowed_hosts: Collection[str]) -> str | None:
    """Why a judge may not call `url` (None: it may). Empty means the provider's default.
    Allowed: https on a host listed in `allowed_hosts`; http only on loopback; an IP address
    only when it is loopback and listed; no user name or password in the URL."""
    if not url:
        return None
    how = (
        "the operator lists allowed hosts in the JURY_ALLOWED_HOSTS setting (comma-separated, "
        "'*.domain' for one label), so that a judge cannot make the server call an address "
        "of its own."
    )
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return f"{url!r} is not a valid URL."
    if parts.scheme not in {"http", "https"}:
        return f"The endpoint must be an http(s) URL, not {parts.scheme or 'no scheme'}."
    if not host:
        return "The endpoint has no host."
    if parts.username is not None or parts.password is not None:
        return "The endpoint must not carry a user name or password; the key is sent apart."
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    # An IPv4 address mapped into IPv6 counts as outside loopback (Python 3.13 calls it
    # loopback, earlier versions do not): one answer on every version.
    loopback_address = (
        address is not None
        and address.is_loopback
        and getattr(address, "ipv4_mapped", None) is None
    )
    if address is not None and not loopback_address:
        return (
            f"The endpoint's host {host} is an IP address outside loopback; give the server "
            f"a host name: {how}"
        )
    if not host_allowed(host, allowed_hosts):
        return f"The host {host} is not allowed for judge endpoints: {how}"
    if parts.scheme == "http" and not (loopback_address or host == "localhost"):
        return f"The endpoint on {host} must use https (plain http only on loopback)."
    return None
