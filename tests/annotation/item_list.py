"""What every coordinators' marking page with an item list (calibration, attention checks;
annotation.selectors.item_choices) must do with its list, checked the same way for each."""

from __future__ import annotations

from annotation.models import Item


def assert_search_narrows_and_link_preselects(client, url: str, item: Item) -> None:
    """A search for ``item``'s case lists it alone; the item page's link (?item=) preselects
    it; an address naming no valid id selects nothing and still answers."""
    narrowed = client.get(url, {"q": item.external_id}).content.decode()
    assert narrowed.split("</select>")[0].count("<option value=") == 2  # "" and the item
    assert f"1 item matching “{item.external_id}” listed." in narrowed
    linked = client.get(url, {"item": item.pk}).content.decode()
    assert f'<option value="{item.pk}" selected>' in linked
    for bad in ("²", "abc", "9" * 30):
        odd = client.get(url, {"item": bad})
        assert odd.status_code == 200 and '<option value="" selected>' in odd.content.decode()
