"""The question models are reproducible: retraining the lexical model gives the shipped weights (to float32 rounding:
the BLAS a numpy release links may sum in another order, which moves the last bits and nothing else)."""

from __future__ import annotations

import json
import re
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
    assert shipped.files == again.files
    for key in shipped.files:
        if shipped[key].dtype.kind == "f":
            assert np.allclose(shipped[key], again[key], rtol=0, atol=1e-5), key
        else:
            assert np.array_equal(shipped[key], again[key]), key


def test_generated_cohort_questions_carry_the_cues_of_their_labels():
    from ehrguard.verify.offline.features import question_cues
    from ehrguard.verify.offline.training import cohort_questions

    qs = cohort_questions(seed=0, n=200)
    assert qs == cohort_questions(seed=0, n=200) and len(qs) == 300
    by = {label: [question_cues(q) for q, lab in qs if lab == label] for label in ("answerable", "vague-word", "ambiguous-reference")}
    assert len(by["answerable"]) == 200 and len(by["vague-word"]) == len(by["ambiguous-reference"]) == 50
    # answerable: explicit criteria, no vague word ("a 70-year-old woman", "aged 60-75"); the others carry their cue
    assert all(not c.vague for c in by["answerable"])
    assert all(c.vague for c in by["vague-word"]) and all(c.references for c in by["ambiguous-reference"])


def test_mimicsql_questions_are_answerable_masked_sampled_and_leave_out_lexicon_cues(tmp_path):
    from ehrguard.verify.offline.training import mimicsql_questions

    rows = [{"question_refine": f"how many patients aged below {n} were prescribed heparin sodium?",
             "sql": f'SELECT COUNT ( DISTINCT DEMOGRAPHIC."SUBJECT_ID" ) FROM DEMOGRAPHIC INNER JOIN PRESCRIPTIONS on '
                    f'DEMOGRAPHIC.HADM_ID = PRESCRIPTIONS.HADM_ID WHERE DEMOGRAPHIC."AGE" < "{n}" '
                    'AND PRESCRIPTIONS."DRUG" = "Heparin Sodium"'}
            for n in range(50, 60)]
    # a field name that is a vague word of the lexicon ("long title") would teach that vague words are answerable
    rows.append({"question_refine": "what is the long title of procedure icd9 code 3893?",
                 "sql": 'SELECT PROCEDURES."LONG_TITLE" FROM PROCEDURES WHERE PROCEDURES."ICD9_CODE" = "3893"'})
    path = tmp_path / "dev.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    everything = mimicsql_questions([path], n=100)
    assert len(everything) == 10 and {label for _, label in everything} == {"answerable"}
    assert not any("long title" in q for q, _ in everything)
    assert all("heparin" not in q.lower() for q, _ in everything)  # the drug is masked, as in EHRSQL's questions
    sample = mimicsql_questions([path], n=4, seed=1)
    assert len(sample) == 4 and sample == mimicsql_questions([path], n=4, seed=1) and set(sample) <= set(everything)


def test_bedside_questions_name_patients_and_visits_the_ways_the_schemas_identify_them():
    from ehrguard.verify.offline.training import bedside_questions

    answerable = [q for q, c in bedside_questions(seed=0) if c == "answerable"]
    assert any(re.search(r"patient \d{8}\b", q) for q in answerable)  # MIMIC's subject_id
    assert any(re.search(r"patient \d{3}-\d+", q) for q in answerable)  # eICU's uniquepid
    assert any(re.search(r"\b(?:unit stay|icu stay|hospital admission|encounter) \d+", q, re.I) for q in answerable)


def test_a_visit_named_by_its_number_reads_as_answerable():
    from ehrguard.verify.offline.question import QuestionClassifier

    classifier = QuestionClassifier(embeddings="off")
    # read as pointing back at nothing (answerable 0.29 to 0.52) by the model trained without visits named by number
    for question in ("What was the last heart rate recorded for ICU stay 30000484?", "Which lab tests were done in unit stay 141765?",
                     "How much insulin was given during unit stay 200310?"):
        assert classifier.assess(question).category["answerable"] > 0.8, question


def test_safety_questions_learn_wording_from_the_read_cases_only():
    from ehrguard.verify.offline.training import SAFETY_TRAINING_FILES, safety_questions, safety_subtype

    names = {p.name for p in SAFETY_TRAINING_FILES}
    assert {"mimic_iv.jsonl", "eicu.jsonl", "read.jsonl", "second_read.jsonl", "third_read.jsonl", "fourth_read.jsonl",
            "fifth_read.jsonl"} == names
    assert not any("unread" in n for n in names)  # the halves that measure what this learns
    assert safety_subtype("wrong", "order-direction") == "answerable"
    assert safety_subtype("ambiguous", "vague-threshold") == "vague-word"
    assert safety_subtype("ambiguous", "which-stay") == "ambiguous-reference"
    assert safety_subtype("unanswerable", "future-event") == "infeasible-faq"
    assert safety_subtype("unanswerable", "family-history") == "missing-column"
    # what one schema lacks and another holds, a patient the records lack, a write: nothing about the wording
    assert {safety_subtype("unanswerable", c) for c in ("allergy-absent", "unknown-patient", "write-request")} == {None}
    examples = safety_questions(SAFETY_TRAINING_FILES, repeat=2)
    assert len(examples) % 2 == 0 and {c for _, c in examples} >= {"answerable", "vague-word", "infeasible-faq", "missing-column"}
    # the names the SQL compares are masked, as in every other source ("the highest X level")
    assert any(re.search(r"\bX\b", q) for q, _ in examples)


def test_a_model_trained_with_the_safety_cases_records_them_and_never_an_unread_half(shared_data: Path, tmp_path: Path, monkeypatch):
    from ehrguard.verify.offline.classifier import QuestionModel

    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(shared_data))
    out = tmp_path / "lexical.npz"
    r = CliRunner().invoke(cli, ["train", "question-model", "--no-embeddings", "--no-scare", "--with-safety", "--safety-repeat", "1",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    seen = set(QuestionModel.load(out).trained_on["safety"])
    assert {"read.jsonl", "second_read.jsonl", "third_read.jsonl", "fourth_read.jsonl", "fifth_read.jsonl"} <= seen
    assert not any("unread" in name for name in seen)
