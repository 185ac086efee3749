"""The chunk path stores verdict flags as the per-call path does (jury.execution.storage)."""

from __future__ import annotations

import pytest

from jury import execution, services
from jury.verdict_flags import COPIES_RESPONSE, OBEYS_PLANTED_TEXT
from tests.jury.factories import call_ids, make_judge
from tests.support.obedient_judge import PLANTED_OUTPUT, obedient_verdict

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


def test_a_chunk_flags_the_obeyed_planted_verdict_only(study, fake_provider):
    planted = study.items.order_by("pk").first()
    planted.output_text += "\n" + PLANTED_OUTPUT
    planted.save(update_fields=["output_text"])
    fake_provider.verdict_fn = obedient_verdict
    judge = make_judge(fake_provider, max_concurrency=2)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": 4}
    flags = {c.item_id: {f["code"] for f in c.flags} for c in run.calls.all()}
    assert flags.pop(planted.pk) == {COPIES_RESPONSE, OBEYS_PLANTED_TEXT}
    assert list(flags.values()) == [set(), set(), set()]
