"""``ehrguard bench clinsql-verify``: how well the verifier tells good ClinSQL queries from bad ones, where real models'
SQL runs (MIMIC-IV in the mimic-code layout, DuckDB or PostgreSQL), with the published judge gradings as the reference.

Each model's final SQL for each validation task (and each task's gold SQL) is transpiled from BigQuery into the
database's dialect, run once to see whether it runs, and verified against the task's question. A query's *suspicion*
is the verifier's probability that the answer it leads to is wrong: ``1 - confidence`` when the query is kept, and
``confidence`` (that the abstention or the replacement is right) when it is not. The reference is the published
``results_score``: a query scored below 0.5 is *bad*.

Reported: AUROC of the suspicion for bad queries (all queries, and those that run), the precision of flagging bad
queries at the threshold that finds 90% of them, how many gold and high-scored (>= 0.8) queries are kept and
verified, and which checks fire on good and bad queries.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ehrguard.clinsql.data import load_gradings, load_split, task_key
from ehrguard.clinsql.execcheck import queries
from ehrguard.clinsql.transpile import transpiler_for
from ehrguard.errors import DatabaseError, DatasetError, EhrguardError
from ehrguard.verify.offline.calibration import GOOD_SCORE

BAD_BELOW = GOOD_SCORE  # the calibration fitted on these runs calls the same queries good
HIGH_FROM = 0.8


def auroc(scores: list[float], positive: list[bool]) -> float | None:
    """The probability that a random positive scores above a random negative (ties count half); None without both."""
    pos = [s for s, p in zip(scores, positive, strict=True) if p]
    neg = [s for s, p in zip(scores, positive, strict=True) if not p]
    if not pos or not neg:
        return None
    ranked = sorted((s, i) for i, s in enumerate(scores))
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(ranked):  # average ranks over ties
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[ranked[k][1]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, p in zip(ranks, positive, strict=True) if p)
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def precision_at_recall(scores: list[float], positive: list[bool], recall: float = 0.9) -> float | None:
    """The precision of flagging every query whose score reaches the highest threshold that flags ``recall`` of the
    positives (all queries tied at that threshold are flagged)."""
    total = sum(positive)
    if not total:
        return None
    order = sorted(zip(scores, positive, strict=True), key=lambda x: -x[0])
    found = flagged = 0
    for k, (score, pos) in enumerate(order):
        found += pos
        flagged += 1
        if found >= recall * total and (k + 1 == len(order) or order[k + 1][0] < score):
            return found / flagged
    return found / flagged


def suspicion(action: str, confidence: float | None) -> float:
    """The verifier's probability that the answer the query leads to is wrong."""
    c = 0.5 if confidence is None else confidence
    return 1.0 - c if action == "preserve" else c


def model_queries(data_dir: Path, split: Path, models: Iterable[str]) -> Iterable[tuple[str, str, str | None, float]]:
    """``(model, task, BigQuery SQL or None, results_score)``: each task's gold (score 1) and each model's graded SQL."""
    for key, sql in queries(split).items():
        yield "gold", key, sql, 1.0
    for model in models:
        outputs = data_dir / "model_outputs" / model / "validation"
        gradings = data_dir / "gradings" / model / "validation_detailed_grading.json"
        if not outputs.is_dir() or not gradings.is_file():
            raise DatasetError(f"No outputs or gradings for {model} under {data_dir} (model_outputs/{model}/validation, "
                               f"gradings/{model}/validation_detailed_grading.json).")
        sqls = queries(split, outputs)
        for e in load_gradings(gradings):
            key = task_key(e["sample_path"])
            if key in sqls:
                yield model, key, sqls[key], float(e["results_score"])


