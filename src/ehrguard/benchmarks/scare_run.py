"""Run a verification method over SCARE items and score it the way SCARE does.

:func:`run_scare` verifies every item (skipping the ones a previous, interrupted run of
the same configuration finished), appends one record per item to the run folder, then
computes the metrics from the records. :func:`score_records` recomputes them from a
folder alone.

Around the runner, what ``ehrguard bench scare`` and ``bench report`` do: :func:`select_items`
(one fold, a limit), :func:`method_for_run` (the run's call log), :func:`record_llm_usage`,
:func:`write_run_report` and :func:`rescore_runs` (several runs scored as one).
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.error_types import fill_error_types, item_error_type
from ehrguard.benchmarks.provenance import in_sample, knowledge
from ehrguard.benchmarks.report import jsonable, write_scare_report
from ehrguard.benchmarks.rundir import RunDir, file_sha256
from ehrguard.benchmarks.scare import DB_IDS, ScareItem
from ehrguard.db.engine import open_database
from ehrguard.db.lexicon import lexicon_state
from ehrguard.errors import DatabaseNotFoundError, EhrguardError, RunError
from ehrguard.evaluation.execution_match import execute_answer, execution_match, normalize_gold
from ehrguard.evaluation.scare_metrics import ScoredItem, bootstrap_intervals, compute_metrics
from ehrguard.evaluation.stats import percentile
from ehrguard.profiles import PROFILES
from ehrguard.verify.methods import Case, DatabaseContext, Method

DB_FILES = {db_id: PROFILES[db_id].file_name for db_id in DB_IDS}


def open_contexts(db_dir: str | Path, db_ids: set[str]) -> dict[str, DatabaseContext]:
    """Open the databases the items need from ``db_dir`` (as built by ``ehrguard db build``).

    Raises:
        DatabaseNotFoundError: a needed database is not there (the message says how to build it).
    """
    contexts = {}
    for db_id in sorted(db_ids):
        path = Path(db_dir) / DB_FILES[db_id]
        if not path.is_file():
            raise DatabaseNotFoundError(
                f"The items need {db_id}, but {path} does not exist. Build it with: ehrguard db build {db_id} --out {path}"
            )
        contexts[db_id] = DatabaseContext(open_database(path, name=db_id), db_id, path)
    return contexts


class GoldAnswers:
    """Executes each gold query once per database and remembers the canonical answer."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], tuple[Any, str | None]] = {}
        self._lock = threading.Lock()

    def get(self, ctx: DatabaseContext, gold_sql: str) -> tuple[Any, str | None]:
        key = (ctx.db_id, gold_sql)
        with self._lock:
            if key in self._answers:
                return self._answers[key]
        answer = execute_answer(ctx.db, normalize_gold(gold_sql))
        with self._lock:
            self._answers[key] = answer
        return answer

    def failures(self) -> int:
        """Gold queries that failed to execute on their database so far."""
        with self._lock:
            return sum(1 for _, error in self._answers.values() if error)


def final_match(ctx: DatabaseContext, gold: GoldAnswers, output: str, gold_sql: str) -> tuple[bool, str | None]:
    """Does ``output`` match the gold query by execution on our database? Also the error, if any."""
    gold_answer, gold_error = gold.get(ctx, gold_sql)
    if gold_error:
        return False, f"gold query failed on this database: {gold_error}"
    result = execution_match(ctx.db, output, gold_sql, db_id=ctx.db_id, gold_answer=gold_answer)
    return result.match, result.pred_error


