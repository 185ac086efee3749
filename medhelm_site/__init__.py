"""Settings, URLs and the Celery app of the site, plus `common/`: the Django-free helpers the
apps share. Importing this package loads nothing else, so the pure cores (agreement/stats,
the Delphi rules) stay free of Django; the Celery app is loaded when Django starts
(medhelm_site.apps) and by `celery -A medhelm_site`, which finds medhelm_site.celery."""
