"""The name of every Celery task of the site, written once. The tasks are registered under
these names (@shared_task(name=...)), sent by them (send_task: a service never imports a
tasks module, which imports the services), and routed and scheduled by them in the settings.
No Django and no app here, so that the settings may import it."""

# annotation
RUN_IMPORT = "annotation.run_import"
AFTER_IMPORT_NEXT = "annotation.after_import_next"
AFTER_IMPORT_FAILED = "annotation.after_import_failed"
WORKER_HEALTH = "annotation.worker_health"

# jury
EXECUTE_CALL = "jury.execute_judge_call"
EXECUTE_CALLS = "jury.execute_judge_calls"
SWEEP_CALLS = "jury.sweep_calls"
COMPUTE_METRICS = "jury.compute_metrics"
IMPORT_HELM_VERDICTS = "jury.import_helm_verdicts"
RUN_SCORE_IMPORT = "jury.run_score_import"

# agreement
COMPUTE_REPORT = "agreement.compute_report"
REFRESH_WATCH = "agreement.refresh_watch"
SIMULATE_DESIGN = "agreement.simulate_design"
