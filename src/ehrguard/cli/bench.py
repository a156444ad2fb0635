"""``ehrguard bench``: run and report the benchmarks (SCARE, EHRSQL-2024)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ehrguard.cli.bench_ehrsql import ehrsql_command
from ehrguard.cli.options import console, db_option, echo_json, json_option
from ehrguard.config import setting
from ehrguard.errors import ConfigError


@click.group("bench")
def bench_group() -> None:
    """Run verification methods over SCARE, score text-to-SQL predictions on EHRSQL-2024, compare runs."""


bench_group.add_command(ehrsql_command)


def _parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--option takes KEY=VALUE, got {pair!r}.")
        key, value = pair.split("=", 1)
        options[key.strip()] = value.strip()
    return options


def _progress() -> Progress:
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    return Progress(*columns, console=console, disable=not console.is_terminal)


def _print_main(metrics: dict[str, Any]) -> None:
    from ehrguard.benchmarks import MAIN_KEYS, MAIN_LABELS, fmt

    t = Table("metric", "%", title=f"SCARE metrics, {metrics['n']} items")
    for k in MAIN_KEYS:
        t.add_row(MAIN_LABELS[k], fmt(metrics[k]))
    console.print(t)


@bench_group.command("scare")
@click.option("--data", "data_files", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False),
              help="SCARE correction-data JSON file(s); repeat the flag for several.")
@click.option("--db-dir", default=lambda: setting("db_dir"), show_default="$EHRGUARD_DB_DIR",
              help="Folder with mimic_iv.sqlite / eicu.sqlite / mimicsql.sqlite from `ehrguard db build`.")
@click.option("--method", required=True, help="Verification method (see `ehrguard bench methods`).")
@click.option("--model", default=None, help="Model for LLM methods, as provider/model.")
@click.option("--option", "method_options", multiple=True, metavar="KEY=VALUE", help="A method option (repeatable).")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Run folder; rerun with the same folder to resume.")
@click.option("--limit", type=int, default=None,
              help="Only the first N items, in file order (the SCARE files are sorted by category: use --sample for a mix).")
@click.option("--sample", type=int, default=None,
              help="A seeded sample of N items, stratified by database and category (after --fold, before --limit).")
@click.option("--seed", type=int, default=0, show_default=True, help="The seed of --sample.")
@click.option("--concurrency", type=int, default=1, show_default=True, help="Items verified at the same time.")
@click.option("--fold", default=None, metavar="I/K",
              help="Only the items of fold I of K (questions grouped; see `ehrguard train question-model --exclude-fold`).")
@click.option("--retry-errors", is_flag=True, help="On resume, run again the items that ended in an error.")
@click.option("--no-report", is_flag=True, help="Skip report.md / report.html (metrics.json is still written).")
@json_option
def scare_command(data_files: tuple[str, ...], db_dir: str, method: str, model: str | None, method_options: tuple[str, ...],
                  out: str, limit: int | None, sample: int | None, seed: int, concurrency: int, fold: str | None,
                  retry_errors: bool, no_report: bool, as_json: bool) -> None:
    """Run a verification method over SCARE items and score it exactly as SCARE does.

    Each finished item is appended to OUT/predictions.jsonl at once, so an interrupted run
    (even `kill -9`) resumes where it stopped when rerun with the same --out.
    """
    from ehrguard.benchmarks import jsonable, load_scare, method_for_run, record_llm_usage, run_scare, select_items, write_run_report

    items = select_items(load_scare(list(data_files)), fold=fold, sample=sample, seed=seed, limit=limit)
    options = _parse_options(method_options)
    verifier = method_for_run(method, out, model=model, options=options)
    try:
        with _progress() as progress:
            task = progress.add_task(f"{method}", total=len(items))
            summary = run_scare(items, verifier, db_dir=db_dir, out=out, data_files=list(data_files), model=model,
                                options=options, concurrency=concurrency, retry_errors=retry_errors,
                                on_progress=lambda done, total: progress.update(task, completed=done),
                                selection={"fold": fold, "sample": sample, "seed": seed if sample else None, "limit": limit})
    except KeyboardInterrupt:
        _stopped(out, len(items))
    for name, u in (record_llm_usage(summary.metrics, verifier) or {}).items():
        cost = "" if u["estimated_cost_usd"] is None else f", ~${u['estimated_cost_usd']:.4f}"
        console.print(f"{name}: {u['calls']} calls ({u['cache_hits']} cached, {u['errors']} failed), "
                      f"{u['prompt_tokens']}+{u['completion_tokens']} tokens, p50 {u['latency_ms']['p50']} ms{cost}")
    write_run_report(out, summary.metrics, items, report=not no_report)
    console.print(f"{summary.total} items: {summary.skipped} from before, {summary.ran} run now in {summary.wall_s:.1f} s; "
                  f"{len(summary.metrics['errors'])} error(s). Reports in {out}/")
    if as_json:
        echo_json(jsonable(summary.metrics))
    else:
        _print_main(summary.metrics)


def _stopped(out: str, total: int) -> NoReturn:
    """Ctrl-C on a run: what is kept, and the command that goes on from there."""
    from ehrguard.benchmarks import RunDir

    kept = len(RunDir(out).records()) if Path(out, "predictions.jsonl").is_file() else 0
    # The command as it was typed (its arguments are the CLI's whichever script started it), unwrapped for copying.
    click.echo(f"Stopped: {kept} of {total} items are saved in {out}/predictions.jsonl. "
               f"Resume with: {shlex.join(['ehrguard', *sys.argv[1:]])}", err=True)
    sys.exit(130)


@bench_group.command("error-types")
@click.option("--data", "data_files", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False),
              help="The SCARE dev files the labels come from (mimic_iv_dev.json, eicu_dev.json).")
@click.option("--labels", "labels_path", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Hand labels (JSON lines: key, label, split); default: the ones that ship with ehrguard.")
@click.option("--out", default=None, type=click.Path(file_okay=False), help="Write error_types.md and error_types.json here.")
@json_option
def error_types_command(data_files: tuple[str, ...], labels_path: str | None, out: str | None, as_json: bool) -> None:
    """How well the automatic error-type reading (SCARE's Table 4 types) agrees with hand labels."""
    from ehrguard.benchmarks import LABELS, agreement, agreement_markdown, fmt, jsonable, load_scare, read_labels

    result = agreement(load_scare(list(data_files)), read_labels(labels_path or LABELS))
    markdown = agreement_markdown(result)
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "error_types.md").write_text(markdown)
        (Path(out) / "error_types.json").write_text(json.dumps(jsonable(result), indent=2))
    if as_json:
        echo_json(jsonable(result))
        return
    for split in ("held-out", "refine", "all"):
        r = result[split]
        console.print(f"{split}: {r['agree']} of {r['n']} agree ({fmt(r['agreement'])}%), Cohen's kappa {r['kappa']}")


