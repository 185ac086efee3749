"""Lift the login lockout of a username (every address), with an audit row."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from medhelm_site.accounts import services


class Command(BaseCommand):
    help = "Lift the login lockout of USERNAME from every address (writes an audit row)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        removed = services.unlock(actor=None, username=username)
        self.stdout.write(f"{username}: unlocked ({removed} failure record(s) removed).")
