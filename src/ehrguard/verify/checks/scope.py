"""The visit the question names is the visit the query keeps to, not every visit of its patient.

Two ways to lose it. "Lowest potassium during her most recent hospitalization" answered with every potassium of the
patient: the query never says which visit (``missing_visit_scope``). And the one below (``widened_scope``):

"Total charges for hospital stay 1981400" answered with ``cost.uniquepid = (SELECT uniquepid FROM patient WHERE
patienthealthsystemstayid = 1981400)``: the patient of that stay is looked up, and then every one of their stays is
read. The entities (patient, admission, stay) and their id columns come from the database profile; the repair keeps
the outer table to the stated visit by its own id column, when it has one.
"""

from __future__ import annotations

import re
from typing import cast

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.profiles import Entity
from ehrguard.sqltree import clause
from ehrguard.verify.checks.alignment import visit_start
from ehrguard.verify.checks.base import (
    NOTHING,
    CheckResult,
    Edit,
    SqlContext,
    TreeEdit,
    add_condition,
    drop_conjunct,
    found,
    quoted_names,
    stored_table,
    top_condition,
    visits_by_id,
)
from ehrguard.verify.checks.conventions import visit_ids
from ehrguard.verify.checks.keys import named_visits
from ehrguard.verify.checks.presence import asked_fields
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding

# The question asks about the person, or every visit: then reading all the patient's rows is what it asks. The person
# named by a pronoun or as the visit's owner, or visits counted over time ("ever", "in total", "prior") too.
_ABOUT_THE_PERSON = re.compile(r"\b(?:patients?|persons?|people|subjects?|individuals?|owner|he|she|his|her|hers|him|they|them|their|"
                               r"theirs|ever|any|prior|previous|previously|past|earlier|lifetime|in total|altogether|readmi\w*|"
                               r"(?:all|every|other)\s+(?:\w+\s+)?(?:stays?|admissions?|visits?|encounters?|hospitali[sz]ations?))\b",
                               re.IGNORECASE)


def _looked_up_person(node: exp.Expression, person: str, visits: set[str]) -> tuple[str, exp.Literal] | None:
    """``(SELECT person FROM t WHERE visit = N)``: the visit id column and N, when that is all the subquery does."""
    query = node.this if isinstance(node, exp.Subquery) else node
    if not isinstance(query, exp.Select) or len(query.expressions) != 1 or query.args.get("joins") or query.args.get("group"):
        return None
    selected = query.expressions[0]
    where = query.args.get("where")
    if not isinstance(selected, exp.Column) or selected.name.lower() != person or where is None:
        return None
    condition = where.this
    if (isinstance(condition, exp.EQ) and isinstance(condition.this, exp.Column) and condition.this.name.lower() in visits
            and isinstance(condition.expression, exp.Literal)):
        return condition.this.name.lower(), condition.expression
    return None


def check_widened_scope(ctx: SqlContext) -> CheckResult:
    """The question names one visit by its id and nothing of the person; the query looks up that visit's patient and
    keeps to the patient, so every visit of theirs comes in."""
    if ctx.tree is None or not ctx.db.profile.person_ids or _ABOUT_THE_PERSON.search(ctx.question):
        return NOTHING
    person = ctx.db.profile.person_ids[0].lower()
    visits = visit_ids(ctx)
    tables, _ = aliases(ctx.tree)
    findings, edits = [], []
    for found_node in ctx.tree.find_all(exp.EQ, exp.In):
        node = cast(exp.Expression, found_node)  # a comparison is an expression (sqlglot types it apart)
        column = node.this
        inner = node.expression if isinstance(node, exp.EQ) else node.args.get("query")
        if not isinstance(column, exp.Column) or column.name.lower() != person or inner is None:
            continue
        looked = _looked_up_person(inner, person, visits)
        if looked is None or not re.search(rf"(?<![\w.]){re.escape(looked[1].this)}(?![\w.])", ctx.question):
            continue
        visit, number = looked
        select = node.find_ancestor(exp.Select)
        if select is not None and any(c.name.lower() in visits for e in select.expressions for c in e.find_all(exp.Column)):
            continue  # it returns or counts visits: kept to one visit, that answer is always the one
        table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables) or _only_table(node)
        info = ctx.db.schema.table(table) if table else None
        fixable = info is not None and info.column(visit) is not None
        findings.append(Finding("widened_scope", "error",
                                f"The question names one visit ({visit} {number.this}); the query looks up its patient and reads "
                                f"every visit of theirs ({table}.{person}).", ctx.span_of(column.sql(dialect="sqlite")),
                                f"{visit} = {number.sql(dialect='sqlite')}" if fixable else None))
        if fixable:
            keep = exp.column(visit, table=column.table or None).eq(number.copy())
            edits.append(_replaced_by(keep, node))
    return found(*findings, edits=edits)


