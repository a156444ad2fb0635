"""What a verification method decides about one question and its candidate SQL."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ACTIONS = ("preserve", "correct", "ambiguous", "unanswerable")
AMBIGUOUS_SUBTYPES = ("vague-question", "vague-word", "ambiguous-reference")
UNANSWERABLE_SUBTYPES = ("small-talk", "out-of-scope", "missing-column", "infeasible-faq")


@dataclass(frozen=True)
class Finding:
    """One observation of a static check, pointing at the part of the SQL it is about.

    ``span`` is a ``(start, end)`` character range in the candidate SQL, or None when the
    finding is about the question or the query as a whole.
    """

    check: str
    severity: str  # "error" (the SQL is wrong), "warning" (likely wrong), "info"
    message: str
    span: tuple[int, int] | None = None
    suggestion: str | None = None  # a replacement for the span, when the check knows one


@dataclass
class Exchange:
    """One LLM call made while deciding, kept so a verdict can be audited."""

    model: str
    messages: list[dict[str, str]]
    reply: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    cached: bool = False
    call_id: str = ""  # the exchange's id in the LLM call log


@dataclass
class Verdict:
    """The decision: preserve or correct the SQL, or flag the question ambiguous/unanswerable.

    Attributes:
        action: one of ``preserve``, ``correct``, ``ambiguous``, ``unanswerable``.
        sql: the final SQL (``preserve``: the candidate; ``correct``: the fixed one), else None.
        subtype: for ambiguous/unanswerable, the kind (see ``AMBIGUOUS_SUBTYPES`` /
            ``UNANSWERABLE_SUBTYPES``), when the method can tell.
        message: what the user should read: the clarifying question, the reason for
            refusing, or what was fixed.
        findings: what the static checks saw.
        confidence: the method's confidence in the action, 0-1, when it has one.
        trace: every LLM exchange behind the decision.
    """

    action: str
    sql: str | None = None
    subtype: str | None = None
    message: str = ""
    findings: list[Finding] = field(default_factory=list)
    confidence: float | None = None
    trace: list[Exchange] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"Unknown verdict action {self.action!r}; expected one of {', '.join(ACTIONS)}.")
        if self.action in ("preserve", "correct") and self.sql is None:
            raise ValueError(f"A {self.action!r} verdict needs the SQL.")

    @property
    def output(self) -> str:
        """What SCARE scores: the final SQL, or ``ambiguous`` / ``unanswerable``."""
        if self.action in ("preserve", "correct"):
            assert self.sql is not None
            return self.sql
        return self.action

    @property
    def llm_calls(self) -> int:
        return len(self.trace)

    @property
    def tokens(self) -> dict[str, int]:
        total = {"prompt": 0, "completion": 0}
        for ex in self.trace:
            total["prompt"] += ex.usage.get("prompt_tokens", 0)
            total["completion"] += ex.usage.get("completion_tokens", 0)
        return total

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["output"] = self.output
        return out
