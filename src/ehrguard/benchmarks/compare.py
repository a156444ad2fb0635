"""Several runs side by side: one table of the main metrics and one figure.

The paper's published numbers can be added as reference rows (``REFERENCE_ROWS``, or a
JSON file of the same shape): they are other people's measurements on the full test
split and the authors' databases, shown for orientation, never mixed into our numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.error_types import fill_error_types
from ehrguard.benchmarks.report import (
    MAIN_KEYS,
    MAIN_LABELS,
    METRIC_DEFINITIONS,
    figure_png,
    fmt,
    jsonable,
    markdown_to_html,
    md_table,
    pyplot,
)
from ehrguard.benchmarks.rundir import RunDir
from ehrguard.benchmarks.scare_run import score_records, scored_item
from ehrguard.errors import DatasetError
from ehrguard.evaluation.error_types import ERROR_TYPES
from ehrguard.evaluation.scare_metrics import paired_comparison

# SCARE (Lee, Chay, Choi, ML4H 2025): the best LLM method's classification F1 on the full test
# split, GPT-5-mini. Only the values we have from the paper are filled; None = not reported here.
REFERENCE_ROWS: list[dict[str, Any]] = [
    {"name": "paper: best LLM method (GPT-5-mini)", "unans_f1": 84.0, "amb_f1": 76.5,
     "source": "SCARE (ML4H 2025), full test split, the best LLM method with GPT-5-mini, as quoted in our issue 17 (the "
               "table number could not be checked offline)"},
]


def load_reference(path: str | Path) -> list[dict[str, Any]]:
    """Reference rows from a JSON list of objects with ``name`` and any of the main metric keys."""
    try:
        rows = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"Cannot read reference rows from {path}: {exc}") from exc
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "name" in r for r in rows):
        raise DatasetError(f"{path}: expected a JSON list of objects, each with a 'name' and metric keys ({', '.join(MAIN_KEYS)}).")
    return rows


def run_row(run_dir: str | Path, name: str | None = None, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One run's row (``records``: the run's, when they are already read); without ``name`` it is labelled by its
    method, model and options, and its folder."""
    rd = RunDir(run_dir)
    config = rd.config()
    ident = config["identity"]
    records = rd.records() if records is None else records
    metrics = score_records(records, intervals=False)  # the table shows the values only
    if name is None:
        options = ", ".join(f"{k}={v}" for k, v in sorted((ident.get("options") or {}).items()))
        name = (ident["method"] + (f" ({ident['model']})" if ident.get("model") else "") + (f" [{options}]" if options else "")
                + f" — {Path(run_dir).name}")
    if config.get("in_sample"):
        name += " (IN-SAMPLE)"  # its models were trained on these questions: run.json says which
    return {"name": name, "run_dir": str(run_dir), "n": len(records), "p50_ms": metrics["latency_ms"]["p50"],
            "in_sample": bool(config.get("in_sample")), "by_error_type": metrics["by_error_type"], **{k: metrics[k] for k in MAIN_KEYS}}


def compare_runs(run_dirs: list[str | Path], reference: list[dict[str, Any]] | None = None,
                 names: list[str] | None = None) -> dict[str, Any]:
    """The runs' main metrics side by side, and each run after the first paired with the first on the items both hold
    (:func:`ehrguard.evaluation.scare_metrics.paired_comparison`: exact McNemar tests per category).

    Raises:
        DatasetError: ``names`` does not give one name per run.
    """
    if names and len(names) != len(run_dirs):
        raise DatasetError(f"{len(names)} --name for {len(run_dirs)} runs: give one name per run, in the same order, or none.")
    records = [RunDir(d).records() for d in run_dirs]
    for d, run in zip(run_dirs, records, strict=True):
        fill_error_types(run, RunDir(d).config().get("data_paths", []))
    rows = [run_row(d, names[i] if names else None, records[i]) for i, d in enumerate(run_dirs)]
    scored = [[scored_item(r) for r in run] for run in records]
    paired = [{"a": rows[0]["name"], "b": row["name"], "a_dir": rows[0]["run_dir"], "b_dir": row["run_dir"],
               "by": paired_comparison(scored[0], items)} for row, items in zip(rows[1:], scored[1:], strict=True)]
    return {"runs": rows, "paired": paired, "reference": reference if reference is not None else REFERENCE_ROWS}


