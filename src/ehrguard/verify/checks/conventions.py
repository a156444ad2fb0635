"""Conventions of the database and of counting: the database's own "now", DISTINCT when counting people, and when
counting different kinds of thing ("how many different drugs")."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from sqlglot import exp

from ehrguard.sqltree import clause
from ehrguard.verify.checks.base import (
    NOTHING,
    CheckResult,
    SqlContext,
    TextEdit,
    TreeEdit,
    answers_differently,
    copy_with_map,
    data_fact,
    found,
    quoted_names,
    replaced_by,
    rewritten,
    stored_table,
)
from ehrguard.verify.checks.concepts import name_columns_by_table
from ehrguard.verify.checks.keys import rename
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding

_NOW_CALL = re.compile(r"""\b(?:datetime|date|time|julianday|unixepoch|strftime)\s*\((?:\s*'[^']*'\s*,)?\s*['"]now['"]"""
                       r"|\bcurrent_(?:timestamp|date|time)\b|\bnow\s*\(\s*\)|\bgetdate\s*\(\s*\)", re.IGNORECASE)
# The question counts visits itself ("how many hospital stays did patients have"): counting them is what it asks.
_COUNTS_VISITS = re.compile(r"\b(?:how many|count|number of)\s+(?:[\w']+\s+){0,3}?(?:stays?|admissions?|visits?|encounters?|"
                            r"hospitali[sz]ations?|episodes?|times?)\b", re.IGNORECASE)


def check_now(ctx: SqlContext) -> CheckResult:
    """A database with its own "now" (EHRSQL-style ones fix it at 2100-12-31 23:59:00): the machine clock is wrong there."""
    now = ctx.db.profile.now
    if now is None:
        return NOTHING
    m = _NOW_CALL.search(ctx.sql)
    if not m:
        return NOTHING
    return found(Finding("wrong_now", "error", f"'now' in this database is {now}, not the machine clock.",
                         (m.start(), m.end()), f"'{now}'"),
                 edits=[TextEdit(partial(anchor_now, now=now))])


def anchor_now(sql: str, now: str) -> str:
    """``sql`` with the machine clock ('now', CURRENT_TIMESTAMP, CURRENT_DATE, ...) replaced by the database's ``now``."""
    sql = re.sub(r"""(['"])now\1""", f"'{now}'", sql, flags=re.IGNORECASE)
    sql = re.sub(r"\bcurrent_timestamp\b|\bcurrent_time\b|\bnow\s*\(\s*\)|\bgetdate\s*\(\s*\)", f"'{now}'", sql, flags=re.IGNORECASE)
    return re.sub(r"\bcurrent_date\b", f"'{now[:10]}'", sql, flags=re.IGNORECASE)


def _distinct_argument(count: exp.Expression) -> None:
    count.set("this", exp.Distinct(expressions=[count.this.copy()]))


# What ends the phrase a count word starts before it reaches people: a verb (be, do, have, common participles), a
# preposition, a relative pronoun, or a noun of something else that is counted ("how many admissions were for patients
# aged 65 or over" counts admissions; "how many unit stays for patients ..." counts stays). English closed classes.
_COUNTED_PHRASE_ENDS = frozenset((
    "was", "were", "is", "are", "be", "been", "did", "do", "does", "had", "has", "have", "got", "received", "given", "made",
    "done", "performed", "recorded", "ordered", "prescribed", "for", "with", "in", "on", "at", "from", "to", "by", "during",
    "per", "among", "after", "before", "since", "within", "under", "over", "into", "across", "between", "that", "who",
    "which", "where", "when", "whose",
    "stay", "stays", "admission", "admissions", "visit", "visits", "encounter", "encounters", "hospitalization",
    "hospitalizations", "hospitalisation", "hospitalisations", "episode", "episodes", "time", "times", "order", "orders",
    "prescription", "prescriptions", "test", "tests", "record", "records", "row", "rows", "event", "events", "day", "days",
))
_COUNT_WORD = re.compile(r"\b(?:how many|count(?:ing)?|number of|total of)\b", re.IGNORECASE)
# ("pts": clinicians' shorthand for patients)
_PERSON_WORDS = frozenset(("patients", "pts", "people", "persons", "individuals", "subjects"))


def counts_people(question: str) -> bool:
    """The question asks how many people (patients, subjects, ...): the phrase a count word starts reaches a word for
    people before a verb, a preposition or another counted noun ("how many diabetic patients", "the number of unique
    subjects", "how many of the patients"; not "how many admissions were for patients aged 65 or over")."""
    if re.search(r"\bpatient (?:count|number|total)\b", question, re.IGNORECASE):
        return True
    for m in _COUNT_WORD.finditer(question):
        words = re.findall(r"[a-z][a-z'-]*", question[m.end():].lower())
        if words[:1] and words[0] in _VERBS_AFTER_COUNT and _AMONG_PEOPLE.search(question[:m.start()]):
            return True  # "among patients aged 65 or over, how many were admitted": the people named before the count
        for word in words[:6]:
            if word in _PERSON_WORDS:
                return True
            if word in _COUNTED_PHRASE_ENDS or _plural_noun(word):
                break
    return False


# "How many doses of insulin patients received": a plural noun before the people word is what is counted. English
# plurals in -s, without the singular nouns that end so (-ss, -us, -is: "sepsis patients"; the diseases and nouns of general
# English that are singular in -s: "diabetes patients").
def _plural_noun(word: str) -> bool:
    return (len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) and word not in _PERSON_WORDS
            and word not in _SINGULAR_IN_S)