def run_clinsql_verify(data_dir: str | Path, db: Any, verify: Callable[..., Any], *, models: Iterable[str],
                       limit: int | None = None, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """One record per (model, task): whether it ran, the verdict, its suspicion and the published score.

    ``verify(question, sql)`` returns a Verdict; an error of the verifier is recorded as an error, never as a verdict."""
    data = Path(data_dir)
    split = data / "validation"
    tasks = load_split(split)
    convert = transpiler_for(db.dialect)
    records: list[dict[str, Any]] = []
    per_model: Counter[str] = Counter()
    for model, key, bigquery, score in model_queries(data, split, models):
        if limit is not None and per_model[model] >= limit:
            continue
        per_model[model] += 1
        record: dict[str, Any] = {"model": model, "task": key, "results_score": score}
        records.append(record)
        if bigquery is None:
            record.update(outcome="no output", runs=False, action="none", suspicion=1.0)
            continue
        try:
            sql = convert(bigquery)
        except DatabaseError as exc:
            record.update(outcome="transpile error", runs=False, action="none", suspicion=1.0, error=str(exc)[:200])
            continue
        try:
            db.execute(sql, timeout_s=timeout_s, max_rows=100)
            record["runs"] = True
        except DatabaseError as exc:
            record.update(runs=False, run_error=str(exc).splitlines()[0][:200])
        start = time.perf_counter()
        try:
            verdict = verify(tasks[key].question, sql)
        except EhrguardError as exc:
            record.update(outcome="verifier error", action="error", suspicion=None, error=str(exc)[:200])
            continue
        record.update(outcome="verified", action=verdict.action, status=verdict.status, confidence=verdict.confidence,
                      suspicion=suspicion(verdict.action, verdict.confidence), reason=verdict.reason,
                      checks=sorted({f.check for f in verdict.findings}), seconds=round(time.perf_counter() - start, 3))
        if verdict.details:  # what the verdict rested on: `ehrguard train calibration` fits a layout's calibration on these
            record["details"] = verdict.details
    return records


def clinsql_verify_metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the module docstring, from :func:`run_clinsql_verify`'s records (verifier errors left out and
    counted)."""
    graded = [r for r in records if r["model"] != "gold" and r.get("suspicion") is not None]
    gold = [r for r in records if r["model"] == "gold"]
    ran = [r for r in graded if r.get("runs")]

    def separation(rows: list[dict[str, Any]]) -> dict[str, Any]:
        scores = [r["suspicion"] for r in rows]
        bad = [r["results_score"] < BAD_BELOW for r in rows]
        return {"n": len(rows), "bad": sum(bad), "auroc": auroc(scores, bad), "precision_at_90_recall": precision_at_recall(scores, bad)}

    high = [r for r in graded if r["results_score"] >= HIGH_FROM]
    checks: dict[str, Counter[str]] = {"good": Counter(), "bad": Counter(), "gold": Counter()}
    for r in graded + gold:
        side = "gold" if r["model"] == "gold" else "bad" if r["results_score"] < BAD_BELOW else "good"
        checks[side].update(r.get("checks", []))
    return {
        "graded": separation(graded),
        "graded_that_run": separation(ran),
        "verifier_errors": sum(r.get("outcome") == "verifier error" for r in records),
        "gold": {"n": len(gold), "runs": sum(bool(r.get("runs")) for r in gold),
                 "kept": sum(r.get("action") == "preserve" for r in gold),
                 # answered, not asked back: kept, or corrected (the report names each correction's checks)
                 "answered": sum(r.get("action") in ("preserve", "correct") for r in gold),
                 "verified": sum(r.get("status") == "verified" for r in gold),
                 "abstained": dict(Counter(r["action"] for r in gold if r.get("action") in ("ambiguous", "unanswerable"))),
                 # a correction of a gold query is not a false alarm by itself: the report names the checks behind each
                 "corrected": dict(Counter(", ".join(sorted(set(r.get("checks", [])))) or "none" for r in gold
                                           if r.get("action") == "correct"))},
        "high_scored": {"n": len(high), "abstained": sum(r["action"] in ("ambiguous", "unanswerable") for r in high),
                        "kept": sum(r["action"] == "preserve" for r in high)},
        "by_model": {m: separation([r for r in graded if r["model"] == m]) for m in sorted({r["model"] for r in graded})},
        "checks": {side: dict(c.most_common()) for side, c in checks.items()},
        "abstention_reasons_on_gold": dict(Counter(str(r.get("reason", ""))[:100] for r in gold
                                                    if r.get("action") in ("ambiguous", "unanswerable")).most_common()),
    }


def _pct(part: int, whole: int) -> str:
    return f"{part} / {whole} ({100 * part / whole:.1f}%)" if whole else "-"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def calibration_in_sample(context: Any, calibration: str, gradings: dict[str, str]) -> str | None:
    """The calibration file the offline method used on this database, when it was fitted on these gradings (by checksum)."""
    from ehrguard.verify.offline.calibration import calibration_file, load_calibration

    path = calibration_file(calibration, context.profile.calibration)
    fitted = load_calibration(path) if path is not None else None
    seen = (fitted.trained_on.get("clinsql-verify") or {}) if fitted is not None else {}
    return path.name if path is not None and any(seen.get(m) == sha for m, sha in gradings.items()) else None


def render_clinsql_verify(metrics: dict[str, Any], config: dict[str, Any]) -> str:
    g, h = metrics["gold"], metrics["high_scored"]
    lines = [f"# ClinSQL: the verifier on real models' SQL ({config['database']})", "",
             f"Method `{config['method']}`, operating point `{config['operating_point']}`; reference: the published judge "
             f"`results_score` (bad: < {BAD_BELOW}). Suspicion = the verifier's probability that the answer is wrong.", ""]
    if config.get("calibration_in_sample"):
        lines += [f"**In sample**: the calibration ({config['calibration_in_sample']}) was fitted on these very gradings, so the "
                  "confidences below have seen the answers; the out-of-fold figures `ehrguard train calibration` prints for "
                  "these runs (5 folds of whole tasks) are the measure of unseen tasks.", ""]
    lines += ["| queries | n | bad | AUROC | precision at 90% recall |", "|---|---|---|---|---|"]
    for label, key in (("graded (all models)", "graded"), ("graded, that run", "graded_that_run")):
        s = metrics[key]
        lines.append(f"| {label} | {s['n']} | {s['bad']} | {_num(s['auroc'])} | {_num(s['precision_at_90_recall'])} |")
    for model, s in metrics["by_model"].items():
        lines.append(f"| {model} | {s['n']} | {s['bad']} | {_num(s['auroc'])} | {_num(s['precision_at_90_recall'])} |")
    lines += ["", f"- gold queries kept: {_pct(g['kept'], g['n'])}; answered (kept or corrected, not asked back): "
              f"{_pct(g['answered'], g['n'])}; verified: {_pct(g['verified'], g['n'])}; "
              f"run: {_pct(g['runs'], g['n'])}; abstained: {g['abstained'] or 'none'}; "
              f"corrected: {sum(g.get('corrected', {}).values())}"
              + (f" (the checks behind them: {'; '.join(f'{k} x{n}' for k, n in g['corrected'].items())})" if g.get("corrected") else ""),
              f"- high-scored queries (>= {HIGH_FROM}) abstained: {_pct(h['abstained'], h['n'])}",
              f"- verifier errors (recorded, not scored): {metrics['verifier_errors']}", "",
              "| check | on gold | on good | on bad |", "|---|---|---|---|"]
    c = metrics["checks"]
    for check in sorted(set(c["gold"]) | set(c["good"]) | set(c["bad"]), key=lambda k: -(c["good"].get(k, 0) + c["bad"].get(k, 0))):
        lines.append(f"| {check} | {c['gold'].get(check, 0)} | {c['good'].get(check, 0)} | {c['bad'].get(check, 0)} |")
    if metrics["abstention_reasons_on_gold"]:
        lines += ["", "Why gold queries were not kept:", ""]
        lines += [f"- {n} x {reason}" for reason, n in metrics["abstention_reasons_on_gold"].items()]
    return "\n".join(lines) + "\n"


def write_clinsql_verify_report(out: str | Path, records: list[dict[str, Any]], metrics: dict[str, Any],
                                config: dict[str, Any]) -> Path:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "records.jsonl").open("w") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    (folder / "report.json").write_text(json.dumps({"config": config, "metrics": metrics}, indent=1) + "\n")
    (folder / "report.md").write_text(render_clinsql_verify(metrics, config))
    return folder / "report.md"