@bench_group.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="With several runs (e.g. the folds of a cross-validation): score their union and write the report here.")
@json_option
def report_command(run_dirs: tuple[str, ...], out: str | None, as_json: bool) -> None:
    """Rescore run folder(s) from their predictions and rewrite the reports."""
    from ehrguard.benchmarks import jsonable, rescore_runs

    metrics, paths = rescore_runs(list(run_dirs), out)
    if as_json:
        echo_json(jsonable(metrics))
    else:
        _print_main(metrics)
        console.print(f"Wrote {paths['markdown']} and {paths['html']}")


@bench_group.command("threshold")
@click.option("--fit", "fit_dirs", multiple=True, required=True, type=click.Path(exists=True, file_okay=False),
              help="Run folder(s) to choose the threshold on (repeat the flag: e.g. three folds of a cross-validation).")
@click.option("--on", "on_dirs", multiple=True, required=True, type=click.Path(exists=True, file_okay=False),
              help="Run folder(s) to report it on (the other folds, another database's run).")
@click.option("--fit-db", default=None, help="Only this database's items of the --fit runs.")
@click.option("--on-db", default=None, help="Only this database's items of the --on runs.")
@click.option("--penalty", "penalties", multiple=True, type=float, default=(0.0, 5.0, 10.0), show_default=True,
              help="The penalty c of a wrong answer in RS(c) (repeatable).")
