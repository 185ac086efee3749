"""The jury's aggregate as tests read it, taken from agreement's one score table.

The jury score itself (per item and criterion, the weighted mean of each judge's latest valid
score) is computed once, in agreement.selectors.score_data; these helpers only reshape its
rows and count the judges behind each one, so that a test can say how many judges stand
behind a jury score.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from agreement.selectors import score_table
from annotation.models import RatingStudy


@dataclass(frozen=True)
class JuryItemScore:
    item_id: int
    criterion: str
    value: float
    n_judges: int


def jury_item_scores(*, study: RatingStudy) -> list[JuryItemScore]:
    """Per item and criterion: the jury's score and how many judges it rests on."""
    table = score_table(study=study)
    judges = table.loc[table["rater_kind"] == "judge"]
    n_judges = Counter(zip(judges["item"], judges["criterion"], strict=True))
    jury = table.loc[table["rater_kind"] == "jury"]
    return [
        JuryItemScore(
            item_id=int(item),
            criterion=criterion,
            value=float(value),
            n_judges=n_judges[(item, criterion)],
        )
        for item, criterion, value in sorted(
            zip(jury["item"], jury["criterion"], jury["value"], strict=True)
        )
    ]


def jury_composites(*, study: RatingStudy) -> dict[int, tuple[float, int]]:
    """Per item: the mean of the jury's criterion scores (MedHELM's composite, equal
    weights) and the smallest number of judges behind any of them."""
    per_item: dict[int, list[JuryItemScore]] = defaultdict(list)
    for s in jury_item_scores(study=study):
        per_item[s.item_id].append(s)
    return {
        item_id: (sum(s.value for s in scores) / len(scores), min(s.n_judges for s in scores))
        for item_id, scores in per_item.items()
    }
