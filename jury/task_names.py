"""The names the jury's Celery tasks are registered and sent under: services send tasks by
name, so jury.tasks (which imports the services) is imported by none of them."""

EXECUTE_CALL = "jury.execute_judge_call"
EXECUTE_CALLS = "jury.execute_judge_calls"
IMPORT_HELM_VERDICTS = "jury.import_helm_verdicts"
COMPUTE_METRICS = "jury.compute_metrics"
SWEEP_CALLS = "jury.sweep_calls"
RUN_SCORE_IMPORT = "jury.run_score_import"  # annotation.imports.long_jobs.TASKS names it too
