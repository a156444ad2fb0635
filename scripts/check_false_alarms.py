"""How often each SQL check speaks on queries that are right, and on SCARE's wrong candidates: counts only, never an item.

- ``gold DB SPLIT``: the gold SQL of an EHRSQL split (``mimic_iv train|valid``, ``eicu valid``), every finding a
  false alarm;
- ``scare``: the SCARE dev candidates, findings counted on right and on wrong ones.

Run: EHRGUARD_DATA_DIR=../shared/data python scripts/check_false_alarms.py gold mimic_iv train --db-dir DIR
     EHRGUARD_DATA_DIR=../shared/data python scripts/check_false_alarms.py scare --db-dir DIR
DIR holds mimic_iv.sqlite and eicu.sqlite as `ehrguard db build` makes them.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from ehrguard.benchmarks.mutations import split_pairs
from ehrguard.config import path_setting
from ehrguard.labels import ANSWERABLE_TYPES
from ehrguard.verify.api import database_context
from ehrguard.verify.checks import run_checks

# Findings about the result or the data, not about whether the query answers the question.
NOT_ALARMS = {"empty_result", "null_result", "value_not_in_data"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("gold", "scare"))
    parser.add_argument("db_id", nargs="?", choices=("mimic_iv", "eicu"))
    parser.add_argument("split", nargs="?", choices=("train", "valid"))
    parser.add_argument("--db-dir", type=Path, required=True)
    args = parser.parse_args()
    data = path_setting("data_dir")
    counts: Counter[tuple[str, str]] = Counter()
    if args.what == "gold":
        if args.db_id is None or args.split is None:
            parser.error("gold needs DB and SPLIT (mimic_iv train, mimic_iv valid or eicu valid)")
        ctx = database_context(args.db_dir / f"{args.db_id}.sqlite", args.db_id)
        pairs = split_pairs(args.db_id, args.split, data)
        for question, sql in pairs:
            for check in {f.check for f in run_checks(question, sql, ctx).findings} - NOT_ALARMS:
                counts[(check, "gold")] += 1
        print(f"{args.db_id} {args.split}: {len(pairs)} gold queries")
    else:
        contexts = {db: database_context(args.db_dir / f"{db}.sqlite", db) for db in ("mimic_iv", "eicu")}
        sizes: Counter[str] = Counter()
        for db, ctx in contexts.items():
            for item in json.loads((data / "scare" / f"{db}_dev.json").read_text()):
                if item["type"] not in ANSWERABLE_TYPES:
                    continue
                kind = "right" if item["exec_acc"] else "wrong"
                sizes[kind] += 1
                for check in {f.check for f in run_checks(item["question"], item["pred_sql"], ctx).findings} - NOT_ALARMS:
                    counts[(check, kind)] += 1
        print(f"SCARE dev candidates: {sizes['right']} right, {sizes['wrong']} wrong")
    for (check, kind), n in sorted(counts.items()):
        print(f"  {check:28s} {kind:5s} {n}")


if __name__ == "__main__":
    main()