def verify_item(method: Method, item: ScareItem, ctx: DatabaseContext, gold: GoldAnswers) -> dict[str, Any]:
    """Run the method on one item and build its prediction record. A method failure is recorded, not raised."""
    record: dict[str, Any] = {
        "key": item.key,
        "id": item.id,
        "db_id": item.db_id,
        "generator_name": item.generator_name,
        "sampled_category": item.sampled_category,
        "type": item.type,
        "exec_acc": item.exec_acc,
    }
    start = time.perf_counter()
    try:
        verdict = method.verify(Case(item.question, item.pred_sql, ctx, expected=item))
    except EhrguardError as exc:
        record.update(action=None, subtype=None, output=None, final_exec_acc=None, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 (a bug in a method must not stop a 4,200-item run; it is recorded and listed)
        record.update(
            action=None, subtype=None, output=None, final_exec_acc=None,
            error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=5),
        )
    else:
        record.update(
            action=verdict.action,
            subtype=verdict.subtype,
            output=verdict.output,
            message=verdict.message,
            status=verdict.status,
            reason=verdict.reason,
            confidence=verdict.confidence,
            findings=[f.check for f in verdict.findings],
            llm_calls=verdict.llm_calls,
            tokens=verdict.tokens,
            error=None,
        )
        if verdict.details:
            record["details"] = verdict.details
    record["latency_s"] = round(time.perf_counter() - start, 6)
    if item.answerable and not item.exec_acc:
        record["error_type"] = item_error_type(item)
    record["final_exec_acc"] = None
    if item.answerable and record.get("action") in ("preserve", "correct"):
        match, exec_error = final_match(ctx, gold, record["output"], item.gt_sql)
        record["final_exec_acc"] = match
        if exec_error:
            record["final_exec_error"] = exec_error
    return record


def scored_item(record: dict[str, Any]) -> ScoredItem:
    return ScoredItem(
        id=record["key"],
        db_id=record["db_id"],
        type=record["type"],
        candidate_correct=record["exec_acc"],
        output=record.get("output"),
        final_exec_acc=bool(record.get("final_exec_acc")),
        generator=record["generator_name"],
        error=record.get("error"),
        subtype=record.get("subtype"),
        error_type=record.get("error_type"),
    )


def score_records(records: list[dict[str, Any]], *, intervals: bool = True) -> dict[str, Any]:
    """SCARE metrics for a list of prediction records, plus latency and LLM usage summaries, and (``intervals``) the
    95% bootstrap interval of each main metric, whole questions resampled."""
    scored = [scored_item(r) for r in records]
    metrics = compute_metrics(scored)
    if intervals:
        metrics["intervals"] = bootstrap_intervals(scored)
    latencies = sorted(r.get("latency_s", 0.0) for r in records)
    metrics["latency_ms"] = _percentiles([1000 * x for x in latencies])
    metrics["llm_calls"] = sum(r.get("llm_calls", 0) or 0 for r in records)
    metrics["llm_calls_per_item"] = round(metrics["llm_calls"] / len(records), 3) if records else float("nan")
    decided = [r["details"]["decided"] for r in records if isinstance(r.get("details"), dict) and "decided" in r["details"]]
    if decided:
        metrics["decided_offline"] = round(100.0 * decided.count("offline") / len(decided), 1)
    metrics["tokens"] = {
        "prompt": sum((r.get("tokens") or {}).get("prompt", 0) for r in records),
        "completion": sum((r.get("tokens") or {}).get("completion", 0) for r in records),
    }
    return metrics


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p90": float("nan"), "p99": float("nan"), "mean": float("nan"), "max": float("nan")}
    values = sorted(values)
    return {**{f"p{round(100 * p)}": round(percentile(values, p), 3) for p in (0.5, 0.9, 0.99)},
            "mean": round(sum(values) / len(values), 3), "max": round(values[-1], 3)}


@dataclass
class RunSummary:
    run_dir: Path
    total: int
    skipped: int  # finished by an earlier, interrupted run
    ran: int
    errors: int
    wall_s: float
    metrics: dict[str, Any] = field(default_factory=dict)


