"""The labels of a verdict and of a SCARE item, defined once.

Verification (``verify.verdict``, the LLM methods' JSON schemas, the question classifier) and
evaluation (``evaluation.scare_metrics``, the abstention labels of execution match) both import
them from here; their old names re-export these tuples.

The order of each tuple is part of what it defines: ``ACTIONS`` and the subtypes are enum values
of the LLM prompts' JSON schemas (hashed into the response cache and the run logs), and the
subtypes in this order are the question classifier's classes (its weights file stores them).
"""

from __future__ import annotations

ACTIONS = ("preserve", "correct", "ambiguous", "unanswerable")
"""What a verdict does: keep the candidate SQL, replace it, or answer with a label instead."""

QUESTION_CATEGORIES = ("answerable", "ambiguous", "unanswerable")

ANSWERABLE_TYPES = ("easy", "medium", "hard")
"""SCARE's difficulty of an answerable question."""

AMBIGUOUS_SUBTYPES = ("vague-question", "vague-word", "ambiguous-reference")
UNANSWERABLE_SUBTYPES = ("small-talk", "out-of-scope", "missing-column", "infeasible-faq")

UNANSWERABLE_REPORT_ORDER = ("infeasible-faq", "missing-column", "small-talk", "out-of-scope")
"""The unanswerable subtypes in the order SCARE run outputs list them (``metrics.json``
``by_subtype``, the reports' recall chart); kept so that outputs stay byte-identical. The same
labels as :data:`UNANSWERABLE_SUBTYPES` (``tests/test_labels.py``)."""

CATEGORIES = ("answerable_correct", "answerable_incorrect", "ambiguous", "unanswerable")
"""SCARE's ``sampled_category`` of an item (answerable items split by their candidate's correctness)."""

__all__ = [
    "ACTIONS",
    "AMBIGUOUS_SUBTYPES",
    "ANSWERABLE_TYPES",
    "CATEGORIES",
    "QUESTION_CATEGORIES",
    "UNANSWERABLE_REPORT_ORDER",
    "UNANSWERABLE_SUBTYPES",
]
