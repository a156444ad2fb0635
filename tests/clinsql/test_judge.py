"""The rubric judge with the scripted provider: decisions, skipping, per-tree mode, and errors that never pass."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ehrguard.clinsql.data import load_gradings, load_split, task_key
from ehrguard.clinsql.judge import calls_needed, judge_tree
from ehrguard.clinsql.rubric import parse_tree, score_tree
from ehrguard.errors import LLMError, StructuredOutputError
from ehrguard.llm import LLM, scripted

_ids = itertools.count()
TREE = parse_tree({"id": "root", "sub_tasks": [
    {"id": "cohort", "sub_tasks": [{"id": "gender", "critical": True, "requirements": "filters women"}]},
    {"id": "concept", "sequential": True, "sub_tasks": [{"id": "drug", "requirements": "finds the drug"},
                                                         {"id": "route", "requirements": "inpatient route"}]},
]})


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("EHRGUARD_LLM_CACHE", "off")


def judge(replies, **kw):
    name = f"judge{next(_ids)}"
    provider = scripted(name).enqueue(*replies)
    return judge_tree(TREE, question="q", artifact="SQL query", content="SELECT 1", llm=LLM(f"scripted/{name}"), **kw), provider


def leaf(score):
    return json.dumps({"score": score, "explanation": "because"})


def test_per_leaf_decisions_skip_what_cannot_count():
    j, p = judge([leaf(1), leaf(0)])  # gender passes, drug fails: route sits behind a failed sequential sibling
    assert j.calls == 2 and set(j.decisions) == {"gender", "drug"} and j.score == pytest.approx(0.5)
    assert "finds the drug" in p.history[1][0]["content"]
    j, _ = judge([leaf(1), leaf(0), leaf(1)], skip=False)
    assert j.calls == 3 and j.score == pytest.approx(0.5)  # the same score, one call more


def test_an_unparsable_reply_is_an_error_never_a_pass():
    # The reference scorer would read this "1" (in 401) as a pass.
    with pytest.raises(StructuredOutputError):
        judge(["Error 401: Unauthorized", "Error 401: Unauthorized"])
    with pytest.raises(StructuredOutputError):
        judge([json.dumps({"score": 2, "explanation": "x"}), json.dumps({"score": "1", "explanation": "x"})])


def test_per_tree_mode_is_one_call_and_must_decide_every_leaf():
    decisions = [{"id": i, "score": s, "explanation": "e"} for i, s in (("gender", 1), ("drug", 1), ("route", 0))]
    j, p = judge([json.dumps({"decisions": decisions})], mode="per-tree")
    assert j.calls == 1 and j.score == pytest.approx(((1 * 1 + 1 * 0) / 2 + 1) / 2)
    assert "route: inpatient route" in p.history[0][0]["content"]
    with pytest.raises(LLMError, match="undecided"):
        judge([json.dumps({"decisions": decisions[:2]})], mode="per-tree")


def test_skipping_never_changes_a_published_score(shared_data: Path):
    tasks = load_split(shared_data / "clinsql" / "validation")
    saved = total = 0
    for e in load_gradings(shared_data / "clinsql" / "gradings" / "gpt-5-mini" / "validation_detailed_grading.json"):
        t = tasks[task_key(e["sample_path"])]
        for tree, key in ((t.sql_tree(), "sql_evaluations"), (t.results_tree(), "results_evaluations")):
            decisions = {k: v["score"] for k, v in e[key].items()}
            judged: dict[str, float] = {}
            from ehrguard.clinsql.rubric import needed_leaves

            pending = needed_leaves(tree, judged)
            while pending:
                judged[pending[0].id] = decisions.get(pending[0].id, 0.0)
                pending = needed_leaves(tree, judged)
            assert score_tree(tree, judged) == pytest.approx(score_tree(tree, decisions))
            assert len(judged) == calls_needed(tree, decisions, "per-leaf", skip=True)
            saved += len(tree.leaves()) - len(judged)
            total += len(tree.leaves())
    assert 0 < saved < total
