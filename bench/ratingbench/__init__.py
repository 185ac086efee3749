"""The parts of bench/bench_rating.py: seeding, gunicorn, the HTTP/1.1 load generator, the
simulated clinicians, the integrity check and the report. Imported by that script only."""
