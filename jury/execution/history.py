"""A call's attempt history: one JudgeAttempt row per request sent for it, stored with the
call's update in save_outcomes' transaction, numbered after the attempts of its earlier
executions. Whatever became of the call (ended here, left pending by a cancel or a wait for a
slot, or finished first by another worker), the requests this execution sent are kept, and
`JudgeCall.attempts` is always the number of its rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from django.db import connection

from jury.execution import bulk
from jury.execution.attempts import AttemptRecord
from jury.models import JudgeAttempt, JudgeCall

_ATTEMPT_COLUMNS = (
    "call",
    "number",
    "started_at",
    "latency_ms",
    "outcome",
    "http_status",
    "error",
    "input_tokens",
    "output_tokens",
    "finish_reason",
)
# A verdict that failed on an answered attempt is that attempt's outcome (the request went
# through; what came back is what failed), so the history says why the call ended.
_VERDICT_FAILURES = (JudgeCall.Status.INVALID, JudgeCall.Status.TRUNCATED)


def lock_calls(call_ids: Sequence[int]) -> dict[int, tuple[str, int]]:
    """Each call's status and attempt count, the rows locked until the transaction ends."""
    meta = JudgeCall._meta
    qn = connection.ops.quote_name
    pk = qn(meta.pk.column)
    status, attempts = (qn(meta.get_field(name).column) for name in ("status", "attempts"))
    if connection.vendor == "postgresql":
        # One statement text for any number of ids, bound on the server: planned once.
        where, params = f"{pk} = ANY(%s)", [list(call_ids)]
    else:
        where, params = f"{pk} IN ({', '.join(['%s'] * len(call_ids))})", list(call_ids)
    sql = f"SELECT {pk}, {status}, {attempts} FROM {qn(meta.db_table)} WHERE {where}"
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    with bulk.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall()}


class AttemptHistory:
    """The attempt rows of one batch of outcomes, and the new attempt counts of the calls the
    batch does not otherwise rewrite."""

    def __init__(self) -> None:
        self.started_at = JudgeAttempt._meta.get_field("started_at")
        self.rows: list[tuple] = []
        self.counts: list[tuple[int, int]] = []

    def add(self, call: JudgeCall, log: Sequence[AttemptRecord], *, before: int) -> int:
        """Number `log` after the call's `before` earlier attempts; the call's new count.
        When `call` just ended with a verdict that failed, its last answer says so."""
        records = list(log)
        if records and records[-1].outcome == "ok" and call.status in _VERDICT_FAILURES:
            records[-1] = dataclasses.replace(records[-1], outcome=call.status, error=call.error)
        for number, record in enumerate(records, start=before + 1):
            self.rows.append(
                (
                    call.pk,
                    number,
                    self.started_at.get_db_prep_save(record.started_at, connection),
                    record.latency_ms,
                    record.outcome,
                    record.http_status,
                    record.error[:5000],
                    record.input_tokens,
                    record.output_tokens,
                    (record.finish_reason or "")[:32],
                )
            )
        return before + len(records)

    def add_to_unchanged(self, call_id: int, log: Sequence[AttemptRecord], *, before: int) -> None:
        """Keep the attempts of an execution that did not end the call (a cancel, no slot in
        time, or another worker finished it first): rows and count, nothing else."""
        if not log:
            return
        stub = JudgeCall(pk=call_id)
        self.counts.append((call_id, self.add(stub, log, before=before)))

    def write(self) -> None:
        bulk.insert_rows(JudgeAttempt, _ATTEMPT_COLUMNS, self.rows)
        bulk.update_column(JudgeCall, "attempts", self.counts)
