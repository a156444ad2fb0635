"""The seven published LLM methods of SCARE (§5.2, Appendix F), on any model of the providers layer.

* ``two_stage``: classify the question; only an answerable one goes to a verifier/corrector.
* ``single_turn``: one call decides preserve / correct / ambiguous / unanswerable.
* ``single_turn_veri``: single_turn, then a verifier call; a rejected decision is redone with
  the verifier's feedback (at most ``max_retries`` times).
* ``multi_turn_selfref``: answer, give self-feedback, refine; up to ``rounds`` rounds (10 in the
  reference code), stopping when the feedback judges the answer correct.
* ``*_cls``: the same, with the two-stage classifier's label and reasoning in the prompt.

Prompts are our own, versioned files in ``verify/prompts``; their SHA-256 goes into every
run log. Replies are JSON validated against a schema by the LLM layer (asked once more, then
an error). A model failure raises: the benchmark records it as an error, never as a label.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from ehrguard.db.engine import Result
from ehrguard.errors import ConfigError, DatabaseError, LLMError
from ehrguard.labels import ACTIONS, AMBIGUOUS_SUBTYPES, QUESTION_CATEGORIES, UNANSWERABLE_SUBTYPES
from ehrguard.llm import LLM, GenerateConfig
from ehrguard.verify.methods import Case, DatabaseContext, register_method
from ehrguard.verify.verdict import Exchange, Verdict

PROMPTS = Path(__file__).parent / "prompts"
SUBTYPES = [*AMBIGUOUS_SUBTYPES, *UNANSWERABLE_SUBTYPES, "none"]

CLASSIFY_SCHEMA = {"type": "object", "required": ["reasoning", "label", "subtype"], "properties": {
    "reasoning": {"type": "string"}, "label": {"type": "string", "enum": list(QUESTION_CATEGORIES)},
    "subtype": {"type": "string", "enum": SUBTYPES}}}
CORRECT_SCHEMA = {"type": "object", "required": ["reasoning", "action", "sql"], "properties": {
    "reasoning": {"type": "string"}, "action": {"type": "string", "enum": ["preserve", "correct"]}, "sql": {"type": "string"}}}
JOINT_SCHEMA = {"type": "object", "required": ["reasoning", "action", "sql", "subtype", "message"], "properties": {
    "reasoning": {"type": "string"}, "action": {"type": "string", "enum": list(ACTIONS)}, "sql": {"type": "string"},
    "subtype": {"type": "string", "enum": SUBTYPES}, "message": {"type": "string"}}}
FEEDBACK_SCHEMA = {"type": "object", "required": ["feedback", "correct"], "properties": {
    "feedback": {"type": "string"}, "correct": {"type": "boolean"}}}


@cache
def prompt(name: str) -> str:
    return (PROMPTS / name).read_text()


def prompt_hashes(names: list[str]) -> dict[str, str]:
    return {n: hashlib.sha256((PROMPTS / n).read_bytes()).hexdigest()[:16] for n in names}


def evidence(db_id: str) -> str:
    path = PROMPTS / "evidence" / f"{db_id}.txt"
    return (path if path.is_file() else PROMPTS / "evidence" / "default.txt").read_text().strip()


def schema_text(ctx: DatabaseContext, sample_rows: bool = True) -> str:
    """CREATE TABLE statements, each followed by one example row (as SCARE's prompts show a schema); built once per
    open database and kept with it."""

    def build() -> str:
        parts = []
        for t in ctx.schema.tables:
            cols = ", ".join(f"{c.name} {c.type}".strip() for c in t.columns)
            text = f"CREATE TABLE {t.qualified_name} ({cols});"
            if sample_rows:
                try:
                    row = ctx.db.execute(f"SELECT * FROM {t.qualified_name} LIMIT 1", timeout_s=10).rows
                except DatabaseError:
                    row = []
                if row:
                    text += "\n-- example row: " + ", ".join("NULL" if v is None else repr(v) for v in row[0])
            parts.append(text)
        return "\n".join(parts)

    return ctx.derived(("llm_schema_text", sample_rows), build)


def execution_summary(ctx: DatabaseContext, sql: str, max_rows: int = 10) -> str:
    if not sql.strip() or sql.strip().lower() in ("null", "none", "n/a"):
        return "(no query)"
    try:
        result = ctx.db.execute(sql, timeout_s=30, max_rows=max_rows)
    except DatabaseError as exc:
        return f"ERROR: {exc}"
    assert isinstance(result, Result)
    if not result.rows:
        return "no rows"
    more = " (more rows not shown)" if result.truncated else ""
    return f"columns {result.columns}; rows {result.rows}{more}"


class LLMMethod:
    """Shared machinery: the model, the prompts, calling with a schema and keeping the trace."""

    name = "llm"
    prompts: tuple[str, ...] = ()

    def __init__(self, model: str | None, *, classify: bool = False, max_retries: int | str = 2, rounds: int | str = 10,
                 max_tokens: int | str = 2048, call_log: str | None = None, llm: LLM | None = None) -> None:
        if not model and llm is None:
            raise ConfigError(f"{self.name} needs a model: --model provider/model (e.g. openai/gpt-4o-mini, local/smollm2).")
        self.llm = llm or LLM(model or "", log=call_log)
        self.classify = classify
        self.max_retries = int(max_retries)
        self.rounds = int(rounds)
        self.max_tokens = int(max_tokens)

    def describe(self) -> dict[str, Any]:
        names = list(self.prompts) + (["classify.txt"] if self.classify else []) + ["case.txt"]
        return {"method": self.name, **self.llm.describe(), "prompt_sha256": prompt_hashes(sorted(set(names))),
                "max_retries": self.max_retries, "rounds": self.rounds, "max_tokens": self.max_tokens}

    def _system(self, template: str, ctx: DatabaseContext) -> str:
        return prompt(template).format(evidence=evidence(ctx.db_id), schema=schema_text(ctx))

    def _case(self, case: Case, result: str | None = None) -> str:
        """The question, the candidate and what it returns (``result``: that summary, when already computed)."""
        if result is None:
            result = execution_summary(case.context, case.sql)
        return prompt("case.txt").format(question=case.question, sql=case.sql, result=result)

    def _ask(self, messages: list[dict[str, str]], schema: dict[str, Any], trace: list[Exchange]) -> dict[str, Any]:
        c = self.llm.complete(messages, GenerateConfig(temperature=0.0, seed=0, max_tokens=self.max_tokens, response_schema=schema))
        trace.append(Exchange(self.llm.model, [dict(m) for m in messages], c.text, dict(c.usage), c.latency_s, c.cached, c.call_id))
        return c.parsed

    def _classify(self, case: Case, trace: list[Exchange]) -> dict[str, Any]:
        messages = [{"role": "system", "content": self._system("classify.txt", case.context)},
                    {"role": "user", "content": f"Question: {case.question}"}]
        return self._ask(messages, CLASSIFY_SCHEMA, trace)

    def _joint_messages(self, case: Case, hint: dict[str, Any] | None, result: str | None = None) -> list[dict[str, str]]:
        user = self._case(case, result)
        if hint is not None:
            user += (f"\n\nA separate classifier judged this question {hint['label']}"
                     + (f" ({hint['subtype']})" if hint.get("subtype") not in (None, "none") else "")
                     + f". Its reasoning: {hint['reasoning']}\nUse this as a signal, not as the answer.")
        return [{"role": "system", "content": self._system("joint.txt", case.context)}, {"role": "user", "content": user}]

    def _feedback(self, case: Case, result: str, decision: dict[str, Any], trace: list[Exchange]) -> dict[str, Any]:
        """A review of ``decision``; ``result`` is what the candidate returns (computed once per verification)."""
        action = decision["action"]
        shown = decision["sql"] if action == "correct" else case.sql
        returns = result if action == "preserve" else execution_summary(case.context, shown) if action == "correct" else ""
        user = (self._case(case, result) + f"\n\nDecision: {action}"
                + (f"\nSQL after the decision:\n{shown}\nIt returns: {returns}" if action in ("preserve", "correct") else "")
                + f"\nReasoning given: {decision.get('reasoning', '')}")
        return self._ask([{"role": "system", "content": self._system("feedback.txt", case.context)}, {"role": "user", "content": user}],
                         FEEDBACK_SCHEMA, trace)


def to_verdict(case: Case, decision: dict[str, Any], trace: list[Exchange], **details: Any) -> Verdict:
    """Map a parsed decision to a Verdict; a decision that cannot stand is an error, never guessed."""
    action = decision["action"]
    subtype = decision.get("subtype")
    subtype = None if subtype in (None, "none") else subtype
    message = decision.get("message") or decision.get("reasoning", "")
    if action == "preserve":
        return Verdict("preserve", sql=case.sql, message=message, trace=trace, details=details)
    if action == "correct":
        sql = (decision.get("sql") or "").strip()
        if not sql:
            raise LLMError("The model chose 'correct' but gave no SQL.")
        return Verdict("correct", sql=sql, message=message, trace=trace, details=details)
    if subtype is not None and subtype not in (AMBIGUOUS_SUBTYPES if action == "ambiguous" else UNANSWERABLE_SUBTYPES):
        subtype = None  # a subtype of the other category: keep the label, drop the subtype
    return Verdict(action, subtype=subtype, message=message, trace=trace, details=details)


class TwoStage(LLMMethod):
    name = "two_stage"
    prompts = ("classify.txt", "correct.txt")

    def verify(self, case: Case) -> Verdict:
        trace: list[Exchange] = []
        label = self._classify(case, trace)
        if label["label"] != "answerable":
            return to_verdict(case, {"action": label["label"], "subtype": label["subtype"], "message": label["reasoning"]},
                              trace, stage1=label)
        messages = [{"role": "system", "content": self._system("correct.txt", case.context)}, {"role": "user", "content": self._case(case)}]
        decision = self._ask(messages, CORRECT_SCHEMA, trace)
        return to_verdict(case, decision, trace, stage1=label)


class SingleTurn(LLMMethod):
    name = "single_turn"
    prompts = ("joint.txt",)

    def verify(self, case: Case) -> Verdict:
        trace: list[Exchange] = []
        hint = self._classify(case, trace) if self.classify else None
        decision = self._ask(self._joint_messages(case, hint), JOINT_SCHEMA, trace)
        return to_verdict(case, decision, trace, classifier=hint)


class SingleTurnVeri(LLMMethod):
    name = "single_turn_veri"
    prompts = ("joint.txt", "feedback.txt")
    follow_up = "A verifier rejected this decision: {feedback}\nDecide again."

    def verify(self, case: Case) -> Verdict:
        trace: list[Exchange] = []
        hint = self._classify(case, trace) if self.classify else None
        decision, revisions = self._decide_and_revise(case, hint, trace, self.max_retries)
        return to_verdict(case, decision, trace, classifier=hint, retries=revisions)

    def _decide_and_revise(self, case: Case, hint: dict[str, Any] | None, trace: list[Exchange], limit: int) -> tuple[dict[str, Any], int]:
        """Decide, then review and redo until a review accepts the decision or ``limit`` revisions were made."""
        result = execution_summary(case.context, case.sql)  # the candidate runs once, whatever the number of rounds
        messages = self._joint_messages(case, hint, result)
        decision = self._ask(messages, JOINT_SCHEMA, trace)
        revisions = 0
        while revisions < limit:
            review = self._feedback(case, result, decision, trace)
            if review["correct"]:
                break
            revisions += 1
            messages = [*messages, {"role": "assistant", "content": trace[-2].reply},
                        {"role": "user", "content": self.follow_up.format(feedback=review["feedback"])}]
            decision = self._ask(messages, JOINT_SCHEMA, trace)
        return decision, revisions


class MultiTurnSelfRef(SingleTurnVeri):
    """The conversation refines its own answer: ``rounds`` counts answers, the first included."""

    name = "multi_turn_selfref"
    follow_up = "Your own review of that answer: {feedback}\nRefine your answer."

    def verify(self, case: Case) -> Verdict:
        trace: list[Exchange] = []
        hint = self._classify(case, trace) if self.classify else None
        decision, revisions = self._decide_and_revise(case, hint, trace, self.rounds - 1)
        return to_verdict(case, decision, trace, classifier=hint, rounds=revisions + 1)


OPTIONS = ("max_retries", "rounds", "max_tokens", "call_log")


def _factory(cls: type[LLMMethod], name: str, classify: bool):
    def make(model: str | None = None, **options: Any) -> LLMMethod:
        method = cls(model, classify=classify, **options)
        method.name = name
        return method

    return make


for _cls, _name, _desc in (
    (TwoStage, "two_stage", "LLM: classify the question, then verify/correct answerable ones (Two-Stage)"),
    (SingleTurn, "single_turn", "LLM: one call decides all four actions (Single-Turn)"),
    (SingleTurnVeri, "single_turn_veri", "LLM: single-turn plus a verifier that triggers bounded retries (Single-Turn-Veri)"),
    (MultiTurnSelfRef, "multi_turn_selfref", "LLM: answer, self-feedback, refine, up to 10 rounds (Multi-Turn-SelfRef)"),
):
    register_method(_name, _desc, options=OPTIONS)(_factory(_cls, _name, classify=False))
    if _cls is not TwoStage:
        register_method(f"{_name}_cls", _desc.replace(")", "-Cls)") + " with the classifier's label as a signal",
                        options=OPTIONS)(_factory(_cls, f"{_name}_cls", classify=True))
