"""Writing SQL without an LLM: the known question a question paraphrases, filled with the question's values.

The offline reader (:class:`OfflineWriter`) turns a question into SQL with the known question forms
(:mod:`ehrguard.verify.offline.forms`): the most similar forms the question can be a paraphrase of are
filled with its values and executed. It answers only when it can stand behind the reading:

* the best reading runs on the database (an error, or a form the question fills wrongly, is no answer);
* its **confidence** is the probability that the reading answers like the gold SQL would, from a logistic
  model over what the reading looks like (how similar the two questions are, how far ahead of the next
  reading it is, whether the next reading answers the same, whether the answer is empty). The model is
  fitted **out of fold** on a question set's training split (``ehrguard train offline-reader``: forms
  from four folds, the fifth read), never on a split it is measured on;
* the confidence must reach the bar for the stated **penalty** of a wrong answer: the bar that maximises
  EHRSQL-2024's RS(c) on the same out-of-fold readings, so an answer is given only where, on data the
  bar was not measured on, answering paid more than abstaining.

Everything below the bar is an abstention with its reason and the nearest known question, so a person
can rephrase. The verifier then checks the SQL like any candidate (``ehrguard.answer``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ehrguard.db.engine import Result
from ehrguard.errors import ConfigError, DatabaseError
from ehrguard.evaluation.execution_match import answers_match, canonical_answer
from ehrguard.verify.methods import DatabaseContext
from ehrguard.verify.offline.forms import FormIndex, Reading, load_forms

SHIPPED_READER = Path(__file__).parent / "data" / "offline_reader.json"
FEATURES = ("bias", "similarity", "margin", "second_agrees", "alone", "empty", "slots", "meaning", "exact", "derived")
PENALTIES = (0, 5, 10)
DEFAULT_PENALTY = 10.0
_RUN_TIMEOUT_S = 10.0
_RUN_MAX_ROWS = 1000


@dataclass(frozen=True)
class ReadingFeatures:
    """What the confidence of a reading rests on."""

    similarity: float  # Jaccard of content words, best reading
    margin: float  # best minus the next reading with other SQL (the best's distance to 0.3, the floor, when alone)
    second_agrees: bool  # the next reading answers the same
    alone: bool  # no other reading fits
    empty: bool  # the best reading returns no rows (or only NULL)
    slots: int  # values filled into the form
    meaning: int  # meaning words the question and the form share
    exact: bool  # the form's own meaning words, not only those of another paraphrase of its SQL
    derived: bool = False  # read through a swap of one meaning word, not as a known question

    def vector(self) -> list[float]:
        return [1.0, self.similarity, self.margin, float(self.second_agrees), float(self.alone), float(self.empty),
                float(min(self.slots, 4)), float(min(self.meaning, 6)), float(self.exact), float(self.derived)]


@dataclass(frozen=True)
class ReaderModel:
    """The fitted confidence of readings, and the bar for each penalty (chosen on the same out-of-fold readings)."""

    weights: tuple[float, ...]
    bars: dict[str, float]  # penalty ("0", "5", "10") -> the lowest confidence answered
    fitted_on: dict[str, Any] = field(default_factory=dict)

    def confidence(self, features: ReadingFeatures) -> float:
        z = float(np.dot(self.weights, features.vector()))
        return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))

    def bar(self, penalty: float) -> float:
        """The bar for ``penalty``: the one chosen for it, else the break-even probability c / (c + 1) (an answer
        right with probability p is worth p - c (1 - p) against 0 for abstaining), never below the chosen bar of a
        smaller penalty."""
        key = f"{penalty:g}"
        if key in self.bars:
            return self.bars[key]
        below = [bar for k, bar in self.bars.items() if float(k) <= penalty]
        return max([penalty / (penalty + 1), *below])

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "weights": list(self.weights), "bars": self.bars, "fitted_on": self.fitted_on}


def load_reader_model(path: str | Path | None = None) -> ReaderModel:
    """The reader's confidence model (the shipped one by default).

    Raises:
        ConfigError: the file is missing or is not a reader model of these features.
    """
    p = Path(path) if path else SHIPPED_READER
    try:
        data = json.loads(p.read_text())
    except OSError:
        raise ConfigError(f"No offline reader model at {p}; fit one with: ehrguard train offline-reader --out {p}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"The offline reader model {p} is not valid JSON ({exc}); "
                          "fit it again with ehrguard train offline-reader.") from None
    if not isinstance(data, dict) or data.get("features") != list(FEATURES) or len(data.get("weights", ())) != len(FEATURES):
        raise ConfigError(f"{p} is not an offline reader model of this version; fit it again with ehrguard train offline-reader.")
    return ReaderModel(tuple(float(w) for w in data["weights"]), {str(k): float(v) for k, v in data["bars"].items()},
                       data.get("fitted_on", {}))


def save_reader_model(model: ReaderModel, path: str | Path) -> None:
    Path(path).write_text(json.dumps(model.to_dict(), indent=1) + "\n")


@dataclass(frozen=True)
class OfflineSql:
    """What the offline reader made of one question.

    Attributes:
        sql: the SQL to verify, or None when the reader abstains.
        known_question: the known question it read ("how many times was [prescriptions.drug] prescribed to [patient]"),
            also when it abstains (the nearest one), None when no known question fits at all.
        confidence: the probability that the reading answers like the right SQL (None when nothing was read).
        bar: the confidence an answer needs at this penalty.
        reason: why there is no SQL (None when there is).
        alternatives: the next readings, (known question, similarity, SQL).
        features: what the confidence rests on.
    """

    sql: str | None
    known_question: str | None
    confidence: float | None
    bar: float
    reason: str | None = None
    similarity: float | None = None
    alternatives: tuple[tuple[str, float, str], ...] = ()
    features: ReadingFeatures | None = None
    result: Result | None = field(default=None, repr=False, compare=False)

    @property
    def derived(self) -> bool:
        """The reading is a derived query: a known question with one meaning word swapped ("first" for "last"), not a
        question the training data asks."""
        return self.features is not None and bool(self.features.derived)

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "known_question": self.known_question, "derived": self.derived, "similarity": self.similarity,
                "confidence": None if self.confidence is None else round(self.confidence, 4), "bar": round(self.bar, 4),
                "reason": self.reason,
                "alternatives": [{"known_question": q, "similarity": round(s, 3), "sql": sql} for q, s, sql in self.alternatives]}


def _execute(sql: str, context: DatabaseContext) -> Result | None:
    try:
        return context.db.execute(sql, timeout_s=_RUN_TIMEOUT_S, max_rows=_RUN_MAX_ROWS)
    except DatabaseError:
        return None


def same_answer(a: Result, b: Result, sql: str, db_id: str) -> bool:
    """Two results answer alike by the database profile's answer rule (``sql`` is the reference query); a truncated
    result never does."""
    if a.truncated or b.truncated:
        return False
    return answers_match(canonical_answer(a.rows), canonical_answer(b.rows), sql, db_id)


def _is_empty(result: Result) -> bool:
    return not result.rows or all(v is None for row in result.rows for v in row)


@dataclass(frozen=True)
class Read:
    """The best reading of a question that runs, with its features (or why there is none)."""

    best: Reading | None
    result: Result | None
    features: ReadingFeatures | None
    others: tuple[Reading, ...]
    reason: str | None


def read_question(index: FormIndex, question: str, context: DatabaseContext, *, top: int = 3) -> Read:
    """Read ``question`` with ``index``: the best reading whose SQL runs, and what its confidence rests on."""
    readings = index.read(question, context, top=top)
    if not readings:
        return Read(None, None, None, (), "No known question fits it: none whose values this question supplies and "
                    "whose meaning words (first/last, maximum/average, since/until, ...) it shares.")
    runs = [(r, _execute(r.sql, context)) for r in readings]
    usable = [(r, res) for r, res in runs if res is not None]
    if not usable:
        return Read(readings[0], None, None, tuple(readings[1:]), "The nearest known question's SQL does not run on this database.")
    best, result = usable[0]
    others = [(r, res) for r, res in usable[1:]]
    second = others[0] if others else None
    margin = best.similarity - (second[0].similarity if second else 0.3)
    agrees = second is not None and same_answer(result, second[1], best.sql, context.db_id)
    features = ReadingFeatures(
        similarity=best.similarity, margin=margin, second_agrees=agrees, alone=second is None, empty=_is_empty(result),
        slots=len(best.form.slots), meaning=len(best.form.meaning), exact=best.exact, derived=best.derived)
    return Read(best, result, features, tuple(r for r, _ in others), None)


class OfflineWriter:
    """Text-to-SQL without an LLM: the known forms of a database's question set, with a confidence and a bar."""

    def __init__(self, index: FormIndex | None = None, model: ReaderModel | None = None) -> None:
        self._index = index
        self.model = model or load_reader_model()

    def index(self, context: DatabaseContext) -> FormIndex | None:
        return self._index if self._index is not None else load_forms(context.db_id)

    def write(self, question: str, context: DatabaseContext, *, penalty: float = DEFAULT_PENALTY) -> OfflineSql:
        """The SQL for ``question``, or an abstention with its reason, at the stated ``penalty`` of a wrong answer."""
        bar = self.model.bar(penalty)
        index = self.index(context)
        if index is None:
            return OfflineSql(None, None, None, bar, f"No known questions ship for this database ({context.db_id}): "
                              "asking without a model needs a question set (EHRSQL-style) for its schema; pass --model.")
        read = read_question(index, question, context)
        alternatives = tuple((r.form.readable, r.similarity, r.sql) for r in read.others)
        if read.best is None:
            return OfflineSql(None, None, None, bar, read.reason)
        known = read.best.form.readable
        if read.features is None:
            return OfflineSql(None, known, None, bar, read.reason, read.best.similarity, alternatives)
        confidence = self.model.confidence(read.features)
        if confidence < bar:
            return OfflineSql(None, known, confidence, bar,
                              f"The nearest known question is too far from this one to answer it (confidence {confidence:.2f}, "
                              f"below the {bar:.2f} a wrong answer's penalty of {penalty:g} requires).",
                              read.best.similarity, alternatives, read.features)
        return OfflineSql(read.best.sql, known, confidence, bar, None, read.best.similarity, alternatives, read.features, read.result)


