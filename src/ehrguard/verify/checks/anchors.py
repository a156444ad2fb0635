"""A period tied to a visit is counted from the start of the visit the question names.

"The first 6 hours of the ICU stay" starts when the patient reached the unit, not when the hospital admitted them
(hours or days earlier); "within 24 hours of admission to hospital" starts at the hospital admission.
``wrong_anchor`` (error, no repair: which join reaches the other visit's start is the query's to choose) speaks when
the question ties a period to one kind of visit, and the query counts time from the other kind's start column and
never reads the named kind's. Which column starts a visit comes from the database profile
(:func:`~ehrguard.verify.checks.alignment.visit_start`); the phrases are general English.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.alignment import visit_start
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found
from ehrguard.verify.verdict import Finding

_AMOUNT = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty-four|forty-eight|seventy-two|a|an)"
_UNIT = r"(?:hours?|hrs?|h|days?|minutes?|mins?|weeks?)"
_OWNER = r"(?:(?:the|his|her|their|this|that|its|an?|each|every|patient\s+\d+'s|\d+'s|[a-z]+'s)\s+)*"
_ICU = r"(?:icu|intensive care(?: unit)?|unit|micu|sicu|ccu|cvicu|tsicu)"
_HOSPITAL = r"(?:hospital|hospitali[sz]ation|inpatient)"
# "the first 6 hours of the ICU stay", "within 24 hours of ICU admission", "48 h after arrival in the ICU"
_PERIOD = (rf"\b(?:(?:first|initial|last|final)\s+{_AMOUNT}\s*-?\s*{_UNIT}|{_AMOUNT}\s*-?\s*{_UNIT})\s+"
           rf"(?:of|after|following|from|since|into|within)\s+{_OWNER}")
_TIED = {
    "stay": re.compile(rf"{_PERIOD}(?:{_ICU}\s+(?:stay|admission|visit|arrival|transfer|course)|(?:arrival|admission|transfer)"
                       rf"\s+(?:in|to|into)\s+(?:the\s+)?{_ICU})\b", re.IGNORECASE),
    "admission": re.compile(rf"{_PERIOD}(?:{_HOSPITAL}\s+(?:stay|admission|visit|arrival|course)?|(?:arrival|admission)\s+"
                            rf"(?:in|to|into)\s+(?:the\s+)?{_HOSPITAL})\b", re.IGNORECASE),
}
_OTHER = {"stay": "admission", "admission": "stay"}
_VISIT = {"stay": "ICU stay", "admission": "hospital admission"}


def check_anchor(ctx: SqlContext) -> CheckResult:
    """The question counts a period from one kind of visit; the query counts it from the other kind's start."""
    if ctx.tree is None:
        return NOTHING
    asked = [kind for kind, pattern in _TIED.items() if pattern.search(ctx.question)]
    if len(asked) != 1:
        return NOTHING
    kind = asked[0]
    want, other = visit_start(ctx, kind), visit_start(ctx, _OTHER[kind])
    if want is None or other is None or want == other:
        return NOTHING
    read = {c.name.lower() for c in ctx.tree.find_all(exp.Column)}
    if other.lower() not in read or want.lower() in read:
        return NOTHING
    return found(Finding("wrong_anchor", "error",
                         f"The question counts the period from the start of the {_VISIT[kind]}; the query counts it from "
                         f"{other} (the start of the {_VISIT[_OTHER[kind]]}) and never reads {want}.",
                         ctx.span_of(other)))
