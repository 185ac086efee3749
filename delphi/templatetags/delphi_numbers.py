"""Template filters for Delphi statistics, all written by delphi.stats.display.

{% load delphi_numbers %}
{{ s.median|stat }}      8.25, 4.5, 6 (a dash for none)
{{ s|iqr }}              "4.5-6 (1.5)" from anything with q1 and q3, or a (q1, q3) pair
{{ s|quartiles }}        "4.5-6"
"""

from __future__ import annotations

from typing import Any

from django import template

from delphi.stats import display

register = template.Library()


def _pair(value: Any) -> tuple[float | None, float | None]:
    if value is None or value == "":
        return None, None
    if isinstance(value, (tuple, list)):
        return value[0], value[1]
    return getattr(value, "q1", None), getattr(value, "q3", None)


@register.filter
def stat(value: Any) -> str:
    return display.stat_number(None if value == "" else value)


@register.filter
def iqr(value: Any) -> str:
    return display.iqr_text(*_pair(value))


@register.filter
def quartiles(value: Any) -> str:
    return display.quartiles_text(*_pair(value))