_SINGULAR_IN_S = frozenset(("diabetes", "herpes", "rabies", "measles", "mumps", "scabies", "rickets", "shingles", "tetanus", "series",
                            "species", "news", "lupus", "pertussis", "arthritis", "icus", "aids", "copd", "ards", "mods", "mrsa"))


_VERBS_AFTER_COUNT = frozenset(("were", "was", "had", "have", "has", "did", "are", "is", "got", "received", "died", "underwent"))
_AMONG_PEOPLE = re.compile(r"\b(?:among|of|out of)\s+(?:the |all |these |those )?(?:[\w-]+\s+){0,3}?(?:patients|people|subjects|"
                           r"individuals)\b", re.IGNORECASE)


def _grouped_by(select: exp.Select) -> set[str]:
    """The names of the columns a SELECT groups by."""
    group = select.args.get("group")
    return {g.name.lower() for g in (group.expressions if group else []) if isinstance(g, exp.Column)}


def _one_row_per_value(count: exp.Expression, arg: exp.Expression) -> bool:
    """COUNT(t.col) over a derived table ``t`` that is grouped by ``col`` or selects DISTINCT: one row per value."""
    select = count.find_ancestor(exp.Select)
    source = clause(select, "from") if select is not None else None
    derived = source.this if source is not None else None
    if not isinstance(derived, exp.Subquery) or not isinstance(derived.this, exp.Select) or select is None or select.args.get("joins"):
        return False
    inner = derived.this
    name = arg.name.lower() if isinstance(arg, exp.Column) else ""
    grouped = _grouped_by(inner)
    return bool(inner.args.get("distinct")) or (bool(name) and name in grouped)


def check_count_distinct(ctx: SqlContext) -> CheckResult:
    """Counting patients needs DISTINCT: one patient has many rows."""
    if ctx.tree is None or not counts_people(ctx.question):
        return NOTHING
    person_ids = set(ctx.db.profile.person_ids) - visit_ids(ctx)  # a visit id counted for patients: counts_visits
    findings = []
    edits = []
    for count in ctx.tree.find_all(exp.Count):
        arg = count.this
        if _one_row_per_value(count, arg):
            continue  # counting the rows of a derived table that holds one row per person already (GROUP BY, DISTINCT)
        if isinstance(arg, exp.Column) and arg.name.lower() in person_ids:
            text = count.sql(dialect="sqlite")
            findings.append(Finding("count_without_distinct", "warning", "Counting patients without DISTINCT counts rows, not people.",
                                    ctx.span_of(text), f"COUNT(DISTINCT {arg.sql(dialect='sqlite')})"))
            edits.append(TreeEdit(_distinct_argument, target=count))
    return found(*findings, edits=edits)


# Words by which a count asks for kinds, not occurrences: "how many different drugs", "the number of unique tests".
_KINDS_COUNTED = re.compile(r"\b(?:how many|count|number of)\s+(?:[\w']+\s+){0,2}?(?:unique|different|distinct|separate)\b"
                            r"(?!\s+(?:times?|occasions?|days?|dates?)\b)", re.IGNORECASE)


def check_count_kinds(ctx: SqlContext) -> CheckResult:
    """A count of different kinds of thing ("how many different drugs did patient X get") answered by counting rows
    or occurrences: COUNT(drug) counts every prescription of the same drug again. Repaired by counting distinct values:
    of the counted column, or for COUNT(*) over one table of the one column of that table that holds names
    (``concepts.name_columns``). People are left to the checks of counting patients."""
    if ctx.tree is None or not _KINDS_COUNTED.search(ctx.question) or counts_people(ctx.question) or _COUNTS_VISITS.search(ctx.question):
        return NOTHING
    derived = {cte.alias_or_name.lower() for cte in ctx.tree.find_all(exp.CTE)}
    names = name_columns_by_table(ctx)
    findings, edits = [], []
    for count in ctx.tree.find_all(exp.Count):
        arg, select = count.this, count.find_ancestor(exp.Select)
        if select is None or select is not ctx.tree:
            continue
        source = clause(select, "from")
        table = source.this if source is not None else None
        # the outermost count of rows read straight from a table: a count inside a condition, over a derived table or
        # a CTE (grouped, DISTINCT: one row per kind already) or per group is another question
        if (isinstance(arg, exp.Distinct) or select.args.get("group") or not isinstance(table, exp.Table)
                or table.name.lower() in derived or count.find_ancestor(exp.Where, exp.Having, exp.Order) is not None):
            continue
        column: exp.Column | None
        if isinstance(arg, exp.Column):
            column = arg.copy()
        else:
            held = names.get(table.name.lower(), []) if not select.args.get("joins") else []
            column = exp.column(held[0], table=table.alias_or_name) if len(held) == 1 else None
        findings.append(Finding("count_not_distinct", "warning", "The question counts different kinds; the query counts rows, "
                                "so a kind that occurs several times is counted several times.", ctx.span_of(count.sql(dialect="sqlite")),
                                f"COUNT(DISTINCT {column.sql(dialect='sqlite')})" if column is not None else None))
        if column is not None:
            edits.append(TreeEdit(count_distinct(column), target=count))
    return found(*findings, edits=edits)


# A count of occurrences: "how many heart rate readings", "the number of furosemide orders" (each record counts).
_OCCURRENCES_COUNTED = re.compile(r"\b(?:how many|count of|number of|total)\s+(?:(?!(?:in|of|on|for|from|with|by|at)\b)[\w'-]+\s+){0,3}?"
                                  r"(?:readings|measurements|records|"
                                  r"entries|results|values recorded|times|doses|orders|prescriptions|administrations|charted values|"
                                  r"observations|draws)\b", re.IGNORECASE)


