"""The accounting of a jury bench phase: every call of the run checked against the database
and the fake provider's own counters (none pending, none lost, none billed twice, cost =
billed tokens x prices), or, for a cached run, that nothing reached the provider."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

CALL_FIELDS = (
    "pk",
    "judge_id",
    "prompt_hash",
    "prompt_text",
    "status",
    "attempts",
    "cost",
    "input_tokens",
    "output_tokens",
    "cached_from_id",
)


@dataclass
class Tally:
    """What the calls of a run add up to, and the calls that disagree with the server, by kind
    (with one example each)."""

    seen_keys: set[tuple[str, str]] = field(default_factory=set)
    expected_cost: Decimal = Decimal(0)
    attempts_total: int = 0
    cost_total: Decimal = Decimal(0)
    mismatches: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def bad(self, kind: str, call: dict, detail: str) -> None:
        self.mismatches[kind] += 1
        self.examples.setdefault(kind, f"call {call['pk']}: {detail}")


@dataclass
class RunFacts:
    """What a call is checked against: the server's counters, prices, criteria, scores."""

    per_key: dict[tuple[str, str], list[int]]
    prices: dict[int, tuple[Decimal, Decimal]]
    models: dict[int, str]
    n_criteria: int
    scores: dict[int, int]


def accounting(
    result: dict[str, Any], judges: list, expect_cached: bool
) -> tuple[list[str], list[str]]:
    """Check every call of the run against the database and the server's counters. Returns
    (summary lines, problems)."""
    from jury.models import JudgeCall
    from jury.selectors import FAILED

    run, server = result["run"], result["server"]
    facts = run_facts(run, server, judges)
    calls = list(JudgeCall.objects.filter(run=run).values(*CALL_FIELDS))
    by_status = Counter(c["status"] for c in calls)
    pending = by_status.get(JudgeCall.Status.PENDING, 0)
    ok = by_status.get(JudgeCall.Status.OK, 0)
    failed = sum(by_status.get(s, 0) for s in FAILED)
    problems: list[str] = []
    if pending:
        problems.append(f"{pending} calls still pending (lost)")
    if ok + failed != len(calls):
        problems.append(f"ok {ok} + failed {failed} != total {len(calls)}")
    tally = Tally()
    for c in calls:
        check_call(c, facts, tally, expect_cached)
    problems += run_problems(run, server, facts, tally, expect_cached)
    lines = summary(run, calls, by_status, server, tally, expect_cached)
    return lines, problems


def run_facts(run: Any, server: dict[str, Any], judges: list) -> RunFacts:
    from django.db.models import Count

    from jury.models import JudgeScore

    scores = dict(
        JudgeScore.objects.filter(call__run=run)
        .values_list("call_id")
        .annotate(n=Count("id"))
        .values_list("call_id", "n")
    )
    return RunFacts(
        per_key={(m, k): row for m, k, *row in server["per_key"]},
        prices={j.pk: (j.price_input_per_mtok, j.price_output_per_mtok) for j in judges},
        models={j.pk: j.model_id for j in judges},
        n_criteria=run.study.criteria.count(),
        scores=scores,
    )


def check_call(c: dict, facts: RunFacts, tally: Tally, expect_cached: bool) -> None:
    """One call against the server's counters for its (model, prompt)."""
    from tests.support.fake_provider import prompt_key

    key = (facts.models[c["judge_id"]], prompt_key(c["prompt_text"]))
    row = facts.per_key.get(key, [0, 0, 0, 0, 0, 0])
    tally.seen_keys.add(key)
    cost = c["cost"] if c["cost"] is not None else Decimal(0)
    tally.cost_total += cost
    tally.attempts_total += c["attempts"]
    if expect_cached:
        check_cached_call(c, row, cost, tally)
    elif c["cached_from_id"] is not None:
        tally.bad("served from the cache (prompts should be new)", c, str(c["cached_from_id"]))
    else:
        check_provider_call(c, row, cost, facts, tally)


def check_cached_call(c: dict, row: list[int], cost: Decimal, tally: Tally) -> None:
    requests = row[0]
    if c["cached_from_id"] is None:
        tally.bad("not served from the cache", c, c["status"])
    if requests:
        tally.bad("provider asked although cached", c, f"{requests} requests")
    if cost:
        tally.bad("cached call with a cost", c, str(cost))


