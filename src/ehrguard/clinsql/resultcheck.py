"""A judge-free check of a result table against the gold one, and its agreement with the judge.

Columns are matched by normalised name, then the rest by position; numbers match within a
tolerance band (relative 2%, or absolute 1e-6 near zero); rows are aligned on the matched
non-numeric (key) columns when there are any, else by position. The score is the share of
gold cells reproduced: a gold column with no counterpart counts as all wrong, extra
columns in the answer cost nothing.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

REL_TOL = 0.02
ABS_TOL = 1e-6


def read_csv(path: str | Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = list(csv.reader(f))
    return (rows[0], rows[1:]) if rows else ([], [])


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _number(value: str) -> float | None:
    try:
        x = float(value.replace(",", "").rstrip("%"))
    except ValueError:
        return None
    return None if math.isnan(x) else x


def cells_match(a: str, b: str, rel_tol: float = REL_TOL) -> bool:
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=rel_tol, abs_tol=ABS_TOL)
    return a.strip().lower() == b.strip().lower()


def match_columns(gold: list[str], pred: list[str]) -> dict[int, int]:
    """gold column index -> predicted column index."""
    mapping: dict[int, int] = {}
    by_name = {_norm(n): j for j, n in enumerate(pred)}
    for i, n in enumerate(gold):
        if _norm(n) in by_name and by_name[_norm(n)] not in mapping.values():
            mapping[i] = by_name[_norm(n)]
    free = [j for j in range(len(pred)) if j not in mapping.values()]
    for i in range(len(gold)):
        if i not in mapping and free:
            mapping[i] = free.pop(0)
    return mapping


def compare_tables(gold_path: str | Path, pred_path: str | Path, rel_tol: float = REL_TOL) -> float:
    """Share of gold cells the predicted table reproduces (0..1)."""
    gold_cols, gold_rows = read_csv(gold_path)
    if not Path(pred_path).is_file():
        return 0.0
    pred_cols, pred_rows = read_csv(pred_path)
    if not gold_rows or not gold_cols:
        return 1.0 if not pred_rows else 0.0
    mapping = match_columns(gold_cols, pred_cols)
    keys = [i for i in mapping if all(_number(r[i]) is None for r in gold_rows if i < len(r) and r[i] != "")]
    if keys:
        index = {tuple(r[mapping[k]].strip().lower() for k in keys if mapping[k] < len(r)): r for r in pred_rows}
        aligned = [(g, index.get(tuple(g[k].strip().lower() for k in keys if k < len(g)))) for g in gold_rows]
    else:
        aligned = [(g, pred_rows[n] if n < len(pred_rows) else None) for n, g in enumerate(gold_rows)]
    hits = total = 0
    for g, p in aligned:
        for i in range(len(gold_cols)):
            total += 1
            if p is not None and i in mapping and i < len(g) and mapping[i] < len(p) and cells_match(g[i], p[mapping[i]], rel_tol):
                hits += 1
    return hits / total if total else 0.0


def agreement(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """Pearson r, mean |difference| and pass/fail agreement (>= 0.5) between our scores and the judge's."""
    if not pairs:
        return {"n": 0}
    xs, ys = zip(*pairs, strict=True)
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    r = sum((x - mx) * (y - my) for x, y in pairs) / (sx * sy) if sx and sy else float("nan")
    return {"n": len(pairs), "pearson_r": r, "mean_abs_diff": sum(abs(x - y) for x, y in pairs) / len(pairs),
            "pass_agreement": sum((x >= 0.5) == (y >= 0.5) for x, y in pairs) / len(pairs)}


def check_outputs(split_dir: str | Path, outputs_dir: str | Path, published: str | Path | None = None,
                  rel_tol: float = REL_TOL) -> dict[str, Any]:
    """Every task's table score for a model's outputs; with the published ``*_scoring_results.json``, the agreement."""
    import json

    from ehrguard.clinsql.data import load_split, task_key

    tasks = load_split(split_dir)
    scores = {}
    for key, t in tasks.items():
        folder = Path(outputs_dir) / key
        if (folder / f"sql_{t.id}.sql").is_file() or (folder / f"result_{t.id}.csv").is_file():
            scores[key] = compare_tables(t.gold_csv, folder / f"result_{t.id}.csv", rel_tol)
    out: dict[str, Any] = {"n": len(scores), "mean_score": sum(scores.values()) / len(scores) if scores else float("nan"), "scores": scores}
    if published:
        theirs = {task_key(s["sample_path"]): s["results_score"] for s in json.loads(Path(published).read_text())["samples"]}
        out["agreement"] = agreement([(scores.get(k, 0.0), v) for k, v in theirs.items()])
    return out
