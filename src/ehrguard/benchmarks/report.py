"""Reports of benchmark runs: ``metrics.json``, ``report.md`` and a self-contained ``report.html``.

The HTML embeds its figures (PNG, base64) so it can be mailed or archived as one file.
Figures: the confusion matrix (true category x action), recall per subtype, PR/CR per
database and per generator, and the latency distribution.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from ehrguard.evaluation.error_types import ERROR_TYPES
from ehrguard.evaluation.error_types import NAMES as ERROR_NAMES
from ehrguard.evaluation.scare_metrics import ACTIONS, CATEGORIES, MAIN_KEYS
from ehrguard.labels import AMBIGUOUS_SUBTYPES

MAIN_LABELS = {
    "pr": "PR", "cov_correct": "Cov(correct)", "cr": "CR", "cov_incorrect": "Cov(incorrect)",
    "amb_p": "Amb P", "amb_r": "Amb R", "amb_f1": "Amb F1", "unans_p": "Unans P", "unans_r": "Unans R", "unans_f1": "Unans F1",
}


# What each figure in the reports means, said in every report (SCARE's definitions, src/evaluate_sql_correction.py).
METRIC_DEFINITIONS = [
    "- **PR** (preservation rate): of the answerable questions whose candidate SQL was right (published `exec_acc`), "
    "the share the method answered with SQL that still gives the gold's result.",
    "- **CR** (correction rate): of the answerable questions whose candidate was wrong, the share the method answered "
    "with SQL that gives the gold's result (a correction that works).",
    "- **Cov(correct)**, **Cov(incorrect)** (coverage): of those two groups, the share the method answered at all "
    "instead of labelling the question ambiguous or unanswerable. An item the method failed on counts as answered "
    "here and as a failure in PR/CR.",
    "- **Amb P / R / F1**, **Unans P / R / F1**: precision over every item the method labelled ambiguous (unanswerable), "
    "whatever its true category; recall over the items of that category; their harmonic mean.",
    "- **RS(c)** (EHRSQL-2024's reliability score, in `bench ehrsql` and `bench threshold` reports): +1 for a right "
    "answer or a right abstention, -c for a wrong answer or an answer to an unanswerable question, 0 for abstaining "
    "on an answerable one, averaged over the questions (x100); RS(N) is RS with c = the number of questions.",
    "- **NaN**: the figure's denominator is zero on these items (no item of that group, or the method "
    "never gave that label), so the figure is undefined, not zero.",
]


def jsonable(value: Any) -> Any:
    """Values with NaN and the infinities turned into None, so the JSON is standard (neither is valid JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def fmt(value: Any) -> str:
    if value is None:
        return "NaN"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:.1f}"
    return str(value)


def _ms(value: float) -> str:
    return "NaN" if value is None or math.isnan(value) else f"{value:.3g}"


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def figure_png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def confusion_figure(plt: Any, metrics: dict[str, Any]) -> Any:
    """The confusion matrix (true category x action) as a matplotlib figure."""
    conf = metrics["confusion"]
    grid = [[conf[c][a] for a in ACTIONS] for c in CATEGORIES]
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    ax.imshow(grid, cmap="Blues", aspect="auto")
    # Two-line category names and slanted action names: no label runs into its neighbour.
    ax.set_xticks(range(len(ACTIONS)), ACTIONS, rotation=20, ha="right")
    ax.set_yticks(range(len(CATEGORIES)), [c.replace("_", "\n") for c in CATEGORIES])
    top = max(max(r) for r in grid) or 1
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center", color="white" if v > top / 2 else "black")
    ax.set_xlabel("action of the method")
    ax.set_title("True category x action")
    return fig


