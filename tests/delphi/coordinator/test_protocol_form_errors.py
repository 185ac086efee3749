"""Where the protocol form shows a service's error: on the field its DelphiError names."""

from __future__ import annotations

import pytest

from delphi.errors import DelphiError
from delphi.forms import ProtocolForm
from tests.delphi.coordinator.pages import protocol_post


@pytest.mark.parametrize(
    ("field", "changes", "shown_on"),
    [
        ("consensus_rule", {}, "rule_preset"),
        ("consensus_rule", {"rule_json": '{"preset": "median_iqr"}'}, "rule_json"),
        ("stopping_rule", {}, "max_rounds"),
        ("questions", {}, "rate_kinds"),
        ("title", {}, "title"),
        (None, {}, "__all__"),
        ("something_else", {}, "__all__"),
    ],
)
def test_a_service_error_lands_on_the_field_it_names(setup_study, field, changes, shown_on):
    form = ProtocolForm(protocol_post(setup_study.study, **changes))
    assert form.is_valid(), form.errors
    form.add_service_error(DelphiError("consensus rule at rule: too lax", field=field))
    assert form.errors == {shown_on: ["Consensus rule at rule: too lax"]}
