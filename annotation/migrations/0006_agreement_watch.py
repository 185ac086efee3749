import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0005_import_suites"),
    ]

    operations = [
        migrations.CreateModel(
            name="AgreementWatch",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("summary", models.JSONField(blank=True, null=True)),
                ("computed_at", models.DateTimeField(blank=True, null=True)),
                ("submissions_seen", models.PositiveIntegerField(default=0)),
                ("requested_at", models.DateTimeField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("error_at", models.DateTimeField(blank=True, null=True)),
                (
                    "study",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="watch",
                        to="annotation.ratingstudy",
                    ),
                ),
            ],
        ),
    ]
