"""The labels are defined once (ehrguard.labels); their old names and the prompts' schemas are unchanged."""

from __future__ import annotations

import json

from ehrguard import labels


def test_the_old_names_are_the_labels() -> None:
    from ehrguard.evaluation import scare_metrics
    from ehrguard.evaluation.execution_match import AMBIGUOUS_LABELS, UNANSWERABLE_LABELS
    from ehrguard.verify import ACTIONS, verdict
    from ehrguard.verify.offline.classifier import CATEGORY_OF, CLASSES

    assert ACTIONS is labels.ACTIONS
    assert verdict.AMBIGUOUS_SUBTYPES is labels.AMBIGUOUS_SUBTYPES and verdict.UNANSWERABLE_SUBTYPES is labels.UNANSWERABLE_SUBTYPES
    assert scare_metrics.AMBIGUOUS_TYPES is labels.AMBIGUOUS_SUBTYPES
    assert scare_metrics.UNANSWERABLE_TYPES is labels.UNANSWERABLE_REPORT_ORDER
    assert scare_metrics.ANSWERABLE_TYPES is labels.ANSWERABLE_TYPES and scare_metrics.CATEGORIES is labels.CATEGORIES
    assert AMBIGUOUS_LABELS == {"ambiguous", *labels.AMBIGUOUS_SUBTYPES}
    assert UNANSWERABLE_LABELS == {"unanswerable", *labels.UNANSWERABLE_SUBTYPES}
    assert CLASSES == ("answerable", *labels.AMBIGUOUS_SUBTYPES, *labels.UNANSWERABLE_SUBTYPES)
    assert set(CATEGORY_OF.values()) == set(labels.QUESTION_CATEGORIES)


def test_the_report_order_holds_the_same_subtypes() -> None:
    assert sorted(labels.UNANSWERABLE_REPORT_ORDER) == sorted(labels.UNANSWERABLE_SUBTYPES)
    assert len(set(labels.UNANSWERABLE_REPORT_ORDER)) == len(labels.UNANSWERABLE_REPORT_ORDER)


def test_prompt_schemas_are_byte_identical() -> None:
    # The schemas are hashed into the response cache and the run logs: the enum order is pinned.
    from ehrguard.verify.llm_methods import CLASSIFY_SCHEMA, JOINT_SCHEMA

    subtypes = ('["vague-question", "vague-word", "ambiguous-reference", "small-talk", "out-of-scope", "missing-column", '
                '"infeasible-faq", "none"]')
    assert json.dumps(CLASSIFY_SCHEMA) == (
        '{"type": "object", "required": ["reasoning", "label", "subtype"], '
        '"properties": {"reasoning": {"type": "string"}, '
        '"label": {"type": "string", "enum": ["answerable", "ambiguous", "unanswerable"]}, '
        f'"subtype": {{"type": "string", "enum": {subtypes}}}}}}}'
    )
    assert json.dumps(JOINT_SCHEMA) == (
        '{"type": "object", "required": ["reasoning", "action", "sql", "subtype", "message"], '
        '"properties": {"reasoning": {"type": "string"}, '
        '"action": {"type": "string", "enum": ["preserve", "correct", "ambiguous", "unanswerable"]}, "sql": {"type": "string"}, '
        f'"subtype": {{"type": "string", "enum": {subtypes}}}, "message": {{"type": "string"}}}}}}'
    )
