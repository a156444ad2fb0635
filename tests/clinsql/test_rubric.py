"""Rubric-tree scoring on hand-built trees, and the reproduction of the published ClinSQL scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.clinsql.rubric import Node, needed_leaves, parse_tree, score_tree
from ehrguard.errors import DatasetError


def leaf(i, critical=False, weight=1):
    return {"id": i, "critical": critical, "weight": weight, "sub_tasks": []}


TREE = parse_tree({"id": "root", "sub_tasks": [
    {"id": "cohort", "weight": 3, "sub_tasks": [leaf("gender", critical=True), leaf("age", critical=True)]},
    {"id": "concept", "weight": 2, "sequential": True,
     "sub_tasks": [leaf("drug", weight=1), leaf("route", weight=2), leaf("dose", weight=1)]},
    {"id": "output", "weight": 1, "sub_tasks": [leaf("a", weight=1), leaf("b", weight=3), leaf("must", critical=True)]},
]})


def test_critical_children_gate_and_non_critical_ones_average_by_weight():
    all_ones = {n.id: 1 for n in TREE.leaves()}
    assert score_tree(TREE, all_ones) == 1.0
    # a critical leaf failing zeroes its parent; the root averages the others by weight (none of the root's children are critical)
    assert score_tree(TREE, {**all_ones, "gender": 0}) == pytest.approx((3 * 0 + 2 * 1 + 1 * 1) / 6)
    # only critical children: 1 when they pass
    assert score_tree(TREE.children[0], all_ones) == 1.0
    # non-critical weighted average under a passing critical child
    assert score_tree(TREE.children[2], {**all_ones, "b": 0}) == pytest.approx(1 / 4)
    assert score_tree(TREE.children[2], {**all_ones, "must": 0}) == 0.0


def test_sequential_nodes_stop_at_the_first_failure():
    concept = TREE.children[1]
    ones = {"drug": 1, "route": 1, "dose": 1}
    assert score_tree(concept, {**ones, "route": 0}) == pytest.approx((1 * 1 + 2 * 0) / 3)  # dose is not visited
    assert score_tree(concept, {**ones, "route": 0}, variant="mind2web2") == pytest.approx(1 / 4)  # skipped counts as 0
    assert score_tree(concept, {**ones, "drug": 0}) == 0.0
    assert score_tree(concept, {**ones, "dose": 0}) == pytest.approx(3 / 4)


def test_missing_leaf_decisions_score_zero_and_duplicate_ids_are_refused():
    assert score_tree(TREE, {}) == 0.0
    with pytest.raises(DatasetError, match="twice"):
        parse_tree({"id": "r", "sub_tasks": [leaf("x"), leaf("x")]})


def test_leaves_behind_a_failed_sequential_sibling_need_no_judge():
    def ids(nodes: list[Node]) -> list[str]:
        return [n.id for n in nodes]

    assert ids(needed_leaves(TREE, {})) == ["gender", "age", "drug", "a", "b", "must"]
    assert ids(needed_leaves(TREE, {"drug": 0})) == ["gender", "age", "a", "b", "must"]
    assert ids(needed_leaves(TREE, {"drug": 1})) == ["gender", "age", "route", "a", "b", "must"]


MODELS = ["DeepSeek-R1-0528", "Llama-4-Scout-17B-16E-Instruct", "Qwen3-Coder-480B-A35B-Instruct-FP8", "SQLCoder-7B-2",
          "gemini-2.5-pro", "gpt-5-mini"]


@pytest.mark.parametrize("model", MODELS)
def test_published_scores_are_reproduced_exactly(shared_data: Path, model: str):
    g = shared_data / "clinsql" / "gradings" / model
    r = CliRunner().invoke(cli, ["clinsql", "rescore", "--gradings", str(g / "validation_detailed_grading.json"),
                                 "--split", str(shared_data / "clinsql" / "validation"), "--published",
                                 str(g / "validation_scoring_results.json"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    published = json.loads((g / "validation_scoring_results.json").read_text())
    assert out["comparison"]["max_abs_delta"] <= 1e-6 and out["comparison"]["tasks"] == len(published["samples"])
    assert out["summary"]["total_samples"] == published["summary"]["total_samples"]
    for d in ("easy", "medium", "hard"):
        assert out["summary"]["difficulty_breakdown"][d]["average_sql_score"] == pytest.approx(
            published["summary"]["difficulty_breakdown"][d]["average_sql_score"], abs=1e-6)
    assert len(out["missing"]) == 190 - len(published["samples"])