def comparison_markdown(comparison: dict[str, Any]) -> str:
    header = ["run", "n", "p50 ms"] + [MAIN_LABELS[k] for k in MAIN_KEYS]
    rows = [[r["name"], r["n"], r["p50_ms"]] + [r[k] for k in MAIN_KEYS] for r in comparison["runs"]]
    rows += [[r["name"], "", ""] + [r.get(k) if r.get(k) is not None else "" for k in MAIN_KEYS] for r in comparison["reference"]]
    lines = ["# Comparison of runs", "", md_table(header, rows), "",
             "Reference rows are published numbers (full test split, the authors' databases), for orientation:", "",
             *[f"- {r['name']}: {r.get('source', 'source not given')}" for r in comparison["reference"]], "",
             "## Correction rate by error type (SCARE Table 4 layout, %)", "",
             md_table(["run", *[f"{k} (n)" for k in ERROR_TYPES]],
                      [[r["name"], *[f"{fmt(r['by_error_type'][k]['cr'])} ({r['by_error_type'][k]['n']})" for k in ERROR_TYPES]]
                       for r in comparison["runs"] if "by_error_type" in r]), "",
             "## What the figures mean", "", *METRIC_DEFINITIONS, ""]
    if comparison.get("paired"):
        lines += ["## Paired tests (the same items)", "",
                  "For each run against the first: on the items both hold, how many only one of the two got right "
                  "(answered with SQL matching the gold, or labelled ambiguous / unanswerable as it is), and the exact "
                  "McNemar p-value of that difference. A p-value above 0.05 does not show a difference.", "",
                  md_table(["A", "B", "category", "items", "only A right", "only B right", "p"],
                           [[pair["a"], pair["b"], group, t["n"], t["a_only"], t["b_only"], t["p"]]
                            for pair in comparison["paired"] for group, t in pair["by"].items() if t["n"]]), ""]
    return "\n".join([*lines, "![compare.png](figures/compare.png)", ""])


def comparison_figure(comparison: dict[str, Any]) -> bytes:
    plt = pyplot()
    keys = ("pr", "cr", "amb_f1", "unans_f1")
    rows = comparison["runs"]
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    width = 0.8 / max(1, len(rows))
    for i, r in enumerate(rows):
        vals = [0.0 if r[k] is None or math.isnan(r[k]) else r[k] for k in keys]
        ax.bar([x + i * width for x in range(len(keys))], vals, width, label=r["name"])
    for ref in comparison["reference"]:
        for x, k in enumerate(keys):
            if ref.get(k) is not None:
                ax.hlines(ref[k], x - 0.05, x + 0.85, colors="black", linestyles="dashed")
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(keys))], ["PR", "CR", "Amb F1", "Unans F1"])
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")
    ax.legend(fontsize=8)
    ax.set_title("Runs side by side (dashed: published reference)")
    return figure_png(fig)


def write_comparison(comparison: dict[str, Any], out: str | Path) -> dict[str, Path]:
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    png = comparison_figure(comparison)
    (out / "figures" / "compare.png").write_bytes(png)
    md = comparison_markdown(comparison)
    paths = {"json": out / "compare.json", "markdown": out / "compare.md", "html": out / "compare.html"}
    paths["json"].write_text(json.dumps(jsonable(comparison), indent=2))
    paths["markdown"].write_text(md)
    paths["html"].write_text(markdown_to_html(md, {"compare.png": png}, "Comparison of runs"))
    return paths