def fit_reader_model(features: Sequence[ReadingFeatures], correct: Sequence[bool], decisions: Any, fitted_on: dict[str, Any],
                     penalties: Sequence[float] = PENALTIES) -> ReaderModel:
    """The logistic confidence over out-of-fold readings, and the RS-maximising bar of each penalty on them.

    ``decisions(probabilities)`` turns the readings' confidences into the threshold decisions of every
    question of the fitting data (the unread ones abstaining), so a bar is chosen over all questions, not
    only those read.
    """
    from ehrguard.evaluation.threshold import choose
    from ehrguard.verify.offline.calibration import fit_logistic

    x = np.array([f.vector() for f in features], dtype=float)
    y = np.array(correct, dtype=float)
    # One right and one wrong pseudo-reading at the average reading: a weak prior at 50%, so that readings all right (or
    # all wrong), as a small question set can give, still fit (the unpenalised bias would grow without end).
    prior = np.vstack([x.mean(axis=0), x.mean(axis=0)])
    w = fit_logistic(np.vstack([x, prior]), np.concatenate([y, [1.0, 0.0]]), l2=1.0)
    probabilities = 1.0 / (1.0 + np.exp(-(x @ w)))
    bars = {f"{c:g}": float(choose(decisions(probabilities), c).value) for c in penalties}
    return ReaderModel(tuple(float(v) for v in w), bars, fitted_on)


