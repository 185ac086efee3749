"""Limits shared by the apps' database reads, and the one parser for ids a request names."""

from __future__ import annotations

from django.core.exceptions import BadRequest

from medhelm_site.common.errors import DomainError

# Up to this many ids a query filters with `pk__in`; above it, reading the whole study
# and matching in Python is cheaper than a long IN list (and stays under SQLite's
# variable limit on old builds).
ID_FILTER_LIMIT = 1000

# The most rows one page of an API list answers, whatever `limit` a client asks for.
MAX_PAGE_SIZE = 1000

# The largest id a database key column holds (a signed 64-bit integer on SQLite and
# PostgreSQL). A larger number names nothing; passed on, SQLite raises OverflowError.
MAX_ID = 2**63 - 1


class BadParameter(DomainError, BadRequest):
    """A query-string or form parameter that is not what the page or endpoint reads.

    A DomainError, so the API answers 400 naming the parameter; a BadRequest, so a page
    that does not catch it answers 400 too (medhelm_site.domain_errors.bad_request_page).
    """


def parse_id(raw: object, *, field: str) -> int:
    """The id a request names in `field` (e.g. request.POST.get("membership")), as an int.

    Only a plain positive whole number is an id: "abc", "", "1.5", "-3" or a number past
    what a key column holds is a BadParameter naming the field, never a ValueError from the
    ORM (which would be a 500).
    """
    if raw is None:
        raise BadParameter(f"{field} is required", field=field)
    text = str(raw).strip()
    # isdigit() alone would accept other scripts' digits; ids are ASCII. The length check
    # comes first: int() refuses (ValueError) a string of more than 4,300 digits.
    if (
        not (text.isascii() and text.isdigit())
        or len(text) > len(str(MAX_ID))
        or not 1 <= int(text) <= MAX_ID
    ):
        raise BadParameter(f"{field} must be an id (a whole number), got {raw!r}", field=field)
    return int(text)