def check_visit_scope(ctx: SqlContext) -> CheckResult:
    """The question keeps to one visit by its place ("during her first admission", "his most recent hospitalization",
    "the current ICU stay") and the query reads events of other tables without saying which visit: it never reads that
    visit's id column (other than to join two tables on it) nor a time column of the visit's table, so the events of
    every visit of the patient come in. A query that reads only the visit's own table is about the visits themselves
    and is left to the order checks. Entities, their tables and time columns come from the profile."""
    if ctx.tree is None:
        return NOTHING
    named = named_visits(ctx)
    if not named or _ANCHORED.search(ctx.question):
        return NOTHING
    tables, _ = aliases(ctx.tree)
    read = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
    profile = ctx.profile
    findings = []
    edits: list[Edit] = []
    for entity in profile.entities:
        column, home = entity.id_column.lower(), entity.table.lower()
        if column not in named or not read - {home} or _states_visit_id(ctx, column):
            continue
        times = {c.rsplit(".", 1)[1].lower() for c in profile.time_columns if c.rsplit(".", 1)[0].lower() == home}
        if any(_scopes(ctx.tree, c, column, times, home, tables) for c in ctx.tree.find_all(exp.Column)):
            continue
        noun = "hospital admission" if entity.name == "admission" else "stay"
        repair = _scope_to_visit(ctx, entity.name, column, home, tables)
        findings.append(Finding("missing_visit_scope", "warning",
                                f"The question is about one {noun} of the patient; the query never says which ({column} or "
                                f"the {noun}'s times), so the records of every {noun} of theirs come in.", None,
                                repair[0].sql(dialect=ctx.dialect) if repair else None))
        if repair is not None:
            edits.append(TreeEdit(add_condition(repair[0]), target=repair[1]))
    return found(*findings, edits=edits)


# The visit named by its place at either end of the patient's history ("her first admission", "the most recent ICU stay").
_FIRST_OR_LAST = re.compile(r"\b(first|earliest|initial|last|latest|final|most recent)\b", re.IGNORECASE)


def _patients_kept(where: exp.Expression, person: str) -> list[exp.Literal]:
    """The patient ids a condition keeps to: ``person = literal``."""
    return [eq.expression for eq in where.find_all(exp.EQ) if isinstance(eq.this, exp.Column) and eq.this.name.lower() == person
            and isinstance(eq.expression, exp.Literal)]


