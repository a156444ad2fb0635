"""Which of a run's items the method's knowledge was built from: the in-sample warning of the SCARE reports.

The offline verifier's question models are trained on the SCARE dev questions (grouped CV leaves a fold out), and
its calibration is fitted on out-of-fold runs over them. A run over the same files with those artifacts scores
questions they have seen: its ambiguous and unanswerable figures (and its confidences) are in-sample and say nothing
about unseen questions. The models and the calibration record the files they were trained on by checksum (``ehrguard
train question-model``, ``train calibration``), the question banks their EHRSQL sources (``train banks``); every run
records them all in ``run.json`` (``knowledge``), and a run whose data overlaps them says so there (``in_sample``)
and at the top of its report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.rundir import file_sha256
from ehrguard.errors import EhrguardError

# The methods whose decisions rest on the offline verifier's question models.
USES_QUESTION_MODELS = ("offline", "hybrid")


def knowledge(method: str, options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The knowledge artifacts a run of ``method`` reads, each with its file, SHA-256 and what it was built from
    (``trained_on``: the question models' and calibration's SCARE files by checksum, the banks' EHRSQL sources)."""
    if method not in USES_QUESTION_MODELS:
        return {}
    from ehrguard.config import setting
    from ehrguard.verify.offline import BANKS_DIR, MODEL_FILES, QuestionModel, calibration_file, load_calibration

    out: dict[str, dict[str, Any]] = {}
    for label, key, default in (("question model", "question_model", MODEL_FILES["minilm"]),
                                ("lexical question model", "lexical_model", MODEL_FILES["lexical"])):
        path = Path(str(options.get(key) or default))
        try:
            out[label] = {"file": path.name, "sha256": file_sha256(path), "trained_on": QuestionModel.load(path).trained_on}
        except (OSError, ValueError, KeyError):
            out[label] = {"file": path.name, "sha256": None, "trained_on": {}}
    used = calibration_file(str(options.get("calibration") or setting("calibration") or "auto"))
    if used is not None:
        try:
            fitted = load_calibration(used)
        except EhrguardError:
            fitted = None
        out["calibration"] = {"file": used.name, "sha256": file_sha256(used) if used.is_file() else None,
                              "trained_on": fitted.trained_on if fitted else {}}
    from ehrguard.verify.offline.artifacts import read_manifest

    for name, entry in read_manifest(BANKS_DIR).items():
        out[f"question bank {name}"] = {"file": entry["file"], "sha256": entry["sha256"],
                                        "trained_on": {"ehrsql": entry.get("sources", {})}}
    return out


def in_sample(method: str, options: dict[str, Any], data_files: Sequence[str | Path], fold: str | None = None) -> list[str]:
    """One sentence for each knowledge artifact the run used that was built from some of ``data_files`` (a question
    model is not, for a run on the fold it left out); empty when nothing overlaps or the artifacts do not say what
    they saw."""
    files = {file_sha256(p): Path(p).name for p in data_files}
    out = []
    for label, artifact in knowledge(method, options).items():
        trained = artifact["trained_on"]
        sources = {**(trained.get("scare") or {}), **(trained.get("ehrsql") or {}), **(trained.get("mimicsql") or {}),
                   **(trained.get("safety") or {})}
        seen = sorted(name for sha, name in files.items() if sha in set(sources.values()))
        excluded = trained.get("excluded_fold")
        if seen and not (excluded and excluded == fold):
            but = f" (all but fold {excluded}, and this run is {'fold ' + fold if fold else 'not that fold'})" if excluded else ""
            verb = "fitted on runs over" if label == "calibration" else "built from" if label.startswith("question bank") else (
                "trained on the questions of")
            out.append(f"The {label} ({artifact['file']}) was {verb} {', '.join(seen)}{but}.")
    return out