def check_count_of_values(ctx: SqlContext) -> CheckResult:
    """The question counts occurrences ("how many heart rate readings") and the query counts the distinct values of a
    field (``COUNT(DISTINCT valuenum)``): two readings of 96 count once. Ids are left to the checks of counting
    patients and visits; a question of kinds ("how many different ...") asks for distinct values. Repaired by counting
    the rows where the count reads one table."""
    if ctx.tree is None or not _OCCURRENCES_COUNTED.search(ctx.question) or _KINDS_COUNTED.search(ctx.question) \
            or re.search(r"\bonce\b", ctx.question, re.IGNORECASE):  # "count each draw time once"
        return NOTHING
    names = {(t.lower(), c.lower()) for t, cs in name_columns_by_table(ctx).items() for c in cs}
    tables, _ = aliases(ctx.tree)
    findings, edits = [], []
    for count in ctx.tree.find_all(exp.Count):
        arg, select = count.this, count.find_ancestor(exp.Select)
        if not isinstance(arg, exp.Distinct) or len(arg.expressions) != 1 or select is None:
            continue
        column = arg.expressions[0]
        if not isinstance(column, exp.Column) or column.name.lower().endswith("id") or count.find_ancestor(exp.Where, exp.Having):
            continue
        owner = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        if (owner.lower(), column.name.lower()) in names:
            continue  # names counted distinct are kinds of thing (drugs, tests), whatever the noun the question counts by
        rows = exp.Count(this=exp.Star())
        if not _differs(ctx, count, rows):
            continue  # no two records share a value here
        source = clause(select, "from")
        fixable = not select.args.get("joins") and source is not None and isinstance(source.this, exp.Table)
        findings.append(Finding("count_of_values", "error", f"The question counts records; the query counts the different values of "
                                f"{column.name}, so records with the same value count once.", ctx.span_of(count.sql(dialect="sqlite")),
                                "COUNT(*)" if fixable else None))
        if fixable:
            edits.append(TreeEdit(replaced_by(rows), target=count))
    return found(*findings, edits=edits)


# A ranking by how many people: "the drugs given to the most patients", "which units had the fewest patients".
_RANKED_BY_PEOPLE = re.compile(r"(?<!\bat )\b(?:most|fewest|least|largest number of|highest number of|greatest number of|lowest number of|"
                               r"smallest number of)\s+(?:[a-z-]+\s+)?(?:patients|people|persons|individuals|subjects)\b", re.IGNORECASE)


def check_ranked_by_people(ctx: SqlContext) -> CheckResult:
    """Groups ranked by how many patients they have ("the 3 drugs given to the most patients"), ordered by a count of
    rows of a table that holds several rows per patient: the ranking is by orders or events, not by people."""
    if not isinstance(ctx.tree, exp.Select) or not ctx.tree.args.get("group") or not _RANKED_BY_PEOPLE.search(ctx.question):
        return NOTHING
    order = ctx.tree.args.get("order")
    person = ctx.db.profile.person_ids[:1]
    source = clause(ctx.tree, "from")
    table = source.this if source is not None else None
    if order is None or not person or not isinstance(table, exp.Table) or ctx.tree.args.get("joins"):
        return NOTHING
    info = ctx.db.schema.table(table.name)
    if info is None or info.column(person[0]) is None or one_row_per_person(ctx, table.name, person[0]):
        return NOTHING
    aliased = {p.alias.lower(): p.this for p in ctx.tree.expressions if isinstance(p, exp.Alias)}
    counts = []
    for key in order.expressions:
        node = key.this
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliased:
            node = aliased[node.name.lower()]
        if isinstance(node, exp.Count) and not isinstance(node.this, exp.Distinct):
            counts.append(node)
    if not counts:
        return NOTHING
    column = exp.column(person[0], table=table.alias_or_name if table.alias else None)
    return found(Finding("ranked_by_rows", "error", f"The question ranks by how many patients; the query ranks by how many rows of "
                         f"{table.name}, which holds several per patient.", None, f"COUNT(DISTINCT {person[0]})"),
                 edits=[TreeEdit(count_distinct(column), target=c) for c in counts])


def one_row_per_person(ctx: SqlContext, table: str, id_column: str) -> bool:
    """Does ``table`` hold one row per person, or per whatever ``id_column`` identifies (its id unique)?
    Asked of the data once per open database."""
    info = ctx.db.schema.table(table)
    stored = info.column(id_column) if info is not None else None
    source, column = quoted_names(ctx, info.qualified_name if info is not None else table, stored.name if stored else id_column)
    return data_fact(ctx, ("one_row_per_person", table, id_column), f"SELECT COUNT(*) = COUNT(DISTINCT {column}) FROM {source}",
                     lambda rows: bool(rows and rows[0][0]))


def count_distinct(column: exp.Column) -> Callable[[exp.Expression], None]:
    """COUNT(DISTINCT column): of a person's id, or of whatever else is counted once per value."""

    def apply(count: exp.Expression) -> None:
        count.set("this", exp.Distinct(expressions=[column.copy()]))

    return apply


