"""A thing the question refers to as already known ("how many doses of the drug has 10004733 gotten?") that it never
names, answered by a query that reads every one of them: the count of all the patient's prescriptions answers a
question nobody asked. The question is asked back: which drug?

The reference is a definite noun phrase of a kind of record (the drug, the medication, the antibiotic, the test) that
nothing qualifies (no name, no "with ...", "that ...", "given ...") and that the question does not ask to identify ("what
was the drug ...", "which drug"). The query reads a table that keeps such records by name (the profile's name columns)
and never chooses by that name nor by the item's number. General English; nothing here was taken from a benchmark's
questions.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found
from ehrguard.verify.checks.concepts import name_columns_by_table
from ehrguard.verify.verdict import Finding

# "the drug", "the med", "the antibiotic": a kind of record, as a known one.
_KIND = r"(?:drug|medication|med|medicine|antibiotic|pressor|infusion|lab test|test)"
# What qualifies it, right after it: a name or a clause ("the drug vancomycin", "the drug with the highest dose",
# "the test that ...", "the med given last"), or a word that makes it the thing asked for.
# ("the drug prescribed to 10004733" says of whom, not which: a participle of giving qualifies nothing; where the query
# then picks one by an order or an extreme, "the drug given most often", the check is silent on the query's side)
_QUALIFIED = (r"\s+(?!(?:has|have|had|is|was|were|been|so|to|for|today|yesterday|now|since|during|this|prescribed|given|"
              r"administered|ordered|received|taken|started|stopped)\b)[a-z0-9]")
_REFERENCE = re.compile(rf"(?<!\bwhich )(?<!\bwhat )(?<!\bwhat was )(?<!\bwhat is )(?<!\bname of )\bthe {_KIND}\b"
                        rf"(?!{_QUALIFIED})", re.IGNORECASE)


def check_unnamed_reference(ctx: SqlContext) -> CheckResult:
    """The question refers to "the drug" it never names, and the query reads every one of them."""
    if ctx.tree is None:
        return NOTHING
    m = _REFERENCE.search(ctx.question)
    if m is None:
        return NOTHING
    names = name_columns_by_table(ctx)
    read = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
    held = [t for t in read if t in names]
    if not held:
        return NOTHING
    # The query names something (any text it compares), returns the names (the drug is what is asked), or picks one
    # by an order or an extreme (the drug is "the one most often", "the first"): then the question's drug is that one.
    returned = {c.name.lower() for e in ctx.tree.expressions for c in e.find_all(exp.Column)}
    if any(lit.is_string for lit in ctx.tree.find_all(exp.Literal)) or "itemid" in {c.name.lower() for c in ctx.tree.find_all(exp.Column)} \
            or any(column.lower() in returned for t in held for column in names[t]) \
            or ctx.tree.find(exp.Order, exp.Limit, exp.Max, exp.Min) is not None:
        return NOTHING
    said = m.group(0)
    return found(Finding("unnamed_reference", "error", f"The question refers to '{said}' without naming it; the query reads "
                         f"every one ({', '.join(sorted(held))}).", None,
                         clarify=f"Which one do you mean by '{said}'? Please name it."))
