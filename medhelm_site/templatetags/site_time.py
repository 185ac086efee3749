"""Times on every page in one stated time zone: settings.TIME_ZONE (UTC unless the
TIME_ZONE environment variable says otherwise), always written with the zone's name.

    {% load site_time %}
    {{ round.closes_at|when }}        2026-12-05 16:18 UTC
    {{ panelist.joined_at|when:"day" }}   2026-12-05
    {% site_time_zone %}              UTC (the footer of base.html states it)
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from django import template
from django.conf import settings
from django.utils import timezone

register = template.Library()

FORMATS = {"minute": "%Y-%m-%d %H:%M", "second": "%Y-%m-%d %H:%M:%S", "day": "%Y-%m-%d"}


def site_zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


@register.simple_tag
def site_time_zone() -> str:
    return settings.TIME_ZONE


@register.filter
def when(value: datetime | date | None, precision: str = "minute") -> str:
    """A time in the site's zone with the zone's abbreviation ("" for none); a day alone
    for precision "day"."""
    if value is None or value == "":
        return ""
    if not isinstance(value, datetime):
        return value.strftime(FORMATS["day"])
    if timezone.is_naive(value):
        value = timezone.make_aware(value, site_zone())
    local = value.astimezone(site_zone())
    if precision == "day":
        return local.strftime(FORMATS["day"])
    return f"{local.strftime(FORMATS[precision])} {local.tzname()}"
