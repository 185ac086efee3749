# Generated for issue 19 (calibration items)

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_attention_checks"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="CalibrationItem",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("reference", models.JSONField()),
                (
                    "note",
                    models.TextField(
                        blank=True,
                        help_text="For coordinators only: who agreed the reference, and why.",
                    ),
                ),
                ("set_at", models.DateTimeField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "item",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="calibration_item",
                        to="annotation.item",
                    ),
                ),
                (
                    "set_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="calibration_items",
                        to="annotation.ratingstudy",
                    ),
                ),
            ],
            options={
                "ordering": ["study", "item"],
            },
        ),
        migrations.CreateModel(
            name="CalibrationCompletion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("completed_at", models.DateTimeField()),
                ("n_items", models.PositiveIntegerField()),
                ("summary", models.JSONField(default=dict)),
                (
                    "clinician",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="calibration_completions",
                        to="annotation.ratingstudy",
                    ),
                ),
            ],
            options={
                "ordering": ["study", "completed_at"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("study", "clinician"), name="calibration_completed_once_per_rater"
                    )
                ],
            },
        ),
    ]
