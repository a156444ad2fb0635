"""The EHRSQL-2024 reliability score RS(c).

Per item: +1 for a correct answer or a correct abstention; 0 for abstaining on an
answerable question; -c for a wrong answer, or for answering an unanswerable one.
RS(c) is the mean over items; RS(N) uses c = the number of items, so a single
mistake outweighs every correct answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ItemOutcome:
    """What happened on one item: was it answerable, did the system answer, was the answer right."""

    answerable: bool
    answered: bool
    correct: bool = False

    def score(self) -> int:
        """+1, 0 or -1 (the -1 is later multiplied by the penalty c)."""
        if self.answerable:
            if not self.answered:
                return 0
            return 1 if self.correct else -1
        return -1 if self.answered else 1


def reliability_score(outcomes: Iterable[ItemOutcome], penalty: float | str) -> float:
    """RS(c) as a percentage.

    Args:
        outcomes: one :class:`ItemOutcome` per item.
        penalty: c (a number), or ``"N"`` for c = number of items.

    Examples:
        >>> items = [ItemOutcome(True, True, True), ItemOutcome(True, True, False),
        ...          ItemOutcome(False, False), ItemOutcome(True, False)]
        >>> reliability_score(items, 0), reliability_score(items, 10)
        (50.0, -200.0)
    """
    outcomes = list(outcomes)
    if not outcomes:
        return float("nan")
    c = float(len(outcomes)) if penalty == "N" else float(penalty)
    total = 0.0
    for outcome in outcomes:
        s = outcome.score()
        total += s * c if s == -1 else s
    return 100.0 * total / len(outcomes)


def reliability_scores(outcomes: Iterable[ItemOutcome], penalties: Iterable[float | str] = (0, 5, 10, "N")) -> Mapping[str, float]:
    """RS(c) for several penalties, keyed ``rs_0``, ``rs_5``, ``rs_10``, ``rs_N``."""
    outcomes = list(outcomes)
    return {f"rs_{p}": reliability_score(outcomes, p) for p in penalties}
