"""Migration annotation 0002 gives every existing assignment its own random handle."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import new_assignment_handle

BEFORE = [("annotation", "0001_initial")]
AFTER = [("annotation", "0002_assignment_handle")]
N_ASSIGNMENTS = 5


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_existing_assignments_get_distinct_handles():
    apps = _migrate(BEFORE)
    try:
        user = apps.get_model("auth", "User").objects.create(username="before-handles")
        study = apps.get_model("annotation", "RatingStudy").objects.create(
            name="Old study", created_by=user
        )
        Item = apps.get_model("annotation", "Item")
        Assignment = apps.get_model("annotation", "Assignment")
        for n in range(N_ASSIGNMENTS):
            item = Item.objects.create(
                study=study, external_id=f"old-{n}", input_text="q", output_text="a", model_name="m"
            )
            Assignment.objects.create(study=study, item=item, clinician=user, position=n + 1)

        apps = _migrate(AFTER)
        handles = list(
            apps.get_model("annotation", "Assignment").objects.values_list("handle", flat=True)
        )
        assert len(handles) == N_ASSIGNMENTS
        assert len(set(handles)) == N_ASSIGNMENTS
        assert {len(h) for h in handles} == {len(new_assignment_handle())}
    finally:
        MigrationExecutor(connection).migrate(
            MigrationExecutor(connection).loader.graph.leaf_nodes()
        )