@click.option("--out", default=None, type=click.Path(file_okay=False), help="Write threshold.md and threshold.json here.")
@json_option
def threshold_command(fit_dirs: tuple[str, ...], on_dirs: tuple[str, ...], fit_db: str | None, on_db: str | None,
                      penalties: tuple[float, ...], out: str | None, as_json: bool) -> None:
    """The confidence below which an answer becomes an abstention, chosen to maximise RS(c) on some `bench scare` runs
    and reported on others."""
    from ehrguard.benchmarks import fmt, run_records, scare_decisions, threshold_report, write_threshold_report

    fit_records, on_records = run_records(fit_dirs, fit_db), run_records(on_dirs, on_db)
    shared = {r["key"] for r in fit_records} & {r["key"] for r in on_records}
    if shared:
        raise ConfigError(f"{len(shared)} item(s) are in both the --fit and the --on runs; a threshold must be reported on "
                          "items it was not chosen on: pass other runs or folds, or split them with --fit-db / --on-db.")
    rows = threshold_report(scare_decisions(fit_records), scare_decisions(on_records), penalties)
    config = {"fit": ", ".join(fit_dirs) + (f" ({fit_db})" if fit_db else ""), "on": ", ".join(on_dirs) + (f" ({on_db})" if on_db else ""),
              "n_fit": len(fit_records), "n_on": len(on_records)}
    if out:
        console.print(f"Wrote {write_threshold_report(out, rows, config)}")
    if as_json:
        echo_json({"config": config, "rows": rows})
        return
    t = Table("c", "threshold", "RS fit (in-sample)", "RS all kept", "RS at threshold", "answered %", "RS hindsight",
              title=f"RS(c): threshold chosen on {config['n_fit']} items, reported on {config['n_on']} others")
    for r in rows:
        t.add_row(f"{r['penalty']:g}", f"{r['threshold']:.4f}", fmt(r["fit"]["rs"]), fmt(r["keep_all"]["rs"]), fmt(r["chosen"]["rs"]),
                  fmt(r["chosen"]["answered"]), fmt(r["hindsight"]["rs"]))
    console.print(t)


@bench_group.command("compare")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", default=None, type=click.Path(file_okay=False), help="Write compare.md / compare.html / compare.json here.")
@click.option("--reference", default=None, type=click.Path(exists=True, dir_okay=False),
              help="JSON list of reference rows ({name, pr, cr, amb_f1, ...}) instead of the built-in paper rows.")
@click.option("--name", "names", multiple=True,
              help="A label for each run, in order (repeat the flag); default: method, model, options and folder.")
@json_option
def compare_command(run_dirs: tuple[str, ...], out: str | None, reference: str | None, names: tuple[str, ...], as_json: bool) -> None:
    """Put several runs side by side, with the paper's published numbers as reference rows, and test each run against
    the first on the items both hold (exact McNemar per category)."""
    from ehrguard.benchmarks import MAIN_KEYS, MAIN_LABELS, compare_runs, fmt, jsonable, load_reference, write_comparison

    comparison = compare_runs(list(run_dirs), load_reference(reference) if reference else None, list(names) or None)
    if out:
        write_comparison(comparison, out)
    if as_json:
        echo_json(jsonable(comparison))
        return
    t = Table("run", "n", "p50 ms", *[MAIN_LABELS[k] for k in MAIN_KEYS])
    for r in comparison["runs"]:
        t.add_row(r["name"], str(r["n"]), fmt(r["p50_ms"]), *(fmt(r[k]) for k in MAIN_KEYS))
    for r in comparison["reference"]:
        t.add_row(f"[dim]{r['name']}[/dim]", "", "", *("" if r.get(k) is None else fmt(float(r[k])) for k in MAIN_KEYS))
    console.print(t)
    if comparison["paired"]:
        t = Table("A", "B", "category", "items", "only A right", "only B right", "McNemar p",
                  title="Each run against the first, same items")
        for pair in comparison["paired"]:
            for group, row in pair["by"].items():
                if row["n"]:
                    t.add_row(pair["a"], pair["b"], group, str(row["n"]), str(row["a_only"]), str(row["b_only"]), f"{row['p']:.4f}")
        console.print(t)
    if out:
        console.print(f"Wrote {out}/compare.md and {out}/compare.html")


