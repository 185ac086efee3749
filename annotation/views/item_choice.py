"""What the coordinators' marking pages (calibration, attention checks) share: the item field
as a list to choose from (selectors.item_choices), and the item an address asks for."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest

from medhelm_site.common.querying import BadParameter, parse_id


def item_field(*, help_text: str) -> forms.IntegerField:
    """The item, chosen from the page's list; its choices are set per request
    (choose_from). The service checks what is posted: the list is a convenience."""
    return forms.IntegerField(
        min_value=1,
        label="Item",
        error_messages={"required": "Choose the item from the list."},
        help_text=help_text,
    )


def choose_from(field: forms.Field, groups: list) -> None:
    """Makes `field` a select of `groups` ((group, [(id, label)]), selectors.ItemChoices)."""
    field.widget = forms.Select(choices=[("", "Choose an item"), *groups])


def asked_item(request: HttpRequest) -> dict[str, int]:
    """The item the address names (?item=, from the item page's link) as the form's initial
    choice; nothing when it names none or no valid id."""
    try:
        return {"item": parse_id(request.GET["item"], field="item")}
    except (KeyError, BadParameter):
        return {}