def _scope_to_visit(ctx: SqlContext, entity: str, visit: str, home: str,
                    tables: dict[str, str]) -> tuple[exp.Expression, exp.Select] | None:
    """The condition that keeps a one-SELECT query to the patient's first or last visit of the kind the question names:
    ``t.visit = (SELECT visit FROM home WHERE person = N ORDER BY start [DESC] LIMIT 1)``, where the query keeps to one
    patient by ``person = N`` and reads a table with the visit's id. Only when the question names one end (not
    "current", not "second") and the profile says when such a visit starts."""
    assert ctx.tree is not None
    ends = {m.group(1).lower() for m in _FIRST_OR_LAST.finditer(ctx.question)}
    if not isinstance(ctx.tree, exp.Select) or len(ends) != 1 or sum(1 for _ in ctx.tree.find_all(exp.Select)) != 1:
        return None
    start = visit_start(ctx, entity)
    person = ctx.db.profile.person_ids[:1]
    where = ctx.tree.args.get("where")
    if start is None or not person or where is None:
        return None
    kept = _patients_kept(where, person[0])
    holders = [alias for alias, table in tables.items() if (info := ctx.db.schema.table(table)) is not None
               and info.column(visit) is not None and table != home] or \
              [alias for alias, table in tables.items() if table == home]
    if len(kept) != 1 or len(holders) != 1:
        return None
    late = next(iter(ends)) in ("last", "latest", "final", "most recent")
    pick = exp.select(visit).from_(stored_table(ctx, home)).where(exp.column(person[0]).eq(kept[0].copy())).order_by(
        f"{start} DESC" if late else start).limit(1)
    qualifier = holders[0] if any(t.alias for t in ctx.tree.find_all(exp.Table)) or len(tables) > 1 else None
    return exp.column(visit, table=qualifier).eq(exp.Subquery(this=pick)), ctx.tree


# A visit named as the start or end of a span ("since his first admission", "before the last ICU stay") is a moment
# in the patient's history, not the one visit the records are kept to.
_ANCHORED = re.compile(r"\b(?:since|after|before|prior to|until|following|preceding)\s+(?:(?:the|his|her|their|its)\s+)?"
                       r"(?:first|last|latest|most recent|current|earliest|previous|second|final)\b", re.IGNORECASE)


def _scopes(tree: exp.Expression, column: exp.Column, visit: str, times: set[str], home: str, tables: dict[str, str]) -> bool:
    """Does this column say which visit: the visit's id or a time of the visit's own table anywhere in a CTE or a
    subquery (which picks the visits the rest reads), or in a condition, an order or a window of the outermost SELECT;
    not a column = column join, and not only returned or grouped by in the outermost SELECT (``GROUP BY hadm_id``
    answers for every visit)."""
    if column.find_ancestor(exp.Select) is tree and column.find_ancestor(exp.Where, exp.Having, exp.Order, exp.Join,
                                                                          exp.Window) is None:
        return False
    name = column.name.lower()
    if name == visit:
        parent = column.parent
        return not (isinstance(parent, exp.EQ) and isinstance(parent.this, exp.Column) and isinstance(parent.expression, exp.Column))
    owner = tables.get(column.table.lower(), column.table.lower()) if column.table else ""
    return name in times and owner in ("", home)


def _states_visit_id(ctx: SqlContext, column: str) -> bool:
    """The query compares the visit's id with a number (the visit is named by its id, whatever the question calls it)."""
    return ctx.tree is not None and any(c.name.lower() == column for c, _, _ in visits_by_id(ctx, ctx.tree))


def _only_table(node: exp.Expression) -> str:
    """The one table the SELECT holding ``node`` reads, when it reads one (an unqualified column is that table's)."""
    select = node.find_ancestor(exp.Select)
    source = clause(select, "from") if select is not None else None
    if select is None or select.args.get("joins") or source is None or not isinstance(source.this, exp.Table):
        return ""
    return source.this.name


def _replaced_by(condition: exp.Expression, target: exp.Expression) -> Edit:
    def apply(node: exp.Expression) -> None:
        node.replace(condition.copy())

    return TreeEdit(apply, target=target)


# A visit of the patient's named without saying which ("how long was she in the ICU", "his hospital stay").
_SOME_VISIT = {"stay": re.compile(r"\b(?:in|on) the (?:icu|unit|intensive care unit)\b"
                                  r"|\b(?:icu|unit|intensive care) (?:stay|admission|visit)\b", re.IGNORECASE),
               "admission": re.compile(r"\b(?:in (?:the )?hospital|hospital (?:stay|visit|admission)|hospitali[sz]ation|admission)\b",
                                       re.IGNORECASE)}
# What is asked of one visit: how long, when it began or ended, where.
_OF_ONE_VISIT = re.compile(r"\bhow long\b|\blength of (?:the )?stay\b|\blos\b|\bwhen (?:was|did|were)\b.*\b(?:admitted|discharged|"
                           r"transferred|arrive|leave|come)\b|\bwhich (?:unit|ward|care ?unit)\b", re.IGNORECASE)
