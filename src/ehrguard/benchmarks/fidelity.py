"""How faithful are our rebuilt databases to the authors'? Recompute every candidate's ``exec_acc``.

For each answerable SCARE item, the candidate SQL is matched against the gold SQL on our
database and compared with the published ``exec_acc``. Agreement per database and per
generator says how far PR/CR on our databases can be compared with published numbers.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.scare import ScareItem
from ehrguard.benchmarks.scare_run import GoldAnswers, final_match, open_contexts


def candidate_fidelity(items: list[ScareItem], db_dir: str | Path) -> dict[str, Any]:
    """Agreement of published vs recomputed candidate correctness, overall and by db / generator / category."""
    answerable = [it for it in items if it.answerable]
    contexts = open_contexts(db_dir, {it.db_id for it in answerable})
    gold = GoldAnswers()
    groups: dict[str, dict[str, dict[str, int]]] = {"by_db": defaultdict(lambda: defaultdict(int)),
                                                    "by_generator": defaultdict(lambda: defaultdict(int)),
                                                    "by_category": defaultdict(lambda: defaultdict(int))}
    disagreements = []
    try:
        for it in answerable:
            ctx = contexts[it.db_id]
            ours, _ = final_match(ctx, gold, it.pred_sql, it.gt_sql)
            agree = ours == it.exec_acc
            for key, name in (("by_db", it.db_id), ("by_generator", it.generator_name), ("by_category", it.sampled_category)):
                g = groups[key][name]
                g["n"] += 1
                g["agree"] += agree
                g["published_true"] += it.exec_acc
                g["ours_true"] += ours
            if not agree:
                disagreements.append({"key": it.key, "published": it.exec_acc, "ours": ours})
        gold_errors = gold.failures()
    finally:
        for ctx in contexts.values():
            ctx.db.close()
    out: dict[str, Any] = {"n": len(answerable), "agree": len(answerable) - len(disagreements), "gold_query_errors": gold_errors}
    out["agreement"] = 100.0 * out["agree"] / out["n"] if out["n"] else float("nan")
    for key, by_name in groups.items():
        out[key] = {name: {**dict(v), "agreement": 100.0 * v["agree"] / v["n"]} for name, v in sorted(by_name.items())}
    out["disagreements"] = disagreements
    return out
