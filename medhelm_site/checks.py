"""System checks of the Celery wiring (`manage.py check`, and every command that runs the
checks, rundemo among them). A task sent to a queue no worker consumes waits forever with no
error anywhere; these checks name such a queue at startup instead.

A worker started without --queues consumes exactly the queues settings.CELERY_TASK_QUEUES
declares, so every route must name a declared queue (an error: production workers would
never run the task). The demo's workers (settings.MEDHELM_DEMO_WORKERS) choose their queues:
together they must consume every declared queue (a warning: only the demo is affected).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register


def routed_tasks() -> dict[str, list[str]]:
    """Queue -> the task names settings.CELERY_TASK_ROUTES sends there (a route may name its
    queue as {"queue": name} or as the bare name, as Celery accepts)."""
    tasks: dict[str, list[str]] = defaultdict(list)
    routes = getattr(settings, "CELERY_TASK_ROUTES", None) or {}
    for task, route in dict(routes).items():
        queue = route if isinstance(route, str) else route.get("queue")
        if queue:
            tasks[str(queue)].append(task)
    return tasks


def _declared_queues() -> list[str]:
    return list(getattr(settings, "CELERY_TASK_QUEUES", None) or {})


@register("celery")
def check_routed_queues_are_declared(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    declared = set(_declared_queues())
    default = getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")
    routed = routed_tasks()
    messages = [
        Error(
            f"tasks {', '.join(sorted(tasks))} are routed to the queue {queue!r}, which "
            "CELERY_TASK_QUEUES does not declare: no worker would consume it.",
            hint=f"Declare {queue!r} in CELERY_TASK_QUEUES, or route the tasks elsewhere.",
            id="medhelm.celery.E001",
        )
        for queue, tasks in sorted(routed.items())
        if queue not in declared
    ]
    if default not in declared:
        messages.append(
            Error(
                f"the default queue {default!r} is not in CELERY_TASK_QUEUES: every task "
                "without a route would wait there unconsumed.",
                id="medhelm.celery.E002",
            )
        )
    return messages


@register("celery")
def check_demo_workers_consume_every_queue(
    app_configs: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    declared = _declared_queues()
    workers: dict[str, dict[str, Any]] = getattr(settings, "MEDHELM_DEMO_WORKERS", {})
    consumed = {queue for worker in workers.values() for queue in worker["queues"]}
    routed = routed_tasks()
    messages: list[CheckMessage] = []
    for queue in declared:
        if queue not in consumed:
            tasks = ", ".join(sorted(routed.get(queue, []))) or "the tasks without a route"
            messages.append(
                Warning(
                    f"no worker of MEDHELM_DEMO_WORKERS consumes the queue {queue!r}: in the "
                    f"demo, {tasks} would never run.",
                    hint=f"Add {queue!r} to the queues of one of the demo's workers.",
                    id="medhelm.celery.W001",
                )
            )
    for name, worker in workers.items():
        for queue in worker["queues"]:
            if queue not in declared:
                messages.append(
                    Warning(
                        f"the demo worker {name!r} consumes the queue {queue!r}, which "
                        "CELERY_TASK_QUEUES does not declare: the worker would not start.",
                        id="medhelm.celery.W002",
                    )
                )
    return messages