def _counts_derived_rows(ctx: SqlContext, count: exp.Expression, inner: exp.Expression,
                         name: str) -> tuple[Finding, TreeEdit | None] | None:
    """COUNT(*) over a derived table (a subquery, or a CTE read by its ``name``) that carries a person id and is not
    one row per person, or that carries only a visit's id (a patient with two visits counted twice)."""
    if not isinstance(inner, exp.Select) or not name:
        return None
    person = next((e.alias_or_name for e in inner.expressions if e.alias_or_name.lower() in ctx.db.profile.person_ids), None)
    if person is None and any(isinstance(e, exp.Star) for e in inner.expressions) and not inner.args.get("joins"):
        source = clause(inner, "from")  # SELECT * of one stored table: its person id is one of the columns
        info = ctx.db.schema.table(source.this.name) if source is not None and isinstance(source.this, exp.Table) else None
        person = next((c.name for c in info.columns if c.name.lower() == ctx.db.profile.person_ids[0].lower()), None) \
            if info is not None else None
        if person is not None and one_row_per_person(ctx, source.this.name, person):
            return None
    if person is None:
        outputs = [e.alias_or_name.lower() for e in inner.expressions]
        if len(outputs) != 1 or outputs[0] not in visit_ids(ctx) or _COUNTS_VISITS.search(ctx.question):
            return None
        return (Finding("counts_visits_not_patients", "warning", f"The question counts patients; the query counts the visits "
                        f"({outputs[0]}) its subquery returns, so a patient with two visits is counted twice.",
                        ctx.span_of("count(*)")), None)
    if inner.args.get("distinct") or person.lower() in _grouped_by(inner):
        return None
    column = exp.column(person, table=name)
    return (Finding("counts_rows_not_patients", "warning", "The question counts patients; the query counts rows, several of which can be "
                    "one patient's.", ctx.span_of("count(*)"), f"COUNT(DISTINCT {column.sql(dialect='sqlite')})"),
            TreeEdit(count_distinct(column), target=count))


def _cte(tree: exp.Expression, table: exp.Table) -> exp.Expression | None:
    """The query a table name reads when the query defines it in its WITH."""
    if table.db:
        return None
    return next((c.this for c in tree.find_all(exp.CTE) if c.alias_or_name.lower() == table.name.lower()), None)


def _counted_case(node: exp.Expression) -> exp.Expression | None:
    """The condition of ``SUM(CASE WHEN condition THEN 1 ELSE 0 END)`` (or IIF / IF): rows counted by a sum."""
    arg = node.this
    if isinstance(arg, exp.Case) and len(arg.args.get("ifs") or []) == 1 and not arg.this:
        when = arg.args["ifs"][0]
        condition, then, otherwise = when.this, when.args.get("true"), arg.args.get("default")
    elif isinstance(arg, exp.If):
        condition, then, otherwise = arg.this, arg.args.get("true"), arg.args.get("false")
    else:
        return None
    def number(value: exp.Expression | None, text: str) -> bool:
        return isinstance(value, exp.Literal) and not value.is_string and value.this == text
    return condition if number(then, "1") and (otherwise is None or number(otherwise, "0")) else None


def _summed_rows(ctx: SqlContext, person: str) -> tuple[list[Finding], list[TreeEdit]]:
    """``SUM(CASE WHEN ... THEN 1 ELSE 0 END)`` over a table of several rows per patient, where patients are counted:
    repaired to ``COUNT(DISTINCT CASE WHEN ... THEN patient END)``."""
    assert ctx.tree is not None
    findings, edits = [], []
    for total in ctx.tree.find_all(exp.Sum):
        condition = _counted_case(total)
        select = total.find_ancestor(exp.Select)
        if condition is None or select is None or select is not ctx.tree or select.args.get("group") or select.args.get("joins"):
            continue  # only the answer's own count: a sum inside a subquery compares a patient's own rows ("at least two")
        if len(select.expressions) != 1 or select.expressions[0].unalias() is not total or total.find_ancestor(exp.Window):
            continue  # beside other figures (rows counted on purpose), or in a window: not the count of patients asked
        source = clause(select, "from")
        table = source.this if source is not None else None
        info = ctx.db.schema.table(table.name) if isinstance(table, exp.Table) else None
        if not isinstance(table, exp.Table) or info is None or info.column(person) is None \
                or one_row_per_person(ctx, table.name, person):
            continue
        column = exp.column(person, table=table.alias_or_name if table.alias else None)
        replacement = exp.Count(this=exp.Distinct(expressions=[exp.Case(ifs=[exp.If(this=condition.copy(), true=column)])]))
        findings.append(Finding("counts_rows_not_patients", "warning", f"The question counts patients; the query adds up the rows "
                                f"of {table.name} that match, several of which can be one patient's.",
                                ctx.span_of(total.sql(dialect="sqlite")), replacement.sql(dialect="sqlite")))
        edits.append(TreeEdit(replaced_by(replacement), target=total))
    return findings, edits


