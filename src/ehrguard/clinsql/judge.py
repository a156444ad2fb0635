"""The LLM judge of rubric leaves.

A leaf decision is a structured reply ``{"score": 0|1, "explanation": "..."}`` validated by
the LLM layer (asked once more, then an error). The reference scorer reads any unparsable
reply that contains the character "1" as a pass, so an API error such as "401 Unauthorized"
scores; here such a reply is an error and the task is recorded as failed, never scored.

Modes: ``per-leaf`` (one call per leaf) or ``per-tree`` (one call for all leaves of a tree);
with ``skip`` the judge is not asked about leaves that cannot change the score (behind a
failed sibling of a sequential node).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.clinsql.rubric import Node, needed_leaves, score_tree
from ehrguard.errors import LLMError
from ehrguard.llm import LLM, GenerateConfig

PROMPTS = Path(__file__).parent / "prompts"
LEAF_SCHEMA = {"type": "object", "required": ["score", "explanation"], "additionalProperties": False,
               "properties": {"score": {"type": "integer", "enum": [0, 1]}, "explanation": {"type": "string"}}}
TREE_SCHEMA = {"type": "object", "required": ["decisions"], "properties": {"decisions": {"type": "array", "items": {
    "type": "object", "required": ["id", "score", "explanation"],
    "properties": {"id": {"type": "string"}, "score": {"type": "integer", "enum": [0, 1]}, "explanation": {"type": "string"}}}}}}
MODES = ("per-leaf", "per-tree")


@dataclass
class Judgement:
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)  # leaf id -> {score, explanation, critical, weight}
    score: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _critical_weight(tree: Node) -> dict[str, tuple[bool, float]]:
    return {leaf.id: (leaf.critical, leaf.weight) for leaf in tree.leaves()}


def judge_tree(tree: Node, *, question: str, artifact: str, content: str, llm: LLM, mode: str = "per-leaf", skip: bool = True,
               max_tokens: int = 400) -> Judgement:
    """Judge the leaves of ``tree`` for one artifact (``"SQL query"`` or ``"result table"``) and score it.

    Raises:
        LLMError: a call failed or its reply never conformed; the task must be recorded as an error.
    """
    if mode not in MODES:
        raise ValueError(f"mode is one of {MODES}")
    j = Judgement()
    meta = _critical_weight(tree)

    def ask(template: str, schema: dict[str, Any], **fields: str) -> dict[str, Any]:
        text = (PROMPTS / template).read_text().format(question=question, artifact=artifact, content=content, **fields)
        c = llm.complete([{"role": "user", "content": text}],
                         GenerateConfig(temperature=0.0, seed=0, max_tokens=max_tokens, response_schema=schema))
        j.calls += 1
        j.prompt_tokens += c.usage.get("prompt_tokens", 0)
        j.completion_tokens += c.usage.get("completion_tokens", 0)
        return c.parsed

    if mode == "per-tree":
        leaves = tree.leaves()
        reply = ask("judge_tree.txt", TREE_SCHEMA, requirements="\n".join(f"{leaf.id}: {leaf.requirements}" for leaf in leaves))
        got = {d["id"]: d for d in reply["decisions"]}
        missing = [leaf.id for leaf in leaves if leaf.id not in got]
        if missing:
            raise LLMError(f"The judge left requirement(s) {', '.join(missing[:5])} undecided.")
        j.decisions = {i: {"score": float(got[i]["score"]), "explanation": got[i]["explanation"],
                           "critical": meta[i][0], "weight": meta[i][1]}
                       for i in meta}
    else:
        pending = needed_leaves(tree, {}) if skip else tree.leaves()
        while pending:
            leaf = pending[0]
            reply = ask("judge_leaf.txt", LEAF_SCHEMA, requirement=leaf.requirements)
            j.decisions[leaf.id] = {"score": float(reply["score"]), "explanation": reply["explanation"],
                                    "critical": leaf.critical, "weight": leaf.weight}
            scores = {k: v["score"] for k, v in j.decisions.items()}
            pending = needed_leaves(tree, scores) if skip else [p for p in pending[1:]]
    j.score = score_tree(tree, {k: v["score"] for k, v in j.decisions.items()})
    return j


def calls_needed(tree: Node, decisions: dict[str, float], mode: str, skip: bool) -> int:
    """How many judge calls a tree takes when the judge decides as ``decisions`` (for the cost model)."""
    if mode == "per-tree":
        return 1
    if not skip:
        return len(tree.leaves())
    decided: dict[str, float] = {}
    calls = 0
    pending = needed_leaves(tree, decided)
    while pending:
        decided[pending[0].id] = decisions.get(pending[0].id, 0.0)
        calls += 1
        pending = needed_leaves(tree, decided)
    return calls


def judge_outputs(split_dir: str | Path, outputs_dir: str | Path, llm: LLM, *, mode: str = "per-leaf", skip: bool = True,
                  limit: int | None = None, max_rows: int = 30, concurrency: int = 4) -> dict[str, Any]:
    """Judge a model's outputs (published layout) with ``llm``; returns gradings in the published
    ``*_detailed_grading.json`` shape (plus ``errors``), which ``rescore`` reads back."""
    from ehrguard.clinsql.data import load_split

    tasks = list(load_split(split_dir).values())[:limit]
    evaluations, errors = [], []
    usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    def one(t: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[Judgement]]:
        folder = Path(outputs_dir) / t.key
        sql_file, csv_file = folder / f"sql_{t.id}.sql", folder / f"result_{t.id}.csv"
        if not sql_file.is_file():
            return None, None, []  # no output: not graded, as in the published gradings
        csv_text = "\n".join(csv_file.read_text().splitlines()[: max_rows + 1]) if csv_file.is_file() else "(no result file)"
        try:
            sql_j = judge_tree(t.sql_tree(), question=t.question, artifact="SQL query", content=sql_file.read_text(),
                               llm=llm, mode=mode, skip=skip)
            res_j = judge_tree(t.results_tree(), question=t.question, artifact="result table (CSV)", content=csv_text,
                               llm=llm, mode=mode, skip=skip)
        except LLMError as exc:
            return None, {"task": t.key, "error": f"{type(exc).__name__}: {exc}"}, []
        return ({"sample_path": str(folder), "sql_score": sql_j.score, "results_score": res_j.score,
                 "sql_evaluations": sql_j.decisions, "results_evaluations": res_j.decisions}, None, [sql_j, res_j])

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:  # tasks in parallel; the LLM layer caps calls per model
        for evaluation, error, judgements in pool.map(one, tasks):
            if error:
                errors.append(error)
            if evaluation:
                evaluations.append(evaluation)
                for j in judgements:
                    for k in ("calls", "prompt_tokens", "completion_tokens"):
                        usage[k] += getattr(j, k)
    spent = llm.usage.summary().get(llm.model, {})  # every call, the failed tasks' too
    return {"summary": {"judged": len(evaluations), "errors": len(errors), "mode": mode, "skip": skip,
                        "calls": spent.get("calls", 0), "prompt_tokens": spent.get("prompt_tokens", 0),
                        "completion_tokens": spent.get("completion_tokens", 0),
                        "calls_per_judged_task": usage["calls"] / len(evaluations) if evaluations else None},
            "detailed_evaluations": evaluations, "errors": errors}
