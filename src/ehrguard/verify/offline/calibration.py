"""Calibrated confidence: the probability that an answer the offline verifier returns is right.

A verdict that answers (preserve / correct) is right when the question is answerable and the SQL it returns answers
like the gold SQL. That probability is estimated by a logistic model (Platt scaling over a few features of the
evidence) fitted **out of fold**: on the records of a grouped cross-validation over the SCARE dev split, where each
item was verified by question models that had not seen its question (``ehrguard train calibration``). It is then
measured on data it was not fitted on (the safety benchmark, the generated mutation sets), with the expected
calibration error and a reliability table in their reports.

Operating points are target risks: among the answers shown as verified, at most this share wrong on the fitting
data. The bar for each risk is chosen there and shipped with the weights. The probability is only as good as the
mix of candidates it was fitted on (SCARE: a third right, a third wrong, a third not answerable); the report of
every benchmark says how it holds on other mixes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ehrguard.errors import ConfigError, DatasetError
from ehrguard.labels import ANSWERABLE_TYPES

SHIPPED_CALIBRATION = DEFAULT_PATH = Path(__file__).parent / "data" / "calibration.json"
FEATURES = ("bias", "logit_answerable", "empty", "corrected", "known_question", "warnings", "blocked", "repaired")
RISKS = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
MIN_SUPPORT = 30
# Repairs that change how an answer is shown, not what it says (each name once in a list): they vouch for nothing else
# in the query, so the answer is weighed as the candidate was, not as a corrected one.
PRESENTATION_ONLY = frozenset({"repeated_names"})  # a bar is only chosen where at least this many answers stay above it


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class AnswerFeatures:
    """What the calibrated probability of an answer rests on; the same whether read from evidence or a run record."""

    answerable: float
    empty: bool
    corrected: bool
    known_question: bool
    warnings: int
    blocked: bool
    # The correction is a repair the checks wrote (not a known question's SQL): on SCARE's dev split such repairs were
    # right about 2 times in 5 where a known question's were right 49 times in 50, so each has its own weight.
    repaired: bool = False

    def vector(self) -> list[float]:
        return [1.0, _logit(self.answerable), float(self.empty), float(self.corrected), float(self.known_question),
                float(min(self.warnings, 3)), float(self.blocked), float(self.repaired)]


def features_from_record(record: dict[str, Any], blocking_checks: frozenset[str]) -> AnswerFeatures | None:
    """The features of one `bench scare` record that answered; None for an abstention or an error."""
    details = record.get("details")
    if record.get("action") not in ("preserve", "correct") or not isinstance(details, dict):
        return None
    category = details.get("question", {}).get("category", {})
    sql = details.get("sql", {})
    checks = set(sql.get("checks", ()))
    fixed = set(str((details.get("repair") or {}).get("fixed") or "").split(", ")) - {""}
    corrected = record["action"] == "correct" and not (fixed and fixed <= PRESENTATION_ONLY)
    return AnswerFeatures(float(category.get("answerable", 0.0)), sql.get("outcome") == "empty", corrected,
                          details.get("known_form") is not None, int(sql.get("warnings", 0)),
                          bool(sql.get("errors", 0)) or bool(checks & blocking_checks), corrected and not fixed & KNOWN_FIXES)


# How a correction by a known question is labelled in the records (a repair is labelled by the checks it answers).
KNOWN_FIXES = frozenset({"template", "form"})


@dataclass(frozen=True)
class Calibration:
    weights: tuple[float, ...]
    bars: dict[str, float]  # target risk (as text) -> the lowest probability an answer needs to be shown as verified
    fitted_on: str = ""
    n: int = 0
    ece: float = float("nan")  # in-sample expected calibration error, for the record
    reliability: list[dict[str, float]] = field(default_factory=list)
    # What the fit saw: {"scare": {file name: SHA-256}} of the runs' data files (the in-sample check of the reports).
    trained_on: dict[str, Any] = field(default_factory=dict)

    def probability(self, f: AnswerFeatures) -> float:
        z = float(np.dot(self.weights, f.vector()))
        return 1.0 / (1.0 + math.exp(-z))

    def bar(self, risk: float) -> float:
        """The bar for a target risk: the stored one for the largest listed risk not above it (1.0: never verified)."""
        usable = [float(r) for r in self.bars if float(r) <= risk + 1e-9]
        return self.bars[_key(max(usable))] if usable else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "weights": list(self.weights), "bars": self.bars, "fitted_on": self.fitted_on,
                "n": self.n, "ece": self.ece, "reliability": self.reliability, "trained_on": self.trained_on}


def _key(risk: float) -> str:
    return f"{risk:g}"


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, iterations: int = 50) -> np.ndarray:
    """Logistic regression by Newton's method (IRLS), with a small L2 penalty on all but the bias."""
    w = np.zeros(x.shape[1])
    penalty = np.eye(x.shape[1]) * l2
    penalty[0, 0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + penalty @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w


def reliability(probabilities: Sequence[float], outcomes: Sequence[bool], bins: int = 10) -> tuple[float, list[dict[str, float]]]:
    """Expected calibration error (in probability points, 0-1) and the reliability table: per bin of predicted
    probability, how many answers, their mean prediction and the share right."""
    p, y = np.asarray(probabilities, dtype=float), np.asarray(outcomes, dtype=float)
    if len(p) == 0:
        return float("nan"), []
    table, ece = [], 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = (p >= lo) & ((p < hi) if b < bins - 1 else (p <= hi))
        if not inside.any():
            continue
        mean_p, share = float(p[inside].mean()), float(y[inside].mean())
        ece += inside.sum() / len(p) * abs(mean_p - share)
        table.append({"from": lo, "to": hi, "n": int(inside.sum()), "predicted": round(mean_p, 4), "right": round(share, 4)})
    return round(float(ece), 4), table


def choose_bars(probabilities: Sequence[float], outcomes: Sequence[bool], shown: Sequence[bool]) -> dict[str, float]:
    """For each target risk, the lowest bar at which the answers shown (``shown``: not blocked) above it are wrong
    at most that often, with at least MIN_SUPPORT of them."""
    rows = sorted(((p, y) for p, y, s in zip(probabilities, outcomes, shown, strict=True) if s), key=lambda r: -r[0])
    bars: dict[str, float] = {}
    for risk in RISKS:
        wrong, best = 0, None
        for n, (p, y) in enumerate(rows, 1):
            wrong += not y
            tie = n < len(rows) and rows[n][0] == p  # a bar keeps every answer of equal probability: decide after the last
            if n >= MIN_SUPPORT and not tie and wrong / n <= risk:
                best = p
        bars[_key(risk)] = best if best is not None else 1.0  # exact: a rounded bar would move answers across it
    return bars


def _shown(record: dict[str, Any], f: AnswerFeatures, blocking_checks: frozenset[str]) -> bool:
    """Could this answer be shown as verified (nothing blocks the SQL it returns)? As the policy decides: a correction
    by what remains on the corrected SQL, a kept candidate by its own findings."""
    details = record.get("details", {})
    if record.get("action") == "correct":
        remaining = details.get("repair", {}).get("remaining", {})
        return not remaining.get("errors", 0) and not set(remaining.get("checks", ())) & blocking_checks
    return not f.blocked and details.get("sql", {}).get("outcome") != "failed"


def answer_right(record: dict[str, Any]) -> bool:
    """Was this answer right? A `bench scare` record: the item is answerable and the final SQL answers like the gold.
    A `bench safety` record (it has a ``kind``): the case has a gold answer (a correct or a wrong candidate) and the
    final SQL answers like it."""
    if "kind" in record:
        return record["kind"] in ("correct", "wrong") and bool(record.get("answers_like_gold"))
    return bool(record.get("final_exec_acc")) and record.get("type") in ANSWERABLE_TYPES


def fit_calibration(records: Iterable[dict[str, Any]], blocking_checks: frozenset[str], fitted_on: str,
                    trained_on: dict[str, Any] | None = None) -> Calibration:
    """Fit on `bench scare` records (out of fold): an answer is right when the item is answerable and its final SQL
    answers like the gold SQL.

    Raises:
        DatasetError: too few answers to fit on.
    """
    xs, ys, shown = [], [], []
    for record in records:
        f = features_from_record(record, blocking_checks)
        if f is None:
            continue
        xs.append(f.vector())
        ys.append(answer_right(record))
        shown.append(_shown(record, f, blocking_checks))
    if len(xs) < 2 * MIN_SUPPORT:
        raise DatasetError(f"Only {len(xs)} answers in the records; a calibration needs at least {2 * MIN_SUPPORT}.")
    x, y = np.asarray(xs), np.asarray(ys, dtype=float)
    w = fit_logistic(x, y)
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    ece, table = reliability(p.tolist(), ys)
    return Calibration(tuple(round(float(v), 6) for v in w), choose_bars(p.tolist(), ys, shown), fitted_on, len(xs), ece, table,
                       trained_on or {})


def save_calibration(calibration: Calibration, path: str | Path) -> None:
    Path(path).write_text(json.dumps(calibration.to_dict(), indent=1) + "\n")


def load_calibration(path: str | Path | None = None) -> Calibration | None:
    """The shipped calibration (or the one at ``path``); None when there is none.

    Raises:
        ConfigError: the file exists but is not a calibration.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        if tuple(raw["features"]) != FEATURES:
            raise ValueError(f"features {raw['features']} are not {list(FEATURES)}")
        return Calibration(tuple(float(v) for v in raw["weights"]), {_key(float(k)): float(v) for k, v in raw["bars"].items()},
                           raw.get("fitted_on", ""), int(raw.get("n", 0)), float(raw.get("ece", "nan")), raw.get("reliability", []),
                           dict(raw.get("trained_on") or {}))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a calibration file ({exc}); refit it with: ehrguard train calibration RUN_DIR ...") from exc
