"""SCARE's metrics, computed from per-item outcomes (reference: SCARE ``src/evaluate_sql_correction.py``).

* answerable items whose candidate was correct (published ``exec_acc``): **PR**, the share whose
  final output still matches by execution, and **Cov**, the share not answered with a label;
* answerable items whose candidate was wrong: **CR** and **Cov** likewise;
* ambiguous and unanswerable: precision over every item the method labelled so (in any
  category), recall over the items of that category, F1; NaN when a denominator is zero.

An item on which the method errored counts as a failure in its category: it is neither
preserved/corrected nor a correct label, and it is listed.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ehrguard.evaluation.error_types import ERROR_TYPES
from ehrguard.evaluation.execution_match import label_category
from ehrguard.evaluation.stats import percent
from ehrguard.labels import AMBIGUOUS_SUBTYPES as AMBIGUOUS_TYPES
from ehrguard.labels import ANSWERABLE_TYPES, CATEGORIES
from ehrguard.labels import UNANSWERABLE_REPORT_ORDER as UNANSWERABLE_TYPES

# What the method did with an item, as the confusion matrix counts it (not a verdict's actions).
ACTIONS = ("answer", "ambiguous", "unanswerable", "error")
# The headline metrics, in the order the reports give them.
MAIN_KEYS = ("pr", "cov_correct", "cr", "cov_incorrect", "amb_p", "amb_r", "amb_f1", "unans_p", "unans_r", "unans_f1")


@dataclass(frozen=True)
class ScoredItem:
    """One benchmark item after a method ran on it."""

    id: str
    db_id: str
    type: str  # easy|medium|hard or the ambiguous/unanswerable subtype
    candidate_correct: bool  # the published exec_acc of the candidate
    output: str | None  # final SQL or a label; None when the method errored
    final_exec_acc: bool = False  # answerable items: final output matches the gold by execution
    generator: str = ""
    error: str | None = None
    subtype: str | None = None  # the subtype the method named with an ambiguous/unanswerable label, if any
    error_type: str | None = None  # answerable-incorrect items: the candidate's error type (ehrguard.evaluation.error_types)

    @property
    def emitted_subtype(self) -> str | None:
        """The subtype this item was labelled with: the method's ``subtype`` alongside an abstention, or an output that
        is itself a subtype label ("vague-word"); None for an answer or an error."""
        if self.action in ("answer", "error"):
            return None
        output = (self.output or "").strip().lower()
        if output in AMBIGUOUS_TYPES + UNANSWERABLE_TYPES:
            return output
        return self.subtype.strip().lower() if self.subtype else None

    @property
    def category(self) -> str:
        if self.type in ANSWERABLE_TYPES:
            return "answerable_correct" if self.candidate_correct else "answerable_incorrect"
        if self.type in AMBIGUOUS_TYPES:
            return "ambiguous"
        if self.type in UNANSWERABLE_TYPES:
            return "unanswerable"
        raise ValueError(f"Unknown SCARE item type {self.type!r} (item {self.id}).")

    @property
    def action(self) -> str:
        if self.error is not None or self.output is None:
            return "error"
        return label_category(self.output) or "answer"

    @property
    def answered_correctly(self) -> bool:
        """Answerable items: the method answered, and its SQL matches the gold by execution (PR/CR numerator)."""
        return self.action == "answer" and self.final_exec_acc


def _f1(p: float, r: float) -> float:
    if math.isnan(p) or math.isnan(r):
        return math.nan
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _main(items: list[ScoredItem]) -> dict[str, Any]:
    by_cat: dict[str, list[ScoredItem]] = defaultdict(list)
    for it in items:
        by_cat[it.category].append(it)
    out: dict[str, Any] = {}
    for cat, key, cov_key in (("answerable_correct", "pr", "cov_correct"), ("answerable_incorrect", "cr", "cov_incorrect")):
        group = by_cat[cat]
        out[key] = percent(sum(1 for it in group if it.answered_correctly), len(group))
        out[cov_key] = percent(sum(1 for it in group if it.action in ("answer", "error")), len(group))
    for cat, prefix in (("ambiguous", "amb"), ("unanswerable", "unans")):
        labelled = [it for it in items if it.action == cat]
        hits = sum(1 for it in labelled if it.category == cat)
        p = percent(hits, len(labelled))
        r = percent(sum(1 for it in by_cat[cat] if it.action == cat), len(by_cat[cat]))
        out[f"{prefix}_p"], out[f"{prefix}_r"], out[f"{prefix}_f1"] = p, r, _f1(p, r)
    out["n"] = len(items)
    out["counts"] = {cat: len(by_cat[cat]) for cat in CATEGORIES}
    return out


def question_of(item: ScoredItem) -> str:
    """The question an item asks: SCARE pairs one question with candidates from several generators
    (``db:generator:id`` keys share ``db`` and ``id``)."""
    parts = item.id.split(":")
    return f"{parts[0]}:{parts[-1]}" if len(parts) >= 3 else item.id


def bootstrap_intervals(scored: Iterable[ScoredItem], *, resamples: int = 1000, seed: int = 0,
                        level: float = 0.95) -> dict[str, list[float]]:
    """A percentile bootstrap interval for each main metric, resampling whole questions with replacement (the
    candidates of one question are not independent). ``[nan, nan]`` where a resample leaves a metric undefined
    more often than not.

    Examples:
        >>> items = [ScoredItem(str(i), "mimic_iv", "easy", True, "SELECT 1", final_exec_acc=i % 4 != 0) for i in range(40)]
        >>> lo, hi = bootstrap_intervals(items, resamples=200)["pr"]
        >>> lo < 75.0 < hi
        True
    """
    import random

    groups: dict[str, list[ScoredItem]] = defaultdict(list)
    for it in scored:
        groups[question_of(it)].append(it)
    keys = sorted(groups)
    if not keys:
        return {k: [math.nan, math.nan] for k in MAIN_KEYS}
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {k: [] for k in MAIN_KEYS}
    for _ in range(resamples):
        sample = [it for _ in keys for it in groups[keys[rng.randrange(len(keys))]]]
        main = _main(sample)
        for k in MAIN_KEYS:
            if not math.isnan(main[k]):
                draws[k].append(main[k])
    out = {}
    tail = (1 - level) / 2
    for k, values in draws.items():
        if len(values) * 2 < resamples:
            out[k] = [math.nan, math.nan]
            continue
        values.sort()
        out[k] = [round(values[int(tail * (len(values) - 1))], 1), round(values[int(round((1 - tail) * (len(values) - 1)))], 1)]
    return out


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value from the discordant pairs: items only A got right, items only B got right.

    Examples:
        >>> mcnemar_p(0, 0), round(mcnemar_p(10, 2), 4), mcnemar_p(3, 3)
        (1.0, 0.0386, 1.0)
    """
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def item_right(item: ScoredItem) -> bool:
    """Whether a method did the right thing on an item, as the main metrics count it: an answerable item answered
    with SQL that matches the gold, an ambiguous or unanswerable one given that label."""
    if item.type in ANSWERABLE_TYPES:
        return item.answered_correctly
    return item.action == item.category


