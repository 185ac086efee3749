#!/usr/bin/env bash
# The production layout of docs/deployment.md on one machine, from its documented commands:
# migrate, collectstatic, gunicorn (WEB_WORKERS processes), three Celery workers (the default
# and metrics queues; the jury queue; the planning queue) and Celery beat, against the PostgreSQL and Redis
# named in the environment. Runs in the foreground; SIGTERM or Ctrl-C stops every process
# (gunicorn and the workers finish their requests and tasks first). If one process exits
# on its own, the others are stopped and the script exits 1 naming it.
#
#   DATABASE_URL=postgres://medhelm:...@db/medhelm CELERY_BROKER_URL=redis://redis:6379/0 \
#   SECRET_KEY=... ALLOWED_HOSTS=medhelm.example.org MEDHELM_DATA_DIR=/srv/medhelm \
#   docs/deploy/run-production.sh
#
# Optional: PYTHON (default: .venv/bin/python of this checkout), BIND (127.0.0.1:8000),
# WEB_WORKERS (2), WORKER_CONCURRENCY (2), STOP_GRACE_SECONDS (30: gunicorn and beat),
# WORKER_STOP_GRACE_SECONDS (600: the Celery workers), READY_TIMEOUT_SECONDS (90).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

die() { echo "run-production: $*" >&2; exit 2; }
for name in DATABASE_URL CELERY_BROKER_URL SECRET_KEY ALLOWED_HOSTS MEDHELM_DATA_DIR; do
  [ -n "${!name:-}" ] || die "$name is not set (docs/deployment.md lists what each variable does)"
done
case "$DATABASE_URL" in postgres://* | postgresql://*) ;; *) die "DATABASE_URL is not a PostgreSQL URL" ;; esac
case "$CELERY_BROKER_URL" in redis://* | rediss://* | amqp://* | amqps://*) ;;
  *) die "CELERY_BROKER_URL is neither Redis nor RabbitMQ" ;; esac

PYTHON="${PYTHON:-$root/.venv/bin/python}"
[ -x "$PYTHON" ] || die "no Python at $PYTHON (make install, or set PYTHON)"
BIND="${BIND:-127.0.0.1:8000}"
WEB_WORKERS="${WEB_WORKERS:-2}"
WORKER_CONCURRENCY="${WORKER_CONCURRENCY:-2}"
STOP_GRACE_SECONDS="${STOP_GRACE_SECONDS:-30}"
# A report takes about a minute and a judge call up to several: a Celery worker stopping
# finishes its running tasks first (one cut off anyway is delivered again: acks late).
WORKER_STOP_GRACE_SECONDS="${WORKER_STOP_GRACE_SECONDS:-600}"
READY_TIMEOUT_SECONDS="${READY_TIMEOUT_SECONDS:-90}"
export DJANGO_DEBUG=0 DJANGO_SETTINGS_MODULE=medhelm_site.settings
run_dir="$MEDHELM_DATA_DIR/run"
mkdir -p "$run_dir"

echo "== check --deploy"
"$PYTHON" manage.py check --deploy
echo "== migrate"
"$PYTHON" manage.py migrate --noinput
echo "== collectstatic"
"$PYTHON" manage.py collectstatic --noinput --verbosity 0

names=()
pids=()
start() { # start NAME COMMAND...: a child process, its pid kept in $run_dir/NAME.pid
  local name="$1"
  shift
  "$@" &
  names+=("$name")
  pids+=("$!")
  echo "$!" >"$run_dir/$name.pid"
  echo "== started $name (pid $!)"
}

grace_of() { # the seconds a process may take to stop: a worker finishes its running tasks
  case "$1" in worker-*) echo "$WORKER_STOP_GRACE_SECONDS" ;; *) echo "$STOP_GRACE_SECONDS" ;; esac
}

stop_all() { # SIGTERM every child, SIGKILL those still there after their grace period
  local i pid deadline
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for i in "${!pids[@]}"; do
    pid="${pids[$i]}"
    deadline=$((start_of_stop + $(grace_of "${names[$i]}")))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "run-production: ${names[$i]} (pid $pid) did not stop in time: killed" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  rm -f "$run_dir"/*.pid
}

stopping=0
trap 'stopping=1' TERM INT

celery=("$PYTHON" -m celery -A medhelm_site)
start worker-default "${celery[@]}" worker --loglevel INFO --queues celery,metrics \
  --concurrency "$WORKER_CONCURRENCY" --hostname "default@%h"
start worker-jury "${celery[@]}" worker --loglevel INFO --queues jury \
  --concurrency "$WORKER_CONCURRENCY" --hostname "jury@%h"
start worker-planning "${celery[@]}" worker --loglevel INFO --queues planning \
  --concurrency "$WORKER_CONCURRENCY" --hostname "planning@%h"
start beat "${celery[@]}" beat --loglevel INFO \
  --schedule "$MEDHELM_DATA_DIR/celerybeat-schedule"
start web "$PYTHON" -m gunicorn medhelm_site.wsgi:application --bind "$BIND" \
  --workers "$WEB_WORKERS" --timeout 120 --graceful-timeout "$STOP_GRACE_SECONDS" \
  --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}"

# Readiness as the load balancer sees it: /readyz (database, broker, workers seen).
"$PYTHON" - "$BIND" "$READY_TIMEOUT_SECONDS" <<'PY' &
import sys, time, urllib.request, urllib.error
bind, timeout = sys.argv[1], float(sys.argv[2])
url = f"http://{bind}/readyz"
deadline, last = time.monotonic() + timeout, "no answer"
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            print(f"== ready: {url} answered {r.status}", flush=True)
            sys.exit(0)
    except urllib.error.HTTPError as e:
        last = f"{e.code} {e.read().decode(errors='replace')}"
    except OSError as e:
        last = type(e).__name__
    time.sleep(1)
print(f"run-production: {url} not ready after {timeout:g}s: {last}", file=sys.stderr, flush=True)
PY
ready_check=$!

# Until a signal comes or a process exits on its own.
status=0
while [ "$stopping" = 0 ]; do
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      wait "${pids[$i]}" && code=0 || code=$?
      echo "run-production: ${names[$i]} (pid ${pids[$i]}) exited with $code: stopping the others" >&2
      status=1
      stopping=1
      break
    fi
  done
  [ "$stopping" = 0 ] && { sleep 1 & wait $! 2>/dev/null || true; }
done
echo "== stopping"
kill "$ready_check" 2>/dev/null || true
start_of_stop=$SECONDS
stop_all
echo "== stopped"
exit "$status"
