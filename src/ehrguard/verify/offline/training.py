"""Training data and training of the question classifier (``ehrguard train question-model``).

Sources, all ones we may train on:

* EHRSQL-2024 MIMIC-IV train: answerable questions, and its unanswerable ones (mostly
  hospital-operations and administrative questions, labelled ``infeasible-faq`` here);
* questions we generate from our own templates (:func:`generated_questions`): vague words
  and unresolved references injected into EHRSQL answerable questions, keyword-only
  questions, small talk, out-of-scope analytics tasks, attributes no schema column holds,
  hospital FAQs;
* optionally the SCARE dev split (question + subtype only).

Evaluation on SCARE dev is by grouped cross-validation: each fold's questions are never
in its training set (a question recurs with several candidates; all copies stay together).
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ehrguard.labels import ANSWERABLE_TYPES
from ehrguard.verify.offline.classifier import CLASSES, QuestionModel, featurize, train_softmax
from ehrguard.verify.offline.embedding import Embedder
from ehrguard.verify.offline.features import mask_values

_VAGUE = ("significant", "sufficient", "long", "usual", "more than usual", "longer than usual", "enough", "critical",
          "relatively high", "unusually", "comparable", "similar", "recent", "abnormal", "high-risk", "elevated", "severe",
          "prolonged", "excessive", "substantial", "frequent", "brief", "typical", "concerning", "large", "mild")

_CONCEPTS = ("lab results", "labs", "diet", "bmi", "cholesterol", "temperature", "heart rate", "blood pressure", "vitals",
             "allergies", "medications", "meds", "prescriptions", "diagnosis", "diagnoses", "procedures", "discharge",
             "admission", "icu", "glucose", "potassium", "sodium", "creatinine", "hemoglobin", "weight", "height", "oxygen",
             "respiratory rate", "urine output", "intake", "output", "cost", "insurance", "microbiology", "culture",
             "history", "results", "status", "stay", "transfer", "ward", "age", "gender", "imaging", "sepsis", "infection",
             "pain", "fluids", "antibiotics", "insulin", "heparin", "platelets", "wbc", "lactate", "troponin", "ventilation")

_SMALL_TALK = (
    "How was your {day}?", "Do you like {thing}?", "What's your favorite {thing}?", "Is it going to {weather} today?",
    "Did you catch the game last night?", "I'm so tired after this {shift} shift.", "Any plans for the {holiday}?",
    "Can you recommend a good {thing} place near the hospital?", "Do you ever get bored at work?",
    "How do you stay calm on a busy {shift} shift?", "Tell me a joke about {thing}.", "Who do you think will win the {sport} final?",
    "Is the {place} open this late?", "What do you think about the new {place}?", "Have you been on {holiday} recently?",
    "Thanks for your help today!", "Good morning, how are you?", "Do you prefer tea or coffee?", "What music do you listen to on {day}s?",
    "Why is the {place} always so crowded?", "Isn't the {weather} weather lovely today?", "Do you think I should take a {holiday} break?",
)
_SLOTS = {
    "day": ("weekend", "monday", "day", "night", "friday"), "thing": ("coffee", "pizza", "movies", "music", "books", "sushi", "jazz"),
    "weather": ("rain", "snow", "sunny", "cold"), "shift": ("night", "day", "double", "weekend"),
    "holiday": ("holidays", "vacation", "long weekend", "summer"), "sport": ("football", "basketball", "baseball", "tennis"),
    "place": ("cafeteria", "parking lot", "gym", "break room", "coffee shop"),
}
_OOS_VERBS = ("Train", "Build", "Develop", "Fit", "Create", "Design", "Can you train", "Could you build", "Please develop")
_OOS_MODELS = ("a deep learning model", "a random forest", "a neural network", "an LSTM", "a transformer model",
               "a logistic regression model", "a gradient boosting model", "a clustering algorithm", "a GAN", "a classifier")
_OOS_TASKS = ("to predict {outcome}", "that predicts {outcome}", "to forecast {outcome}", "to classify chest x-ray images",
              "to generate synthetic patient records", "to cluster patients by {feature}", "to segment ct images", "to detect sepsis early",
              "to recommend the best treatment for each patient")
_OOS_OTHER = ("What are the key features influencing {outcome}?", "Perform a survival analysis of {outcome} with a cox model.",
              "Forecast the number of admissions next {period}.", "Predict whether patient {pid} will be readmitted.",
              "Generate a synthetic dataset of {feature} for research.", "Cluster the patients based on {feature}.",
              "Visualize the trend of {feature} over time in a dashboard.", "Summarize the radiology images of patient {pid}.",
              "Which patients are likely to develop {outcome} next year?", "Estimate the causal effect of {feature} on {outcome}.",
              "Optimize the staffing schedule using {feature}.", "Write a report explaining why {outcome} increased.")
_OUTCOMES = ("mortality", "readmission within 30 days", "length of stay", "sepsis onset", "acute kidney injury", "icu transfer",
             "medication refills", "in-hospital death", "ventilator weaning")
_FEATURES = ("lab trajectories", "vital signs", "diagnoses", "medication history", "demographics", "admission patterns")
_MISSING_FORMS = ("What is the {attr} of patient {pid}?", "What was patient {pid}'s {attr}?",
                  "Tell me the {attr} of patient {pid} on the last hospital visit.",
                  "What {attr} was recorded for patient {pid} during the first icu stay?", "Show the {attr} for patient {pid}.",
                  "Which {attr} did patient {pid} have in their first hospital encounter?")
_MISSING_ATTRS = ("home address", "phone number", "email address", "blood type", "occupation", "religion", "emergency contact",
                  "room number", "bed number", "attending physician", "mode of transfer", "transfer approval time", "dietary restriction",
                  "smoking status", "vaccination status", "pain score", "primary care doctor", "referring department", "infection flag",
                  "source room", "nurse in charge", "education level", "income", "discharge summary")
# Attributes the schemas do hold, asked in the same forms: they keep "the X of patient N" from meaning "missing".
_PRESENT_ATTRS = ("gender", "age", "date of birth", "marital status", "insurance", "language", "race", "ethnicity", "admission type",
                  "admission location", "discharge location", "hospital admission time", "hospital discharge time", "admission weight",
                  "admission height", "first care unit", "last care unit", "discharge weight", "hospital discharge status",
                  "date of death", "unit admission time", "length of stay")
_FAQ = ("What are the visiting hours of the {unit}?", "When are Dr. {name}'s rounds today?",
        "Is Dr. {name} available for outpatient appointments tomorrow?", "What is the reimbursement standard for {drug}?",
        "What precautions should I take after {proc}?", "What are the side effects of {drug}?",
        "When will patient {pid} be discharged?", "Will patient {pid} need another {proc}?",
        "What was the result of patient {pid}'s last covid-19 test?", "When does the isolation of patient {pid} end?",
        "How many operating rooms are available now?", "What is the hospital policy on {topic}?",
        "Does patient {pid} have a family history of {dx}?", "Has patient {pid} travelled overseas recently?",
        "Who is the nurse on duty in the {unit}?", "How do I disinfect a room after {topic}?", "What is the protocol for {proc}?",
        "When is the next visit of patient {pid} to the {unit}?")
_NAMES = ("smith", "johnson", "lee", "garcia", "patel", "nguyen", "martinez", "kim")
_DRUGS = ("ciprofloxacin", "heparin", "insulin", "aspirin", "vancomycin", "warfarin", "morphine")
_PROCS = ("a colonoscopy", "cardiac catheterization", "a lumbar puncture", "an mri", "hip replacement")
_UNITS = ("icu", "cardiology ward", "emergency department", "maternity ward", "oncology unit")
_TOPICS = ("visitors", "masks", "quarantine", "overtime", "parking")
_DX = ("diabetes", "heart disease", "cancer", "hypertension")

_PID = re.compile(r"\bpatient (\d{3}-\d{3,7}|\d{4,9})('s)?")
_REFS = (("this patient", "this patient's"), ("that patient", "that patient's"), ("the patient", "the patient's"),
         ("them", "their"), ("him", "his"), ("her", "her"))


def _fill(rng: random.Random, template: str) -> str:
    values = {k: rng.choice(v) for k, v in _SLOTS.items()}
    values.update(outcome=rng.choice(_OUTCOMES), feature=rng.choice(_FEATURES), pid=str(rng.randint(10000000, 10099999)),
                  period=rng.choice(("month", "year", "quarter")), name=rng.choice(_NAMES).title(), drug=rng.choice(_DRUGS),
                  proc=rng.choice(_PROCS), unit=rng.choice(_UNITS), topic=rng.choice(_TOPICS), dx=rng.choice(_DX), attr="{attr}")
    return template.format(**values)


def _inject_vague(rng: random.Random, q: str) -> str:
    word = rng.choice(_VAGUE)
    forms = (
        lambda s: (_PID.sub(lambda m: f"patients with {word} stays", s, count=1) if _PID.search(s)
                   else s.rstrip("?.") + f" in {word} cases?"),
        lambda s: s.rstrip("?.") + f" that appeared {word}?",
        lambda s: re.sub(r"\b(patients|drugs|medications|diagnoses|procedures|tests)\b", f"{word} \\1", s, count=1),
        lambda s: re.sub(r"\b(the )?(top|first|last) (\w+)\b", f"the {word}", s, count=1),
        lambda s: re.sub(r"\b(since|in|within) (\d{4}|\d+ \w+ ago|the last \w+|last \w+)", f"over a {word} period", s, count=1),
    )
    for f in rng.sample(forms, len(forms)):
        out = f(q)
        if out != q:
            return out
    return q.rstrip("?.") + f" with {word} values?"


def _inject_reference(rng: random.Random, q: str) -> str:
    if _PID.search(q) and rng.random() < 0.7:
        plain, possessive = rng.choice(_REFS)
        return _PID.sub(lambda m: possessive if m.group(2) else plain, q, count=1)
    forms = (
        lambda s: re.sub(r"\b(the|their) (current|first|last) (hospital visit|icu visit|hospital encounter|icu stay)\b",
                         lambda m: rng.choice(("this", "that")) + " " + m.group(3), s, count=1),
        lambda s: re.sub(r"\b(prescribed|diagnosed with|received|had) ([a-z0-9][^?,]{6,60}?)( on| in| since| within|\?|$)",
                         lambda m: f"{m.group(1)} {rng.choice(('it', 'this', 'that drug', 'these', 'the same one'))}{m.group(3)}",
                         s, count=1),
        lambda s: s.rstrip("?.") + rng.choice((" after that?", " before then?", " for them?", " during this stay?")),
    )
    for f in rng.sample(forms, len(forms)):
        out = f(q)
        if out != q:
            return out
    return q


def _vague_question(rng: random.Random) -> str:
    c = rng.choice(_CONCEPTS)
    forms = ("{c}?", "{c}?", "{c} {d}?", "{c} results?", "{C}?", "any {c}?", "{c} and {d}?", "about the {c}?", "{c} trend?",
             "latest {c}?", "{c} levels?")
    return rng.choice(forms).format(c=c, d=rng.choice(_CONCEPTS), C=c.title())


def generated_questions(answerable: list[tuple[str, str]], seed: int = 0, per_class: int = 600) -> list[tuple[str, str]]:
    """Our own training questions: ``per_class`` for each of the seven non-answerable classes, and about
    ``per_class / 2`` answerable ones asking for attributes the schemas hold, in the missing-column forms.

    ``answerable`` holds (question, gold SQL) pairs; questions derived from one are masked with its SQL.
    """
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for _ in range(per_class):
        q, sql = rng.choice(answerable)
        out.append((mask_values(_inject_vague(rng, q), sql), "vague-word"))
        q, sql = rng.choice(answerable)
        out.append((mask_values(_inject_reference(rng, q), sql), "ambiguous-reference"))
        out.append((_vague_question(rng), "vague-question"))
        out.append((_fill(rng, rng.choice(_SMALL_TALK)), "small-talk"))
        if rng.random() < 0.6:
            oos = f"{rng.choice(_OOS_VERBS)} {rng.choice(_OOS_MODELS)} {_fill(rng, rng.choice(_OOS_TASKS))}."
        else:
            oos = _fill(rng, rng.choice(_OOS_OTHER))
        out.append((oos, "out-of-scope"))
        out.append((_fill(rng, rng.choice(_MISSING_FORMS)).format(attr=rng.choice(_MISSING_ATTRS)), "missing-column"))
        out.append((_fill(rng, rng.choice(_FAQ)), "infeasible-faq"))
        if rng.random() < 0.5:
            out.append((_fill(rng, rng.choice(_MISSING_FORMS)).format(attr=rng.choice(_PRESENT_ATTRS)), "answerable"))
    return out


def ehrsql_questions(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Training examples from EHRSQL-2024: answerable, or (its unanswerable questions) infeasible-faq; masked with the gold SQL."""
    return [(mask_values(q, sql) if sql != "null" else q, "answerable" if sql != "null" else "infeasible-faq") for q, sql in pairs]