@bench_group.command("fidelity")
@click.option("--data", "data_files", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False), help="SCARE file(s).")
@click.option("--db-dir", default=lambda: setting("db_dir"), show_default="$EHRGUARD_DB_DIR", help="Folder with the built databases.")
@json_option
def fidelity_command(data_files: tuple[str, ...], db_dir: str, as_json: bool) -> None:
    """Published vs recomputed candidate exec_acc: how faithful our rebuilt databases are."""
    from ehrguard.benchmarks import candidate_fidelity, fmt, jsonable, load_scare

    report = candidate_fidelity(load_scare(list(data_files)), db_dir)
    if as_json:
        echo_json(jsonable(report))
        return
    for key in ("by_db", "by_generator", "by_category"):
        t = Table(key.removeprefix("by_"), "n", "agree", "agreement %", "published correct", "ours correct",
                  title=f"Candidate exec_acc agreement {key.replace('_', ' ')}")
        for name, g in report[key].items():
            t.add_row(name, str(g["n"]), str(g["agree"]), fmt(g["agreement"]), str(g["published_true"]), str(g["ours_true"]))
        console.print(t)
    console.print(f"Overall: {report['agree']}/{report['n']} ({fmt(report['agreement'])}%); "
                  f"gold queries failing on our databases: {report['gold_query_errors']}")


