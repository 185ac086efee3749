"""The parts of bench/bench_jury.py: seeding, the fake provider's process, the workers, the
phases, the accounting and the report. Imported by that script only (bench/ is on sys.path)."""
