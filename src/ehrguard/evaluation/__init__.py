"""Comparing answers: execution match, the reliability score, SCARE's metrics.

The names below are the API (``from ehrguard.evaluation import execution_match``). The modules
are internal: :mod:`.execution_match` (the SCARE/EHRSQL correctness rule), :mod:`.reliability`
(EHRSQL-2024's RS(c)), :mod:`.scare_metrics` (SCARE's metrics from scored items) and
:mod:`.stats` (percentages and percentiles, computed one way everywhere).
"""

from ehrguard.evaluation.execution_match import (
    ABSTENTION_LABELS,
    MatchResult,
    answers_match,
    canonical_answer,
    execute_answer,
    execution_match,
    is_abstention,
    label_category,
    normalize_gold,
    normalize_prediction,
    parse_answer,
)
from ehrguard.evaluation.reliability import ItemOutcome, reliability_score, reliability_scores
from ehrguard.evaluation.scare_metrics import ScoredItem, compute_metrics
from ehrguard.evaluation.stats import percent, percentile

__all__ = [
    "ABSTENTION_LABELS",
    "ItemOutcome",
    "MatchResult",
    "ScoredItem",
    "answers_match",
    "canonical_answer",
    "compute_metrics",
    "execute_answer",
    "execution_match",
    "is_abstention",
    "label_category",
    "normalize_gold",
    "normalize_prediction",
    "parse_answer",
    "percent",
    "percentile",
    "reliability_score",
    "reliability_scores",
]