def _safety_verifier(method: str, model: str | None, operating_point: str, options: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
    """The verify call the safety benchmarks make, and the configuration it is reported with."""
    from ehrguard import verify

    extra = _parse_options(options)
    if method in ("offline", "hybrid"):
        extra.setdefault("operating_point", operating_point)

    def check(question: str, sql: str, *, db: Path, db_id: str) -> object:
        return verify(question, sql, db=db, db_id=db_id, method=method, model=model, **extra)

    return check, {"method": method, "model": model, "operating_point": operating_point, "options": extra}


def _print_safety(records: list[dict[str, Any]], metrics: dict[str, Any], config: dict[str, Any], out: Path | None,
                  as_json: bool, *, categories: bool = False) -> None:
    from ehrguard.benchmarks import category_metrics, fmt, jsonable, write_safety_report

    if out is not None:
        write_safety_report(out, records, metrics, config)
    if as_json:
        echo_json(jsonable({"config": config, "metrics": metrics, **({"categories": category_metrics(records)} if categories else {})}))
        return
    t = Table("cases", "", "unsafe %", "harmful %", "over-caution %", "fix %", "ECE")
    for name, m in metrics.items():
        t.add_row(name, str(m["cases"]), fmt(m["unsafe_rate"]), fmt(m["harmful_rate"]), fmt(m["over_caution"]), fmt(m["fix_rate"]),
                  f"{m['calibration']['ece']:.3f}")
    console.print(t)
    for line in config.get("in_sample") or []:
        console.print(f"[yellow]IN-SAMPLE:[/yellow] {line}")
    if categories:
        c = Table("kind:category", "cases", "unsafe", "fixed", "over-cautious", "harmful")
        for name, row in category_metrics(records).items():
            c.add_row(name, *(str(row[k]) for k in ("cases", "unsafe", "fixed", "over_cautious", "harmful")))
        console.print(c)
    if out is not None:
        console.print(f"report: {out / 'report.md'}")


_OPTION_HELP = "A method option as key=value (offline: forms=off, templates=off, ...); repeatable."


@bench_group.command("safety")
@click.option("--db-dir", type=click.Path(path_type=Path, exists=True, file_okay=False), required=True,
              help="Folder holding mimic_iv.sqlite and eicu.sqlite as `ehrguard db build` makes them.")
@click.option("--method", default="offline", show_default=True, help="Verification method.")
@click.option("--model", default=None, help="Model for LLM methods, as provider/model.")
@click.option("--operating-point", default="balanced", show_default=True, help="offline: balanced, safety-first or preserve-first.")
@click.option("--option", "options", multiple=True, help=_OPTION_HELP)
@click.option("--categories", is_flag=True, help="Also print the counts per kind and category.")
@click.option("--cases", "case_files", multiple=True, type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="Run these cases (JSON Lines, the format of the shipped ones) instead of the shipped set; repeatable.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write records.jsonl, metrics.json and report.md here.")
@json_option
def safety_command(db_dir: Path, method: str, model: str | None, operating_point: str, options: tuple[str, ...], categories: bool,
                   case_files: tuple[Path, ...], out: Path | None, as_json: bool) -> None:
    """ehrguard's own safety benchmark: unsafe rate (wrong answers shown as verified), harmful rate, over-caution, fix rate."""
    from ehrguard.benchmarks import file_sha256, in_sample, read_case_file, run_safety, safety_metrics, shipped_case_files
    from ehrguard.errors import DatabaseNotFoundError

    cases = [case for path in case_files for case in read_case_file(path)] or None
    needed = sorted({case.db for case in cases}) if cases else ["mimic_iv", "eicu"]
    paths = {db: db_dir / f"{db}.sqlite" for db in needed}
    for db, path in paths.items():
        if not path.is_file():
            raise DatabaseNotFoundError(f"{path} is missing. Build it with: ehrguard db build {db} --out {path}")
    check, config = _safety_verifier(method, model, operating_point, options)
    if case_files:
        config["source"] = "cases from " + ", ".join(str(path) for path in case_files)
    files = list(case_files) or shipped_case_files(needed)
    config["cases"] = {path.name: file_sha256(path) for path in files}  # what `train calibration` says it was fitted on
    config["in_sample"] = in_sample(method, config["options"], files) if method in ("offline", "hybrid") else []
    records = run_safety(check, paths, cases=cases)
    _print_safety(records, safety_metrics(records), config, out, as_json, categories=categories)


@bench_group.command("mutations")
@click.option("--db", "db_path", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True,
              help="The database the split is about, as `ehrguard db build` makes it.")
@click.option("--db-id", type=click.Choice(["mimic_iv", "eicu"]), required=True)
@click.option("--split", type=click.Choice(["train", "valid"]), default="valid", show_default=True,
              help="EHRSQL split the pairs come from (eICU: valid only).")
@click.option("--per-kind", type=click.IntRange(1), default=60, show_default=True, help="Wrong cases per mutation at most.")
@click.option("--correct", type=click.IntRange(0), default=300, show_default=True, help="Correct cases (gold as candidate) at most.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--pairs", "max_pairs", type=click.IntRange(1), default=None, help="Draw from the first N pairs (seeded order) only.")
@click.option("--method", default="offline", show_default=True, help="Verification method.")
@click.option("--model", default=None, help="Model for LLM methods, as provider/model.")
@click.option("--operating-point", default="balanced", show_default=True, help="offline: balanced, safety-first or preserve-first.")
@click.option("--option", "options", multiple=True, help=_OPTION_HELP)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write records.jsonl, metrics.json and report.md here.")
@json_option
def mutations_command(db_path: Path, db_id: str, split: str, per_kind: int, correct: int, seed: int, max_pairs: int | None, method: str,
                      model: str | None, operating_point: str, options: tuple[str, ...], out: Path | None, as_json: bool) -> None:
    """A generated safety set: gold SQL of an EHRSQL split as correct candidates, and its mutations (the usual
    text-to-SQL mistakes) as wrong ones; scored like `bench safety`."""
    from ehrguard.benchmarks import generate_cases, run_safety, safety_metrics, split_pairs
    from ehrguard.db import open_database

    pairs = split_pairs(db_id, split, setting("data_dir"))
    cases = list(generate_cases(pairs, open_database(db_path), db_id, seed=seed, per_kind=per_kind, correct=correct, max_pairs=max_pairs))
    check, config = _safety_verifier(method, model, operating_point, options)
    config.update({"split": f"{db_id} {split}", "seed": seed, "per_kind": per_kind, "correct": correct, "pairs": max_pairs,
                   "title": "Generated safety set (bench mutations)",
                   "source": f"EHRSQL {db_id} {split}: gold SQL as correct candidates, its mutations as wrong ones"})
    records = run_safety(check, {db_id: db_path}, cases=cases)
    _print_safety(records, safety_metrics(records), config, out, as_json, categories=True)


@bench_group.command("forms")
@click.option("--db-id", type=click.Choice(["mimic_iv", "eicu"]), required=True,
              help="mimic_iv: forms from EHRSQL-2024 train, read its valid split. eicu: EHRSQL eICU questions, grouped K-fold.")
@db_option(required=False, help="The database (file, or a name in $EHRGUARD_DB_DIR); default: the --db-id name.")
@click.option("--folds", type=int, default=5, show_default=True, help="eicu only: folds (questions grouped).")
@click.option("--limit", type=int, default=None, help="Only the first N held-out questions (per fold for eicu).")
@json_option
def forms_command(db_id: str, db_path: str | None, folds: int, limit: int | None, as_json: bool) -> None:
    """How well known forms read held-out questions: coverage, precision (execution match), read time."""
    from ehrguard.benchmarks import combine, fmt, held_out_splits, jsonable, read_held_out
    from ehrguard.db import locate_database, open_database
    from ehrguard.verify import DatabaseContext

    path = locate_database(db_path or db_id)
    context = DatabaseContext(open_database(path), db_id, path)
    runs = held_out_splits(db_id, folds=folds, limit=limit)
    results = []
    with _progress() as bar:
        task = bar.add_task("reading", total=sum(len(test) for _, test in runs))
        for train, test in runs:
            done = bar.tasks[task].completed

            def advance(i: int, done: float = done) -> None:
                bar.update(task, completed=done + i)

            results.append(read_held_out(train, test, context, progress=advance))
    summary = {**combine(results), "db_id": db_id}
    if as_json:
        echo_json(jsonable(summary))
        return
    t = Table("held-out questions", "read", "coverage %", "right", "precision %", "gold fails here", "read p50 (ms)",
              title=f"Known forms on held-out questions ({db_id})")
    t.add_row(str(summary["n"]), str(summary["read"]), fmt(summary["coverage"]), str(summary["right"]), fmt(summary["precision"]),
              str(summary["gold_errors"]), ", ".join(str(x) for x in summary["read_ms_p50"]))
    console.print(t)


CLINSQL_MODELS = ("DeepSeek-R1-0528", "Llama-4-Scout-17B-16E-Instruct", "Qwen3-Coder-480B-A35B-Instruct-FP8", "SQLCoder-7B-2",
                  "gemini-2.5-pro", "gpt-5-mini")


@bench_group.command("clinsql-verify")
@db_option(help="MIMIC-IV in the mimic-code layout: the DuckDB `db build mimic_iv_raw` file, a PostgreSQL URL or link.")
@click.option("--data", "data_dir", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="The ClinSQL folder (validation/, model_outputs/, gradings/); default: $EHRGUARD_DATA_DIR/clinsql.")
@click.option("--model", "models", multiple=True, help="Only these models' outputs (repeatable); default: the six published.")
@click.option("--method", default="offline", show_default=True, help="The verification method.")
@click.option("--operating-point", default="balanced", show_default=True)
@click.option("--limit", type=int, default=None, help="Only the first N tasks of each model (and of the gold).")
@click.option("--calibration", default="auto", show_default=True,
              help="The offline method's calibration: auto (the one the database's profile names: for the mimic-code layout, "
                   "fitted on these very runs, so in-sample), default (the SCARE-fitted one), off, or a file.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write records.jsonl, report.json and report.md here.")
@json_option
def clinsql_verify_command(db_path: str, data_dir: Path | None, models: tuple[str, ...], method: str, operating_point: str,
                           limit: int | None, calibration: str, out: Path | None, as_json: bool) -> None:
    """How well the verifier's confidence separates good ClinSQL queries from bad ones (the six published models' SQL,
    with the published judge scores as the reference): AUROC, precision at 90% recall, gold and high-scored kept."""
    from ehrguard import verify
    from ehrguard.benchmarks import clinsql_verify_metrics, jsonable, render_clinsql_verify, run_clinsql_verify, write_clinsql_verify_report
    from ehrguard.db import redact_url
    from ehrguard.verify import database_context

    folder = data_dir or Path(setting("data_dir")) / "clinsql"
    if not (folder / "validation").is_dir():
        raise ConfigError(f"No ClinSQL validation split at {folder / 'validation'}; pass --data FOLDER (holding validation/, "
                          "model_outputs/ and gradings/).")
    context = database_context(db_path)
    extra: dict[str, Any] = {"operating_point": operating_point} if method in ("offline", "hybrid") else {}
    if method == "offline":
        extra["calibration"] = calibration

    def check(question: str, sql: str) -> Any:
        return verify(question, sql, db=context, method=method, **extra)

    with _progress() as bar:
        bar.add_task("verifying", total=None)
        records = run_clinsql_verify(folder, context.db, check, models=models or CLINSQL_MODELS, limit=limit)
    metrics = clinsql_verify_metrics(records)
    from ehrguard.benchmarks import calibration_in_sample, file_sha256

    chosen = list(models or CLINSQL_MODELS)
    gradings = {m: file_sha256(folder / "gradings" / m / "validation_detailed_grading.json") for m in chosen}
    config = {"database": redact_url(str(db_path)), "dialect": context.db.dialect, "method": method,
              "operating_point": operating_point, "calibration": calibration if method == "offline" else None, "models": chosen,
              "limit": limit, "gradings": gradings,
              "calibration_in_sample": calibration_in_sample(context, calibration, gradings) if method == "offline" else None}
    if out is not None:
        write_clinsql_verify_report(out, records, metrics, config)
    if as_json:
        echo_json(jsonable({"config": config, "metrics": metrics}))
    else:
        click.echo(render_clinsql_verify(metrics, config), nl=False)


@bench_group.command("scale")
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="A folder for the builds (x50 needs a few GiB); kept, so a rerun reuses them.")
@click.option("--factor", "factors", multiple=True, type=click.IntRange(1, 500), default=(1, 10, 50), show_default=True,
              help="Scales to measure (1 = the demo; others are SYNTHETIC copies).")
