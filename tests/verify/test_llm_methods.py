"""The seven LLM methods and hybrid with the scripted provider: prompt -> parse -> verdict, retries, round limits, errors."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ehrguard.db import open_database
from ehrguard.errors import LLMError, StructuredOutputError
from ehrguard.llm import scripted
from ehrguard.verify.methods import Case, DatabaseContext, get_method

SQL = "SELECT gender FROM patients WHERE subject_id = 10004235"
Q = "What is the gender of patient 10004235?"
_ids = itertools.count()


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("EHRGUARD_LLM_CACHE", "off")


@pytest.fixture(scope="module")
def ctx(mimic_iv_db: Path) -> DatabaseContext:
    return DatabaseContext(open_database(mimic_iv_db), "mimic_iv", mimic_iv_db)


def joint(action, sql="", subtype="none", message="m"):
    return json.dumps({"reasoning": "r", "action": action, "sql": sql, "subtype": subtype, "message": message})


def label(lab, subtype="none"):
    return json.dumps({"reasoning": f"looks {lab}", "label": lab, "subtype": subtype})


def feedback(ok, text="fine"):
    return json.dumps({"feedback": text, "correct": ok})


def run(ctx, method, replies, question=Q, sql=SQL, **options):
    name = f"m{next(_ids)}"
    provider = scripted(name).enqueue(*replies)
    verifier = get_method(method, model=f"scripted/{name}", **options)
    verdict = verifier.verify(Case(question, sql, ctx))
    return verdict, provider


def test_two_stage_classifies_then_corrects_only_answerable_questions(ctx):
    v, p = run(ctx, "two_stage", [label("ambiguous", "vague-word")], question="Which patients had a long stay?")
    assert (v.action, v.subtype, v.llm_calls, len(p.history)) == ("ambiguous", "vague-word", 1, 1)
    fixed = "SELECT gender FROM patients WHERE subject_id = 10004235 LIMIT 1"
    v, p = run(ctx, "two_stage", [label("answerable"), json.dumps({"reasoning": "r", "action": "correct", "sql": fixed})])
    assert (v.action, v.sql, v.llm_calls) == ("correct", fixed, 2)
    system, user = p.history[1]
    assert "CREATE TABLE patients" in system["content"] and "2100-12-31 23:59:00" in system["content"]
    assert SQL in user["content"] and ("'f'" in user["content"] or "'m'" in user["content"])  # the execution result is shown
    assert v.tokens["prompt"] > 0


def test_single_turn_maps_each_action(ctx):
    v, _ = run(ctx, "single_turn", [joint("preserve", sql="ignored")])
    assert v.action == "preserve" and v.sql == SQL  # preserve keeps the candidate, whatever the model echoes
    v, _ = run(ctx, "single_turn", [joint("unanswerable", subtype="small-talk", message="Nothing to look up.")])
    assert (v.action, v.subtype, v.message, v.output) == ("unanswerable", "small-talk", "Nothing to look up.", "unanswerable")
    v, _ = run(ctx, "single_turn", [joint("ambiguous", subtype="small-talk")])
    assert v.action == "ambiguous" and v.subtype is None  # a subtype of the other category is dropped


def test_unusable_replies_are_errors_never_guesses(ctx):
    with pytest.raises(LLMError, match="no SQL"):
        run(ctx, "single_turn", [joint("correct", sql="")])
    with pytest.raises(StructuredOutputError):
        run(ctx, "single_turn", ["I think it is fine.", '{"action": "maybe"}'])
    with pytest.raises(RuntimeError):
        run(ctx, "single_turn", [RuntimeError("connection reset")])


def test_single_turn_veri_retries_on_rejection_and_is_bounded(ctx):
    v, p = run(ctx, "single_turn_veri",
               [joint("preserve"), feedback(False, "wrong column"), joint("correct", sql=SQL + " LIMIT 1"), feedback(True)])
    assert (v.action, v.details["retries"], len(p.history)) == ("correct", 1, 4)
    assert "wrong column" in p.history[2][-1]["content"]
    always_no = [joint("preserve"), feedback(False), joint("preserve"), feedback(False), joint("preserve")]
    v, p = run(ctx, "single_turn_veri", always_no, max_retries=2)
    assert v.details["retries"] == 2 and len(p.history) == 5 and not p.replies


def test_multi_turn_selfref_stops_when_correct_or_at_the_round_limit(ctx):
    v, p = run(ctx, "multi_turn_selfref", [joint("preserve"), feedback(True)])
    assert v.details["rounds"] == 1 and len(p.history) == 2
    replies = [joint("preserve"), feedback(False), joint("preserve"), feedback(False), joint("unanswerable", subtype="missing-column")]
    v, p = run(ctx, "multi_turn_selfref", replies, rounds=3)
    assert (v.action, v.details["rounds"], len(p.history)) == ("unanswerable", 3, 5)
    assert p.history[4][-1]["content"].startswith("Your own review")


@pytest.mark.parametrize("method", ["single_turn_cls", "single_turn_veri_cls", "multi_turn_selfref_cls"])
def test_cls_variants_put_the_classifier_signal_in_the_prompt(ctx, method):
    replies = [label("unanswerable", "out-of-scope"), joint("unanswerable", subtype="out-of-scope")]
    if method != "single_turn_cls":
        replies.append(feedback(True))
    v, p = run(ctx, method, replies, question="Train a model to predict sepsis.")
    assert v.action == "unanswerable" and v.details["classifier"]["label"] == "unanswerable"
    assert "A separate classifier judged this question unanswerable (out-of-scope)" in p.history[1][-1]["content"]


def test_hybrid_settles_clear_cases_offline_and_asks_the_llm_with_evidence_otherwise(ctx):
    v, p = run(ctx, "hybrid", [], question="Good morning! How was your weekend?", sql="SELECT 1")
    assert v.action == "unanswerable" and v.details["decided"] == "offline" and not p.history
    v, p = run(ctx, "hybrid", [joint("correct", sql=SQL)], question="What is the gender of patient 10004235?",
               sql="SELECT gender FROM patients WHERE subject_id = 1")
    assert v.details["decided"] == "llm" and v.action == "correct" and len(p.history) == 1
    assert "Evidence from ehrguard's offline checks" in p.history[0][-1]["content"] and "unknown_patient" in p.history[0][-1]["content"]


def test_methods_need_a_model_and_describe_their_prompts(ctx):
    from ehrguard.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a model"):
        get_method("single_turn")
    d = get_method("single_turn_veri_cls", model="scripted/describe").describe()
    assert set(d["prompt_sha256"]) == {"case.txt", "classify.txt", "feedback.txt", "joint.txt"}


def test_the_candidate_runs_once_however_many_review_rounds(ctx, monkeypatch):
    ran: list[str] = []
    real = ctx.db.execute

    def counting(sql, **kw):
        ran.append(sql)
        return real(sql, **kw)

    monkeypatch.setattr(ctx.db, "execute", counting)
    always_no = [joint("preserve"), feedback(False), joint("preserve"), feedback(False), joint("preserve")]
    v, p = run(ctx, "single_turn_veri", always_no, max_retries=2)
    assert v.details["retries"] == 2 and ran.count(SQL) == 1
    assert all("It returns: columns ['gender']" in h[-1]["content"] for h in p.history if h[-1]["content"].count("Decision: preserve"))
