"""Choosing the confidence below which an answer becomes an abstention, for RS(c) with a stated penalty c.

A system that answers with a confidence can trade answers for abstentions: at threshold *t*, an answer whose
confidence is below *t* is withheld. Which *t* is best depends on the penalty c of a wrong answer (EHRSQL-2024's
RS(c), :mod:`ehrguard.evaluation.reliability`). The threshold is chosen on one split and reported on another: the
score it reaches on the split it was chosen on is in-sample and says little about the next.

An item the system failed on (an error, an LLM that did not answer) is never a correct abstention: it counts as a
wrong answer whatever the threshold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ehrguard.evaluation.reliability import ItemOutcome, reliability_score


@dataclass(frozen=True)
class Decision:
    """One item as a threshold sees it: was it answerable, did the system answer, with what confidence, was it right."""

    answerable: bool
    answered: bool
    correct: bool = False
    confidence: float = 1.0
    error: bool = False

    def outcome(self, threshold: float) -> ItemOutcome:
        if self.error:  # scored as a wrong answer: never a pass
            return ItemOutcome(answerable=True, answered=True, correct=False)
        answered = self.answered and self.confidence >= threshold
        return ItemOutcome(self.answerable, answered, answered and self.correct)


@dataclass(frozen=True)
class Threshold:
    """A threshold and what it does on the items it is applied to (RS in %, the share of items answered in %)."""

    value: float
    penalty: float
    rs: float
    answered: float


def apply(decisions: Sequence[Decision], threshold: float, penalty: float) -> Threshold:
    """RS(``penalty``) and the answered share when answers below ``threshold`` are withheld."""
    outcomes = [d.outcome(threshold) for d in decisions]
    answered = 100.0 * sum(o.answered for o in outcomes) / len(outcomes) if outcomes else float("nan")
    return Threshold(threshold, penalty, reliability_score(outcomes, penalty), answered)


def choose(decisions: Iterable[Decision], penalty: float) -> Threshold:
    """The threshold that maximises RS(``penalty``) on ``decisions``; of equal scores, the lowest (the most answers).

    The candidates are 0 (every answer kept), each confidence an answer has, and just above the highest (none kept).

    Examples:
        >>> items = [Decision(True, True, True, 0.9), Decision(True, True, False, 0.4), Decision(False, True, False, 0.3)]
        >>> choose(items, 0).value, choose(items, 10).value
        (0.4, 0.9)
    """
    decisions = list(decisions)
    confidences = sorted({d.confidence for d in decisions if d.answered and not d.error})
    candidates = [0.0, *confidences, (confidences[-1] + 1e-9) if confidences else 1.0]
    best = apply(decisions, candidates[0], penalty)
    for t in candidates[1:]:
        here = apply(decisions, t, penalty)
        if here.rs > best.rs + 1e-12:
            best = here
    return best