# Words that say which visit, or that every visit is meant.
_WHICH_VISIT = re.compile(r"\b(?:first|last|latest|earliest|most recent|current(?:ly)?|ongoing|present|still|now|yet|left|"
                          r"previous|prior|second|third|"
                          r"final|initial|this|that|recent|each|every|all|total|ever|per|average|mean|times|overall|combined|"
                          r"altogether|since|before|after|during \w+ (?:20|21)\d\d|in (?:20|21)\d\d)\b|\d{4}-\d{2}|"
                          r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)


def check_unstated_visit(ctx: SqlContext) -> CheckResult:
    """The question asks something of one visit of a patient ("how long was 10020740 in the ICU") without saying
    which, the patient has several visits of that kind, and the query answers for one of them (LIMIT 1): which one
    was meant is a guess. The patient and the count of their visits come from the profile and the data."""
    if not isinstance(ctx.tree, exp.Select) or ctx.tree.args.get("limit") is None or _WHICH_VISIT.search(ctx.question):
        return NOTHING
    ordered = _visits_ordered(ctx, ctx.tree)
    if not _OF_ONE_VISIT.search(ctx.question) and not ordered:
        return NOTHING
    person = ctx.db.profile.person_ids[:1]
    where = ctx.tree.args.get("where")
    if not person or where is None:
        return NOTHING
    kept = _patients_kept(where, person[0])
    if len(kept) != 1 or visits_by_id(ctx, ctx.tree):
        return NOTHING  # a visit named by its id says which one
    named = [e for e in ctx.profile.entities if (pattern := _SOME_VISIT.get(e.name)) is not None and pattern.search(ctx.question)
             and not (e.name == "admission" and _SOME_VISIT["stay"].search(ctx.question))]
    if ordered:  # the query chose the visit by its own times ("ORDER BY admittime DESC LIMIT 1"): those visits
        named = ordered
    elif not named:  # "the length of stay" names no kind of visit: the one whose table the query reads
        read = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
        named = [e for e in ctx.profile.entities if e.name in _SOME_VISIT and e.table.lower() in read]
    for entity in named:
        info = ctx.db.schema.table(entity.table)
        if info is None or info.column(person[0]) is None:
            continue
        source, visit = quoted_names(ctx, info.qualified_name, entity.id_column)
        _, who = quoted_names(ctx, info.qualified_name, info.column(person[0]).name)  # type: ignore[union-attr]
        try:
            rows = ctx.db.db.execute(f"SELECT COUNT(DISTINCT {visit}) FROM {source} WHERE {who} = {kept[0].sql(dialect=ctx.dialect)}",
                                     timeout_s=5).rows
        except DatabaseError:
            continue
        if rows and rows[0][0] and rows[0][0] > 1 and _answers_differ(ctx, ctx.tree):
            noun = "ICU stays" if entity.name == "stay" else "hospital admissions"
            return found(Finding("unstated_visit", "warning", f"The patient has {rows[0][0]} {noun}; the question does not say which "
                                 "one, and the query answers for one of them."))
    return NOTHING


def _answers_differ(ctx: SqlContext, tree: exp.Select) -> bool:
    """Without its ORDER BY and LIMIT, the query gives more than one answer: the visit it keeps decides what it says
    (a sex or a date of birth is the same on every visit; a diagnosis may name one visit)."""
    every = tree.copy()
    every.set("order", None)
    every.set("limit", None)
    every.set("offset", None)
    every.set("distinct", exp.Distinct())
    try:
        rows = ctx.db.db.execute(f"SELECT COUNT(*) FROM ({every.sql(dialect=ctx.dialect)}) AS every_answer", timeout_s=5).rows
    except DatabaseError:
        return True  # not knowable: the choice of visit stands as the question's to make
    return bool(rows and rows[0][0] and rows[0][0] > 1)


