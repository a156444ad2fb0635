"""Which of a run's items the method's knowledge was built from: the in-sample warning of the SCARE reports.

The offline verifier's question models are trained on the SCARE dev questions (grouped CV leaves a fold out). A run
over the same files with those models scores questions the models have seen: its ambiguous and unanswerable figures
are in-sample and say nothing about unseen questions. The models record the files they were trained on by checksum
(``ehrguard train question-model``); a run whose data overlaps them says so in ``run.json`` and at the top of its
report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.rundir import file_sha256

# The methods whose decisions rest on the offline verifier's question models.
USES_QUESTION_MODELS = ("offline", "hybrid")


def in_sample(method: str, options: dict[str, Any], data_files: Sequence[str | Path], fold: str | None = None) -> list[str]:
    """One sentence for each model the run used that was trained on some of ``data_files`` (none when the run is a
    fold the model left out); empty when nothing overlaps or the models do not say what they saw."""
    if method not in USES_QUESTION_MODELS:
        return []
    from ehrguard.verify.offline import MODEL_FILES, QuestionModel

    files = {file_sha256(p): Path(p).name for p in data_files}
    out = []
    for label, key, default in (("question model", "question_model", MODEL_FILES["minilm"]),
                                ("lexical question model", "lexical_model", MODEL_FILES["lexical"])):
        path = Path(str(options.get(key) or default))
        try:
            trained = QuestionModel.load(path).trained_on
        except (OSError, ValueError, KeyError):
            continue
        seen = sorted(name for sha, name in files.items() if sha in set((trained.get("scare") or {}).values()))
        excluded = trained.get("excluded_fold")
        if seen and not (excluded and excluded == fold):
            but = f" (all but fold {excluded}, and this run is {'fold ' + fold if fold else 'not that fold'})" if excluded else ""
            out.append(f"The {label} ({path.name}) was trained on the questions of {', '.join(seen)}{but}.")
    return out
