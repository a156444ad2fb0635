"""The offline verifier: no LLM, every decision traceable to a finding or a classifier score.

The names below are the API (``from ehrguard.verify.offline import OfflineVerifier``); as a
verification method it is reached by name, ``ehrguard.verify.get_method("offline")``. The
modules are internal: :mod:`.verifier` gathers the evidence, :mod:`.evidence` types it and
:mod:`.policy` decides; :mod:`.question` assesses the question with :mod:`.classifier`,
:mod:`.embedding`, :mod:`.features` and :mod:`.lexicon`; :mod:`.templates` and :mod:`.forms` are
the known questions; :mod:`.training` trains the classifier (``ehrguard train``).

Every name is imported on first use (PEP 562): these modules load numpy, the ONNX sentence
embedder and the verifier's models, and ``import ehrguard.verify.offline`` stays free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ehrguard.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from ehrguard.verify.offline.artifacts import BANKS_DIR, bank_status, build_banks
    from ehrguard.verify.offline.calibration import (
        SHIPPED_CALIBRATION,
        Calibration,
        calibration_file,
        calibration_path,
        fit_calibration,
        load_calibration,
        out_of_fold,
        save_calibration,
    )
    from ehrguard.verify.offline.classifier import CATEGORY_OF, CLASSES, QuestionModel
    from ehrguard.verify.offline.embedding import Embedder, load_embedder
    from ehrguard.verify.offline.evidence import Evidence, KnownQuestion, Outcome, Repair
    from ehrguard.verify.offline.features import mask_values
    from ehrguard.verify.offline.forms import FormIndex, load_forms
    from ehrguard.verify.offline.policy import BLOCKING_WARNINGS, OPERATING_POINTS, Policy, decide
    from ehrguard.verify.offline.question import MODEL_FILES, QuestionAssessment
    from ehrguard.verify.offline.templates import BANK_SOURCES, load_bank
    from ehrguard.verify.offline.training import (
        bedside_questions,
        cohort_questions,
        cross_validate,
        ehrsql_questions,
        embed_cached,
        fold_of,
        generated_questions,
        mimicsql_questions,
        parse_fold,
        safety_questions,
        scare_questions,
        train_model,
    )
    from ehrguard.verify.offline.verifier import OfflineVerifier

_LAZY = by_module({
    ".artifacts": ("BANKS_DIR", "bank_status", "build_banks"),
    ".calibration": ("SHIPPED_CALIBRATION", "Calibration", "calibration_file", "calibration_path", "fit_calibration", "load_calibration",
                     "out_of_fold", "save_calibration"),
    ".classifier": ("CATEGORY_OF", "CLASSES", "QuestionModel"),
    ".embedding": ("Embedder", "load_embedder"),
    ".evidence": ("Evidence", "KnownQuestion", "Outcome", "Repair"),
    ".features": ("mask_values",),
    ".forms": ("FormIndex", "load_forms"),
    ".policy": ("BLOCKING_WARNINGS", "OPERATING_POINTS", "Policy", "decide"),
    ".question": ("MODEL_FILES", "QuestionAssessment"),
    ".templates": ("BANK_SOURCES", "load_bank"),
    ".training": ("bedside_questions", "cohort_questions",
                  "cross_validate", "ehrsql_questions", "embed_cached", "fold_of", "generated_questions",
                  "mimicsql_questions", "parse_fold", "SAFETY_REPEAT", "SAFETY_TRAINING_FILES", "safety_questions",
                  "scare_questions", "shorthand_questions", "train_model"),
    ".verifier": ("OfflineVerifier",),
})


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "BANKS_DIR",
    "BANK_SOURCES",
    "BLOCKING_WARNINGS",
    "CATEGORY_OF",
    "CLASSES",
    "Calibration",
    "Embedder",
    "Evidence",
    "FormIndex",
    "KnownQuestion",
    "MODEL_FILES",
    "QuestionModel",
    "OPERATING_POINTS",
    "OfflineVerifier",
    "Outcome",
    "Policy",
    "QuestionAssessment",
    "Repair",
    "SAFETY_REPEAT",
    "SAFETY_TRAINING_FILES",
    "SHIPPED_CALIBRATION",
    "bank_status",
    "build_banks",
    "cross_validate",
    "decide",
    "ehrsql_questions",
    "embed_cached",
    "calibration_file",
    "calibration_path",
    "fit_calibration",
    "fold_of",
    "bedside_questions",
    "cohort_questions",
    "generated_questions",
    "mimicsql_questions",
    "load_bank",
    "load_calibration",
    "load_embedder",
    "load_forms",
    "mask_values",
    "parse_fold",
    "safety_questions",
    "out_of_fold",
    "save_calibration",
    "scare_questions",
    "shorthand_questions",
    "train_model",
]
