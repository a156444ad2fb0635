"""The question models are reproducible: retraining the lexical model gives the shipped weights exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.db.fidelity import ehrsql_pairs
from ehrguard.verify.offline.question import MODEL_FILES
from ehrguard.verify.offline.training import generated_questions


def test_generated_questions_are_deterministic(shared_data: Path):
    pairs = [(q, s) for q, s in ehrsql_pairs(shared_data / "ehrsql-2024" / "mimic_iv" / "train") if s != "null"]
    a, b = generated_questions(pairs, seed=0, per_class=50), generated_questions(pairs, seed=0, per_class=50)
    assert a == b and {c for _, c in a} >= {"vague-word", "ambiguous-reference", "vague-question", "small-talk", "out-of-scope",
                                            "missing-column", "infeasible-faq"}


def test_retraining_reproduces_the_shipped_lexical_model(shared_data: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(shared_data))
    out = tmp_path / "lexical.npz"
    r = CliRunner().invoke(cli, ["train", "question-model", "--no-embeddings", "--out", str(out)])
    assert r.exit_code == 0, r.output
    shipped, again = np.load(MODEL_FILES["lexical"]), np.load(out)
    assert all(np.array_equal(shipped[k], again[k]) for k in shipped.files)