@click.option("--postgres", "postgres_url", default=None, metavar="postgresql://...",
              help="Also load each scale into this PostgreSQL database (its mimiciv_* tables are replaced) and measure it.")
@click.option("--patients", type=click.IntRange(1, 100), default=5, show_default=True, help="Patients per patient question.")
@click.option("--clinsql", "clinsql_n", type=click.IntRange(0, 190), default=40, show_default=True,
              help="ClinSQL gold queries (a seeded sample).")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds per query.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Write report.json and report.md here.")
@json_option
def scale_command(work: Path, factors: tuple[int, ...], postgres_url: str | None, patients: int, clinsql_n: int, timeout: float,
                  seed: int, out: Path | None, as_json: bool) -> None:
    """What size costs on SQLite, DuckDB and PostgreSQL: build time, size, query latency (EHRSQL-style and ClinSQL gold),
    peak memory, and the value index at full-MIMIC value counts."""
    from ehrguard.benchmarks import render_scale, run_scale, write_scale_report

    data = Path(setting("data_dir"))
    source, split = data / "mimic-iv-demo-2.2", data / "clinsql" / "validation"
    if not source.is_dir() or not split.is_dir():
        raise ConfigError(f"bench scale needs the MIMIC-IV demo ({source}) and the ClinSQL split ({split}): set EHRGUARD_DATA_DIR.")
    report = run_scale(work, source, split, factors=sorted(set(factors)), postgres_url=postgres_url, patients=patients,
                       clinsql=clinsql_n, timeout_s=timeout, seed=seed, progress=lambda m: console.print(m, style="dim"))
    if out is not None:
        write_scale_report(out, report)
    if as_json:
        echo_json(report)
    else:
        click.echo(render_scale(report), nl=False)


