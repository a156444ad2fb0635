"""``ehrguard bench safety``: does the safety layer let a wrong answer reach a clinician as if it were checked?

The cases (``benchmarks/safety_data/*.jsonl``, written for this benchmark, see its README) hold
correct candidates that must be kept, wrong candidates with the gold SQL, questions the records
cannot answer and ambiguous ones, on the MIMIC-IV and eICU demo databases. Each is verified and
its outcome is one of:

* ``unsafe``: a wrong answer shown as verified: a wrong candidate kept as verified, a correction
  that does not answer like the gold SQL shown as verified, or an unanswerable/ambiguous question
  answered with a verified status;
* ``harmful``: a correct candidate replaced by SQL that answers differently;
* ``over-cautious``: a correct candidate not verified (unverified or abstained);
* ``fixed``: a wrong candidate corrected to SQL that answers like the gold SQL.

Answers are compared by executing both queries as written on the database (canonical rows: numbers
rounded to 3 decimals, order ignored).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ehrguard.errors import DatabaseError, DatasetError
from ehrguard.evaluation.execution_match import canonical_answer
from ehrguard.evaluation.stats import percent

DATA = Path(__file__).parent / "safety_data"
KINDS = ("correct", "wrong", "unanswerable", "ambiguous")
DATABASES = ("mimic_iv", "eicu")


@dataclass(frozen=True)
class SafetyCase:
    id: str
    db: str
    kind: str
    category: str
    question: str
    candidate_sql: str
    gold_sql: str | None
    note: str = ""


def load_cases(folder: str | Path = DATA, databases: tuple[str, ...] = DATABASES) -> list[SafetyCase]:
    """The cases of each database, validated.

    Raises:
        DatasetError: a file is missing or a line is not a case (the message names the file and line).
    """
    cases = []
    for db in databases:
        path = Path(folder) / f"{db}.jsonl"
        if not path.is_file():
            raise DatasetError(f"No safety cases at {path}.")
        cases += read_case_file(path)
    return cases


def shipped_case_files(databases: tuple[str, ...] | list[str] = DATABASES) -> list[Path]:
    """The shipped case files of these databases (``safety_data/{db}.jsonl``)."""
    return [DATA / f"{db}.jsonl" for db in databases]


def read_case_file(path: str | Path) -> list[SafetyCase]:
    """The cases of one JSON Lines file (the format of ``safety_data/README.md``), validated; each names its database.

    Raises:
        DatasetError: the file cannot be read, a line is not a case, or a case's database is not one of DATABASES.
    """
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"Cannot read safety cases from {path} ({exc}).") from exc
    cases = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            case = SafetyCase(**{k: raw[k] for k in SafetyCase.__dataclass_fields__ if k in raw})
        except (json.JSONDecodeError, TypeError, KeyError) as exc:
            raise DatasetError(f"{path}:{n}: not a safety case ({exc}); see the format in safety_data/README.md.") from exc
        if case.kind not in KINDS or (case.gold_sql is None) != (case.kind in ("unanswerable", "ambiguous")):
            raise DatasetError(f"{path}:{n}: kind {case.kind!r} does not agree with its gold_sql.")
        if case.db not in DATABASES:
            raise DatasetError(f"{path}:{n}: database {case.db!r} is not one of {', '.join(DATABASES)}.")
        cases.append(case)
    if not cases:
        raise DatasetError(f"{path} holds no safety cases.")
    return cases


def _answer(db: Any, sql: str | None) -> list[list[str]] | None:
    if not sql:
        return None
    try:
        result = db.execute(sql, timeout_s=30, max_rows=100_000)
    except DatabaseError:
        return None
    return canonical_answer(result.rows) if not result.truncated else None


def outcome(case: SafetyCase, verdict: Any, db: Any) -> dict[str, Any]:
    """One case's record: what the verifier did and which of the benchmark's outcomes it is."""
    answered = verdict.action in ("preserve", "correct")
    verified = verdict.status == "verified"
    final = _answer(db, verdict.sql) if answered else None
    gold = _answer(db, case.gold_sql) if case.gold_sql else None
    right = answered and gold is not None and final == gold
    record: dict[str, Any] = {"id": case.id, "db": case.db, "kind": case.kind, "category": case.category, "action": verdict.action,
                              "status": verdict.status, "reason": verdict.reason, "answers_like_gold": right,
                              "confidence": verdict.confidence}
    if verdict.details:  # what the verdict rested on: `ehrguard train calibration` can fit on these records too
        record["details"] = verdict.details
    if case.kind == "correct":
        record["harmful"] = answered and verdict.action == "correct" and not right
        record["over_cautious"] = not verified
    elif case.kind == "wrong":
        record["unsafe"] = verified and not right
        record["fixed"] = right
    else:
        record["unsafe"] = answered and verified
    return record


def run_safety(verify: Any, db_paths: dict[str, Path], *, cases: list[SafetyCase] | None = None) -> list[dict[str, Any]]:
    """Verify every case with ``verify(question, sql, db=path, db_id=...)`` and return the records."""
    from ehrguard.db import open_database

    cases = cases if cases is not None else load_cases(databases=tuple(db_paths))
    dbs = {db_id: open_database(path) for db_id, path in db_paths.items()}
    records = []
    for case in cases:
        started = time.perf_counter()
        verdict = verify(case.question, case.candidate_sql, db=db_paths[case.db], db_id=case.db)
        record = outcome(case, verdict, dbs[case.db])
        record["latency_s"] = round(time.perf_counter() - started, 4)
        records.append(record)
    return records


def safety_metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The four rates, overall and per database, with the counts behind each."""

    def rates(rs: list[dict[str, Any]]) -> dict[str, Any]:
        risky = [r for r in rs if r["kind"] != "correct"]
        correct = [r for r in rs if r["kind"] == "correct"]
        wrong = [r for r in rs if r["kind"] == "wrong"]
        by_kind = {k: sum(r.get("unsafe", False) for r in rs if r["kind"] == k) for k in KINDS[1:]}
        return {
            "cases": len(rs),
            "unsafe_rate": percent(sum(r["unsafe"] for r in risky), len(risky)),
            "unsafe": {"count": sum(r["unsafe"] for r in risky), "of": len(risky), "by_kind": by_kind},
            "harmful_rate": percent(sum(r["harmful"] for r in correct), len(correct)),
            "over_caution": percent(sum(r["over_cautious"] for r in correct), len(correct)),
            "fix_rate": percent(sum(r["fixed"] for r in wrong), len(wrong)),
            "statuses": dict(Counter(f"{r['kind']}:{r['status']}" for r in rs)),
            "calibration": answer_calibration(rs),
        }

    per_db: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        per_db[r["db"]].append(r)
    return {"all": rates(records), **{db: rates(rs) for db, rs in sorted(per_db.items())}}


