"""Comparing answers: execution match, the reliability score, SCARE's metrics.

The names below are the API (``from ehrguard.evaluation import execution_match``). The modules
are internal: :mod:`.execution_match` (the SCARE/EHRSQL correctness rule), :mod:`.reliability`
(EHRSQL-2024's RS(c)), :mod:`.scare_metrics` (SCARE's metrics from scored items), :mod:`.error_types`
(SCARE's error types of a wrong candidate, read from its tree against the gold's) and
:mod:`.stats` (percentages and percentiles, computed one way everywhere).
"""

from ehrguard.evaluation.error_types import ERROR_TYPES, ErrorReading, classify_error
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
    "ERROR_TYPES",
    "ErrorReading",
    "ItemOutcome",
    "MatchResult",
    "ScoredItem",
    "answers_match",
    "canonical_answer",
    "classify_error",
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
