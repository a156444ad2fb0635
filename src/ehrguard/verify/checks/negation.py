"""Who never had something is found by leaving out everyone who had it, not by keeping the rows of other things.

"How many patients never received aspirin?" answered with ``WHERE drug <> 'aspirin'`` counts every patient with any
other order, including those who also received aspirin: the negation is applied to rows, the question applies it to
people. ``row_negation`` (error, no repair: whether the people with no record at all belong is the asker's to say)
speaks when the question negates, of the people or visits it counts, the value it then names ("patients who never
received aspirin", "stays without a heparin order", "patients were not given vancomycin"), the query excludes that
value row by row (``<>``, ``NOT LIKE``, ``NOT IN`` a list, ``NOT col = ...``) in a table holding several rows per
person, returns or counts people or visits (not per person), and leaving the people out instead (``person NOT IN
(SELECT person ... WHERE col = value)``) changes the answer on this database.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.base import (
    NOTHING,
    CheckResult,
    SqlContext,
    TreeEdit,
    answers_differently,
    found,
    replaced_by,
    rewritten,
    stored_table,
)
from ehrguard.verify.checks.concepts import _IN_PARENTHESES, singular, supported
from ehrguard.verify.checks.conventions import one_row_per_person, visit_ids
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding

# People or visits (a count's subject) followed by a negation of having, receiving or being given something, and the
# words after it to the end of its clause (general English; a drug's name may be long: 'morphine sulfate 2 mg/ml ij
# soln'): "patients who never received", "stays with no", "patients were not given". A negation inside a clause about
# a record ("a stay not in the CCU", "a drug that was not aspirin") is no such negation: that one filters rows.
_PEOPLE_WORDS = r"(?:patients?|people|persons|subjects|individuals)"
_WHO = rf"(?:{_PEOPLE_WORDS}|stays?|admissions?|visits?|encounters?|hospitali[sz]ations?)"
_AUX = r"(?:have|has|had|were|was|are|is|did|do|does|ever|been|yet|got|get)"
_NOT = r"(?:never|not|no|without|didn't|hasn't|haven't|hadn't|wasn't|weren't)"
_REST = r"((?:[^\w,;?]+\w+){1,12})"
_NEGATED = re.compile(
    # the count's own subject: "how many patients never", "count the ICU stays without", "which patients did not"
    rf"\b(?:how many|which|count(?: the)?|number of|list(?: the| all)?|what)\s+(?:[a-z-]+\s+){{0,2}}{_WHO}"
    # ... with what describes them first: "how many patients with an ICU stay never received"
    rf"(?:\s+(?:with|in|from|on|aged|over|under|admitted)(?:\s+[\w-]+){{1,4}}?)?(?:\s+{_AUX}){{0,3}}\s+{_NOT}\b{_REST}"
    # a relative clause on it: "patients who never", "stays that did not", "patients with no"
    rf"|\b{_WHO}\s+(?:(?:who|that|which)(?:\s+{_AUX}){{0,3}}\s+{_NOT}|with no|without)\b{_REST}", re.IGNORECASE)


def _negated_phrases(question: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _NEGATED.finditer(question)]


# The value starts within this many words of the negation ("never received any aspirin"); further on, another clause
# may have begun ("patients with no ICU stay had a non-elective admission").
NEAR_WORDS = 5


def _negates(value: str, phrase: str) -> bool:
    """Does the negated phrase name ``value`` near its start (by its first word, or by the abbreviation the value
    gives in parentheses: "never in the MICU" for 'medical intensive care unit (micu)')?"""
    words = [singular(w) for w in re.findall(r"[a-z0-9]+", phrase.lower())]  # "any vasopressor": 'vasopressors'
    first = next((singular(w) for w in re.findall(r"[a-z0-9]+", value.lower()) if not w.isdigit()), None)
    short = [singular(re.findall(r"[a-z0-9]+", s)[0]) for s in re.findall(_IN_PARENTHESES, value.lower())]
    names = {first, *short} - {None}  # 'trauma sicu (tsicu)', 'neuro ... (neuro sicu)': its first word
    return bool(names & set(words[:NEAR_WORDS])) and supported(value, phrase)


def _unwrap(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _column_of(node: exp.Expression) -> exp.Column | None:
    node = _unwrap(node)
    node = node.this if isinstance(node, exp.Lower | exp.Upper) else node
    return node if isinstance(node, exp.Column) else None


def _row_exclusions(select: exp.Select) -> list[tuple[exp.Expression, exp.Column, list[exp.Literal]]]:
    """The select's own conditions that drop rows holding some values: (the condition, its column, the values)."""
    where = select.args.get("where")
    if where is None:
        return []
    out = []
    for node in where.find_all(exp.NEQ, exp.Not, exp.Like, exp.In):
        if node.find_ancestor(exp.Select) is not select:
            continue
        if isinstance(node, exp.Like | exp.In) and not node.args.get("negate"):  # sqlglot's ``x NOT LIKE y``
            continue
        inner = _unwrap(node.this) if isinstance(node, exp.Not) else node
        if isinstance(node, exp.Not) and not isinstance(inner, exp.EQ | exp.Like | exp.In):
            continue
        if isinstance(inner, exp.In):
            column, values = _column_of(inner.this), list(inner.expressions)
        elif _column_of(inner.this) is not None:
            column, values = _column_of(inner.this), [inner.args.get("expression")]
        else:  # the value first: 'aspirin' <> drug
            column, values = _column_of(inner.expression), [inner.this]
        literals = [v for v in values if isinstance(v, exp.Literal) and v.is_string]
        if column is not None and literals and len(literals) == len(values):
            out.append((node, column, literals))
    return out