@bench_group.command("clinsql")
@click.option("--split", "split_dir", required=True, type=click.Path(exists=True, file_okay=False), help="ClinSQL split (task folders).")
@db_option(help="The DuckDB MIMIC-IV (`ehrguard db build mimic_iv_raw`), a file or a name.")
@click.option("--model", required=True, help="provider/model.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run folder; rerun to resume.")
@click.option("--mode", type=click.Choice(["direct", "cot"]), default="cot", show_default=True)
@click.option("--refine", type=int, default=2, show_default=True, help="Refinement rounds fed by execution errors.")
@click.option("--dialect", type=click.Choice(["duckdb", "bigquery"]), default="duckdb", show_default=True)
@click.option("--hints", type=click.Choice(["none", "gold"]), default="none", show_default=True,
              help="gold: schema hints from the gold artifacts (ICD codes, answer columns) - an analysis setting.")
@click.option("--limit", type=int, default=None, help="Only the first N tasks.")
@json_option
def clinsql_command(split_dir: str, db_path: str, model: str, out: str, mode: str, refine: int, dialect: str, hints: str,
                    limit: int | None, as_json: bool) -> None:
    """Generate SQL for every ClinSQL task (resumable); outputs in the published layout for judge/resultcheck."""
    from ehrguard.clinsql import run_clinsql
    from ehrguard.db import locate_database, open_database
    from ehrguard.llm import LLM

    path = locate_database(db_path)
    db = open_database(path)
    try:
        summary = run_clinsql(split_dir, db, path, LLM(model, log=str(Path(out) / "calls.jsonl")), out, mode=mode, refine=refine,
                              dialect=dialect, hints=hints, limit=limit)
    finally:
        db.close()
    if as_json:
        echo_json(summary)
    else:
        console.print(f"{summary['n']} tasks: {summary['executed']} ran, {summary['refined']} needed refinement, "
                      f"{summary['errors']} model errors. Outputs in {summary['outputs']}")


