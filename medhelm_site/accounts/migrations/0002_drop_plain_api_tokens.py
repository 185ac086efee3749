"""Drop DRF's plain-text token table, if an earlier version of the site left one: its keys
were stored readable and no longer authenticate (API tokens are now accounts.ApiToken)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [
        migrations.RunSQL("DROP TABLE IF EXISTS authtoken_token", reverse_sql=migrations.RunSQL.noop)
    ]
