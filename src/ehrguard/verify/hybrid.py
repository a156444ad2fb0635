"""``hybrid``: the offline verifier first; an LLM only for the cases it cannot settle.

Clear cases are decided offline: a candidate with no findings for a clearly answerable
question is preserved; a correction from a known question form stands; an unmistakable
refusal (classifier at least ``clear_refusal`` sure) is given. The rest go to one LLM call
that sees the offline evidence: the SQL findings, the classifier's probabilities, and what
the offline layer would have done (like the ``-Cls`` methods, with evidence from the database).
"""

from __future__ import annotations

import json
from typing import Any

from ehrguard.verify.llm_methods import JOINT_SCHEMA, LLMMethod, prompt_hashes, to_verdict
from ehrguard.verify.methods import Case, register_method
from ehrguard.verify.offline.verifier import OfflineVerifier
from ehrguard.verify.verdict import Exchange, Verdict


class Hybrid(LLMMethod):
    name = "hybrid"
    prompts = ("joint.txt",)

    def __init__(self, model: str | None, *, operating_point: str = "balanced", clear_answerable: float | str = 0.9,
                 clear_refusal: float | str = 0.97, call_log: str | None = None, **kw: Any) -> None:
        super().__init__(model, call_log=call_log, **kw)
        self.offline = OfflineVerifier(operating_point=operating_point)
        self.clear_answerable = float(clear_answerable)
        self.clear_refusal = float(clear_refusal)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "offline": self.offline.describe(), "clear_answerable": self.clear_answerable,
                "clear_refusal": self.clear_refusal, "prompt_sha256": prompt_hashes(["case.txt", "joint.txt"])}

    def settled_offline(self, v: Verdict) -> bool:
        """Clear enough to stand without a model: a clean preserve of a clearly answerable question (or one whose
        template the candidate answers like), a correction from a known question, or an unmistakable refusal."""
        evidence = v.evidence
        assert evidence is not None, "the offline verifier's verdicts carry their evidence"
        if v.action == "preserve":
            known = evidence.known
            agrees_with_template = known is not None and known.source == "template" and known.agrees
            return not v.findings and (evidence.question.category["answerable"] >= self.clear_answerable or agrees_with_template)
        if v.action == "correct":
            fix = evidence.replacement
            return fix is not None and fix.kind in ("template", "form")
        return (v.confidence or 0.0) >= self.clear_refusal

    def verify(self, case: Case) -> Verdict:
        offline = self.offline.verify(case)
        if self.settled_offline(offline):
            offline.details["decided"] = "offline"
            return offline
        offline_evidence = offline.evidence
        assert offline_evidence is not None
        evidence = {
            "offline_decision": offline.action + (f" ({offline.subtype})" if offline.subtype else ""),
            "offline_sql": offline.sql if offline.action == "correct" else None,
            "question_classifier": {k: round(v, 3) for k, v in offline_evidence.question.category.items()},
            "sql_findings": [f"{f.check}: {f.message}" for f in offline.findings],
        }
        messages = self._joint_messages(case, None)
        messages[-1]["content"] += ("\n\nEvidence from ehrguard's offline checks against the database (a signal, not the answer):\n"
                                    + json.dumps(evidence, indent=1))
        trace: list[Exchange] = []
        decision = self._ask(messages, JOINT_SCHEMA, trace)
        verdict = to_verdict(case, decision, trace, decided="llm", offline=evidence)
        verdict.findings = offline.findings
        return verdict


@register_method("hybrid", "offline first; an LLM (with the offline evidence) only for the unclear cases",
                 options=("operating_point", "clear_answerable", "clear_refusal", "call_log", "max_tokens"))
def _make_hybrid(model: str | None = None, **options: Any) -> Hybrid:
    return Hybrid(model, **options)
