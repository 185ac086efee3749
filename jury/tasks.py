"""Celery tasks of the jury: thin, idempotent wrappers around the execution service."""

from __future__ import annotations

from celery import shared_task

from jury.execution import execute_call


@shared_task(name="jury.execute_judge_call", acks_late=True, ignore_result=True)
def execute_judge_call(call_id: int) -> str:
    """Run one judge call. Safe to deliver twice: a finished or claimed call is left alone."""
    return execute_call(call_id=call_id)