def paired_comparison(a: Iterable[ScoredItem], b: Iterable[ScoredItem]) -> dict[str, dict[str, float]]:
    """Two methods on the same items: per category (and ``all``), how many items each alone got right and the exact
    McNemar p-value of the difference. Only items both runs hold are compared."""
    right_a = {it.id: (it.category, item_right(it)) for it in a}
    right_b = {it.id: item_right(it) for it in b}
    out: dict[str, dict[str, float]] = {}
    for group in ("all", *CATEGORIES):
        keys = [k for k, (cat, _) in right_a.items() if k in right_b and group in ("all", cat)]
        a_only = sum(right_a[k][1] and not right_b[k] for k in keys)
        b_only = sum(right_b[k] and not right_a[k][1] for k in keys)
        out[group] = {"n": len(keys), "a_only": a_only, "b_only": b_only, "p": round(mcnemar_p(a_only, b_only), 4)}
    return out


def compute_metrics(scored: Iterable[ScoredItem]) -> dict[str, Any]:
    """All SCARE metrics (percentages) plus the granular breakdowns.

    Keys: ``pr``, ``cov_correct``, ``cr``, ``cov_incorrect``, ``amb_p``, ``amb_r``, ``amb_f1``,
    ``unans_p``, ``unans_r``, ``unans_f1``, ``n``, ``counts``; ``by_subtype`` (for each ambiguous/unanswerable
    subtype: ``recall``, the share of its items given the right category; ``subtype_recall``, the share labelled
    with that very subtype; ``labelled``, how many items the method labelled with it; ``label_precision``, how many
    of those were of that subtype);
    ``by_difficulty`` (PR/CR per easy/medium/hard); ``by_db`` and ``by_generator`` (the main
    metrics per group); ``by_error_type`` (CR and coverage of the answerable-incorrect items per error type, SCARE's
    Table 4); ``execution_by_generator`` (each generator's execution accuracy on answerable items, its candidates'
    and after the method, Table 7); ``confusion`` (true category x action, with ``error`` as an action);
    ``errors`` (ids of the items the method failed on).

    Note: Coverage counts an errored item as attempted (it was not abstained on), while its
    PR/CR contribution is a failure.
    """
    items = list(scored)
    metrics = _main(items)

    by_subtype: dict[str, dict[str, float]] = {}
    for st in AMBIGUOUS_TYPES + UNANSWERABLE_TYPES:
        group = [it for it in items if it.type == st]
        expected = "ambiguous" if st in AMBIGUOUS_TYPES else "unanswerable"
        emitted = [it for it in items if it.emitted_subtype == st]
        by_subtype[st] = {
            "n": len(group),
            "recall": percent(sum(1 for it in group if it.action == expected), len(group)),
            "subtype_recall": percent(sum(1 for it in group if it.emitted_subtype == st), len(group)),
            "label_precision": percent(sum(1 for it in emitted if it.type == st), len(emitted)),
            "labelled": len(emitted),
        }
    metrics["by_subtype"] = by_subtype

    by_difficulty: dict[str, dict[str, float]] = {}
    for d in ANSWERABLE_TYPES:
        correct = [it for it in items if it.type == d and it.candidate_correct]
        incorrect = [it for it in items if it.type == d and not it.candidate_correct]
        by_difficulty[d] = {
            "pr": percent(sum(1 for it in correct if it.answered_correctly), len(correct)),
            "cr": percent(sum(1 for it in incorrect if it.answered_correctly), len(incorrect)),
            "n_correct": len(correct),
            "n_incorrect": len(incorrect),
        }
    metrics["by_difficulty"] = by_difficulty

    for key, attr in (("by_db", "db_id"), ("by_generator", "generator")):
        groups: dict[str, list[ScoredItem]] = defaultdict(list)
        for it in items:
            groups[getattr(it, attr)].append(it)
        metrics[key] = {name: {k: v for k, v in _main(g).items() if k != "counts"} for name, g in sorted(groups.items())}

    by_error_type: dict[str, dict[str, float]] = {}
    for kind in (*ERROR_TYPES, "none"):  # none: the reading found no difference from the gold
        group = [it for it in items if it.category == "answerable_incorrect" and it.error_type == kind]
        by_error_type[kind] = {"n": len(group), "cr": percent(sum(1 for it in group if it.answered_correctly), len(group)),
                               "cov": percent(sum(1 for it in group if it.action in ("answer", "error")), len(group))}
    metrics["by_error_type"] = by_error_type

    # SCARE's Table 7: each generator's execution accuracy on the answerable items, as written and after the method.
    execution: dict[str, dict[str, float]] = {}
    for name in sorted({it.generator for it in items}):
        group = [it for it in items if it.generator == name and it.type in ANSWERABLE_TYPES]
        execution[name] = {"n": len(group), "candidate": percent(sum(it.candidate_correct for it in group), len(group)),
                           "final": percent(sum(it.answered_correctly for it in group), len(group))}
    metrics["execution_by_generator"] = execution

    confusion = Counter((it.category, it.action) for it in items)
    metrics["confusion"] = {cat: {act: confusion[(cat, act)] for act in ACTIONS} for cat in CATEGORIES}
    metrics["errors"] = sorted(it.id for it in items if it.action == "error")
    return metrics


__all__ = ["ScoredItem", "compute_metrics"]
