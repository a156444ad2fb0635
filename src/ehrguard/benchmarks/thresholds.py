"""``ehrguard bench threshold``: the confidence threshold that maximises RS(c), chosen on some runs, reported on others.

The runs are ``bench scare`` run folders (the folds of a cross-validation, one database's items, another model's
run). An item is answerable when its SCARE type is; the verifier answered when its action is preserve or correct,
and was right when the SQL it returned matches the gold by execution. A run's errors count as wrong answers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.scare_run import scored_item, union_records
from ehrguard.errors import RunError
from ehrguard.evaluation.threshold import Decision, Threshold, apply, choose
from ehrguard.labels import ANSWERABLE_TYPES


def run_records(run_dirs: Sequence[str | Path], db_id: str | None = None) -> list[dict[str, Any]]:
    """The records of ``run_dirs`` (which must not share an item), of one database when ``db_id`` is given.

    Raises:
        RunError: an item is in more than one run, or nothing is left.
    """
    chosen = [r for r in union_records(run_dirs) if db_id is None or r.get("db_id") == db_id]
    if not chosen:
        where = f" for database {db_id!r}" if db_id else ""
        raise RunError(f"No records{where} in {', '.join(map(str, run_dirs))}: run `ehrguard bench scare --out DIR` first.")
    return chosen


def scare_decisions(records: Sequence[dict[str, Any]]) -> list[Decision]:
    """Each record as a threshold sees it, read as the SCARE metrics read it (:func:`scored_item`)."""
    out = []
    for r in records:
        item = scored_item(r)
        out.append(Decision(answerable=item.type in ANSWERABLE_TYPES, answered=item.action == "answer",
                            correct=item.final_exec_acc, confidence=float(r.get("confidence") or 0.0), error=item.action == "error"))
    return out


def threshold_report(fit: Sequence[Decision], report: Sequence[Decision], penalties: Sequence[float]) -> list[dict[str, Any]]:
    """For each penalty: the threshold chosen on ``fit`` and its RS there (in-sample), and on ``report``: RS with
    every answer kept, RS at the chosen threshold, and the best any threshold could have done there (hindsight)."""
    rows = []
    for c in penalties:
        chosen = choose(fit, c)
        rows.append({"penalty": c, "threshold": chosen.value, "fit": _row(chosen), "keep_all": _row(apply(report, 0.0, c)),
                     "chosen": _row(apply(report, chosen.value, c)), "hindsight": _row(choose(report, c))})
    return rows


def _row(t: Threshold) -> dict[str, float]:
    return {"threshold": round(t.value, 4), "rs": round(t.rs, 2), "answered": round(t.answered, 1)}


def write_threshold_report(out: str | Path, rows: list[dict[str, Any]], config: dict[str, Any]) -> Path:
    """``threshold.json`` and ``threshold.md`` in ``out``; returns the markdown's path."""
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    (target / "threshold.json").write_text(json.dumps({"config": config, "rows": rows}, indent=1) + "\n")
    lines = [f"# RS(c) with a threshold chosen on {config['fit']} and reported on {config['on']}", "",
             f"Items: {config['n_fit']} to choose on, {config['n_on']} to report on. RS in %, answered = share of items "
             "answered. The chosen threshold's score on the items it was chosen on is in-sample; \"hindsight\" is the "
             "best any threshold could have scored on the report items, for reference.", "",
             "| c | threshold | RS on the fit items | RS, every answer kept | **RS at the threshold** | answered "
             "| hindsight RS (its threshold) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['penalty']:g} | {r['threshold']:.4f} | {r['fit']['rs']:.1f} | {r['keep_all']['rs']:.1f} | "
                     f"**{r['chosen']['rs']:.1f}** | {r['chosen']['answered']:.1f}% | {r['hindsight']['rs']:.1f} "
                     f"({r['hindsight']['threshold']:.4f}) |")
    path = target / "threshold.md"
    path.write_text("\n".join(lines) + "\n")
    return path
