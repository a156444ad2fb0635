"""The question classifier: multinomial logistic regression on sentence embeddings + lexical features.

Features of a question: its MiniLM embedding (when available), the named lexicon cues
(:mod:`features`), and hashed word uni/bigrams. Two models ship: ``minilm`` (all three)
and ``lexical`` (no embedding; used when the embedding model or its tokenizer is absent).
Weights are a small ``.npz``; ``ehrguard train question-model`` regenerates them.
"""

from __future__ import annotations

import itertools
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ehrguard.labels import AMBIGUOUS_SUBTYPES, UNANSWERABLE_SUBTYPES
from ehrguard.verify.offline.embedding import DIM
from ehrguard.verify.offline.features import FEATURE_NAMES, QuestionCues, question_cues

CLASSES = ("answerable", *AMBIGUOUS_SUBTYPES, *UNANSWERABLE_SUBTYPES)  # the order of the weights files
CATEGORY_OF = {c: ("answerable" if c == "answerable" else "ambiguous" if c in AMBIGUOUS_SUBTYPES else "unanswerable") for c in CLASSES}
HASH_DIM = 2048
_TOKEN = re.compile(r"[a-z]+|\d+")
WEIGHTS_DIR = Path(__file__).parent / "data"


def _hashed_ngrams(text: str) -> np.ndarray:
    vec = np.zeros(HASH_DIM, dtype=np.float32)
    toks = ["<num>" if t.isdigit() else t for t in _TOKEN.findall(text.lower())]
    grams = toks + [a + "_" + b for a, b in itertools.pairwise(toks)] + ["<s>_" + toks[0] if toks else "<empty>"]
    for g in grams:
        vec[zlib.crc32(g.encode()) % HASH_DIM] = 1.0
    return vec


def featurize(questions: list[str], embeddings: np.ndarray | None, cues: list[QuestionCues] | None = None) -> np.ndarray:
    if not questions:
        return np.zeros((0, (DIM if embeddings is not None else 0) + len(FEATURE_NAMES) + HASH_DIM), np.float32)
    cues = cues or [question_cues(q) for q in questions]
    lexical = np.stack([np.concatenate([c.vector(), _hashed_ngrams(q)]) for q, c in zip(questions, cues, strict=False)])
    if embeddings is None:
        return lexical
    return np.concatenate([embeddings, lexical], axis=1)


@dataclass
class QuestionModel:
    """Softmax regression weights over :data:`CLASSES`."""

    weights: np.ndarray  # (n_features, n_classes)
    bias: np.ndarray
    uses_embeddings: bool
    # What it was trained on, for the benchmark reports' in-sample warning: {"scare": {file name: SHA-256},
    # "excluded_fold": "I/K" or None}. Empty for a model saved before it was recorded.
    trained_on: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        logits = features @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def save(self, path: str | Path) -> None:
        np.savez_compressed(path, weights=self.weights.astype(np.float32), bias=self.bias.astype(np.float32),
                            uses_embeddings=np.array(self.uses_embeddings), classes=np.array(CLASSES),
                            trained_on=np.array(json.dumps(self.trained_on, sort_keys=True)))

    @classmethod
    def load(cls, path: str | Path) -> QuestionModel:
        with np.load(path) as data:
            if tuple(data["classes"]) != CLASSES:
                raise ValueError(f"{path} was trained for other classes: {tuple(data['classes'])}")
            trained_on = json.loads(str(data["trained_on"])) if "trained_on" in data.files else {}
            return cls(data["weights"], data["bias"], bool(data["uses_embeddings"]), trained_on)


def train_softmax(x: np.ndarray, y: np.ndarray, *, l2: float = 1e-4, epochs: int = 300, lr: float = 0.05,
                  class_weight: np.ndarray | None = None, uses_embeddings: bool) -> QuestionModel:
    """Full-batch Adam on the weighted cross-entropy. Deterministic: zero init, fixed order."""
    n, d = x.shape
    k = len(CLASSES)
    w = np.zeros((d, k), np.float32)
    b = np.zeros(k, np.float32)
    onehot = np.eye(k, dtype=np.float32)[y]
    sample_w = (class_weight[y] if class_weight is not None else np.ones(n, np.float32)).astype(np.float32)
    sample_w /= sample_w.sum()
    m_w, v_w, m_b, v_b = np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    model = QuestionModel(w, b, uses_embeddings)
    for t in range(1, epochs + 1):
        p = model.probabilities(x)
        g = (p - onehot) * sample_w[:, None]
        grad_w = x.T @ g + l2 * w
        grad_b = g.sum(0)
        for param, grad, m, v in ((w, grad_w, m_w, v_w), (b, grad_b, m_b, v_b)):
            m *= beta1
            m += (1 - beta1) * grad
            v *= beta2
            v += (1 - beta2) * grad * grad
            param -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    return model