def _visits_ordered(ctx: SqlContext, tree: exp.Select) -> list[Entity]:
    """The visits (admissions, stays) whose own time columns the query's outer ORDER BY sorts by: the query picks one
    of a patient's visits by when it happened, whatever the question asks of it (a weight, a diagnosis)."""
    order = tree.args.get("order")
    if order is None:
        return []
    tables, _ = aliases(tree)
    times = {c.lower() for c in ctx.profile.time_columns}
    out = []
    for key in order.expressions:
        column = key.this
        if not isinstance(column, exp.Column):
            continue
        owner = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        if owner is None or f"{owner}.{column.name}".lower() not in times:
            continue
        held = [e for e in ctx.profile.entities if e.name in _SOME_VISIT and e.table.lower() == owner.lower()]
        if len(held) > 1:  # one table holds several kinds of visit (eICU's ``patient``): the column's name says which
            held = [e for e in held if e.name == ("stay" if re.search(r"unit|icu", column.name, re.IGNORECASE) else "admission")]
        out += [e for e in held if e not in out]
    return out


# What makes a visit's end part of the question: it ended, how long it was, how it ended, or its place among the
# patient's visits (EHRSQL's convention reads "the last hospital visit" as the last one that ended).
_ENDED_ASKED = re.compile(r"\b(?:discharg\w*|left|leav\w*|complet\w*|finish\w*|ended|ending|end|over|past|previous|prior|former|"
                          r"first|last|latest|recent|earliest|second|third|final|initial|newest|oldest|\d+(?:st|nd|rd|th)|los|length|long|duration|days|hours|stayed|died|"
                          r"death|dead|deaths|mortality|surviv\w*|expired|outcome|readmi\w*|closed|whole|entire|total|"
                          r"transferred|moved|returned|let go|released|sent home|went home|gone home)\b", re.IGNORECASE)
# Words of a question about visits going on now: the test of an end is then another check's question (the current
# ones are asked for: discharged_not_current turns it round), not one to drop.
_GOING_ON = re.compile(r"\b(?:current|currently|still|presently|at present|right now|ongoing|not yet|census)\b", re.IGNORECASE)


def check_unasked_ended(ctx: SqlContext) -> CheckResult:
    """The query keeps only visits that have ended (``unitdischargetime IS NOT NULL``) where the question says nothing
    of their end: the visits still going on are left out ("ICU admissions in December" without the 14 still in the
    unit). The visits' end times are the profile's time columns of the visits' tables."""
    if not isinstance(ctx.tree, exp.Select) or _ENDED_ASKED.search(ctx.question):
        return NOTHING
    where = ctx.tree.args.get("where")
    homes = {e.table.lower() for e in ctx.profile.entities if e.name != "patient"}
    ends = {c.rsplit(".", 1)[1].lower() for c in ctx.profile.time_columns if c.rsplit(".", 1)[0].lower() in homes
            and re.search(r"disch|outtime|end", c, re.IGNORECASE)}
    for node in where.find_all(exp.Not) if where is not None else ():
        test = node.this
        if isinstance(test, exp.Is) and isinstance(test.this, exp.Column) and isinstance(test.expression, exp.Null) \
                and test.this.name.lower() in ends and node.find_ancestor(exp.Select) is ctx.tree and node.find_ancestor(exp.Or) is None \
                and len([c for c in node.root().find_all(exp.Column) if c.name.lower() == test.this.name.lower()]) == 1:
            # (the end compared elsewhere too, "discharged in 2100": the test only says what that comparison needs)
            # Repaired by dropping the test, where it is one of the WHERE's ANDed conditions: the rows it kept out are
            # the ones asked for too.
            if test.this.name.lower() in asked_fields(ctx):
                continue  # "stays with a recorded out time": the test is asked for
            certain = top_condition(node, ctx.tree) and not _GOING_ON.search(ctx.question)
            return found(Finding("unasked_ended", "warning", f"The query keeps only visits that have ended ({test.this.name} IS NOT "
                                 "NULL); the question does not say so, and the ones still going on are left out.", None,
                                 "without that condition" if certain else None),
                         edits=[TreeEdit(drop_conjunct, target=node)] if certain else [])
    return NOTHING
