"""Score any text-to-SQL system's predictions on an EHRSQL-2024 split.

Predictions are ``{id: sql | "null"}`` ("null", or any abstention label, abstains). Each
item counts +1 for a correct answer or a correct abstention, 0 for abstaining on an
answerable question, and -c for a wrong answer or for answering an unanswerable question
(RS(c)); correctness is the execution-match rule against the gold SQL on our database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ehrguard.db.engine import Database
from ehrguard.db.fidelity import load_ehrsql_split
from ehrguard.errors import DatasetError
from ehrguard.evaluation.execution_match import execution_match, is_abstention
from ehrguard.evaluation.reliability import ItemOutcome, reliability_scores
from ehrguard.evaluation.stats import percent


def load_predictions(path: str | Path) -> dict[str, str]:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise DatasetError(f"Cannot read predictions {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"Predictions {path} are not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise DatasetError(f"Predictions {path} should be a JSON object mapping each id to a SQL string or \"null\".")
    return data



def score_ehrsql(split_dir: str | Path, db: Database, predictions: dict[str, str], *, db_id: str = "mimic_iv") -> dict[str, Any]:
    """RS(0/5/10/N), answerable execution accuracy and abstention precision/recall (percentages).

    Raises:
        DatasetError: the predictions miss ids of the split (the message gives a few).
    """
    questions, labels, _ = load_ehrsql_split(split_dir)
    missing = [i for i in questions if i not in predictions]
    if missing:
        raise DatasetError(
            f"The predictions miss {len(missing)} of {len(questions)} ids (e.g. {', '.join(missing[:3])}). "
            'Give every id an SQL string, or "null" to abstain.'
        )
    outcomes = []
    answerable_correct = answerable = abstained = abstained_right = unanswerable = 0
    for qid in questions:
        gold, pred = labels[qid], predictions[qid]
        is_answerable = not is_abstention(gold)
        answered = not is_abstention(pred)
        correct = answered and is_answerable and execution_match(db, pred, gold, db_id=db_id).match
        outcomes.append(ItemOutcome(is_answerable, answered, correct))
        answerable += is_answerable
        answerable_correct += correct
        unanswerable += not is_answerable
        abstained += not answered
        abstained_right += (not answered) and not is_answerable
    extra = [i for i in predictions if i not in questions]
    return {
        **reliability_scores(outcomes),
        "n": len(questions),
        "answerable": answerable,
        "unanswerable": unanswerable,
        "exec_acc_answerable": percent(answerable_correct, answerable),
        "abstention_precision": percent(abstained_right, abstained),
        "abstention_recall": percent(abstained_right, unanswerable),
        "ignored_extra_ids": len(extra),
    }
