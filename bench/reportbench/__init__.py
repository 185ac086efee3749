"""The parts of bench/bench_reports.py: the seeded study and the report job timed in their
subprocesses. Imported by that script only."""