def scare_questions(paths: Iterable[str | Path]) -> list[tuple[str, str, str]]:
    """(masked question, class, question) for each distinct (question, candidate SQL) of SCARE files."""
    seen: dict[str, tuple[str, str, str]] = {}
    for p in paths:
        for it in json.loads(Path(p).read_text()):
            cls = "answerable" if it["type"] in ANSWERABLE_TYPES else it["type"]
            masked = mask_values(it["question"], it["pred_sql"])
            seen.setdefault(masked, (masked, cls, it["question"]))
    return list(seen.values())


def _class_weights(y: np.ndarray) -> np.ndarray:
    counts = np.bincount(y, minlength=len(CLASSES)).astype(np.float32)
    return np.where(counts > 0, counts.sum() / np.maximum(counts, 1) / len(CLASSES), 0.0).astype(np.float32)


def train_model(examples: list[tuple[str, str]], embedder: Embedder | None, cache: dict[str, np.ndarray] | None = None,
                **kw: Any) -> QuestionModel:
    questions = [q for q, _ in examples]
    y = np.array([CLASSES.index(c) for _, c in examples])
    emb = embed_cached(questions, embedder, cache) if embedder else None
    x = featurize(questions, emb)
    return train_softmax(x, y, class_weight=_class_weights(y), uses_embeddings=embedder is not None, **kw)