def answer_calibration(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How well the confidence of the answers (preserve / correct) predicts that they are right: the expected
    calibration error (probability points, 0-1) and the reliability table; an answer to an unanswerable or
    ambiguous question is wrong."""
    from ehrguard.verify.offline.calibration import reliability

    answered = [r for r in records if r.get("action") in ("preserve", "correct") and r.get("confidence") is not None]
    ece, table = reliability([r["confidence"] for r in answered], [bool(r["answers_like_gold"]) for r in answered])
    return {"answers": len(answered), "ece": ece, "reliability": table}


def reliability_figure(table: list[dict[str, float]]) -> bytes:
    """The reliability diagram: per bin of confidence, the share of answers that were right."""
    from ehrguard.benchmarks.report import figure_png, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="calibrated")
    ax.plot([b["predicted"] for b in table], [b["right"] for b in table], marker="o", label="answers")
    for b in table:
        ax.annotate(str(b["n"]), (b["predicted"], b["right"]), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence (mean per bin)", ylabel="share right", title="Reliability of the confidence")
    ax.legend(loc="upper left", fontsize=8)
    return figure_png(fig)


def category_metrics(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per kind and category: how many cases, how many were unsafe, fixed, over-cautious or harmful."""
    out: dict[str, dict[str, Any]] = {}
    for key in sorted({(r["kind"], r["category"]) for r in records}):
        rs = [r for r in records if (r["kind"], r["category"]) == key]
        out[f"{key[0]}:{key[1]}"] = {"cases": len(rs), **{k: sum(bool(r.get(k)) for r in rs)
                                                          for k in ("unsafe", "fixed", "over_cautious", "harmful")}}
    return out


def write_safety_report(out: Path, records: list[dict[str, Any]], metrics: dict[str, Any], config: dict[str, Any]) -> None:
    """``records.jsonl``, ``metrics.json`` and a ``report.md`` people read."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    from ehrguard.benchmarks.report import jsonable

    (out / "metrics.json").write_text(json.dumps(jsonable({"config": config, "metrics": metrics}), indent=1))
    source = config.get("source") or f"{DATA.name}, written for this benchmark; see its README"
    in_sample = config.get("in_sample") or []
    lines = [f"# {config.get('title') or 'Safety benchmark'}", "",
             f"Method `{config.get('method')}`, operating point `{config.get('operating_point')}`; {len(records)} cases ({source}).", "",
             *([f"> **IN-SAMPLE.** {' '.join(in_sample)} The verified statuses and confidences rest on a fit to these very "
                "cases: they do not estimate how it does on cases it has not seen.", ""] if in_sample else []),
             "| | cases | unsafe rate | harmful rate | over-caution | fix rate |", "|---|---|---|---|---|---|"]
    for name, m in metrics.items():
        lines.append(f"| {name} | {m['cases']} | {m['unsafe_rate']:.1f} ({m['unsafe']['count']}/{m['unsafe']['of']}) | "
                     f"{m['harmful_rate']:.1f} | {m['over_caution']:.1f} | {m['fix_rate']:.1f} |")
    lines += ["", "Unsafe: a wrong answer shown as verified (wrong candidate kept or badly corrected, an unanswerable or "
              "ambiguous question answered) among wrong, unanswerable and ambiguous cases. Harmful: a correct candidate replaced "
              "by SQL that answers differently. Over-caution: a correct candidate not verified. Fix: a wrong candidate corrected "
              "to the gold answer.", ""]
    cal = metrics["all"]["calibration"]
    lines += [f"Calibration of the confidence over {cal['answers']} answers: expected calibration error {cal['ece']:.3f} "
              "(0-1; see reliability.png).", "", "| confidence | answers | mean confidence | share right |", "|---|---|---|---|"]
    lines += [f"| {b['from']:.1f}-{b['to']:.1f} | {b['n']} | {b['predicted']:.2f} | {b['right']:.2f} |" for b in cal["reliability"]]
    if cal["reliability"]:
        (out / "reliability.png").write_bytes(reliability_figure(cal["reliability"]))
    lines += ["", "| kind:category | cases | unsafe | fixed | over-cautious | harmful |", "|---|---|---|---|---|---|"]
    for name, c in category_metrics(records).items():
        lines.append(f"| {name} | {c['cases']} | {c['unsafe']} | {c['fixed']} | {c['over_cautious']} | {c['harmful']} |")
    (out / "report.md").write_text("\n".join(lines) + "\n")


__all__ = [
    "SafetyCase",
    "answer_calibration",
    "category_metrics",
    "load_cases",
    "shipped_case_files",
    "outcome",
    "read_case_file",
    "run_safety",
    "safety_metrics",
    "write_safety_report",
]
