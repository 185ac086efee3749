"""Limits shared by the apps' database reads."""

# Up to this many ids a query filters with `pk__in`; above it, reading the whole study
# and matching in Python is cheaper than a long IN list (and stays under SQLite's
# variable limit on old builds).
ID_FILTER_LIMIT = 1000
