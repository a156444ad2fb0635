"""Issue 15's proof: an ordinary install verifies exactly as a checkout with the benchmark files does.

1. Builds a wheel of this checkout and installs it into a new virtualenv (``pip install`` of the wheel and its
   dependencies from the package index, nothing else).
2. In that virtualenv, with ``$EHRGUARD_DATA_DIR`` an empty folder and a cache folder of its own, builds the
   MIMIC-IV and eICU databases from the demo folders only (``ehrguard db build NAME --source DEMO``), then
   verifies every SCARE dev item (the items are handed over as a file: questions and candidate SQL only).
3. Here, with the benchmark files in ``$EHRGUARD_DATA_DIR``, verifies the same items on databases built the same way.
4. Compares the verdicts, whole (``Verdict.to_dict()`` without timings): exit 1 on any difference.

Run: EHRGUARD_DATA_DIR=../shared/data python scripts/wheel_identity.py [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMOS = {"mimic_iv": "mimic-iv-demo-2.2", "eicu": "eicu-demo-2.0.1"}

# Runs in either interpreter: verifies the items of ITEMS on the databases of DBS, writes one verdict per line to OUT.
RUNNER = """
import json, sys
import ehrguard
items, dbs, out = json.load(open(sys.argv[1])), json.loads(sys.argv[2]), open(sys.argv[3], "w")
for item in items:
    v = ehrguard.verify(item["question"], item["sql"], db=dbs[item["db_id"]], db_id=item["db_id"]).to_dict()
    v.pop("elapsed_s", None)
    out.write(json.dumps({"key": item["key"], "verdict": v}, sort_keys=True) + "\\n")
out.close()
"""


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"wheel_identity: {' '.join(cmd[:4])} ... failed:\n{proc.stderr[-2000:]}")
    shown = " ".join(Path(c).name if i == 0 else c if len(c) < 60 and "\n" not in c else "..." for i, c in enumerate(cmd[:5]))
    print(f"  {shown} ... {time.perf_counter() - started:.0f} s", file=sys.stderr)


def _verdicts(path: Path) -> dict[str, Any]:
    return {row["key"]: row["verdict"] for row in map(json.loads, path.read_text().splitlines())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, help="a folder for the wheel, the virtualenv and the databases (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    data = Path(os.environ.get("EHRGUARD_DATA_DIR") or ROOT.parent / "shared" / "data").resolve()
    if not (data / "scare").is_dir():
        sys.exit(f"wheel_identity: no SCARE dev split under {data}; set EHRGUARD_DATA_DIR to the shared data folder.")
    work = args.work or Path(tempfile.mkdtemp(prefix="ehrguard-wheel-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        from ehrguard.benchmarks.scare import load_scare

        items = [{"key": i.key, "question": i.question, "sql": i.pred_sql, "db_id": i.db_id}
                 for i in load_scare([data / "scare" / "mimic_iv_dev.json", data / "scare" / "eicu_dev.json"])]
        (work / "items.json").write_text(json.dumps(items))

        print("a wheel, and a new virtualenv with only it and its dependencies:", file=sys.stderr)
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "wheel"), str(ROOT)])
        wheel = next((work / "wheel").glob("ehrguard-*.whl"))
        _run([sys.executable, "-m", "venv", str(work / "venv")])
        venv_python = str(work / "venv" / "bin" / "python")
        _run([venv_python, "-m", "pip", "install", "-q", str(wheel)])

        empty, cache = work / "empty-data", work / "cache"
        empty.mkdir(exist_ok=True)
        fresh_env = {k: v for k, v in os.environ.items() if not k.startswith("EHRGUARD_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        fresh_env.update(EHRGUARD_DATA_DIR=str(empty), XDG_CACHE_HOME=str(cache), EHRGUARD_AUDIT_PATH=str(work / "audit.sqlite"))
        print("the install, without the benchmark files:", file=sys.stderr)
        fresh_dbs = {}
        for name, demo in DEMOS.items():
            out = work / "fresh-dbs" / f"{name}.sqlite"
            _run([str(work / "venv" / "bin" / "ehrguard"), "db", "build", name, "--source", str(data / demo), "--out", str(out)], fresh_env)
            fresh_dbs[name] = str(out)
        _run([venv_python, "-c", RUNNER, str(work / "items.json"), json.dumps(fresh_dbs), str(work / "fresh.jsonl")],
             {**fresh_env, "PYTHONHASHSEED": "0"})

        print("this checkout, with the benchmark files:", file=sys.stderr)
        here_env = {**os.environ, "EHRGUARD_DATA_DIR": str(data), "EHRGUARD_AUDIT_PATH": str(work / "audit-here.sqlite"),
                    "PYTHONHASHSEED": "0"}
        here_dbs = {}
        for name, demo in DEMOS.items():
            out = work / "here-dbs" / f"{name}.sqlite"
            _run([sys.executable, "-m", "ehrguard", "db", "build", name, "--source", str(data / demo), "--out", str(out)], here_env)
            here_dbs[name] = str(out)
        _run([sys.executable, "-c", RUNNER, str(work / "items.json"), json.dumps(here_dbs), str(work / "here.jsonl")], here_env)

        fresh, here = _verdicts(work / "fresh.jsonl"), _verdicts(work / "here.jsonl")
        differ = sorted(k for k in here if fresh.get(k) != here[k])
        if len(here) != len(items) or set(fresh) != set(here) or differ:
            for key in differ[:10]:
                print(f"{key}:\n  install:  {json.dumps(fresh.get(key))[:400]}\n  checkout: {json.dumps(here[key])[:400]}", file=sys.stderr)
            sys.exit(f"wheel_identity: {len(differ)} of {len(items)} verdicts differ")
        print(f"identical: all {len(items)} SCARE dev verdicts of the wheel's install (no benchmark files) and of this checkout "
              f"(with them)")
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