def _returned_ids(select: exp.Select, ids: set[str]) -> list[str]:
    """The people's or visits' ids the select returns or counts."""
    return list(dict.fromkeys(c.name.lower() for e in select.expressions for c in e.find_all(exp.Column) if c.name.lower() in ids))


def check_row_negation(ctx: SqlContext) -> CheckResult:
    """The question's "never had X" read as "had something other than X"."""
    if ctx.tree is None or not ctx.db.profile.person_ids:
        return NOTHING
    phrases = _negated_phrases(ctx.question)
    if not phrases:
        return NOTHING
    ids = {ctx.db.profile.person_ids[0].lower(), *visit_ids(ctx)}
    tables, _ = aliases(ctx.tree)
    for select in ctx.tree.find_all(exp.Select):
        if select.args.get("group"):
            continue  # rows counted per person ("how many orders each"), not the people
        returned = _returned_ids(select, ids)
        for node, column, literals in _row_exclusions(select):
            table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name.lower(), tables)
            info = ctx.db.schema.table(table) if table else None
            if info is None or not returned:
                continue
            # the people (or visits) returned, else a visit id the table holds for them (eICU's events name the unit
            # stay, the patient's id is in the patient table): who had the value is asked at that level
            person = next((i for i in [*returned, *sorted(ids)] if info.column(i) is not None), None)
            if person is None or one_row_per_person(ctx, table, person):
                continue
            named = [lit.this.replace("%", " ").strip() for lit in literals]
            if not any(_negates(v, phrase) for v in named if v for phrase in phrases):
                continue
            holders = exp.select(exp.column(person)).from_(stored_table(ctx, table)).where(
                exp.or_(*(exp.Like(this=exp.column(column.name), expression=lit.copy()) if "%" in lit.this
                          else exp.Lower(this=exp.column(column.name)).eq(exp.Literal.string(lit.this.lower())) for lit in literals)))
            people = exp.column(person, table=column.table or None)
            left_out = rewritten(ctx.tree, node, exp.Not(this=exp.In(this=people, query=exp.Subquery(this=holders))))
            if not answers_differently(ctx, left_out):
                continue
            what = " or ".join(f"'{v}'" for v in named[:3])
            return found(Finding("row_negation", "error",
                                 f"The query drops only the rows of {what} ({table}.{column.name.lower()}), so anyone who had "
                                 f"{what} and anything else is still counted; the question asks for those who never had it "
                                 f"(leave them out: {person} NOT IN (SELECT {person} ... WHERE {column.name.lower()} = ...)).",
                                 ctx.span_of(node.sql(dialect="sqlite"))))
    return NOTHING


