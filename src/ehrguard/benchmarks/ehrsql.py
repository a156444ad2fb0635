"""EHRSQL-2024: read a split, and score any text-to-SQL system's predictions on it.

A split folder holds ``data.json`` (questions), ``label.json`` (gold SQL or "null") and
``answer.json`` (the published answers). The verifier's template and form banks, the question
classifier's training and the database fidelity check read splits through :func:`load_ehrsql_split`.

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
from ehrguard.errors import DatasetError
from ehrguard.evaluation.execution_match import execution_match, is_abstention
from ehrguard.evaluation.reliability import reliability_scores
from ehrguard.evaluation.stats import percent
from ehrguard.evaluation.threshold import Decision


def load_ehrsql_split(split_dir: str | Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Read ``data.json`` (questions), ``label.json`` (gold SQL or "null") and ``answer.json`` of a split.

    Raises:
        DatasetError: a file is missing or not the expected JSON shape.
    """
    d = Path(split_dir)
    out = []
    for name in ("data.json", "label.json", "answer.json"):
        path = d / name
        if not path.is_file():
            raise DatasetError(f"{path} is missing: an EHRSQL-2024 split folder holds data.json, label.json and answer.json.")
        try:
            out.append(json.loads(path.read_text()))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} is not valid JSON: {exc}") from exc
    data, labels, answers = out
    if isinstance(data, dict) and "data" in data:
        questions = {item["id"]: item["question"] for item in data["data"]}
    else:
        raise DatasetError(f"{d / 'data.json'} should be an object with a 'data' list of {{id, question}}.")
    if not isinstance(labels, dict) or not isinstance(answers, dict):
        raise DatasetError(f"{d}: label.json and answer.json should map ids to strings.")
    return questions, labels, answers


def ehrsql_pairs(split_dir: str | Path) -> list[tuple[str, str]]:
    """(question, gold SQL or "null") of an EHRSQL-2024 split, in the split's order."""
    questions, labels, _ = load_ehrsql_split(split_dir)
    return [(question, labels[qid]) for qid, question in questions.items()]


def load_predictions(path: str | Path) -> dict[str, str]:
    """``{id: sql | "null"}`` (the SQL of :func:`read_predictions`)."""
    return read_predictions(path)[0]


def read_predictions(path: str | Path) -> tuple[dict[str, str], dict[str, float]]:
    """A predictions file, ``{id: sql | "null"}`` or ``{id: {"sql": ..., "confidence": p}}``: the SQL of each id, and
    its confidence (1.0 for a bare SQL string).

    Raises:
        DatasetError: the file cannot be read or has another shape (the message says which id).
    """
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise DatasetError(f"Cannot read predictions {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"Predictions {path} are not valid JSON: {exc}") from exc
    shape = (f"Predictions {path} should be a JSON object mapping each id to a SQL string or \"null\", or to "
             '{"sql": ..., "confidence": 0-1}.')
    if not isinstance(data, dict):
        raise DatasetError(shape)
    sqls: dict[str, str] = {}
    confidences: dict[str, float] = {}
    for qid, value in data.items():
        if isinstance(value, str):
            sqls[qid], confidences[qid] = value, 1.0
        elif (isinstance(value, dict) and isinstance(value.get("sql"), str)
              and isinstance(value.get("confidence", 1.0), (int, float)) and not isinstance(value.get("confidence"), bool)):
            sqls[qid], confidences[qid] = value["sql"], float(value.get("confidence", 1.0))
        else:
            raise DatasetError(f"{shape} Id {qid!r} has {json.dumps(value)[:80]}.")
    return sqls, confidences


def score_ehrsql(split_dir: str | Path, db: Database, predictions: dict[str, str], *, db_id: str = "mimic_iv") -> dict[str, Any]:
    """RS(0/5/10/N), answerable execution accuracy and abstention precision/recall (percentages).

    Raises:
        DatasetError: the predictions miss ids of the split (the message gives a few).
    """
    return score_decisions(ehrsql_decisions(split_dir, db, predictions, db_id=db_id), predicted=len(predictions))


def score_decisions(decisions: list[Decision], *, predicted: int) -> dict[str, Any]:
    """The scores of :func:`score_ehrsql` for the decisions of :func:`ehrsql_decisions` (one per question of the
    split) made from ``predicted`` predictions: the ids beyond the split's are counted as ignored."""
    outcomes = [d.outcome(0.0) for d in decisions]
    answerable = sum(o.answerable for o in outcomes)
    abstained = sum(not o.answered for o in outcomes)
    abstained_right = sum(not o.answered and not o.answerable for o in outcomes)
    return {
        **reliability_scores(outcomes),
        "n": len(outcomes),
        "answerable": answerable,
        "unanswerable": len(outcomes) - answerable,
        "exec_acc_answerable": percent(sum(o.answerable and o.correct for o in outcomes), answerable),
        "abstention_precision": percent(abstained_right, abstained),
        "abstention_recall": percent(abstained_right, len(outcomes) - answerable),
        "ignored_extra_ids": predicted - len(decisions),  # every id of the split has a prediction (or it is refused)
    }


def ehrsql_decisions(split_dir: str | Path, db: Database, predictions: dict[str, str], confidences: dict[str, float] | None = None,
                     *, db_id: str = "mimic_iv") -> list[Decision]:
    """Each question of the split as a threshold sees it: answerable (by its label), answered, right by execution
    match, with the prediction's confidence (1.0 when none is given).

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
    out = []
    for qid in questions:
        gold, pred = labels[qid], predictions[qid]
        answerable, answered = not is_abstention(gold), not is_abstention(pred)
        correct = answered and answerable and execution_match(db, pred, gold, db_id=db_id).match
        out.append(Decision(answerable, answered, correct, (confidences or {}).get(qid, 1.0)))
    return out