def check_counts_people(ctx: SqlContext) -> CheckResult:
    """A question that counts patients, answered by counting the rows of a table that holds several rows per patient
    (admissions, events; eICU's patient table holds one row per unit stay). The profile names the patient id columns;
    whether a table holds one row per patient is read from the data."""
    if ctx.tree is None or not counts_people(ctx.question):
        return NOTHING
    person_ids = ctx.db.profile.person_ids[:1]  # the column that identifies a person (eICU: uniquepid, not the visit id)
    if not person_ids:
        return NOTHING
    findings, edits = [], []
    for count in ctx.tree.find_all(exp.Count):
        select = count.find_ancestor(exp.Select)
        if select is None or select.args.get("group"):
            continue  # counting per group: not this shape
        source = clause(select, "from")
        table = source.this if source is not None else None
        cte = _cte(ctx.tree, table) if isinstance(table, exp.Table) else None
        if isinstance(table, exp.Subquery | exp.Table) and (cte is not None or isinstance(table, exp.Subquery)):
            inner = cte if cte is not None else table.this
            finding = _counts_derived_rows(ctx, count, inner, table.alias_or_name) if isinstance(count.this, exp.Star) else None
            if finding is not None:
                findings.append(finding[0])
                edits += [finding[1]] if finding[1] is not None else []
            continue  # a derived table (a subquery or a CTE): what it holds is read above, or not at all
        if not isinstance(table, exp.Table):
            continue
        arg = count.this
        if isinstance(arg, exp.Distinct) or (isinstance(arg, exp.Column) and arg.name.lower() in {*ctx.db.profile.person_ids,
                                                                                                   *visit_ids(ctx)}):
            continue  # DISTINCT, the person id (count_distinct covers a missing DISTINCT there) or a visit id (counts_visits)
        if not isinstance(arg, exp.Star | exp.Column):
            continue
        joined = [j.this for j in select.args.get("joins") or () if isinstance(j.this, exp.Table)]
        if len(joined) != len(select.args.get("joins") or ()):
            continue  # a join with a derived table: not this shape
        joined = [t for t in joined if not _anti_joined(ctx, select, t)]
        person = person_ids[0]
        holders = [t for t in [table, *joined] if (info := ctx.db.schema.table(t.name)) is not None and info.column(person) is not None]
        several = [t.name for t in [table, *joined] if not (t in holders and one_row_per_person(ctx, t.name, person))]
        if not several:
            continue  # every table it reads holds one row per patient
        what = "rows" if isinstance(arg, exp.Star) else f"values of {arg.name}"
        message = f"The question counts patients; the query counts {what} of {several[0]}, which holds several per patient."
        if holders:
            column = exp.column(person, table=holders[0].alias_or_name if holders[0].alias or joined else None)
            edits.append(TreeEdit(count_distinct(column), target=count))
        else:  # the events of a stay (eICU): the patient is read through the table of patients the schema links
            link = _person_link(ctx, table, person) if not joined else None
            if link is None:
                findings.append(Finding("counts_rows_not_patients", "warning", message, ctx.span_of(count.sql(dialect="sqlite"))))
                continue
            column, edit = link
            edits.append(edit)
            edits.append(TreeEdit(count_distinct(column), target=count))
        findings.append(Finding("counts_rows_not_patients", "warning", message,
                                ctx.span_of(count.sql(dialect="sqlite")), f"COUNT(DISTINCT {column.sql(dialect='sqlite')})"))
    summed, sum_edits = _summed_rows(ctx, person_ids[0])
    return found(*findings, *summed, edits=edits + sum_edits)


def _anti_joined(ctx: SqlContext, select: exp.Select, table: exp.Table) -> bool:
    """``LEFT JOIN t ... WHERE t.col IS NULL`` (one of the WHERE's ANDed conditions, on a column that is never empty in
    a row of ``t``: the join's key or one declared NOT NULL): only the rows with no match are kept, one per row of the
    left side, so the joined table adds no rows (the patients who never had an ICU stay)."""
    join = next((j for j in select.args.get("joins") or () if j.this is table), None)
    where = select.args.get("where")
    if join is None or (join.side or "").upper() != "LEFT" or where is None:
        return False
    name = table.alias_or_name.lower()
    info = ctx.db.schema.table(table.name)
    keys = {c.name.lower() for c in join.find_all(exp.Column) if c.table.lower() == name}
    for node in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        if isinstance(node, exp.Is) and isinstance(node.this, exp.Column) and node.this.table.lower() == name \
                and isinstance(node.expression, exp.Null):
            column = info.column(node.this.name) if info is not None else None
            if node.this.name.lower() in keys or (column is not None and column.not_null):
                return True
    return False


def _person_link(ctx: SqlContext, table: exp.Table, person: str) -> tuple[exp.Column, TreeEdit] | None:
    """The patients' table joined to a table of events that has no patient id, by the foreign key the schema declares
    from one to the other (eICU's ``medication.patientunitstayid`` -> ``patient``): the patient id column, and the join."""
    home = next((e.table for e in ctx.profile.entities if e.id_column.lower() == person.lower()), None)
    info = ctx.db.schema.table(table.name)
    if home is None or info is None:
        return None
    keys = [fk for fk in info.foreign_keys if fk.ref_table.lower() == home.lower()]
    if len(keys) != 1:
        return None
    key = keys[0]
    mine = table.alias_or_name
    condition = exp.column(key.column, table=mine).eq(exp.column(key.ref_column, table=home))

    def join(select: exp.Expression) -> None:
        if isinstance(select, exp.Select):
            select.join(stored_table(ctx, home), on=condition.copy(), copy=False)

    return exp.column(person, table=home), TreeEdit(join, target=table.find_ancestor(exp.Select))


def visit_ids(ctx: SqlContext) -> set[str]:
    """The id columns of visits (hospital admissions, ICU stays) where the profile also names the patients' own id."""
    if not any(e.name == "patient" for e in ctx.profile.entities):
        return set()
    return {e.id_column.lower() for e in ctx.profile.entities if e.name != "patient"}


