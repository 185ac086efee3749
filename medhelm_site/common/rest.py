"""What every API request body and list goes through (set as defaults in REST_FRAMEWORK).

- BoundedJSONParser: a body nested deeper than MAX_JSON_DEPTH is a 400 "JSON nested too
  deeply", whether Python's parser gives up (RecursionError) or a later step would.
- BoundedLimitOffsetPagination: `limit` is capped at MAX_PAGE_SIZE.
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import JSONParser

from medhelm_site.common.querying import MAX_PAGE_SIZE

# The API's bodies are a few levels deep (the autosaves: {"answers": {id: {...}}}).
# Far below Python's recursion limit, so nothing that walks a body recursively
# (serializers, JSONField, json.dumps) can run out of stack on what was let in.
MAX_JSON_DEPTH = 32
TOO_DEEP = f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)"


def nested_too_deeply(value: Any, *, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when objects and arrays in `value` nest more than `limit` levels. Iterative, so
    it cannot itself run out of stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def loads_json(text: str | bytes) -> Any:
    """json.loads for text a client sent inside a request (e.g. a form field holding JSON):
    invalid, non-standard (NaN, Infinity) or too deeply nested JSON is a ParseError (400)."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ParseError(TOO_DEEP) from None
    except ValueError as exc:  # JSONDecodeError and undecodable bytes
        raise ParseError(f"JSON parse error - {exc}") from None
    if nested_too_deeply(value):
        raise ParseError(TOO_DEEP)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser (strict: NaN and Infinity are refused), plus a depth limit."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(TOO_DEEP) from None
        if nested_too_deeply(data):
            raise ParseError(TOO_DEEP)
        return data


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """Limit/offset pages of at most MAX_PAGE_SIZE rows.

    DRF answers a `limit` that is not a positive number with the default page, and an
    `offset` past the rows with an empty one; without a cap, a huge `limit` reached the
    database, where SQLite raises OverflowError and PostgreSQL "bigint out of range" (500).
    """

    max_limit = MAX_PAGE_SIZE