def check_provider_call(
    c: dict, row: list[int], cost: Decimal, facts: RunFacts, tally: Tally
) -> None:
    """Requests = attempts, at most 1 + failed ones; an answer billed once at its price, no
    answer never billed."""
    from jury.models import JudgeCall

    requests, _ok, err_out, billed, _n_in, _n_out = row
    if requests != c["attempts"]:
        tally.bad(
            "requests seen by the server != attempts recorded", c, f"{requests} vs {c['attempts']}"
        )
    if requests > 1 + err_out:
        tally.bad(
            "more requests than 1 + failed attempts", c, f"{requests} requests, {err_out} failed"
        )
    # An invalid verdict, a refusal or a reply cut at max_tokens is an answer too: billed
    # like an ok call.
    answered = (
        JudgeCall.Status.OK,
        JudgeCall.Status.INVALID,
        JudgeCall.Status.REFUSED,
        JudgeCall.Status.TRUNCATED,
    )
    if c["status"] in answered:
        check_answered_call(c, row, cost, facts, tally)
    elif c["status"] != JudgeCall.Status.PENDING:
        if billed:
            tally.bad(
                "call without an answer that the server billed (a lost answer)", c, str(billed)
            )
        if cost:
            tally.bad("failed call with a cost", c, str(cost))


def check_answered_call(
    c: dict, row: list[int], cost: Decimal, facts: RunFacts, tally: Tally
) -> None:
    """The provider answered: billed once, at its price, tokens as billed, scores stored."""
    from jury.models import JudgeCall

    _requests, _ok, _err, billed, n_in, n_out = row
    if billed != 1:
        tally.bad("answered call not billed exactly once by the server", c, f"billed {billed}")
    p_in, p_out = facts.prices[c["judge_id"]]
    expected = ((Decimal(n_in) * p_in + Decimal(n_out) * p_out) / Decimal(1_000_000)).quantize(
        Decimal("1e-8")
    )
    tally.expected_cost += expected
    if (c["input_tokens"], c["output_tokens"]) != (n_in, n_out):
        tally.bad(
            "tokens in the database != tokens the server billed",
            c,
            f"{(c['input_tokens'], c['output_tokens'])} vs {(n_in, n_out)}",
        )
    if cost != expected:
        tally.bad("cost != billed tokens x prices", c, f"{cost} vs {expected}")
    n_scores = facts.scores.get(c["pk"], 0)
    if c["status"] == JudgeCall.Status.OK and n_scores != facts.n_criteria:
        tally.bad("ok call without one score per criterion", c, f"{n_scores} scores")


def run_problems(
    run: Any, server: dict[str, Any], facts: RunFacts, tally: Tally, expect_cached: bool
) -> list[str]:
    """Checks of the run as a whole, then the per-call mismatches by kind."""
    from django.db.models import Count

    from jury.models import JudgeCall, JudgeLease

    problems = []
    stray = [k for k in facts.per_key if k not in tally.seen_keys]
    if stray:
        problems.append(
            f"{len(stray)} prompts asked of the server that belong to no call of the run"
        )
    if not expect_cached:
        twice = (
            JudgeCall.objects.filter(run=run, cached_from__isnull=True, cost__gt=0)
            .values("judge_id", "prompt_hash")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
        if twice:
            problems.append(f"{twice} (judge, prompt hash) pairs billed by more than one call")
        if server["total_requests"] != tally.attempts_total:
            problems.append(
                f"server saw {server['total_requests']} requests, the calls record "
                f"{tally.attempts_total} attempts"
            )
        if tally.cost_total != tally.expected_cost:
            problems.append(
                f"sum of JudgeCall.cost {tally.cost_total} != billed tokens x prices "
                f"{tally.expected_cost}"
            )
    elif server["total_requests"]:
        problems.append(f"{server['total_requests']} requests reached the server for a cached run")
    leases = JudgeLease.objects.filter(call__run=run).count()
    if leases:
        problems.append(f"{leases} leases left behind")
    for kind, n in tally.mismatches.items():
        problems.append(f"{n} calls: {kind} (e.g. {tally.examples[kind]})")
    return problems


def summary(
    run: Any,
    calls: list[dict],
    by_status: Counter,
    server: dict[str, Any],
    tally: Tally,
    expect_cached: bool,
) -> list[str]:
    from django.db.models import Sum

    from jury.models import JudgeCall
    from jury.selectors import FAILED

    ok = by_status.get(JudgeCall.Status.OK, 0)
    failed = sum(by_status.get(s, 0) for s in FAILED)
    pending = by_status.get(JudgeCall.Status.PENDING, 0)
    db_sum = JudgeCall.objects.filter(run=run).aggregate(s=Sum("cost"))["s"] or Decimal(0)
    return [
        f"calls {len(calls):,}: ok {ok:,} + failed {failed:,} = {ok + failed:,}; pending {pending}; "
        f"by status {dict(by_status)}",
        f"attempts recorded {tally.attempts_total:,}; requests seen by the server "
        f"{server['total_requests']:,} (outcomes {server['per_outcome']})",
        f"cost in the database {db_sum} ; billed by the server x prices {tally.expected_cost}"
        + ("" if not expect_cached else " (cached run: both must be 0)"),
    ]