def run_scare(
    items: list[ScareItem],
    method: Method,
    *,
    db_dir: str | Path,
    out: str | Path,
    data_files: list[str | Path],
    model: str | None = None,
    options: dict[str, Any] | None = None,
    concurrency: int = 1,
    retry_errors: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    selection: dict[str, Any] | None = None,
) -> RunSummary:
    """Verify ``items`` with ``method``, resumably, and score the whole run.

    Args:
        items: the SCARE items (:func:`ehrguard.benchmarks.scare.load_scare`).
        method: a verification method (:func:`ehrguard.verify.get_method`).
        db_dir: folder with ``mimic_iv.sqlite`` / ``eicu.sqlite`` / ``mimicsql.sqlite``.
        out: the run folder; an existing one of the same configuration is resumed.
        data_files: the files the items came from (fingerprinted into the run identity).
        concurrency: items verified at the same time (threads).
        retry_errors: on resume, run again the items that ended in an error.
        on_progress: called with (finished, total) after each item.
        selection: how ``items`` were chosen (fold, sample and seed, limit), recorded in ``run.json``.

    Raises:
        RunError: ``out`` holds a run with another configuration.
        DatabaseNotFoundError: a database the items need is missing from ``db_dir``.
    """
    contexts = open_contexts(db_dir, {it.db_id for it in items})
    identity = {
        "benchmark": "scare",
        "method": method.name,
        "model": model,
        "options": options or {},
        "data": {str(Path(p).name): file_sha256(p) for p in data_files},
        "databases": {db_id: file_sha256(ctx.path) for db_id, ctx in contexts.items() if ctx.path},
    }
    run = RunDir(out)
    done = run.open(identity,
                    extra={"method_description": method.describe(), "data_paths": [str(p) for p in data_files], "db_dir": str(db_dir),
                           "selection": {**(selection or {}), "items": len(items)},
                           "in_sample": in_sample(method.name, options or {}, data_files, (selection or {}).get("fold")),
                           "knowledge": knowledge(method.name, options or {}),
                           # an accelerator, not an input (the values are read from the database without it): recorded only
                           "value_lexicons": {db_id: lexicon_state(ctx.path, ctx.profile.value_columns)
                                              for db_id, ctx in contexts.items() if ctx.path}})
    if retry_errors:
        done = {k: r for k, r in done.items() if r.get("error") is None}
    todo = [it for it in items if it.key not in done]
    gold = GoldAnswers()
    start = time.perf_counter()
    finished = len(items) - len(todo)
    if on_progress:
        on_progress(finished, len(items))
    errors = 0
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            pending: set[Future[dict[str, Any]]] = set()
            queue = iter(todo)
            for item in queue:
                pending.add(pool.submit(verify_item, method, item, contexts[item.db_id], gold))
                if len(pending) >= 2 * max(1, concurrency):
                    break
            while pending:
                complete, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in complete:
                    record = fut.result()
                    run.append(record)
                    errors += record["error"] is not None
                    finished += 1
                    if on_progress:
                        on_progress(finished, len(items))
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(verify_item, method, nxt, contexts[nxt.db_id], gold))
    finally:
        run.close()
        wall = time.perf_counter() - start
        run.log("stop", ran=finished - (len(items) - len(todo)), wall_s=round(wall, 3), complete=finished == len(items))
        for ctx in contexts.values():
            ctx.db.close()
    wanted = {it.key for it in items}
    records = [r for r in run.records() if r["key"] in wanted]
    metrics = score_records(records)
    metrics["wall_s"] = round(wall, 3)
    return RunSummary(Path(out), len(items), len(items) - len(todo), len(todo), errors, wall, metrics)


def select_items(items: list[ScareItem], *, fold: str | None = None, sample: int | None = None, seed: int = 0,
                 limit: int | None = None) -> list[ScareItem]:
    """The items of fold ``"I/K"`` (questions grouped, as ``ehrguard train question-model --exclude-fold``
    leaves them out); then a seeded sample of ``sample`` of those, stratified by database and category; then the
    first ``limit`` (in file order: the SCARE files are sorted by category, so the first items are all of one kind).

    Raises:
        ConfigError: ``fold`` is not I/K with 0 <= I < K, or ``sample`` / ``limit`` is not positive.
    """
    from ehrguard.errors import ConfigError

    for name, n in (("--sample", sample), ("--limit", limit)):
        if n is not None and n < 1:
            raise ConfigError(f"{name} takes a number of items of at least 1, not {n}.")
    if fold:
        from ehrguard.verify.offline.training import fold_of, parse_fold

        i, k = parse_fold(fold)
        items = [it for it in items if fold_of(it.question, k) == i]
    if sample is not None:
        items = stratified_sample(items, sample, seed)
    if limit is not None:
        items = items[:limit]
    return items


def stratified_sample(items: list[ScareItem], n: int, seed: int = 0) -> list[ScareItem]:
    """``n`` items drawn without replacement, each (database, category) stratum in proportion to its size (largest
    remainders first), seeded; returned in the files' order. All items when ``n`` is not smaller."""
    import random

    if n >= len(items):
        return list(items)
    strata: dict[tuple[str, str], list[int]] = {}
    for index, it in enumerate(items):
        strata.setdefault((it.db_id, it.sampled_category), []).append(index)
    keys = sorted(strata)
    quotas = {key: n * len(strata[key]) / len(items) for key in keys}
    counts = {key: int(quotas[key]) for key in keys}
    for key in sorted(keys, key=lambda k: (-(quotas[k] - counts[k]), k))[: n - sum(counts.values())]:
        counts[key] += 1
    rng = random.Random(seed)
    chosen = sorted(i for key in keys for i in rng.sample(strata[key], counts[key]))
    return [items[i] for i in chosen]