def check_counts_visits(ctx: SqlContext) -> CheckResult:
    """A question that counts patients, answered by counting distinct hospital admissions or ICU stays (the profile's
    visit ids): a patient with two stays is counted twice. Repaired to the patient id of the same table, or of the
    patients' table joined by the foreign key the schema declares."""
    if ctx.tree is None or not counts_people(ctx.question) or _COUNTS_VISITS.search(ctx.question):
        return NOTHING
    person = next((e.id_column.lower() for e in ctx.profile.entities if e.name == "patient"), None)
    visits = {e.id_column.lower(): e.name for e in ctx.profile.entities if e.name != "patient"} if person else {}
    tables, _ = aliases(ctx.tree)
    findings, edits = [], []
    for count in ctx.tree.find_all(exp.Count):
        arg, select = count.this, count.find_ancestor(exp.Select)
        if select is None or select.args.get("group") or _one_row_per_value(count, arg):
            continue
        if select is not ctx.tree or count.find_ancestor(exp.Where, exp.Having, exp.Order) is not None:
            continue  # a count compared inside the query ("more than 2 stays") counts what it compares
        column = arg.expressions[0] if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1 else arg
        if not isinstance(column, exp.Column) or column.name.lower() not in visits or person is None:
            continue
        owner = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        info = ctx.db.schema.table(owner) if owner else None
        what = "hospital admissions" if visits[column.name.lower()] == "admission" else "stays"
        message = (f"The question counts patients; the query counts {what} ({column.name}), so a patient with several is counted "
                   "more than once.")
        suggestion = None
        if info is not None and info.column(person) is not None:
            replacement = exp.column(person, table=column.table or None)
            edits.append(TreeEdit(count_distinct(replacement), target=count))
            suggestion = f"COUNT(DISTINCT {replacement.sql(dialect='sqlite')})"
        elif info is not None and not select.args.get("joins"):
            source = clause(select, "from")
            table = source.this if source is not None else None
            link = _person_link(ctx, table, person) if isinstance(table, exp.Table) and table.name.lower() == owner else None
            if link is not None:
                edits.extend([link[1], TreeEdit(count_distinct(link[0]), target=count)])
                suggestion = f"COUNT(DISTINCT {link[0].sql(dialect='sqlite')})"
        findings.append(Finding("counts_visits_not_patients", "warning", message, ctx.span_of(count.sql(dialect="sqlite")), suggestion))
    return found(*findings, edits=edits)


# Which kind of visit a question counts: ICU (unit) stays, or hospital stays (admissions, hospitalizations). A bare
# "stays" or "visits" says neither.
_COUNTED_VISIT = re.compile(r"\b(?:how many|count(?: of)?|number of|total)\s+(?:different |distinct |separate |unique )?"
                            r"(?:(?P<stay>(?:icu|intensive care|unit|critical care) (?:stays?|admissions?|visits?|episodes?))"
                            r"|(?P<admission>hospital (?:stays?|admissions?|visits?|encounters?)|hospitali[sz]ations?|admissions?))\b",
                            re.IGNORECASE)


def check_counted_visit(ctx: SqlContext) -> CheckResult:
    """The question counts one kind of visit and the query counts another's ids: "how many unit stays" answered by
    ``COUNT(DISTINCT patienthealthsystemstayid)`` (hospital stays, which hold several unit stays). Entities and their
    id columns from the profile; repaired to the asked visit's id when the same table has it."""
    if ctx.tree is None or not isinstance(ctx.tree, exp.Select):
        return NOTHING
    asked = {k for m in _COUNTED_VISIT.finditer(ctx.question) for k, v in m.groupdict().items() if v}
    if asked == {"admission"} and _ICU_WORDS.search(ctx.question):
        return NOTHING  # "admissions to the ICU" are ICU stays: the question says which kind elsewhere
    visits: dict[str, str] = {e.name: e.id_column.lower() for e in ctx.profile.entities if e.name in ("stay", "admission")}
    if len(asked) != 1 or len(visits) != 2:
        return NOTHING
    wanted = visits[asked.pop()]
    other = next(c for c in visits.values() if c != wanted)
    # the person's id counts patients, not visits ("how many hospitalisations" answered with COUNT(DISTINCT uniquepid))
    person = ctx.db.profile.person_ids[0].lower() if ctx.db.profile.person_ids and not counts_people(ctx.question) \
        and not _PER_OR_SHARE.search(ctx.question) else None
    tables, _ = aliases(ctx.tree)
    findings, edits = [], []
    for count in ctx.tree.find_all(exp.Count):
        if count.find_ancestor(exp.Select) is not ctx.tree or count.find_ancestor(exp.Where, exp.Having, exp.Order) is not None:
            continue
        arg = count.this
        if isinstance(arg, exp.Star) and (rows := _rows_of_other_visits(ctx, wanted)) is not None:
            visits_counted = exp.Count(this=exp.Distinct(expressions=[exp.column(wanted, table=rows.alias or None)]))
            if not _differs(ctx, count, visits_counted):
                continue  # one row per asked visit where the query reads (one unit stay of each hospital stay kept)
            findings.append(Finding("counts_other_visit", "error", f"The question counts {_VISIT_WORDS[wanted == visits['stay']]}; "
                                    f"the query counts the rows of {rows.name}, several for some of them.",
                                    ctx.span_of(count.sql(dialect="sqlite")), f"COUNT(DISTINCT {wanted})"))
            edits.append(TreeEdit(replaced_by(visits_counted), target=count))
            continue
        column = arg.expressions[0] if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1 else arg
        if not isinstance(column, exp.Column) or column.name.lower() not in (other, person):
            continue
        if column.name.lower() == person and count.find_ancestor(exp.Div, exp.Binary) is not None:
            continue  # patients as a denominator ("admissions per patient"), not as what is counted
        owner = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        info = ctx.db.schema.table(owner) if owner else None
        fixable = info is not None and info.column(wanted) is not None
        counted = "patients" if column.name.lower() == person else _VISIT_WORDS[wanted != visits["stay"]]
        findings.append(Finding("counts_other_visit", "error", f"The question counts {_VISIT_WORDS[wanted == visits['stay']]}; "
                                f"the query counts {column.name}, the ids of {counted}.",
                                ctx.span_of(column.sql(dialect="sqlite")), wanted if fixable else None))
        if fixable:
            edits.append(rename(column, wanted))
    return found(*findings, edits=edits)


# The kind of visit a question is about when it says so in words: a hospital admission ("admitted to the hospital",
# "hospitalizations", "hospital stays") or an ICU stay ("admitted to the ICU", "ICU stays").
_HOSPITAL_VISIT = re.compile(r"\b(?:admitted|admissions?|readmitted|readmissions?) (?:to|into|in) (?:the |a )?hospital\b"
                             r"|\bhospital (?:admissions?|stays?|visits?|encounters?|readmissions?)\b|\bhospitali[sz]ations?\b"
                             r"|\bhospitali[sz]ed\b", re.IGNORECASE)


