"""How well the question classifier generalises to questions nobody read while writing its features.

Three protocols, each printing recall per subtype and precision / recall / F1 per category (ambiguous, unanswerable)
over distinct questions; only aggregate numbers are printed, never a question:

- ``no-scare``: trained on EHRSQL-2024 and our generated questions only, measured on every SCARE dev question;
- ``mimic->eicu`` / ``eicu->mimic``: trained on those plus one database's SCARE dev questions, measured on the other
  database's (a held-out database);
- ``cv``: the shipped configuration's grouped 5-fold cross-validation over both (what docs/verifier.md reports).

Run: EHRGUARD_DATA_DIR=../shared/data python scripts/question_generalisation.py [--no-embeddings] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ehrguard.benchmarks import ehrsql_pairs
from ehrguard.config import path_setting
from ehrguard.verify.offline import (
    CATEGORY_OF,
    CLASSES,
    cross_validate,
    ehrsql_questions,
    embed_cached,
    generated_questions,
    load_embedder,
    scare_questions,
    train_model,
)
from ehrguard.verify.offline.classifier import featurize
from ehrguard.verify.offline.features import question_cues


def _scores(truth: list[str], predicted: list[str]) -> dict[str, Any]:
    """Recall per subtype, and P / R / F1 per category, in %."""
    out: dict[str, Any] = {"questions": len(truth), "recall": {}}
    for cls in CLASSES:
        n = sum(t == cls for t in truth)
        if n:
            out["recall"][cls] = round(100 * sum(t == p == cls for t, p in zip(truth, predicted, strict=True)) / n, 1)
    for category in ("ambiguous", "unanswerable"):
        t = [CATEGORY_OF[c] == category for c in truth]
        p = [CATEGORY_OF[c] == category for c in predicted]
        tp = sum(a and b for a, b in zip(t, p, strict=True))
        precision = tp / sum(p) if sum(p) else float("nan")
        recall = tp / sum(t) if sum(t) else float("nan")
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else float("nan")
        out[category] = {"P": round(100 * precision, 1), "R": round(100 * recall, 1), "F1": round(100 * f1, 1)}
    return out


def _predict(model: Any, questions: list[str], embedder: Any, cache: dict[str, np.ndarray]) -> list[str]:
    """As the verifier assesses a question: the unresolved-reference rule first, then the model."""
    x = featurize(questions, embed_cached(questions, embedder, cache) if embedder else None)
    return ["ambiguous-reference" if question_cues(q).unresolved else CLASSES[i]
            for q, i in zip(questions, model.probabilities(x).argmax(axis=1), strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-embeddings", action="store_true", help="the lexical model only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="also write the numbers as JSON")
    args = ap.parse_args()
    data = path_setting("data_dir")
    files = {db: data / "scare" / f"{db}_dev.json" for db in ("mimic_iv", "eicu")}
    if not all(f.is_file() for f in files.values()):
        sys.exit(f"question_generalisation: the SCARE dev files are not under {data / 'scare'}: set EHRGUARD_DATA_DIR.")
    embedder = None if args.no_embeddings else load_embedder()
    pairs = ehrsql_pairs(data / "ehrsql-2024" / "mimic_iv" / "train")
    base = ehrsql_questions(pairs) + generated_questions([(q, s) for q, s in pairs if s != "null"], seed=args.seed)
    scare = {db: scare_questions([f]) for db, f in files.items()}
    cache: dict[str, np.ndarray] = {}
    if embedder:
        embed_cached(sorted({q for q, _ in base} | {m for items in scare.values() for m, _, _ in items}), embedder, cache)
    results: dict[str, Any] = {"features": "MiniLM + lexical" if embedder else "lexical",
                               "training": dict(Counter(c for _, c in base))}
    model = train_model(base, embedder, cache)
    everything = scare["mimic_iv"] + scare["eicu"]
    results["no-scare"] = _scores([c for _, c, _ in everything], _predict(model, [m for m, _, _ in everything], embedder, cache))
    for train_db, test_db in (("mimic_iv", "eicu"), ("eicu", "mimic_iv")):
        model = train_model(base + [(m, c) for m, c, _ in scare[train_db]], embedder, cache)
        test = scare[test_db]
        results[f"{train_db}->{test_db}"] = _scores([c for _, c, _ in test], _predict(model, [m for m, _, _ in test], embedder, cache))
    probs = cross_validate(everything, base, embedder, cache, k=5)
    results["cv"] = _scores([c for _, c, _ in everything], ["ambiguous-reference" if question_cues(m).unresolved
                                                            else CLASSES[int(np.argmax(probs[m]))] for m, _, _ in everything])
    for name in ("no-scare", "mimic_iv->eicu", "eicu->mimic_iv", "cv"):
        r = results[name]
        recall = ", ".join(f"{c} {v}" for c, v in r["recall"].items())
        print(f"{name} ({r['questions']} questions): ambiguous F1 {r['ambiguous']['F1']} (P {r['ambiguous']['P']}, "
              f"R {r['ambiguous']['R']}), unanswerable F1 {r['unanswerable']['F1']} (P {r['unanswerable']['P']}, "
              f"R {r['unanswerable']['R']}); recall: {recall}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
