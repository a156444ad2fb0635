"""EHRSQL-2024 with no LLM: the offline reader answers, abstains below a bar chosen for the penalty, is scored by RS(c).

``ehrguard bench ehrsql --method offline-ask`` reads every question of a split with the known forms
(:mod:`ehrguard.generation.offline`), lets the offline verifier veto what it finds ambiguous or
unanswerable, and writes the shared task's predictions (``{id: sql | "null"}``).

What is fitted, and on what: the forms come from the **training** question sets only (EHRSQL-2024 train
for a valid split; never the scored split), and so do the reader's confidence model and its bar for the
penalty: the training split is cut into folds, each fold read with forms from the other folds, and the
confidence and bar fitted on those out-of-fold readings. Nothing is chosen on the scored split, and the
share of unanswerable questions it holds is never looked at.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ehrguard.errors import DatasetError
from ehrguard.evaluation.execution_match import execution_match, is_abstention
from ehrguard.evaluation.reliability import reliability_scores
from ehrguard.evaluation.stats import percent, percentile
from ehrguard.evaluation.threshold import Decision
from ehrguard.generation.offline import ReaderModel, ReadingFeatures, fit_reader_model, read_question
from ehrguard.verify.methods import DatabaseContext
from ehrguard.verify.offline.forms import FormIndex

Pairs = list[tuple[str, str]]
Progress = Callable[[int], None] | None


@dataclass(frozen=True)
class Record:
    """One question of a split as the reader saw it."""

    qid: str
    answerable: bool
    sql: str | None  # the best reading's SQL that runs; None when nothing was read
    features: ReadingFeatures | None
    correct: bool  # the SQL answers like the gold SQL (False for an unanswerable question)
    vetoed: bool  # the verifier found the question ambiguous or unanswerable
    read_ms: float


Check = Callable[[str, str], str | None]


def read_split(index: FormIndex, items: list[tuple[str, str, str]], context: DatabaseContext, *, check: Check | None = None,
               progress: Progress = None) -> list[Record]:
    """Read each ``(id, question, gold SQL or "null")`` with ``index``; score the reading against the gold SQL.

    ``check(question, sql)`` (the offline verifier, as ``ehrguard ask`` runs it) returns the SQL to answer with
    (the reading's, or its correction), or None when it finds the question ambiguous or unanswerable: the
    reading is then vetoed, an abstention whatever its confidence."""
    out = []
    for i, (qid, question, gold) in enumerate(items):
        start = time.perf_counter()
        read = read_question(index, question, context)
        sql = read.best.sql if read.best is not None and read.features is not None else None
        vetoed = False
        if sql is not None and check is not None:
            checked = check(question, sql)
            vetoed, sql = checked is None, checked or sql
        elapsed = 1000 * (time.perf_counter() - start)
        answerable = not is_abstention(gold)
        correct = bool(sql is not None and answerable and execution_match(context.db, sql, gold, db_id=context.db_id, timeout_s=30).match)
        out.append(Record(qid, answerable, sql, read.features if sql is not None else None, correct, vetoed, elapsed))
        if progress:
            progress(i + 1)
    return out


def verifier_check(context: DatabaseContext, **options: Any) -> Check:
    """The offline verifier as a :data:`Check`: the verdict's SQL for preserve / correct, None for ambiguous / unanswerable.

    ``options`` go to the verifier; a benchmark passes ``forms="off", templates="off"``, since the shipped banks
    hold questions of the splits it may score."""
    from ehrguard.verify import verify

    def check(question: str, sql: str) -> str | None:
        verdict = verify(question, sql, db=context, method="offline", **options)
        return verdict.sql if verdict.action in ("preserve", "correct") else None

    return check


def folds_of(items: list[tuple[str, str, str]], k: int, seed: int = 0) -> list[list[tuple[str, str, str]]]:
    """``items`` in ``k`` folds of a seeded shuffle, grouped by their gold SQL: the paraphrases of one query (one
    template with the same values) fall in one fold, so a fold is read as new questions are, never through a
    near-copy of itself. Unanswerable questions are grouped by their text."""
    def group(item: tuple[str, str, str]) -> str:
        _, question, sql = item
        return "q:" + question if is_abstention(sql) else "s:" + " ".join(sql.split()).lower()

    groups = sorted({group(item) for item in items})
    random.Random(seed).shuffle(groups)
    fold = {g: i % k for i, g in enumerate(groups)}
    return [[item for item in items if fold[group(item)] == f] for f in range(k)]


def out_of_fold(items: list[tuple[str, str, str]], context: DatabaseContext, *, k: int = 5, seed: int = 0,
                check: Check | None = None, progress: Progress = None) -> list[Record]:
    """Every item read with forms built from the other ``k - 1`` folds."""
    folds = folds_of(items, k, seed)
    out: list[Record] = []
    done = 0
    for f, held in enumerate(folds):
        train = [(q, sql) for g, fold in enumerate(folds) if g != f for _, q, sql in fold if not is_abstention(sql)]
        index = FormIndex(train)

        def step(n: int, base: int = done) -> None:
            if progress:
                progress(base + n)

        out += read_split(index, held, context, check=check, progress=step)
        done += len(held)
    return out


def decisions(records: list[Record], confidences: list[float] | None = None) -> list[Decision]:
    """The threshold decisions of every record: answered when read and not vetoed, with its confidence."""
    out = []
    it = iter(confidences or [])
    for r in records:
        if r.features is None:
            out.append(Decision(r.answerable, False))
            continue
        c = next(it) if confidences is not None else 1.0
        out.append(Decision(r.answerable, not r.vetoed, r.correct, c))
    return out


def fit_reader(records: list[Record], fitted_on: dict[str, Any]) -> ReaderModel:
    """The reader's confidence model and bars, from out-of-fold ``records``."""
    read = [r for r in records if r.features is not None]
    if not read:
        raise ValueError("No question was read: nothing to fit the reader's confidence on.")

    def as_decisions(probabilities: Any) -> list[Decision]:
        return decisions(records, [float(p) for p in probabilities])

    return fit_reader_model([r.features for r in read if r.features is not None], [r.correct for r in read], as_decisions,
                            {**fitted_on, "readings": len(read), "questions": len(records)})


Scored = list[tuple[ReaderModel, list[Record]]]  # records, each part with the model fitted without it


def train_and_read(train: list[tuple[str, str, str]], test: list[tuple[str, str, str]], context: DatabaseContext, *,
                   k: int = 5, seed: int = 0, check: Check | None = None, fitted_on: dict[str, Any] | None = None,
                   progress: Progress = None) -> tuple[ReaderModel, list[Record]]:
    """Fit the reader's confidence and bars out of fold on ``train``; read ``test`` with forms from all of ``train``."""
    oof = out_of_fold(train, context, k=k, seed=seed, check=check,
                      progress=(lambda n: progress(n)) if progress else None)
    model = fit_reader(oof, {**(fitted_on or {}), "folds": k, "seed": seed})
    index = FormIndex([(q, sql) for _, q, sql in train if not is_abstention(sql)])
    records = read_split(index, test, context, check=check,
                         progress=(lambda n: progress(len(train) + n)) if progress else None)
    return model, records


def cross_validated(items: list[tuple[str, str, str]], context: DatabaseContext, *, k: int = 5, seed: int = 0,
                    check: Check | None = None, progress: Progress = None) -> Scored:
    """Each of ``k`` folds read by forms, a confidence and bars fitted on the other folds only (nested: the bars out
    of fold within them), for a question set with no training split of its own (EHRSQL eICU)."""
    folds = folds_of(items, k, seed)
    out: Scored = []
    for f, held in enumerate(folds):
        rest = [item for g, fold in enumerate(folds) if g != f for item in fold]
        out.append(train_and_read(rest, held, context, k=k, seed=seed + 1, check=check, fitted_on={"outer_fold": f"{f + 1}/{k}"}))
        if progress:
            progress(f + 1)
    return out


def predict(records: list[Record], model: ReaderModel, penalty: float) -> tuple[dict[str, str], list[Decision]]:
    """The shared task's predictions at ``penalty`` (``{id: sql | "null"}``) and the decisions they score as."""
    bar = model.bar(penalty)
    predictions: dict[str, str] = {}
    out = []
    for r in records:
        confidence = model.confidence(r.features) if r.features is not None else 0.0
        answered = r.sql is not None and not r.vetoed and confidence >= bar
        predictions[r.qid] = r.sql if answered and r.sql is not None else "null"
        out.append(Decision(r.answerable, answered, answered and r.correct, confidence))
    return predictions, out


def summary(scored: Scored, penalty: float) -> dict[str, Any]:
    """RS(0/5/10/N) with the bars of ``penalty``, coverage, precision of the answers, abstention quality, latency."""
    chosen = [d for model, records in scored for d in predict(records, model, penalty)[1]]
    records = [r for _, part in scored for r in part]
    outcomes = [d.outcome(0.0) for d in chosen]
    answered = sum(o.answered for o in outcomes)
    right = sum(o.correct for o in outcomes)
    ms = sorted(r.read_ms for r in records)
    return {
        "penalty": penalty, "bars": [round(model.bar(penalty), 4) for model, _ in scored], "n": len(records),
        "unanswerable": sum(not o.answerable for o in outcomes), "rs": dict(reliability_scores(outcomes)),
        "answered": answered, "coverage": percent(answered, len(records)), "precision": percent(right, answered),
        "read": sum(r.features is not None for r in records), "vetoed": sum(r.vetoed for r in records),
        "answered_unanswerable": sum(o.answered and not o.answerable for o in outcomes),
        "read_ms_p50": round(percentile(ms, 0.5), 1) if ms else None, "read_ms_p99": round(percentile(ms, 0.99), 1) if ms else None,
    }


Items = list[tuple[str, str, str]]


def split_items(split_dir: str | Path) -> Items:
    """``(id, question, gold SQL or "null")`` of an EHRSQL-2024 split folder."""
    from ehrguard.benchmarks.ehrsql import load_ehrsql_split

    questions, labels, _ = load_ehrsql_split(split_dir)
    return [(qid, question, labels[qid]) for qid, question in questions.items()]


def eicu_items() -> Items:
    """The EHRSQL eICU questions (``ehrsql/eicu/valid.json``), numbered in file order.

    Raises:
        DatasetError: they are not under ``$EHRGUARD_DATA_DIR``.
    """
    from ehrguard.config import data_dir
    from ehrguard.verify.offline.templates import BANK_SOURCES

    pairs = BANK_SOURCES["eicu"](data_dir())
    if not pairs:
        raise DatasetError(f"The EHRSQL eICU questions are not at {data_dir() / 'ehrsql/eicu/valid.json'}; set EHRGUARD_DATA_DIR.")
    return [(f"eicu-{i}", q, sql) for i, (q, sql) in enumerate(pairs)]


def run_offline_ask(context: DatabaseContext, *, split: str | Path | None = None, train: str | Path | list[str | Path] | None = None,
                    folds: int = 5, seed: int = 0, verifier: bool = True, penalties: tuple[float, ...] = (0.0, 5.0, 10.0),
                    progress: Progress = None) -> dict[str, Any]:
    """The offline reader on a scored split with everything fitted on the ``train`` split(s) (``split`` and ``train``
    given; train + valid for a test split), or cross-validated over the EHRSQL eICU questions (neither given).

    Returns the configuration, one summary per penalty, the predictions of each penalty and the per-part models.

    Raises:
        DatasetError: a split folder or the eICU questions cannot be read; a training split is the scored one.
    """
    check = verifier_check(context, forms="off", templates="off") if verifier else None
    if split is not None:
        trains = [Path(t) for t in ([] if train is None else train if isinstance(train, list) else [train])]
        if not trains:
            raise DatasetError("Scoring a split needs a training split to fit on: pass --train (EHRSQL-2024 train).")
        if any(t.resolve() == Path(split).resolve() for t in trains):
            raise DatasetError("--train is the scored split: the forms, the confidence and the bars would be fitted on the "
                               "questions they are scored on. Pass another split (EHRSQL-2024 train).")
        train_items = [item for t in trains for item in split_items(t)]
        test_items = split_items(split)
        named = " + ".join(str(t) for t in trains)
        scored = [train_and_read(train_items, test_items, context, k=folds, seed=seed, check=check, progress=progress,
                                 fitted_on={"train": [str(t) for t in trains]})]
        design = f"forms, confidence and bars from {named} ({folds}-fold out of fold); scored on {split}"
    else:
        scored = cross_validated(eicu_items(), context, k=folds, seed=seed, check=check, progress=progress)
        design = f"EHRSQL eICU questions, {folds}-fold cross-validation (bars chosen by an inner {folds}-fold one)"
    return {
        "design": design, "verifier": "offline (forms and templates off)" if verifier else "none",
        "summaries": [summary(scored, c) for c in penalties],
        "predictions": {f"{c:g}": {qid: sql for model, records in scored for qid, sql in predict(records, model, c)[0].items()}
                        for c in penalties},
        "models": [model.to_dict() for model, _ in scored],
    }


def render_offline_ask(result: dict[str, Any]) -> str:
    """The report of :func:`run_offline_ask`, as Markdown."""
    lines = ["# Asking with no LLM: the offline reader", "", f"Design: {result['design']}.", f"Verifier: {result['verifier']}.", "",
             "| penalty c (bar chosen for) | RS(0) | RS(5) | RS(10) | RS(N) | answered % | precision % | unanswerable answered |"
             " p50 ms | p99 ms |", "|---|---|---|---|---|---|---|---|---|---|"]
    for s in result["summaries"]:
        rs = s["rs"]
        lines.append(f"| {s['penalty']:g} | {rs['rs_0']:.1f} | {rs['rs_5']:.1f} | {rs['rs_10']:.1f} | {rs['rs_N']:.1f} | "
                     f"{s['coverage']:.1f} | {s['precision']:.1f} | {s['answered_unanswerable']} | "
                     f"{s['read_ms_p50']} | {s['read_ms_p99']} |")
    first = result["summaries"][0]
    lines += ["", f"{first['n']} questions, {first['unanswerable']} unanswerable; {first['read']} read by a known form, "
              f"{first['vetoed']} of those vetoed by the verifier. Latency is per question: reading, executing the readings, "
              "verifying (not the scoring)."]
    return "\n".join(lines) + "\n"
