"""Real HELM output for the import tests: crfm-helm's own helm-run, in its venv
(.cache/helm-venv, made by `make helm`), runs its built-in simple/model1 model on the simple
scenarios offline and writes a suite (benchmark_output/runs/<suite>/, a run directory per
run entry). Skipped without the venv, failed under CI=true (CI must install it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.unavailable import unavailable

ROOT = Path(__file__).resolve().parents[2]
HELM_VERSION = "0.5.16"
HELM_VENV = ROOT / ".cache" / "helm-venv"
HELM_RUN = HELM_VENV / "bin" / "helm-run"
SUITE = "tests"
MODEL = "simple/model1"
# A generation scenario with three train trials and three completions per request, a
# multiple-choice one (output_mapping) and a classification one.
RUN_ENTRIES = (
    f"simple1:model={MODEL}",
    f"simple_mcqa:model={MODEL}",
    f"simple_classification:model={MODEL}",
)
MAX_EVAL_INSTANCES = 5
# A second offline model: HELM's own SimpleClient registered under another name through a
# prod_env folder (helm-run reads prod_env/ in its working directory by default).
SECOND_MODEL = "simple/tutorial"
PROD_ENV = {
    "model_deployments.yaml": f"""model_deployments:
  - name: {SECOND_MODEL}
    model_name: {SECOND_MODEL}
    tokenizer_name: simple/tokenizer1
    max_sequence_length: 2048
    client_spec:
      class_name: "helm.clients.simple_client.SimpleClient"
""",
    "model_metadata.yaml": f"""models:
  - name: {SECOND_MODEL}
    display_name: Simple tutorial model
    description: HELM's SimpleClient under a second name
    creator_organization_name: Simple
    access: open
    release_date: 2023-01-01
    tags: [TEXT_MODEL_TAG, FULL_FUNCTIONALITY_TEXT_MODEL_TAG]
""",
}


def register_second_model(workdir: Path) -> None:
    """Write the prod_env folder that registers SECOND_MODEL for helm-run in `workdir`."""
    (workdir / "prod_env").mkdir(exist_ok=True)
    for name, text in PROD_ENV.items():
        (workdir / "prod_env" / name).write_text(text)


def require_helm() -> None:
    """Skip the test when crfm-helm's venv is missing (fail under CI)."""
    if HELM_RUN.is_file():
        return
    message = f"crfm-helm=={HELM_VERSION} is not installed in {HELM_VENV}: run `make helm`"
    unavailable(message, in_ci_then=" (CI must install it)")


def make_helm_suite(
    workdir: Path,
    run_entries: tuple[str, ...] = RUN_ENTRIES,
    *,
    suite_name: str = SUITE,
    extra_args: tuple[str, ...] = (),
    jury_plugin: bool = False,
) -> Path:
    """Run helm-run in `workdir` (offline) and return the suite folder it wrote."""
    require_helm()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    command = [
        str(HELM_RUN),
        "--run-entries",
        *run_entries,
        "--suite",
        suite_name,
        "--max-eval-instances",
        str(MAX_EVAL_INSTANCES),
        *extra_args,
    ]
    if jury_plugin:  # the simple_jury run spec (tests/support/helm_jury_plugin.py)
        env["PYTHONPATH"] = str(Path(__file__).parent)
        command += ["--plugins", "helm_jury_plugin"]
    done = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"helm-run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    suite = workdir / "benchmark_output" / "runs" / suite_name
    runs = sorted(p.name for p in suite.iterdir() if (p / "scenario_state.json").is_file())
    if len(runs) != len(run_entries):
        raise RuntimeError(f"helm-run wrote {runs}, expected a run per entry of {run_entries}")
    return suite
