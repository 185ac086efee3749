"""Rows written once per test module and seen by each of its tests, as Django's
TestCase.setUpTestData gives them per class: one transaction is opened around the module, its
fixtures write their rows in it, each test runs in a savepoint of it (pytest-django's `db`
wraps every test in an atomic block, nested here) rolled back when the test ends, and the
module's transaction is rolled back when the module ends, so the next module finds the
database as it was. What a test changes is undone before the next one starts.

A module that uses it must not mix in transactional tests (`transactional_db`,
`django_db(transaction=True)`): they flush the tables, the module's rows included. The
Python objects a module fixture returns are shared too: a function fixture hands each test
a deep copy (as setUpTestData's attributes are copied per test), so that what one test sets
on them does not leak into the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from django.db import transaction

#: Lifts pytest-django's block on the database for the `with` block: a module fixture writes
#: its rows under it.
Unblock = Callable[[], AbstractContextManager[object]]


@contextmanager
def module_transaction(django_db_blocker) -> Iterator[Unblock]:
    """The module's transaction, rolled back at its end; yields the blocker's `unblock` for
    the fixtures that write the module's rows (the database stays blocked between them, as
    for any test that does not ask for it)."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        yield django_db_blocker.unblock
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
