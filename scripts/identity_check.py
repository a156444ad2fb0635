"""Before/after identity check for refactors that must not change behaviour.

Records, on the real demo databases and the SCARE dev split:

* every SCARE dev verdict of the offline verifier at each operating point (all 1,399 items,
  the whole ``Verdict.to_dict()``), and whether ``hybrid`` would settle it offline;
* the EHRSQL-2024 valid fidelity report of the rebuilt MIMIC-IV database;
* the REST API's responses to a fixed table of requests (successes and every error shape);
* the OpenAPI document.

Usage::

    python scripts/identity_check.py record scripts/identity/baseline.json.gz   # at the commit before a refactor
    python scripts/identity_check.py compare scripts/identity/baseline.json.gz  # after it: exit 1 on any difference

The snapshot depends on the shared data (``$EHRGUARD_DATA_DIR``: the demos, EHRSQL, SCARE dev)
and on this machine's onnxruntime build; compare on the machine that recorded it. It runs with
``PYTHONHASHSEED=0`` (it re-executes itself so): code that iterates a set of strings gives the same
order in both runs, so such an order is compared rather than reported as noise.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OPERATING_POINTS = ("balanced", "safety-first", "preserve-first")


def _data_dir() -> Path:
    d = os.environ.get("EHRGUARD_DATA_DIR") or str(ROOT.parent / "shared" / "data")
    if not Path(d, "scare").is_dir():
        sys.exit(f"identity_check: no SCARE dev split under {d}; set EHRGUARD_DATA_DIR to the shared data folder.")
    return Path(d)


def _databases(data: Path, work: Path) -> dict[str, Path]:
    from ehrguard.db import build_database

    out = {}
    for name in ("mimic_iv", "eicu"):
        path = work / f"{name}.sqlite"
        if not path.is_file():
            build_database(name, source=data / {"mimic_iv": "mimic-iv-demo-2.2", "eicu": "eicu-demo-2.0.1"}[name], out=path)
        out[name] = path
    return out


def _scare(data: Path, dbs: dict[str, Path]) -> dict[str, Any]:
    import ehrguard
    from ehrguard.benchmarks.scare import load_scare
    from ehrguard.verify.methods import get_method

    items = load_scare([data / "scare" / "mimic_iv_dev.json", data / "scare" / "eicu_dev.json"])
    hybrid = get_method("hybrid", model="scripted/identity-check")
    out: dict[str, Any] = {}
    for point in OPERATING_POINTS:
        started = time.perf_counter()
        verdicts = {}
        for item in items:
            v = ehrguard.verify(item.question, item.pred_sql, db=dbs[item.db_id], db_id=item.db_id, method="offline",
                                operating_point=point)
            row = v.to_dict()
            if point == "balanced":
                row["hybrid_settled_offline"] = hybrid.settled_offline(v)
            verdicts[item.key] = row
        out[point] = verdicts
        print(f"  scare {point}: {len(verdicts)} verdicts in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return out


def _fidelity(data: Path, dbs: dict[str, Path]) -> dict[str, Any]:
    from ehrguard.db import open_database
    from ehrguard.db.fidelity import check_fidelity

    return check_fidelity(open_database(dbs["mimic_iv"]), data / "ehrsql-2024" / "mimic_iv" / "valid").to_dict()


_SCRUB = {"audit_id", "elapsed_s", "duration_ms", "created", "ts", "id", "time"}


def _scrub(value: Any) -> Any:
    """Drop what differs between two runs of the same code (ids, timings)."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in _SCRUB}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


