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
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
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
# A ClinSQL query the published judge scored at least this is good (clinsql_verify calls the rest bad).
GOOD_SCORE = 0.5
# Fitted per check: a check gets its own weight only where it fired on at least this many answers.
MIN_CHECK_ANSWERS = 10
BY_CHECK_L2 = 1.0
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
    # The checks that raised a finding on the candidate (a calibration fitted per check weighs each on its own).
    checks: frozenset[str] = frozenset()

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
                          bool(sql.get("errors", 0)) or bool(checks & blocking_checks), corrected and not fixed & KNOWN_FIXES,
                          frozenset(checks))


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
    # A weight per check that raised a finding (fitted with ``by_check``: a layout whose checks say more, or less, than
    # the features above tell); a check with no weight adds nothing.
    check_weights: dict[str, float] = field(default_factory=dict)

    def probability(self, f: AnswerFeatures) -> float:
        z = float(np.dot(self.weights, f.vector())) + sum(self.check_weights.get(c, 0.0) for c in f.checks)
        return 1.0 / (1.0 + math.exp(-z))

    def bar(self, risk: float) -> float:
        """The bar for a target risk: the stored one for the largest listed risk not above it (1.0: never verified)."""
        usable = [float(r) for r in self.bars if float(r) <= risk + 1e-9]
        return self.bars[_key(max(usable))] if usable else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "weights": list(self.weights), "check_weights": self.check_weights, "bars": self.bars,
                "fitted_on": self.fitted_on, "n": self.n, "ece": self.ece, "reliability": self.reliability,
                "trained_on": self.trained_on}


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
    final SQL answers like it. A `bench clinsql-verify` record (it has the judge's ``results_score``): the judge scored
    the query at least GOOD_SCORE (the benchmark's line between good and bad queries)."""
    if "results_score" in record:
        return float(record["results_score"]) >= GOOD_SCORE
    if "kind" in record:
        return record["kind"] in ("correct", "wrong") and bool(record.get("answers_like_gold"))
    return bool(record.get("final_exec_acc")) and record.get("type") in ANSWERABLE_TYPES


def _answers(records: Iterable[dict[str, Any]], blocking_checks: frozenset[str]) -> list[tuple[AnswerFeatures, bool, bool, dict[str, Any]]]:
    """Each answer of the records (abstentions and errors left out): its features, whether it was right, whether it
    could be shown as verified, and the record."""
    out = []
    for record in records:
        f = features_from_record(record, blocking_checks)
        if f is not None:
            out.append((f, answer_right(record), _shown(record, f, blocking_checks), record))
    return out


def _design(answers: Sequence[tuple[AnswerFeatures, bool, bool, dict[str, Any]]], checks: Sequence[str]) -> np.ndarray:
    return np.asarray([f.vector() + [float(c in f.checks) for c in checks] for f, *_ in answers])


def _checks_to_weigh(answers: Sequence[tuple[AnswerFeatures, bool, bool, dict[str, Any]]]) -> list[str]:
    counts = Counter(c for f, *_ in answers for c in f.checks)
    return sorted(c for c, n in counts.items() if n >= MIN_CHECK_ANSWERS)


def fit_calibration(records: Iterable[dict[str, Any]], blocking_checks: frozenset[str], fitted_on: str,
                    trained_on: dict[str, Any] | None = None, *, by_check: bool = False) -> Calibration:
    """Fit on out-of-fold `bench scare` records (an answer is right when the item is answerable and its final SQL
    answers like the gold SQL), `bench safety` or `bench clinsql-verify` records (see :func:`answer_right`). With
    ``by_check``, each check that fired on at least MIN_CHECK_ANSWERS answers gets a weight of its own (more weights:
    a stronger penalty keeps them small).

    Raises:
        DatasetError: too few answers to fit on.
    """
    answers = _answers(records, blocking_checks)
    if len(answers) < 2 * MIN_SUPPORT:
        raise DatasetError(f"Only {len(answers)} answers in the records; a calibration needs at least {2 * MIN_SUPPORT}.")
    checks = _checks_to_weigh(answers) if by_check else []
    x, y = _design(answers, checks), np.asarray([right for _, right, *_ in answers], dtype=float)
    w = fit_logistic(x, y, l2=BY_CHECK_L2 if by_check else 1e-2)
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    ys = [bool(v) for v in y]
    ece, table = reliability(p.tolist(), ys)
    n = len(FEATURES)
    return Calibration(tuple(round(float(v), 6) for v in w[:n]), choose_bars(p.tolist(), ys, [s for _, _, s, _ in answers]),
                       fitted_on, len(answers), ece, table, trained_on or {},
                       {c: round(float(v), 6) for c, v in zip(checks, w[n:], strict=True)})


def out_of_fold(records: Sequence[dict[str, Any]], blocking_checks: frozenset[str], group: Callable[[dict[str, Any]], str],
                *, folds: int = 5, by_check: bool = False, seed: int = 0) -> list[tuple[dict[str, Any], float]]:
    """Each answer's probability from a calibration fitted without its group (a ClinSQL task: all models' queries for
    it stay together), the honest figure for a calibration fitted and measured on one benchmark."""
    answers = _answers(records, blocking_checks)
    groups = sorted({group(r) for *_, r in answers})
    order = np.random.default_rng(seed).permutation(len(groups))
    fold_of = {groups[i]: k % folds for k, i in enumerate(order)}
    out: list[tuple[dict[str, Any], float]] = []
    for k in range(folds):
        train = [a for a in answers if fold_of[group(a[3])] != k]
        test = [a for a in answers if fold_of[group(a[3])] == k]
        if not test:
            continue
        checks = _checks_to_weigh(train) if by_check else []
        w = fit_logistic(_design(train, checks), np.asarray([a[1] for a in train], dtype=float),
                         l2=BY_CHECK_L2 if by_check else 1e-2)
        p = 1.0 / (1.0 + np.exp(-(_design(test, checks) @ w)))
        out += [(a[3], float(q)) for a, q in zip(test, p, strict=True)]
    return out


def save_calibration(calibration: Calibration, path: str | Path) -> None:
    Path(path).write_text(json.dumps(calibration.to_dict(), indent=1) + "\n")


def names_a_file(name: str) -> bool:
    """Does a profile's calibration name a file (a path or a .json name), not a shipped fit ("mimic_code")?"""
    return name.endswith(".json") or "/" in name or "\\" in name


def calibration_path(name: str) -> Path:
    """Where a calibration named in a profile is: a shipped one by name ("mimic_code" -> data/calibration_mimic_code.json),
    else the file the name points at."""
    if names_a_file(name):
        return Path(name).expanduser()
    return DEFAULT_PATH.with_name(f"calibration_{name}.json")


def calibration_file(choice: str, profile_calibration: str = "") -> Path | None:
    """The calibration file a verifier uses on a database: none for ``off``; for ``auto`` the one the database's profile
    names, else the shipped one; for ``default`` the shipped one; else the file ``choice`` names."""
    if choice == "off":
        return None
    if choice == "auto":
        return calibration_path(profile_calibration) if profile_calibration else DEFAULT_PATH
    return DEFAULT_PATH if choice == "default" else Path(choice)


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
                           dict(raw.get("trained_on") or {}), {str(k): float(v) for k, v in (raw.get("check_weights") or {}).items()})
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a calibration file ({exc}); refit it with: ehrguard train calibration RUN_DIR ...") from exc