def method_for_run(name: str, out: str | Path, *, model: str | None = None, options: dict[str, Any] | None = None) -> Method:
    """Build method ``name`` for the run in ``out``; with a model, every LLM exchange goes to ``out/calls.jsonl``.

    The call log is not one of ``options``: those are part of the run's identity, the log is not.
    """
    from ehrguard.verify.methods import get_method

    extra = {"call_log": str(Path(out) / "calls.jsonl")} if model else {}
    return get_method(name, model=model, **(options or {}), **extra)


def record_llm_usage(metrics: dict[str, Any], method: Method) -> dict[str, dict[str, Any]] | None:
    """Add the LLM usage of this invocation (items resumed from before are not counted again) to
    ``metrics["llm_usage"]``, and return it; None for a method without an LLM."""
    llm = getattr(method, "llm", None)
    if llm is None:
        return None
    usage: dict[str, dict[str, Any]] = llm.usage.summary()
    metrics["llm_usage"] = usage
    return usage


def write_run_report(out: str | Path, metrics: dict[str, Any], items: list[ScareItem], *, report: bool = True) -> None:
    """Write ``metrics.json`` into the run folder and, with ``report``, ``report.md``, ``report.html`` and
    the figures, from the records of ``items``."""
    if report:
        run = RunDir(out)
        wanted = {it.key for it in items}
        write_scare_report(out, metrics, run.config(), [r for r in run.records() if r["key"] in wanted])
    else:
        (Path(out) / "metrics.json").write_text(json.dumps(jsonable(metrics), indent=2))


def union_records(run_dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The records of several run folders (the folds of a cross-validation), which must not share an item.

    Raises:
        RunError: an item is in more than one of the runs.
    """
    records: dict[str, dict[str, Any]] = {}
    for d in run_dirs:
        for r in RunDir(d).records():
            if r["key"] in records:
                raise RunError(f"Item {r['key']} is in more than one of the runs; they must not overlap.")
            records[r["key"]] = r
    return list(records.values())


def _write_merged(target: Path, config: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Make the folder of merged runs a run folder of its own (``run.json`` naming the runs, ``predictions.jsonl``
    their union), so that ``bench compare`` and ``bench threshold`` read it like any run.

    Raises:
        RunError: ``target`` holds a run of its own (not a merge).
    """
    existing = target / "run.json"
    if existing.is_file() and "merged_from" not in json.loads(existing.read_text()).get("identity", {}):
        raise RunError(f"{target} holds a run of its own: merge into a new folder (--out).")
    (target / "run.json").write_text(json.dumps(config, indent=2, default=str))
    (target / "predictions.jsonl").write_text("".join(json.dumps(r, default=str) + "\n" for r in records))


def rescore_runs(run_dirs: list[str], out: str | None = None) -> tuple[dict[str, Any], dict[str, Path]]:
    """Score run folder(s) from their records alone and rewrite the reports; several runs (the folds of a
    cross-validation) are scored as one, into ``out``.

    Returns:
        The metrics, and the paths of the files written.

    Raises:
        RunError: several runs and no ``out``, or an item in more than one of the runs.
    """
    if len(run_dirs) > 1 and not out:
        raise RunError("Several run folders are scored together into --out DIR; pass --out.")
    records = {r["key"]: r for r in union_records(run_dirs)}
    config = RunDir(run_dirs[0]).config()
    fill_error_types(list(records.values()), {p for d in run_dirs for p in RunDir(d).config().get("data_paths", [])})
    target = out or run_dirs[0]
    Path(target).mkdir(parents=True, exist_ok=True)
    if len(run_dirs) > 1:
        config = {**config, "merged_from": list(run_dirs), "identity": {**config["identity"], "merged_from": list(run_dirs)}}
        _write_merged(Path(target), config, list(records.values()))
    metrics = score_records(list(records.values()))
    return metrics, write_scare_report(target, metrics, config, list(records.values()))