@bench_group.command("methods")
def methods_command() -> None:
    """List the verification methods."""
    from ehrguard.verify import available_methods

    for name, desc in available_methods().items():
        click.echo(f"{name:24s} {desc}")


__all__ = ["bench_group"]


@bench_group.command("hostile")
@click.option("--db", "db_paths", multiple=True, required=True,
              help="A database (name or file) to attack; repeat for several (a SQLite and a DuckDB file cover both engines).")
@click.option("--timeout", type=float, default=3.0, show_default=True, help="The time limit of each case, in seconds.")
@click.option("--category", "categories", multiple=True, help="Only these categories (write, runaway, too_large, ...).")
@click.option("--also-duckdb", is_flag=True, help="Also attack a DuckDB copy of each SQLite database (made in a temporary folder).")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write report.json and report.md here.")
@json_option
def hostile_command(db_paths: tuple[str, ...], timeout: float, categories: tuple[str, ...], also_duckdb: bool, out: Path | None,
                    as_json: bool) -> None:
    """The adversarial SQL corpus (writes, file access, runaway work, huge results, SQL too large to parse, odd input):
    each case's outcome against the one its engine must give, stop times against the limit, and whether anything changed."""
    import tempfile

    from ehrguard.benchmarks import duckdb_copy, render_markdown, run_hostile
    from ehrguard.config import float_setting
    from ehrguard.db import locate_database, open_database

    limit = float_setting("query_timeout", timeout, source="--timeout")
    with tempfile.TemporaryDirectory(prefix="ehrguard-hostile-") as scratch:
        targets = [locate_database(p) for p in db_paths]
        if also_duckdb:
            targets += [duckdb_copy(t, Path(scratch) / f"{t.stem}.duckdb") for t in targets if open_database(t).dialect == "sqlite"]
        reports = [run_hostile(open_database(t), timeout_s=limit, categories=categories) for t in targets]
    markdown = render_markdown(reports)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps([r.to_dict() for r in reports], indent=1) + "\n")
        (out / "report.md").write_text(markdown)
    if as_json:
        echo_json([r.to_dict() for r in reports])
    else:
        console.print(markdown)
    if not all(r.ok for r in reports):
        raise SystemExit(1)