def embed_cached(questions: list[str], embedder: Embedder, cache: dict[str, np.ndarray] | None) -> np.ndarray:
    cache = {} if cache is None else cache
    todo = sorted({q for q in questions if q not in cache})
    if todo:
        for q, v in zip(todo, embedder.embed(todo), strict=False):
            cache[q] = v
    return np.stack([cache[q] for q in questions])


def parse_fold(text: str) -> tuple[int, int]:
    """``"2/5"`` -> (2, 5); folds are numbered 0..K-1."""
    from ehrguard.errors import ConfigError

    try:
        fold, k = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"A fold is I/K with 0 <= I < K, e.g. 0/5; got {text!r}.") from None
    if not 0 <= fold < k:
        raise ConfigError(f"A fold is I/K with 0 <= I < K, e.g. 0/5; got {text!r}.")
    return fold, k


def fold_of(question: str, k: int) -> int:
    """A stable fold for a question text (grouped CV: all copies of a question share a fold)."""
    return zlib.crc32(question.strip().lower().encode()) % k


def cross_validate(scare: list[tuple[str, str, str]], base: list[tuple[str, str]], embedder: Embedder | None,
                   cache: dict[str, np.ndarray], k: int = 5) -> dict[str, np.ndarray]:
    """Out-of-fold class probabilities for every SCARE (masked) question; folds group by the original question."""
    from ehrguard.verify.offline.classifier import featurize

    out: dict[str, np.ndarray] = {}
    for fold in range(k):
        train = base + [(m, c) for m, c, q in scare if fold_of(q, k) != fold]
        test = [m for m, _, q in scare if fold_of(q, k) == fold]
        if not test:
            continue
        model = train_model(train, embedder, cache)
        x = featurize(test, embed_cached(test, embedder, cache) if embedder else None)
        for m, row in zip(test, model.probabilities(x), strict=True):
            out[m] = row
    return out
