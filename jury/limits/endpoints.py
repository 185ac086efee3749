"""Per-server limits: the judges whose endpoints are on one server (EndpointLimit.origin)
share its max_concurrency, on top of each judge's own. Both limiters keep these slots as
they keep a judge's: database.py counts the leases of the origin, redis.py keeps a token
pool per endpoint ('e' and the EndpointLimit id, beside the judges' pools)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from jury.models import EndpointLimit, Judge

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """The server of an endpoint URL, as scheme://host[:port] in lower case (no default port,
    no path): every judge on one server shares its limit whatever path it names. "" for an
    empty URL (the provider's default: its limits are per key, not ours to share)."""
    url = url.strip()
    if not url:
        return ""
    parts = urlsplit(url if "://" in url else f"https://{url}")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if not host:
        return ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}"


@dataclass(frozen=True)
class EndpointSlots:
    """The server limit a judge's calls also take a slot of."""

    pk: int
    origin: str
    size: int

    @property
    def pool(self) -> str:
        """Its token pool in Redis (judges' pools are their ids)."""
        return f"e{self.pk}"


def endpoint_slots(judge: Judge) -> EndpointSlots | None:
    """The limit of the judge's server, or None when it has none."""
    origin = origin_of(judge.endpoint or "")
    if not origin:
        return None
    found = EndpointLimit.objects.filter(origin=origin).values_list("pk", "max_concurrency").first()
    if found is None:
        return None
    return EndpointSlots(pk=found[0], origin=origin, size=found[1])
