"""Comparing answers: execution match, and the reliability score."""

from ehrguard.evaluation.execution_match import (
    ABSTENTION_LABELS,
    MatchResult,
    answers_match,
    canonical_answer,
    execution_match,
    is_abstention,
    label_category,
    normalize_gold,
    normalize_prediction,
)
from ehrguard.evaluation.reliability import ItemOutcome, reliability_score, reliability_scores

__all__ = [
    "ABSTENTION_LABELS",
    "ItemOutcome",
    "MatchResult",
    "answers_match",
    "canonical_answer",
    "execution_match",
    "is_abstention",
    "label_category",
    "normalize_gold",
    "normalize_prediction",
    "reliability_score",
    "reliability_scores",
]