def check_visit_table(ctx: SqlContext) -> CheckResult:
    """The question counts hospital admissions ("patients admitted to the hospital more than once") and the query
    counts the rows of the ICU stays' table, which holds only the admissions that reached an ICU, several for some
    (or the reverse). The visits' tables come from the profile (a database keeping both kinds in one table has
    nothing to confuse); repaired by counting from the asked visits' table when it has every column the query reads."""
    if ctx.tree is None:
        return NOTHING
    hospital, icu = bool(_HOSPITAL_VISIT.search(ctx.question)), bool(_ICU_WORDS.search(ctx.question))
    if hospital == icu:
        return NOTHING
    tables_of = {e.name: e.table.lower() for e in ctx.profile.entities if e.name in ("stay", "admission")}
    if len(set(tables_of.values())) != 2:
        return NOTHING
    wanted, other = (tables_of["admission"], tables_of["stay"]) if hospital else (tables_of["stay"], tables_of["admission"])
    if any(t.name.lower() == wanted for t in ctx.tree.find_all(exp.Table)):
        return NOTHING
    info = ctx.db.schema.table(wanted)
    findings, edits = [], []
    for count in ctx.tree.find_all(exp.Count):
        select = count.find_ancestor(exp.Select)
        source = clause(select, "from") if select is not None else None
        table = source.this if source is not None else None
        if select is None or select.args.get("joins") or not isinstance(table, exp.Table) or table.name.lower() != other:
            continue
        said = "hospital admissions" if hospital else "ICU stays"
        read = {c.name.lower() for c in select.find_all(exp.Column) if c.find_ancestor(exp.Select) is select}
        fixable = info is not None and all(info.column(c) is not None for c in read)
        if fixable and not answers_differently(ctx, _retabled(ctx, ctx.tree, select, table, wanted)):
            continue
        findings.append(Finding("counts_other_visit_table", "error", f"The question is about {said}; the query counts the rows of "
                                f"{other}, which holds {'ICU stays' if hospital else 'hospital admissions'}."
                                + (f" Counted from {wanted} instead." if fixable else ""),
                                ctx.span_of(table.sql(dialect="sqlite")), wanted if fixable else None))
        if fixable:
            edits.append(TreeEdit(partial(_retable, ctx, table, wanted), target=select))
    return found(*findings, edits=edits)


def _differs(ctx: SqlContext, node: exp.Expression, replacement: exp.Expression) -> bool:
    """Does the query with ``node`` replaced answer otherwise on this database? A mistake these records do not show is
    no finding to block an answer with."""
    assert ctx.tree is not None
    return answers_differently(ctx, rewritten(ctx.tree, node, replacement))


def _retabled(ctx: SqlContext, tree: exp.Expression, select: exp.Select, table: exp.Table, name: str) -> exp.Expression:
    """A copy of ``tree`` whose ``select`` reads ``name`` where it read ``table``."""
    copy, counterpart = copy_with_map(tree)
    _retable(ctx, table, name, counterpart[id(select)])
    return copy


def _retable(ctx: SqlContext, table: exp.Table, name: str, select: exp.Expression) -> None:
    """Read ``name`` (as the schema stores it) in the FROM of ``select`` where it read ``table``; its alias is kept, and
    columns qualified by the old table's own name are qualified by the new one."""
    source = clause(select, "from") if isinstance(select, exp.Select) else None
    old = source.this if source is not None else None
    if not isinstance(old, exp.Table) or old.name.lower() != table.name.lower():
        return
    alias = old.args.get("alias")
    new = stored_table(ctx, name)
    if alias is not None:
        new.set("alias", alias.copy())
    else:
        for column in select.find_all(exp.Column):
            if column.table.lower() == table.name.lower() and column.find_ancestor(exp.Select) is select:
                column.set("table", exp.to_identifier(name))
    old.replace(new)


# A number of people or visits a group must reach: "given on more than 50 different ICU stays", "at least 3 patients".
_ENTITY_THRESHOLD = re.compile(r"\b(?:more than|over|at least|fewer than|less than|under|at most|(?:>|<)=?)\s*(\d+)\s+"
                               r"(?:different |distinct |separate |unique )?(?P<noun>patients|people|persons|subjects|"
                               r"(?:icu |unit )stays|hospital stays|stays|admissions|hospitali[sz]ations|visits)\b", re.IGNORECASE)


