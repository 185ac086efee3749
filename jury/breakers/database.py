"""The breakers in the database (the database limiter: SQLite, the embedded broker): one
EndpointBreaker row per endpoint, changed only if its version is the one read."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from jury.breakers.rules import BreakerState
from jury.models import EndpointBreaker

# The token of an endpoint that has no row yet.
NO_ROW = -1


class DatabaseStore:
    def load(self, endpoint: str) -> tuple[int, BreakerState]:
        row = (
            EndpointBreaker.objects.filter(endpoint=endpoint)
            .values_list("version", "state")
            .first()
        )
        if row is None:
            return NO_ROW, BreakerState()
        return row[0], BreakerState.from_dict(row[1])

    def save(self, endpoint: str, token: int, state: BreakerState) -> bool:
        if token == NO_ROW:
            try:
                with transaction.atomic():
                    EndpointBreaker.objects.create(
                        endpoint=endpoint, state=state.to_dict(), version=1
                    )
            except IntegrityError:  # another worker created it first
                return False
            return True
        changed = EndpointBreaker.objects.filter(endpoint=endpoint, version=token).update(
            state=state.to_dict(), version=token + 1, updated_at=timezone.now()
        )
        return changed == 1

    def load_many(self, endpoints: list[str]) -> dict[str, BreakerState]:
        rows = EndpointBreaker.objects.filter(endpoint__in=endpoints).values_list(
            "endpoint", "state"
        )
        return {endpoint: BreakerState.from_dict(state) for endpoint, state in rows}
