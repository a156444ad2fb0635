"""SCARE's error types on the benchmark's items: each answerable-incorrect candidate's type, and how well the reading
(:func:`ehrguard.evaluation.classify_error`) agrees with the hand labels that ship in ``error_type_data/``.

Runs record the type of each answerable-incorrect candidate (``error_type`` in ``predictions.jsonl``); a run written
before that gets it from its data files when a report is rewritten. The reports give the correction rate per type
(SCARE's Table 4).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.scare import ScareItem, load_scare
from ehrguard.errors import DatasetError
from ehrguard.evaluation import ERROR_TYPES, classify_error
from ehrguard.profiles import get_profile

LABELS = Path(__file__).parent / "error_type_data" / "scare_dev_labels.jsonl"


def item_error_type(item: ScareItem) -> str | None:
    """The error type of an item's candidate when it is answerable and wrong (published ``exec_acc``), else None."""
    if not item.answerable or item.exec_acc:
        return None
    profile = get_profile(item.db_id)
    return classify_error(item.gt_sql, item.pred_sql, profile.dialect, entity_tables=[e.table for e in profile.entities],
                          entity_ids=[e.id_column for e in profile.entities]).type


def fill_error_types(records: list[dict[str, Any]], data_paths: Iterable[str | Path]) -> None:
    """Give the answerable-incorrect records that lack one their ``error_type``, from the run's data files (those still
    where the run found them); records of files that are gone keep none."""
    missing = {r["key"] for r in records if "error_type" not in r and r.get("sampled_category") == "answerable_incorrect"}
    if not missing:
        return
    paths = [p for p in data_paths if Path(p).is_file()]
    items = {it.key: it for it in load_scare(paths)} if paths else {}
    for r in records:
        if r["key"] in missing and r["key"] in items:
            r["error_type"] = item_error_type(items[r["key"]])


def read_labels(path: str | Path = LABELS) -> list[dict[str, Any]]:
    """The hand labels: ``key``, ``label`` (an error type or ``NONE``), ``why``, ``split`` (``refine`` / ``held-out``)."""
    try:
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"Cannot read the error-type labels {path}: {exc}.") from None
    for row in rows:
        if row.get("label") not in (*ERROR_TYPES, "NONE") or "key" not in row:
            raise DatasetError(f"{path}: each line needs a key and a label among {', '.join(ERROR_TYPES)}, NONE; got {row}.")
    return rows


def cohen_kappa(pairs: list[tuple[str, str]]) -> float:
    """Cohen's kappa of (label, reading) pairs: agreement beyond what the two distributions give by chance."""
    n = len(pairs)
    if n == 0:
        return float("nan")
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    chance = sum(first[k] * second[k] for k in set(first) | set(second)) / n**2
    return 1.0 if chance == 1 else (observed - chance) / (1 - chance)


def agreement(items: list[ScareItem], labels: list[dict[str, Any]]) -> dict[str, Any]:
    """The reading against the hand labels, per split and overall: items, agreement (%), Cohen's kappa, and the
    confusion (label x reading). Items labelled ``NONE`` (no error found by the labeller) are counted apart.

    Raises:
        DatasetError: a labelled item is not among ``items`` (pass the SCARE dev files).
    """
    by_key = {it.key: it for it in items}
    absent = [row["key"] for row in labels if row["key"] not in by_key]
    if absent:
        raise DatasetError(f"{len(absent)} labelled items are not in the data (first: {absent[0]}): pass the SCARE dev files "
                           "(mimic_iv_dev.json, eicu_dev.json).")
    out: dict[str, Any] = {"none_labels": sum(row["label"] == "NONE" for row in labels)}
    for split in ("held-out", "refine", "all"):
        pairs = [(row["label"], item_error_type(by_key[row["key"]]) or "none") for row in labels
                 if row["label"] != "NONE" and split in ("all", row["split"])]
        confusion = Counter(pairs)
        agree = sum(a == b for a, b in pairs)
        out[split] = {"n": len(pairs), "agree": agree, "agreement": round(100 * agree / len(pairs), 1) if pairs else float("nan"),
                      "kappa": round(cohen_kappa(pairs), 3),
                      "labels": dict(Counter(a for a, _ in pairs)), "readings": dict(Counter(b for _, b in pairs)),
                      "confusion": {a: {b: confusion[(a, b)] for b in (*ERROR_TYPES, "none")} for a in ERROR_TYPES}}
    return out


def agreement_markdown(result: dict[str, Any]) -> str:
    from ehrguard.benchmarks.report import md_table

    lines = ["# SCARE error types: the automatic reading against the hand labels", "",
             md_table(["split", "items", "agree", "agreement %", "Cohen's kappa"],
                      [[s, result[s]["n"], result[s]["agree"], result[s]["agreement"], f"{result[s]['kappa']:.2f}"]
                       for s in ("held-out", "refine", "all")]), "",
             f"Items the labeller judged to have no error (left out): {result['none_labels']}. The reading was refined by "
             "looking at its disagreements on the `refine` half only; the `held-out` half's disagreements were not looked at. "
             "Cohen's kappa: agreement beyond chance (0 chance, 1 perfect).", "",
             "## Confusion on the held-out half (rows: hand label, columns: the reading)", "",
             md_table(["label", *ERROR_TYPES, "none"],
                      [[a, *result["held-out"]["confusion"][a].values()] for a in ERROR_TYPES]), ""]
    return "\n".join(lines)


__all__ = ["LABELS", "agreement", "agreement_markdown", "cohen_kappa", "fill_error_types", "item_error_type", "read_labels"]