def example_questions(context: DatabaseContext, n: int = 6, seed: int = 0) -> list[dict[str, str]]:
    """Questions the offline reader answers on this database, drawn from its known forms: each form's slots filled
    with values the database holds (a patient, a drug, a lab test, ...; "last year" for a period), kept only when
    the reader reads it back as that form and the answer has rows. Forms with number slots are left out (a number's
    meaning, an age or a count, is not known from the form alone)."""
    import random
    import re

    index = load_forms(context.db_id)
    if index is None:
        return []
    writer = OfflineWriter(index)
    forms = [f for f in index.forms if f.slots and not any(s.kind == "number" for s in f.slots) and len(f.masked) < 110]
    random.Random(seed).shuffle(forms)
    out: list[dict[str, str]] = []
    seen: set[tuple[str, ...]] = set()
    for form in forms:
        if len(out) >= n:
            break
        kinds = tuple(sorted(s.column if s.kind == "name" else s.kind for s in form.slots))
        if kinds in seen:
            continue  # one example per kind of question
        question = _fill_example(form, context)
        if question is None:
            continue
        reading = writer.write(question, context, penalty=0)
        if reading.sql is None or reading.result is None or _is_empty(reading.result):
            continue
        seen.add(kinds)
        text = re.sub(r"\s+([?.,'])", r"\1", question)
        out.append({"question": text[0].upper() + text[1:] + ("" if text.endswith("?") else "?"),
                    "known_question": reading.known_question or ""})
    return out


def _fill_example(form: Any, context: DatabaseContext) -> str | None:
    """The form's question with a value the database holds in each slot, or None when a slot's column has none."""
    import re

    text = form.masked
    for slot in form.slots:
        if slot.kind == "pid":
            m = re.search(r"([A-Za-z_]\w*\.[A-Za-z_]\w*)\s*=\s*\{p\}", form.sql)
            value = _a_value(context, m.group(1)) if m else None
            token = "<pid>"
        elif slot.kind == "time":  # the period phrase brings its own preposition
            text = re.sub(r"\b(?:in the|in|on|during the|during|since|until) <time>", "<time>", text)
            value, token = "last year", "<time>"
        else:
            value, token = _a_value(context, slot.column), f"<{slot.column}>"
        if value is None or token not in text:
            return None
        text = text.replace(token, value, 1)
    return None if "<" in text else text


def _a_value(context: DatabaseContext, column: str) -> str | None:
    """A frequent value of ``table.column`` (its most common, for an example that has rows)."""
    table, _, name = column.partition(".")
    if not table or not name or table not in {t.name for t in context.schema.tables}:
        return None
    try:
        rows = context.db.execute(f'SELECT "{name}", COUNT(*) AS n FROM "{table}" WHERE "{name}" IS NOT NULL '
                                  f'GROUP BY "{name}" ORDER BY n DESC LIMIT 1', timeout_s=_RUN_TIMEOUT_S, max_rows=1).rows
    except DatabaseError:
        return None
    return str(rows[0][0]) if rows else None
