"""What a verification method decides about one question and its candidate SQL."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from ehrguard.labels import ACTIONS, AMBIGUOUS_SUBTYPES, UNANSWERABLE_SUBTYPES  # noqa: F401 (the subtypes lived here)

if TYPE_CHECKING:
    from ehrguard.verify.offline.evidence import Evidence

Status = Literal["verified", "unverified", "abstained"]
STATUSES: tuple[Status, ...] = ("verified", "unverified", "abstained")
"""What a verdict promises the person who reads it: ``verified`` (the SQL we return runs cleanly, no error remains,
and the verifier is confident enough to show its result as the answer), ``unverified`` (there is a result, but it is
not checked: shown as such, with the reason), ``abstained`` (no answer: the clarifying question or the reason)."""
ABSTENTIONS = ("ambiguous", "unanswerable")


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
    # A question to ask the user back, when the question itself names something the records do not hold and the
    # check knows what was probably meant ("'furosemid' is not in the records; did you mean 'furosemide'?").
    clarify: str | None = None
    # The reason the records cannot answer the question at all, when the check knows it ("These records hold no
    # allergy records"): the verdict is then an abstention with this reason, whatever the SQL returns.
    refuse: str | None = None


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
        status: the trust status of the answer it leads to (see :data:`STATUSES`); a method that
            does not set it gets ``abstained`` for ambiguous/unanswerable and ``unverified`` otherwise.
        reason: why the status is what it is, in one sentence a clinician understands.
        findings: what the static checks saw.
        confidence: the method's confidence in the action, 0-1, when it has one.
        trace: every LLM exchange behind the decision.
        details: what the method saw, as plain data (shown by the API, the web app and run records).
        evidence: the offline verifier's typed evidence behind the decision (None for other methods);
            read it instead of ``details`` in code. Not serialised.
    """

    action: str
    sql: str | None = None
    subtype: str | None = None
    message: str = ""
    status: Status | None = None
    reason: str = ""
    findings: list[Finding] = field(default_factory=list)
    confidence: float | None = None
    trace: list[Exchange] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    evidence: Evidence | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"Unknown verdict action {self.action!r}; expected one of {', '.join(ACTIONS)}.")
        if self.action in ("preserve", "correct") and self.sql is None:
            raise ValueError(f"A {self.action!r} verdict needs the SQL.")
        abstains = self.action in ABSTENTIONS
        if self.status is None:
            self.status = "abstained" if abstains else "unverified"
            self.reason = self.reason or ("The question is not answered: " + self.message if abstains and self.message else
                                          "" if abstains else "Not checked: this method does not verify the SQL it returns.")
        if self.status not in STATUSES:
            raise ValueError(f"Unknown status {self.status!r}; expected one of {', '.join(STATUSES)}.")
        if (self.status == "abstained") != abstains:
            raise ValueError(f"A {self.action!r} verdict cannot be {self.status!r}.")

    @property
    def verified(self) -> bool:
        """The answer can be shown as an answer: the SQL runs cleanly, no error remains, and the verifier is confident."""
        return self.status == "verified"

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
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "evidence"}
        out["output"] = self.output
        return out


def _plain(value: Any) -> Any:
    """``dataclasses.asdict`` for one field's value."""
    if isinstance(value, list):
        return [asdict(v) if hasattr(v, "__dataclass_fields__") else _plain(v) for v in value]
    if isinstance(value, dict):
        import copy

        return copy.deepcopy(value)
    return value