def check_threshold_counts_rows(ctx: SqlContext) -> CheckResult:
    """A group must reach a number of patients or visits ("drugs given on more than 50 different ICU stays") and the
    query's HAVING compares that number with a count of rows (``HAVING COUNT(*) > 50``): a drug given ten times on one
    stay counts ten. Repaired by counting the distinct ids of what the question counts, when the grouped table has them."""
    if ctx.tree is None:
        return NOTHING
    asked = [(m.group(1), m.group("noun").lower()) for m in _ENTITY_THRESHOLD.finditer(ctx.question)]
    if len(asked) != 1:
        return NOTHING
    number, noun = asked[0]
    if noun in ("stays", "visits"):  # a bare stay is an ICU stay or a hospital stay as the question says elsewhere
        entity = "stay" if _ICU_WORDS.search(ctx.question) else "admission" if _HOSPITAL_VISIT.search(ctx.question) else ""
    else:
        entity = "patient" if noun in ("patients", "people", "persons", "subjects") else \
            "stay" if noun.startswith(("icu", "unit")) else "admission"
    ids: dict[str, str] = {e.name: e.id_column.lower() for e in ctx.profile.entities}
    wanted = ids.get(entity)
    if wanted is None:
        return NOTHING
    findings, edits = [], []
    for having in ctx.tree.find_all(exp.Having):
        select = having.find_ancestor(exp.Select)
        source = clause(select, "from") if select is not None else None
        table = source.this if source is not None else None
        if select is None or select.args.get("joins") or not isinstance(table, exp.Table):
            continue
        info = ctx.db.schema.table(table.name)
        for count in having.find_all(exp.Count):
            compared = count.parent
            other = compared.expression if isinstance(compared, exp.Binary) and compared.this is count else None
            if isinstance(count.this, exp.Distinct) or not isinstance(other, exp.Literal) or other.this != number:
                continue
            fixable = info is not None and info.column(wanted) is not None and not one_row_per_person(ctx, table.name, wanted)
            distinct = exp.Count(this=exp.Distinct(expressions=[exp.column(wanted, table=table.alias or None)]))
            if not fixable or not _differs(ctx, count, distinct):
                continue
            findings.append(Finding("threshold_counts_rows", "error", f"The question counts {noun} a group must reach; the query's "
                                    f"HAVING counts the rows of {table.name}, several for some of them.",
                                    ctx.span_of(count.sql(dialect="sqlite")), f"COUNT(DISTINCT {wanted})"))
            edits.append(TreeEdit(replaced_by(distinct), target=count))
    return found(*findings, edits=edits)


def _rows_of_other_visits(ctx: SqlContext, wanted: str) -> exp.Table | None:
    """The one table the query counts the rows of (no join, no grouping), when it has the asked visit's id column and
    holds several rows for some visit (eICU's ``patient``: a row per unit stay, several per hospital stay)."""
    assert isinstance(ctx.tree, exp.Select)
    source = clause(ctx.tree, "from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or ctx.tree.args.get("joins") or ctx.tree.args.get("group"):
        return None
    info = ctx.db.schema.table(table.name)
    if info is None or info.column(wanted) is None or one_row_per_person(ctx, table.name, wanted):
        return None
    return table


_VISIT_WORDS = {True: "ICU stays", False: "hospital stays"}
_PER_OR_SHARE = re.compile(r"\b(?:per|each|every|average|mean|ratio|rate|share|proportion|percent\w*)\b", re.IGNORECASE)
# An ICU in words: "icu", "ICUs", a kind of ICU by its initials (MICU, SICU, CVICU, CCU, CSRU), "intensive care", "units".
_ICU_WORDS = re.compile(r"\b(?:[a-z]{0,3}icus?|ccus?|csru|intensive care|critical care|units?)\b", re.IGNORECASE)


# The question asks something of each patient, or which patients: "for each patient", "per patient", "which patients
# have had ...". Not when it names visits as what is grouped or listed ("per admission", "which ICU stays").
_PER_PERSON = re.compile(r"\b(?:for each|for every|per|by|of each|each) (?:patient|person|subject|individual)\b"
                         r"|\b(?:which|what|list|show|name)(?: the| all)? (?:patients|people|subjects|individuals)\b", re.IGNORECASE)
# ... unless the visit is what is grouped or listed ("per admission", "which ICU stays") or what a count is kept within
# ("more than 20 prescriptions during one admission", "in the same stay", "in any one visit").
_PER_VISIT = re.compile(r"\b(?:for each|for every|per|by|of each|each|which|what|list|show|a single|the same|any one|any single|"
                        r"(?<!than )(?<!least )(?<!most )one|a given|within an?|during an?|in an?)(?: the| all)?\s+(?:\w+\s+){0,2}?"
                        r"(?:admissions?|stays?|visits?|encounters?|hospitali[sz]ations?|episodes?)\b", re.IGNORECASE)


def check_grouped_entity(ctx: SqlContext) -> CheckResult:
    """A question asked per patient ("for each patient, how many ICU stays", "which patients had more than 3 stays")
    answered by grouping on a visit's id (``GROUP BY hadm_id``): one group per admission, not per patient. Repaired to
    the patient id of the same table, where it holds one; in the SELECT list too."""
    tree = ctx.tree
    person_ids = ctx.db.profile.person_ids[:1]
    if not isinstance(tree, exp.Select) or not person_ids or not _PER_PERSON.search(ctx.question) or _PER_VISIT.search(ctx.question):
        return NOTHING
    group = tree.args.get("group")
    keys = group.expressions if group else []
    if len(keys) != 1 or not isinstance(keys[0], exp.Column) or keys[0].name.lower() not in visit_ids(ctx):
        return NOTHING
    key, person = keys[0], person_ids[0]
    tables, _ = aliases(tree)
    table = owner_table(ctx, tables.get(key.table.lower(), key.table.lower()), key.name, tables)
    info = ctx.db.schema.table(table) if table else None
    fixable = info is not None and info.column(person) is not None
    if any(isinstance(e.unalias(), exp.Column) and e.unalias().name.lower() == person for e in tree.expressions):
        fixable = False  # the patient is returned already: renaming the visit's id would return it twice
    same = [c for c in tree.find_all(exp.Column)
            if c.name.lower() == key.name.lower() and c.table.lower() == key.table.lower() and c.find_ancestor(exp.Select) is tree
            and (c.find_ancestor(exp.Group) is not None or c.parent is tree or isinstance(c.parent, exp.Alias) and c.parent.parent is tree)]
    finding = Finding("wrong_group_key", "error",
                      f"The question asks per patient; the query groups by {key.name}, one group per visit, so a patient with "
                      "several visits appears several times and their counts are split.", ctx.span_of(key.sql(dialect="sqlite")),
                      person if fixable else None)
    return found(finding, edits=[rename(c, person) for c in same] if fixable else [])