def scare_figures(metrics: dict[str, Any], latencies_ms: list[float]) -> dict[str, bytes]:
    """The run's figures as PNG bytes, by file name."""
    plt = pyplot()
    figs: dict[str, bytes] = {}

    figs["confusion.png"] = figure_png(confusion_figure(plt, metrics))

    subtypes = metrics["by_subtype"]
    names = list(subtypes)
    recalls = [0.0 if math.isnan(subtypes[n]["recall"]) else subtypes[n]["recall"] for n in names]
    fig, ax = plt.subplots(figsize=(6.2, 3.2))
    colors = ["#8c6bb1" if n in AMBIGUOUS_SUBTYPES else "#e6550d" for n in names]
    ax.barh(names, recalls, color=colors)
    ax.set_xlim(0, 100)
    ax.set_xlabel("recall (%)")
    ax.set_title("Recall per subtype (purple: ambiguous, orange: unanswerable)")
    ax.invert_yaxis()
    figs["subtype_recall.png"] = figure_png(fig)

    for key, title in (("by_db", "database"), ("by_generator", "generator")):
        groups = metrics[key]
        labels = list(groups)
        fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(labels) + 2), 3.2))
        width = 0.38
        xs = range(len(labels))
        for offset, (metric, color) in zip((-width / 2, width / 2), (("pr", "#31a354"), ("cr", "#3182bd")), strict=True):
            vals = [0.0 if math.isnan(groups[g][metric]) else groups[g][metric] for g in labels]
            ax.bar([x + offset for x in xs], vals, width, label=metric.upper(), color=color)
        ax.set_xticks(list(xs), labels, rotation=30 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center")
        ax.set_ylim(0, 100)
        ax.set_ylabel("%")
        ax.legend()
        ax.set_title(f"PR and CR by {title}")
        figs[f"pr_cr_by_{title}.png"] = figure_png(fig)

    fig, ax = plt.subplots(figsize=(6.2, 3.0))
    values = [max(v, 1e-3) for v in latencies_ms] or [1e-3]
    lo, hi = math.log10(min(values)), math.log10(max(values))
    bins = [10 ** (lo + (hi - lo + 1e-9) * i / 30) for i in range(31)]
    ax.hist(values, bins=bins, color="#636363")
    ax.set_xscale("log")
    ax.set_xlabel("latency per item (ms, log scale)")
    ax.set_ylabel("items")
    ax.set_title(f"Latency: p50 {_ms(metrics['latency_ms']['p50'])} ms, p99 {_ms(metrics['latency_ms']['p99'])} ms")
    figs["latency.png"] = figure_png(fig)
    return figs


def scare_markdown(metrics: dict[str, Any], config: dict[str, Any], errors: list[dict[str, Any]], figures: list[str]) -> str:
    ident = config.get("identity", {})
    parts = [
        f"# SCARE run: {ident.get('method')}" + (f" with {ident.get('model')}" if ident.get("model") else ""),
        "",
        (f"Items: {metrics['n']} ({', '.join(f'{k} {v}' for k, v in metrics['counts'].items())}). "
        f"Data: {', '.join(ident.get('data', {}))}. Latency p50 {_ms(metrics['latency_ms']['p50'])} ms, "
        f"p99 {_ms(metrics['latency_ms']['p99'])} ms. LLM calls: {metrics['llm_calls']}. Errors: {len(metrics['errors'])}."),
        "",
        *_in_sample_banner(config.get("in_sample") or []),
        "## Main metrics (%)",
        "",
        md_table([""] + [MAIN_LABELS[k] for k in MAIN_KEYS], [["value"] + [metrics[k] for k in MAIN_KEYS]]
                 + ([["95% interval"] + [_interval(metrics["intervals"].get(k)) for k in MAIN_KEYS]] if "intervals" in metrics else [])),
        "",
        "The 95% intervals are percentile bootstrap intervals over 1,000 resamples of whole questions (the candidates of "
        "one question are resampled together).",
        "",
        "## By database",
        "",
        md_table(["db"] + [MAIN_LABELS[k] for k in MAIN_KEYS], [[g] + [m[k] for k in MAIN_KEYS] for g, m in metrics["by_db"].items()]),
        "",
        "## By generator",
        "",
        md_table(["generator"] + [MAIN_LABELS[k] for k in MAIN_KEYS],
                 [[g] + [m[k] for k in MAIN_KEYS] for g, m in metrics["by_generator"].items()]),
        "",
        "## By difficulty",
        "",
        md_table(["difficulty", "PR", "CR", "n correct", "n incorrect"],
                 [[d, m["pr"], m["cr"], m["n_correct"], m["n_incorrect"]] for d, m in metrics["by_difficulty"].items()]),
        "",
        "## Ambiguous and unanswerable subtypes",
        "",
        md_table(["subtype", "n", "recall (right category)", "recall (this subtype named)", "times named as the subtype",
                  "precision of the name"],
                 [[s, m["n"], m["recall"], m.get("subtype_recall", math.nan), m["labelled"], m["label_precision"]]
                  for s, m in metrics["by_subtype"].items()]),
        "",
        "## Correction rate by error type (SCARE Table 4)",
        "",
        md_table(["", *ERROR_TYPES, "none"],
                 [[row, *[metrics["by_error_type"].get(k, {}).get(key, math.nan) for k in (*ERROR_TYPES, "none")]]
                  for row, key in (("items", "n"), ("CR", "cr"), ("Cov", "cov"))]),
        "",
        "Error types of the answerable-incorrect candidates: " + "; ".join(f"{k} {ERROR_NAMES[k]}" for k in ERROR_TYPES) + "; "
        "none: the candidate reads as the gold (it differs in a way the reading does not see, e.g. the order of ties). "
        "Each candidate's type is read automatically from its SQL tree against the gold's "
        "(`ehrguard.evaluation.error_types`); its agreement with hand labels is in docs/benchmarks.md "
        "(`ehrguard bench error-types`).",
        "",
        "## Recall per subtype (SCARE Table 5 layout, %)",
        "",
        md_table(list(metrics["by_subtype"]), [[m["recall"] for m in metrics["by_subtype"].values()]]),
        "",
        "## Execution accuracy per generator (SCARE Table 7 layout, %)",
        "",
        md_table(["generator", "answerable items", "candidates as written", "after the method", "change"],
                 [[g, m["n"], m["candidate"], m["final"], _change(m["candidate"], m["final"])]
                  for g, m in metrics.get("execution_by_generator", {}).items()]),
        "",
        "Execution accuracy: the share of the generator's answerable items whose SQL gives the gold's result; as "
        "written is the published `exec_acc` of its candidates, after the method counts an item only when the method "
        "answered it (preserved or corrected) with SQL that matches.",
        "",
        "## Confusion: true category x action",
        "",
        md_table(["category"] + list(ACTIONS), [[c] + [metrics["confusion"][c][a] for a in ACTIONS] for c in CATEGORIES]),
        "",
    ]
    parts += ["## What the figures mean", "", *METRIC_DEFINITIONS, ""]
    if errors:
        parts += ["## Items the method failed on", "", md_table(["item", "error"], [[e["key"], e["error"][:200]] for e in errors]), ""]
    parts += ["## Figures", ""] + [f"![{name}](figures/{name})" for name in figures] + [""]
    return "\n".join(parts)


def markdown_to_html(md: str, figures: dict[str, bytes], title: str) -> str:
    """A small renderer for the report's own markdown (headings, tables, paragraphs, images)."""
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>", _STYLE, "</head><body>"]
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            out.append("<table><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in rows[0]) + "</tr></thead><tbody>")
            out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows[2:]]
            out.append("</tbody></table>")
            continue
        elif line.startswith("![") and "](figures/" in line:
            name = line.split("](figures/")[1].rstrip(")")
            data = base64.b64encode(figures[name]).decode()
            out.append(f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,{data}'></figure>")
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.startswith("> "):
            out.append(f"<blockquote>{_inline(line[2:])}</blockquote>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    out.append("</body></html>")
    return "\n".join(out)


def _inline(text: str) -> str:
    """One line of the reports' markdown as HTML: escaped, with **bold** and `code`."""
    escaped = html.escape(text)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


_STYLE = """<style>
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem}td,th{border:1px solid #ccc;padding:0.25rem 0.6rem;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}figure{display:inline-block;margin:0.5rem}
img{max-width:100%}blockquote{border-left:4px solid #b30000;background:#fff1f1;margin:1rem 0;padding:0.5rem 1rem}
code{background:#f3f3f3;padding:0 0.2rem}table{display:block;overflow-x:auto;max-width:100%}
</style>"""


def _in_sample_banner(lines: list[str]) -> list[str]:
    if not lines:
        return []
    return ["> **IN-SAMPLE.** " + " ".join(lines) + " The figures that rest on those artifacts score questions the method "
            "learned from (the question models: the ambiguous and unanswerable figures; the calibration: the confidences "
            "and which answers count as verified): they do not estimate how it does on unseen questions. Honest figures "
            "come from a grouped cross-validation (`--fold I/K` with models trained `--exclude-fold I/K`; "
            "docs/verifier.md).", ""]


def _change(before: float, after: float) -> str:
    if math.isnan(before) or math.isnan(after):
        return "n/a"
    return f"{after - before:+.1f}"


def _interval(bounds: list[float] | None) -> str:
    if not bounds or any(math.isnan(b) for b in bounds):
        return "n/a"
    return f"{bounds[0]:.1f}-{bounds[1]:.1f}"


def write_scare_report(run_dir: str | Path, metrics: dict[str, Any], config: dict[str, Any],
                       records: list[dict[str, Any]]) -> dict[str, Path]:
    """Write ``metrics.json``, ``report.md``, ``report.html`` and ``figures/*.png`` into the run folder."""
    run_dir = Path(run_dir)
    figures = scare_figures(metrics, [1000 * r.get("latency_s", 0.0) for r in records])
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    for name, data in figures.items():
        (fig_dir / name).write_bytes(data)
    errors = [r for r in records if r.get("error")]
    md = scare_markdown(metrics, config, errors, list(figures))
    paths = {"metrics": run_dir / "metrics.json", "markdown": run_dir / "report.md", "html": run_dir / "report.html"}
    paths["metrics"].write_text(json.dumps(jsonable(metrics), indent=2, default=str))
    paths["markdown"].write_text(md)
    paths["html"].write_text(markdown_to_html(md, figures, f"SCARE run {config.get('identity', {}).get('method')}"))
    return paths
