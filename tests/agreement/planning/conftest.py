"""Fixtures of the planning tests: what the session's real broker holds on the queues a
simulation could be sent to, emptied again afterwards so that no later worker takes it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery import current_app

#: The default queue (imports, reports) and the simulations' own queue.
QUEUES = ("celery", "planning")


class BrokerQueues:
    """Counts the messages waiting on each queue of the test session's broker."""

    def count(self, queue: str) -> int:
        with current_app.connection_for_write() as conn:
            return conn.default_channel.queue_declare(queue=queue, durable=True).message_count

    def counts(self) -> dict[str, int]:
        return {queue: self.count(queue) for queue in QUEUES}

    def purge(self) -> None:
        with current_app.connection_for_write() as conn:
            for queue in QUEUES:
                conn.default_channel.queue_declare(queue=queue, durable=True)
                conn.default_channel.queue_purge(queue)


@pytest.fixture
def broker_queues() -> Iterator[BrokerQueues]:
    queues = BrokerQueues()
    queues.purge()
    yield queues
    queues.purge()
