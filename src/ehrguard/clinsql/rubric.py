"""Rubric trees: ClinSQL's hierarchical scoring of a SQL query or a result table.

Leaves are judged 0 or 1. An internal node that is not sequential scores 0 when any critical
child scores below 1, else the weight-averaged score of its non-critical children (1 when it
has none). A sequential node walks its children in order, adding weight x score, stops after
the first child below 1, and divides by the weights it visited (``variant="clinsql"``, the
reference scorer) or by all its children's weights (``variant="mind2web2"``: skipped
children count as 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.errors import DatasetError

VARIANTS = ("clinsql", "mind2web2")


@dataclass
class Node:
    id: str
    requirements: str = ""
    weight: float = 1.0
    sequential: bool = False
    critical: bool = False
    children: list[Node] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def leaves(self) -> list[Node]:
        return [self] if self.is_leaf else [leaf for c in self.children for leaf in c.leaves()]


def parse_tree(raw: Mapping[str, Any], where: str = "tree") -> Node:
    """A tree from its published JSON (``id``, ``requirements``, ``weight``, ``sequential``, ``critical``, ``sub_tasks``).

    Raises:
        DatasetError: a node without an id, or two nodes with the same id.
    """
    seen: set[str] = set()

    def build(node: Mapping[str, Any], path: str) -> Node:
        if not isinstance(node, Mapping) or "id" not in node:
            raise DatasetError(f"{where}: node at {path} has no id.")
        if node["id"] in seen:
            raise DatasetError(f"{where}: node id {node['id']!r} appears twice; leaf decisions are keyed by id.")
        seen.add(node["id"])
        children = [build(c, f"{path}/{node['id']}") for c in node.get("sub_tasks") or []]
        return Node(node["id"], node.get("requirements", ""), float(node.get("weight", 1)), bool(node.get("sequential", False)),
                    bool(node.get("critical", False)), children)

    return build(raw, "")


def load_tree(path: str | Path) -> Node:
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"Cannot read the rubric tree {path}: {exc}") from exc
    return parse_tree(raw, str(path))


def score_tree(node: Node, leaf_scores: Mapping[str, float], variant: str = "clinsql") -> float:
    """The node's score from its leaves' 0/1 decisions (a leaf with no decision scores 0)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant is one of {VARIANTS}, got {variant!r}")
    if node.is_leaf:
        return float(leaf_scores.get(node.id, 0.0))
    if node.sequential:
        total = visited = 0.0
        for child in node.children:
            s = score_tree(child, leaf_scores, variant)
            total += child.weight * s
            visited += child.weight
            if s < 1:
                break
        denominator = sum(c.weight for c in node.children) if variant == "mind2web2" else visited
        return total / denominator if denominator else 0.0
    scores = [(c, score_tree(c, leaf_scores, variant)) for c in node.children]
    if any(c.critical and s < 1 for c, s in scores):
        return 0.0
    plain = [(c, s) for c, s in scores if not c.critical]
    if not plain:
        return 1.0
    weights = sum(c.weight for c, _ in plain)
    return sum(c.weight * s for c, s in plain) / weights if weights else 0.0


def needed_leaves(node: Node, decided: Mapping[str, float]) -> list[Node]:
    """Leaves whose decision can still change the score, given the ones ``decided`` so far.

    Under a sequential node, children after the first one known to score below 1 cannot
    count: the judge can skip them.
    """
    if node.is_leaf:
        return [] if node.id in decided else [node]
    out: list[Node] = []
    for child in node.children:
        out += needed_leaves(child, decided)
        if node.sequential:
            if needed_leaves(child, decided):
                break  # not known yet whether this child passes: later siblings wait
            if score_tree(child, decided) < 1:
                break
    return out
