from __future__ import annotations

import math

from ehrguard.evaluation.reliability import ItemOutcome, reliability_score, reliability_scores


def test_worked_example():
    # 10 items: 5 answered correctly, 1 answered wrongly, 1 abstained on an answerable one,
    # 2 correct abstentions on unanswerable ones, 1 unanswerable one answered.
    items = (
        [ItemOutcome(True, True, True)] * 5
        + [ItemOutcome(True, True, False)]
        + [ItemOutcome(True, False)]
        + [ItemOutcome(False, False)] * 2
        + [ItemOutcome(False, True)]
    )
    # raw: 5 + 2 = +7 ; two mistakes
    scores = reliability_scores(items)
    assert scores["rs_0"] == 70.0
    assert scores["rs_5"] == 100 * (7 - 10) / 10
    assert scores["rs_10"] == 100 * (7 - 20) / 10
    assert scores["rs_N"] == 100 * (7 - 2 * 10) / 10


def test_abstaining_on_answerable_scores_zero_even_with_penalty():
    assert reliability_score([ItemOutcome(True, False)], 10) == 0.0
    assert reliability_score([ItemOutcome(True, False, correct=True)], "N") == 0.0


def test_empty_is_nan():
    assert math.isnan(reliability_score([], 0))
