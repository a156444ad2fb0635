"""How well known forms read questions they were not built from.

The offline verifier corrects candidates with the SQL of the known form a question
paraphrases (:mod:`ehrguard.verify.offline.forms`). This measures that reader on held-out
question/SQL pairs: build the forms from one set, read the other set's questions, execute
the filled SQL and compare with the gold SQL by the benchmarks' execution-match rule.
Coverage is the share of questions read; precision the share of read questions answered
like the gold SQL. No verifier decision, no candidate: the reader alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ehrguard.errors import DatasetError
from ehrguard.evaluation.execution_match import execution_match
from ehrguard.evaluation.stats import percent, percentile
from ehrguard.verify.methods import DatabaseContext
from ehrguard.verify.offline.forms import FormIndex


def read_held_out(train: list[tuple[str, str]], test: list[tuple[str, str]], context: DatabaseContext,
                  progress: Callable[[int], None] | None = None, examples: int = 10) -> dict[str, Any]:
    """Forms from ``train``; read, execute and score every question of ``test``.

    Returns counts, coverage and precision (percent), per-question read time, and the first
    ``examples`` misreadings (question, filled SQL, gold SQL) to look at.
    """
    start = time.perf_counter()
    index = FormIndex(train)
    built = time.perf_counter() - start
    read = right = gold_fails = 0
    read_s: list[float] = []
    wrong: list[dict[str, str]] = []
    for i, (question, gold) in enumerate(test):
        t = time.perf_counter()
        readings = index.read(question, context, top=1)
        read_s.append(time.perf_counter() - t)
        if readings:
            read += 1
            result = execution_match(context.db, readings[0].sql, gold, db_id=context.db_id, timeout_s=30)
            if result.gold_error:
                gold_fails += 1
            elif result.match:
                right += 1
            elif len(wrong) < examples:
                wrong.append({"question": question, "read_as": readings[0].form.masked, "sql": readings[0].sql, "gold": gold})
        if progress:
            progress(i + 1)
    read_s.sort()
    return {
        "forms": len(index), "train_pairs": len(train), "n": len(test), "read": read, "right": right,
        "gold_errors": gold_fails, "coverage": percent(read, len(test)), "precision": percent(right, read - gold_fails),
        "build_s": round(built, 2), "read_ms_p50": round(1000 * percentile(read_s, 0.5), 2) if read_s else None,
        "misread_examples": wrong,
    }


def combine(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary of several :func:`read_held_out` results (the folds of a cross-validation)."""
    total = {k: sum(r[k] for r in results) for k in ("n", "read", "right", "gold_errors")}
    return {**total, "coverage": percent(total["read"], total["n"]), "precision": percent(total["right"],
                                                                                          total["read"] - total["gold_errors"]),
            "forms": [r["forms"] for r in results], "read_ms_p50": [r["read_ms_p50"] for r in results],
            "misread_examples": [e for r in results for e in r["misread_examples"]][:10]}


Pairs = list[tuple[str, str]]


def held_out_splits(db_id: str, *, folds: int = 5, limit: int | None = None) -> list[tuple[Pairs, Pairs]]:
    """The (train, held-out) question/SQL pairs to measure the form reader of ``db_id`` on.

    ``mimic_iv``: the answerable pairs of EHRSQL-2024 train, read on those of its valid split.
    ``eicu``: the EHRSQL eICU questions in ``folds`` folds, questions grouped. ``limit`` keeps the
    first N held-out pairs (per fold).

    Raises:
        DatasetError: the data is not under ``$EHRGUARD_DATA_DIR``.
    """
    from ehrguard.benchmarks.ehrsql import ehrsql_pairs
    from ehrguard.config import data_dir
    from ehrguard.verify.offline.templates import BANK_SOURCES
    from ehrguard.verify.offline.training import fold_of

    if db_id == "mimic_iv":
        root = data_dir() / "ehrsql-2024" / "mimic_iv"
        if not (root / "valid" / "label.json").is_file():
            raise DatasetError(f"EHRSQL-2024 is not under {root}; set EHRGUARD_DATA_DIR to the folder that holds ehrsql-2024/.")

        def answerable(split: str) -> Pairs:
            return [(q, sql) for q, sql in ehrsql_pairs(root / split) if sql != "null"]

        return [(answerable("train"), answerable("valid")[:limit])]
    pairs = BANK_SOURCES["eicu"](data_dir())
    if not pairs:
        raise DatasetError(f"The EHRSQL eICU questions are not at {data_dir() / 'ehrsql/eicu/valid.json'}; set EHRGUARD_DATA_DIR.")
    return [([p for p in pairs if fold_of(p[0], folds) != k], [p for p in pairs if fold_of(p[0], folds) == k][:limit])
            for k in range(folds)]