# People said to lack something: "how many patients never had an ICU stay", "patients without a culture".
_PEOPLE = re.compile(rf"\b{_PEOPLE_WORDS}\b", re.IGNORECASE)
# ... within one visit: "a hospital admission without an ICU stay", "never went to the ICU during it", "in that stay".
_ONE_VISIT_MEANT = re.compile(r"\b(?:admissions?|visits?|stays?|hospitali[sz]ations?|encounters?)\s+(?:without|with no|that (?:had|did) "
                              r"not|where)\b|\b(?:during|in|within|for)\s+(?:it|that|this|the same|each|their|his|her)\b"
                              r"|\b(?:for each|per|each)\s+(?:hospital\s+)?(?:admission|visit|stay|encounter)\b", re.IGNORECASE)


def check_visit_anti_join(ctx: SqlContext) -> CheckResult:
    """The question asks for the people who never had a kind of record, and the query keeps the rows of a LEFT JOIN
    that found none (``LEFT JOIN icustays i ON i.hadm_id = a.hadm_id WHERE i.stay_id IS NULL``) joined on a visit's
    id: it keeps the visits without one, so a patient with such a visit is counted even when another of theirs had the
    record. Repaired by joining on the person instead, where the joined table has the person's id and that answers
    otherwise on this database."""
    if not isinstance(ctx.tree, exp.Select) or not ctx.db.profile.person_ids:
        return NOTHING
    phrases = _negated_phrases(ctx.question)
    if not phrases or not any(_PEOPLE.search(ctx.question[:ctx.question.find(p)]) for p in phrases if p in ctx.question):
        return NOTHING
    person, visits = ctx.db.profile.person_ids[0].lower(), visit_ids(ctx)
    where = ctx.tree.args.get("where")
    returned = {c.name.lower() for e in ctx.tree.expressions for c in e.find_all(exp.Column)}
    if where is None or person not in returned or returned & visits or _ONE_VISIT_MEANT.search(ctx.question):
        return NOTHING  # a visit returned too, or the question keeps to the visit ("an admission without", "during it")
    tables, _ = aliases(ctx.tree)
    for join in ctx.tree.args.get("joins") or ():
        on = join.args.get("on")
        if (join.side or "").upper() != "LEFT" or not isinstance(on, exp.EQ) or not isinstance(join.this, exp.Table):
            continue
        left, right = on.this, on.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)) or left.name.lower() != right.name.lower() \
                or left.name.lower() not in visits:
            continue
        joined = join.this.alias_or_name.lower()
        missing = [i for i in where.find_all(exp.Is) if isinstance(i.this, exp.Column) and i.this.table.lower() == joined
                   and isinstance(i.expression, exp.Null) and i.find_ancestor(exp.Not) is None]
        info = ctx.db.schema.table(tables.get(joined, joined))
        if not missing or info is None or info.column(person) is None:
            continue
        other = right if left.table.lower() == joined else left
        # the tables as the query writes them (a quoted alias keeps its quotes and case)
        alias = join.this.args.get("alias")
        mine = alias.this.copy() if isinstance(alias, exp.TableAlias) else join.this.this.copy()
        theirs = other.args.get("table")
        by_person = exp.EQ(this=exp.Column(this=exp.to_identifier(person), table=mine),
                           expression=exp.Column(this=exp.to_identifier(person), table=theirs.copy() if theirs else None))
        if not answers_differently(ctx, rewritten(ctx.tree, on, by_person)):
            continue
        return found(Finding("visit_anti_join", "error", f"The question asks for people with no record in {info.name} at all; the "
                             f"query joins {info.name} on {left.name} and keeps the visits without one, so a patient with such a "
                             f"visit counts even when another visit of theirs had one. Joined on {person} instead.",
                             ctx.span_of(on.sql(dialect="sqlite")), by_person.sql(dialect="sqlite")),
                     edits=[TreeEdit(replaced_by(by_person), target=on)])
    return NOTHING