API_REQUESTS: list[tuple[str, str, dict[str, Any] | None, bool]] = [
    # method, path, JSON body, authorised
    ("GET", "/healthz", None, False),
    ("GET", "/v1/databases", None, False),
    ("GET", "/v1/databases", None, True),
    ("GET", "/v1/databases/mimic_iv/schema", None, True),
    ("GET", "/v1/databases/nope/schema", None, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "What is the gender of patient 10004235?",
                            "sql": "SELECT gender FROM patients WHERE subject_id = 10004235"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "What is the gender of patient 10004235?",
                            "sql": "SELECT gendr FROM patient WHERE subject_id = 10004235"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "Labs?", "sql": "SELECT * FROM labevents"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "Train a neural network to predict sepsis.", "sql": "SELECT 1"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "How many patients were prescribed furosemid?",
                            "sql": "SELECT COUNT(prescriptions.subject_id) FROM prescriptions "
                                   "WHERE prescriptions.drug = 'furosemid'"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "How many patients are there?", "sql": "DROP TABLE patients"}, True),
    ("POST", "/v1/verify", {"db": "eicu", "question": "How many patients are there?",
                            "sql": "SELECT COUNT(uniquepid) FROM patient"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "q" * 3000, "sql": "SELECT 1"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv"}, True),
    ("POST", "/v1/verify", {"db": "nope", "question": "q", "sql": "SELECT 1"}, True),
    ("POST", "/v1/verify", {"db": "../etc/passwd", "question": "q", "sql": "SELECT 1"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "q", "sql": "SELECT 1", "method": "no_such_method"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "q", "sql": "SELECT 1", "operating_point": "reckless"}, True),
    ("POST", "/v1/verify", {"db": "mimic_iv", "question": "q", "sql": "SELECT 1", "method": "single_turn"}, True),
    ("POST", "/v1/sql", {"db": "mimic_iv", "sql": "SELECT gender, COUNT(*) FROM patients GROUP BY gender ORDER BY gender"}, True),
    ("POST", "/v1/sql", {"db": "mimic_iv", "sql": "DELETE FROM patients"}, True),
    ("POST", "/v1/sql", {"db": "mimic_iv", "sql": "SELECT nope FROM patients"}, True),
    ("POST", "/v1/sql", {"db": "mimic_iv", "sql": "SELECT 1", "max_rows": 0}, True),
    ("POST", "/v1/ask", {"db": "mimic_iv", "question": "How many patients are there?"}, True),
    ("GET", "/v1/nothing-here", None, True),
    ("GET", "/", None, False),
]


def _api(dbs: dict[str, Path], work: Path) -> list[dict[str, Any]]:
    from fastapi.testclient import TestClient

    from ehrguard.audit import AuditLog
    from ehrguard.server.app import create_app

    folder = work / "named"
    folder.mkdir(exist_ok=True)
    for path in dbs.values():
        link = folder / path.name
        if not link.exists():
            link.symlink_to(path)
    os.environ["EHRGUARD_DB_DIR"] = str(folder)
    audit_path = work / "audit.sqlite"
    audit_path.unlink(missing_ok=True)
    client = TestClient(create_app(tokens=["identity-token"], audit=AuditLog(audit_path), rate_limit=10_000))
    out = []
    for method, path, body, authorised in API_REQUESTS:
        headers = {"Authorization": "Bearer identity-token"} if authorised else {}
        r = client.request(method, path, json=body, headers=headers)
        kind = r.headers.get("content-type", "")
        payload = _scrub(r.json()) if kind.startswith("application/json") else {"bytes": len(r.content)}
        out.append({"request": [method, path, body if not body or len(json.dumps(body)) < 500 else "(long)", authorised],
                    "status": r.status_code, "body": payload})
    audit = [_scrub(e) for e in AuditLog(audit_path).entries(limit=200)]
    out.append({"audit_entries": audit})
    return out


def _openapi() -> dict[str, Any]:
    from ehrguard.server.app import create_app

    return create_app(auth=False).openapi()


PARTS = ("fidelity", "api", "openapi", "scare")


def snapshot(parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    data = _data_dir()
    os.environ["EHRGUARD_DATA_DIR"] = str(data)
    os.environ.setdefault("EHRGUARD_LLM_CACHE", "off")
    work = Path(os.environ.get("EHRGUARD_IDENTITY_WORK") or Path(tempfile.gettempdir()) / "ehrguard-identity")
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("EHRGUARD_AUDIT_PATH", str(work / "cli-audit.sqlite"))
    dbs = _databases(data, work)
    started = time.perf_counter()
    makers = {"fidelity": lambda: _fidelity(data, dbs), "api": lambda: _api(dbs, work), "openapi": _openapi,
              "scare": lambda: _scare(data, dbs)}
    snap = {part: makers[part]() for part in parts}
    print(f"identity snapshot in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return snap


def _diff(a: Any, b: Any, where: str, out: list[str], limit: int = 200) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'after' if k not in a else 'before'}")
            else:
                _diff(a[k], b[k], f"{where}.{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", out, limit)
    elif a != b:
        out.append(f"{where}: before {json.dumps(a)[:200]} / after {json.dumps(b)[:200]}")


# Differences made on purpose, each with its reason; every other difference fails the comparison.
EXPECTED_CHANGES: list[tuple[str, str]] = [
    (r"^snapshot\.api\[\d+\]\.body\.error\.message: before \"Unknown method 'no_such_method'\. Available: .*/ after \"Unknown method "
     r"'no_such_method'\. Choose one of: ", "issue 12 point 6: the method registry's error names the choices like every registry"),
    (r"^snapshot\.api\[\d+\]\.audit_entries\[\d+\]\.error: before \"ConfigError: Unknown method 'no_such_method'\. Available: .*/ after "
     r"\"ConfigError: Unknown method 'no_such_method'\. Choose one of: ", "the same message, as the audit log records it"),
]


def _timed_out(verdict: dict[str, Any] | None) -> bool:
    return any("ran longer than" in f.get("message", "") for f in (verdict or {}).get("findings", []))


def _order_free(verdict: dict[str, Any]) -> str:
    v = dict(verdict)
    v["findings"] = sorted(json.dumps(f, sort_keys=True) for f in v.get("findings", []))
    v["message"] = sorted(str(v.get("message", "")).split("; "))
    return json.dumps(v, sort_keys=True)


def _set_aside_reorders(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Since the unknown_table findings are listed in the order the query names them (they followed string hashing
    before), a verdict may list the same findings in another order; such verdicts are listed and left out."""
    notes = []
    for point in OPERATING_POINTS:
        old, new = before.get("scare", {}).get(point, {}), after.get("scare", {}).get(point, {})
        for key in sorted(set(old) & set(new)):
            if old[key] != new[key] and _order_free(old[key]) == _order_free(new[key]):
                notes.append(f"same findings in another order (unknown tables now in query order): scare {point} {key}")
                del old[key], new[key]
    return notes


def _set_aside_timeouts(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """SCARE items whose candidate ran into the checks' 10 s limit in one run and not in the other depend on the
    machine's load, not on the code: they are listed, and left out of the comparison."""
    notes = []
    for point in OPERATING_POINTS:
        old, new = before.get("scare", {}).get(point, {}), after.get("scare", {}).get(point, {})
        for key in sorted(set(old) & set(new)):
            if old[key] != new[key] and (_timed_out(old[key]) or _timed_out(new[key])):
                side = "before" if _timed_out(old[key]) else "after"
                notes.append(f"timing-dependent, not compared: scare {point} {key} (its candidate hit the 10 s check limit {side})")
                del old[key], new[key]
    return notes


def main() -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["record", "compare"])
    parser.add_argument("baseline", type=Path)
    parser.add_argument("--only", choices=PARTS, action="append", help="compare only these parts (repeatable)")
    args = parser.parse_args()
    parts = tuple(args.only or PARTS)
    if args.mode == "record" and parts != PARTS:
        parser.error("record writes every part; drop --only")
    snap = json.loads(json.dumps(snapshot(parts)))  # tuples -> lists, as in the stored file
    if args.mode == "record":
        args.baseline.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(args.baseline, "wt") as fh:
            json.dump(snap, fh, sort_keys=True)
        print(f"recorded {args.baseline}")
        return 0
    with gzip.open(args.baseline, "rt") as fh:
        before = {part: value for part, value in json.load(fh).items() if part in parts}
    if "api" in before:
        before["api"] = _scrub(before["api"])  # a baseline recorded before a field joined the scrub list
    differences: list[str] = []
    timing = _set_aside_timeouts(before, snap) + _set_aside_reorders(before, snap)
    _diff(before, snap, "snapshot", differences)
    if "scare" in snap:
        for point in OPERATING_POINTS:
            old, new = before["scare"][point], snap["scare"][point]
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            actions = sum(1 for k in changed if (old.get(k) or {}).get("action") != (new.get(k) or {}).get("action"))
            if changed:
                differences.insert(0, f"scare {point}: {len(changed)} of {len(new)} verdicts differ ({actions} in their action)")
    expected = [(d, why) for d in differences for pattern, why in EXPECTED_CHANGES if re.search(pattern, d)]
    differences = [d for d in differences if d not in {e for e, _ in expected}]
    for d, why in expected:
        print(f"changed on purpose ({why}): {d[:160]}")
    if differences:
        print("DIFFERENT:\n" + "\n".join(differences))
        return 1
    for line in timing:
        print(line)
    said = []
    if "scare" in snap:
        said.append(f"{ {point: len(snap['scare'][point]) for point in OPERATING_POINTS} } SCARE dev verdicts")
    if "fidelity" in snap:
        said.append(f"EHRSQL-2024 valid fidelity {snap['fidelity']['reproduced']}/{snap['fidelity']['total']}")
    if "api" in snap:
        said.append(f"{len(API_REQUESTS)} API responses and the audit entries they wrote")
    if "openapi" in snap:
        said.append("the OpenAPI document")
    print("identical: " + ", ".join(said))
    return 0


if __name__ == "__main__":
    sys.exit(main())
