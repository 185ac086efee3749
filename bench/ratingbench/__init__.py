"""The parts of bench/bench_rating.py: seeding, gunicorn, the HTTP/1.1 load generator, the
simulated clinicians, the integrity check and the report. Imported by that script only."""

from _support import project_on_path

project_on_path()  # the tests' support modules (tests/support/processes.py) are shared
