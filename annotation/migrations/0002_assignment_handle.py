"""Every assignment gets an opaque handle, the only name a rater sees it by.

Three steps, because existing rows need one random handle each: a callable default on
AddField is evaluated once for the whole table, which a unique column cannot take.
"""

import secrets

from django.db import migrations, models

import annotation.models

BATCH = 2000


def fill_handles(apps, schema_editor) -> None:
    """A fresh random handle for every existing assignment."""
    Assignment = apps.get_model("annotation", "Assignment")
    todo = Assignment.objects.filter(handle__isnull=True).only("pk")
    while batch := list(todo[:BATCH]):
        for row in batch:
            # Not annotation.models.new_assignment_handle: a migration keeps its own copy
            # of what it runs, so that later edits of the app cannot change it.
            row.handle = secrets.token_urlsafe(16)
        Assignment.objects.bulk_update(batch, ["handle"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="handle",
            field=models.CharField(max_length=32, null=True, editable=False),
        ),
        migrations.RunPython(fill_handles, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="assignment",
            name="handle",
            field=models.CharField(
                default=annotation.models.new_assignment_handle,
                editable=False,
                help_text=(
                    "The rater's only name for this assignment (URLs, API): random, unordered."
                ),
                max_length=32,
                unique=True,
            ),
        ),
    ]
