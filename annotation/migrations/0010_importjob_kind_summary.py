# Issue 30: ratings and scores imports run as import jobs too.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_calibration_items"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="kind",
            field=models.CharField(
                choices=[
                    ("items", "Items"),
                    ("ratings", "Ratings (long file)"),
                    ("scores", "Machine scores (long file)"),
                ],
                default="items",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="importjob",
            name="summary",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
