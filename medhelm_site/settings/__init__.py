"""Settings for medhelm-studio, all from environment variables with embedded defaults.

Embedded defaults (no server needed): a SQLite database and a SQLite-backed Celery broker
and result store, both under MEDHELM_DATA_DIR (default ./var). Production sets
DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY and ALLOWED_HOSTS; nothing else changes.

DJANGO_SETTINGS_MODULE=medhelm_site.settings names this package; its parts, in the order
they are read (a later part may extend what an earlier one set, and says so):

- env: reading a variable as a boolean, a list or a positive whole number;
- core: debug, secret key and hosts, apps, middleware, database, static files, upload
  limits, e-mail, the REST API;
- security: what `check --deploy` asks for, and the Content-Security-Policy (its app and
  middleware join the core's);
- workers: Celery, the jury's limits and sweep, the agreement reports' jobs, queues;
- observability: logs, health and readiness (the request log's middleware);
- identity: login throttling, API tokens, idle sessions, single sign-on (the last
  middleware, and the provider's site in the policy's form-action).
"""

# In this order, not sorted: a later part's MIDDLEWARE, INSTALLED_APPS or
# CONTENT_SECURITY_POLICY extends an earlier one's and must replace it here.
# isort: off
from medhelm_site.settings.core import *  # noqa: F403
from medhelm_site.settings.security import *  # noqa: F403
from medhelm_site.settings.workers import *  # noqa: F403
from medhelm_site.settings.observability import *  # noqa: F403
from medhelm_site.settings.identity import *  # noqa: F403
# isort: on
