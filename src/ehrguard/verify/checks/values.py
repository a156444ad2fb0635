"""The values the SQL compares with exist in the database: text literals in their columns, patient ids in the patient table."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from ehrguard.db.values import Match
from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import (
    NOTHING,
    CheckResult,
    Edit,
    SqlContext,
    TreeEdit,
    answers_differently,
    few_values,
    found,
    ids_compared,
    negated,
    quoted_names,
    replaced_by,
    rewritten,
    stored_table,
    top_condition,
)
from ehrguard.verify.checks.schema_refs import aliases, all_columns, owner_table
from ehrguard.verify.verdict import Finding

# A misspelt literal is replaced only by a clear nearest value: similar enough, and clearly closer than the next one.
CLEAR_NEAREST = 0.85
CLEAR_MARGIN = 0.05


def literal_comparisons(tree: exp.Expression, tables: dict[str, str],
                        kinds: tuple[type[exp.Expression], ...] = (exp.EQ, exp.In, exp.Like)) -> list[tuple[str, str, exp.Literal]]:
    """(table, column, string literal) for every ``column = / IN / LIKE 'literal'`` (comparisons of ``kinds``) in the
    tree; the literal's parent is its comparison."""
    out = []
    for node in tree.find_all(*kinds):
        col = node.this if isinstance(node.this, exp.Column) else None
        if col is None:
            continue
        literals = node.expressions if isinstance(node, exp.In) else [node.expression]
        for lit in literals:
            if isinstance(lit, exp.Literal) and lit.is_string:
                out.append((tables.get(col.table.lower(), col.table.lower()), col.name.lower(), lit))
    return out


def _replace_with(value: str, *, string: bool = True) -> Callable[[exp.Expression], None]:
    """An edit that puts ``value`` (a string literal, or a number with ``string=False``) where the node is."""
    def apply(node: exp.Expression) -> None:
        node.replace(exp.Literal.string(value) if string else exp.Literal(this=value, is_string=False))

    return apply


def _clearly_nearest(nearest: tuple[Match, ...]) -> bool:
    """The nearest value is close, and clearly closer than the next one."""
    return bool(nearest) and nearest[0].score >= CLEAR_NEAREST and (len(nearest) < 2 or nearest[0].score - nearest[1].score >= CLEAR_MARGIN)


def check_values(ctx: SqlContext) -> CheckResult:
    """A string literal compared with a text column must be one of its values; else the nearest value is suggested."""
    if ctx.tree is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    columns = all_columns(ctx)
    findings: list[Finding] = []
    edits: list[Edit] = []
    for table, column, lit in literal_comparisons(ctx.tree, tables):
        if not table:
            owners = [t for t in set(tables.values()) if t in columns and column in columns[t]]
            if len(owners) != 1:
                continue
            table = owners[0]
        if column.endswith("id"):
            continue  # identifiers are exact: never "nearest" a patient or stay id (check_patient_ids covers them)
        info = ctx.db.schema.table(table)
        col = info.column(column) if info else None
        if col is None or "char" not in col.type.lower() and "text" not in col.type.lower() and col.type:
            continue
        value = lit.this
        if "%" in value or "_" in value and isinstance(lit.parent, exp.Like) or not value.strip():
            continue  # (an empty text: check_empty_text)
        lookup = ctx.db.values.lookup(table, column, value, k=2)
        if not lookup.indexed or lookup.exists:
            continue
        dictionaries = _dictionaries(ctx, table, column)
        dictionary = _holds(ctx, dictionaries, column, value) if dictionaries else None
        if dictionary:
            # A code the dictionary defines that no row has here: absent from this database, not an unknown code.
            findings.append(Finding("value_not_in_data", "info", f"{value!r} is a code of {dictionary}.{column} that no row of "
                                    f"{table} has in this database (the full records may hold it).", ctx.span_of(f"'{value}'")))
            continue
        written = _written_otherwise(ctx, dictionaries, table, column, value)
        if written is not None:
            how, as_written = written
            findings.append(Finding("unknown_value", "error", f"{value!r} is not a value of {table}.{column}: this database "
                                    f"writes {how} ({as_written!r}).", ctx.span_of(f"'{value}'"), f"'{as_written}'"))
            edits.append(TreeEdit(_replace_with(as_written), target=lit))
            continue
        best = lookup.nearest[0] if lookup.nearest else None
        # A value the question states word for word is what the user asked for: when the data lacks it, that is
        # a finding, not a typo to fix.
        stated = value.lower() in ctx.question.lower()
        clearly = best is not None and _clearly_nearest(lookup.nearest)
        # A value in other letter case ('F', 'Male', 'Furosemide' where the records write 'f', 'male', 'furosemide'),
        # is what the user asked for, written as the records write it: a certain fix for a code of a category column,
        # and for a name that no other value of its column holds. Not so where the records name it in several ways
        # ('Propofol': 'propofol', 'propofol 1% inj', ...): which of them were meant is the user's to say.
        # ... or with other punctuation between the same letters ('african-american': 'african american')
        same = [n for n in lookup.nearest if _letters(n.value) == _letters(value)]
        qualified = info.qualified_name if info is not None else table
        if len(same) == 1 and (few_values(ctx, qualified, col.name) or _named_once(ctx, qualified, col.name, value)):
            best, clearly, stated = same[0], True, False
        clear = clearly and not stated
        family = [] if clearly else _holding_word(ctx, qualified, col.name, value)  # only where no value is clearly meant
        if len(family) > 1:  # 'Black': the records split it ('BLACK/AFRICAN AMERICAN', 'BLACK/CAPE VERDEAN', ...); no one nearest
            message = f"{value!r} is not a value of {table}.{column}; the values holding it: " + ", ".join(repr(v) for v in family)
            # ... unless the question says one of them in full ("blood cultures": 'blood culture' of 'blood')
            said = [v for v in family if _says_in_full(ctx.question, v) and not _excluded_in(ctx.question, v)]
            findings.append(Finding("unknown_value", "error", message, ctx.span_of(f"'{value}'"),
                                    f"'{said[0]}'" if len(said) == 1 else None))
            if len(said) == 1:
                edits.append(TreeEdit(_replace_with(said[0]), target=lit))
            continue
        message = f"{value!r} is not a value of {table}.{column}" + (f"; nearest: {best.value!r}" if best else "")
        # Stated by the user and absent, with one clear nearest value: ask back, do not guess.
        ask = clearly and stated
        clarify = f"'{value}' is not in the records ({table}.{column}); did you mean '{best.value}'?" if ask and best else None
        findings.append(Finding("unknown_value", "error", message, ctx.span_of(f"'{value}'"),
                                f"'{best.value}'" if clear and best else None, clarify=clarify))
        if clear and best:
            edits.append(TreeEdit(_replace_with(best.value), target=lit))
    return found(*findings, edits=edits)


def check_empty_text(ctx: SqlContext) -> CheckResult:
    """``column = ''`` where the records leave the field empty as NULL and never as an empty text: the test keeps
    nothing. Repaired to ``IS NULL``; not where the question says "unknown" and the column has such a value."""
    if ctx.tree is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    for table, column, lit in literal_comparisons(ctx.tree, tables, (exp.EQ,)):
        node = lit.parent
        table = owner_table(ctx, table, column, tables)
        info = ctx.db.schema.table(table) if table else None
        if lit.this.strip() or info is None or info.column(column) is None or not isinstance(node, exp.EQ) \
                or not isinstance(node.this, exp.Column) or negated(node):
            continue  # (``<> ''`` drops the NULLs as it is: SQL's NULL <> '' is not true)
        source, name = quoted_names(ctx, info.qualified_name, column)
        try:
            empty = ctx.db.db.execute(f"SELECT 1 FROM {source} WHERE TRIM({name}) = '' LIMIT 1", timeout_s=5).rows
            null = ctx.db.db.execute(f"SELECT 1 FROM {source} WHERE {name} IS NULL LIMIT 1", timeout_s=5).rows
        except DatabaseError:
            continue
        if empty or not null or _names_an_unknown_value(ctx, info.qualified_name, column):
            continue
        shown = f"{node.this.sql(dialect=ctx.dialect)} IS NULL"
        return found(Finding("empty_for_null", "error", f"No row of {table} has {column} = '': the records leave it empty as "
                             f"NULL, so the test keeps nothing. Read as {shown}.", ctx.span_of(node.sql(dialect=ctx.dialect)),
                             shown),
                     edits=[TreeEdit(_null_test, target=node)])
    return NOTHING


# The question counts the records with no value among those that are "not X": "blanks count as not expired", "include
# the unknowns", "missing ones count too" (general English).
# (No negation between the two: "blanks don't count", "nulls not included" leave them out.)
_NO_NEGATION = r"(?:(?!\b(?:not|no|never|don't|doesn't|shouldn't|won't|n't|exclud\w*|without)\b)[^.?;]){0,40}?"
_UNKNOWNS_COUNTED = re.compile(rf"\b(?:blanks?|blank ones|empty ones|missing ones|unknowns?|nulls?|unrecorded ones|those without "
                               rf"(?:a |any )?(?:status|value|entry))\b{_NO_NEGATION}\b(?:counts?|counted|included?|as well|too)\b"
                               r"|(?<!not )(?<!n't )\binclud(?:e|ing) (?:the )?(?:blanks?|missing(?: ones)?|unknowns?|nulls?|empty ones)\b",
                               re.IGNORECASE)


def check_unknowns_left_out(ctx: SqlContext) -> CheckResult:
    """The question counts the records with no value as "not X" ("how many stays are not marked expired? blanks count
    as not expired") and the query keeps ``column <> 'X'``, which is never true where the column is NULL: those records
    are left out. Only a top condition of the outermost WHERE, and only where keeping the NULLs answers otherwise.
    Repaired to ``(column IS NULL OR column <> 'X')``."""
    if not isinstance(ctx.tree, exp.Select) or not _UNKNOWNS_COUNTED.search(ctx.question):
        return NOTHING
    where = ctx.tree.args.get("where")
    negations = []
    for node in list(where.find_all(exp.NEQ, exp.Not)) if where is not None else []:
        compared = node.this if isinstance(node, exp.Not) else node
        if isinstance(compared, exp.Paren):
            compared = compared.this
        if isinstance(compared, exp.NEQ | exp.EQ | exp.In) and isinstance(node, exp.NEQ) == isinstance(compared, exp.NEQ) \
                and isinstance(compared.this, exp.Column) and top_condition(node, ctx.tree):
            negations.append((node, compared.this))
    if len(negations) != 1:
        return NOTHING  # which of several the blanks belong to is not said
    (node, column), = negations
    kept = exp.Paren(this=exp.Or(this=exp.Is(this=column.copy(), expression=exp.Null()), expression=node.copy()))
    if not answers_differently(ctx, rewritten(ctx.tree, node, kept)):
        return NOTHING
    shown = kept.sql(dialect="sqlite")
    return found(Finding("unknowns_left_out", "error", f"The question counts the records with no {column.name} too; "
                         f"{node.sql(dialect='sqlite')} is never true where it is empty (NULL), so they are left out. "
                         f"Read as {shown}.", ctx.span_of(node.sql(dialect="sqlite")), shown),
                 edits=[TreeEdit(replaced_by(kept), target=node)])


def _names_an_unknown_value(ctx: SqlContext, table: str, column: str) -> bool:
    """The question says "unknown" (or "other") and the column has such a value ('other/unknown'): which of the empty
    field and that value was meant is not certain."""
    said = {w for w in ("unknown", "other", "unspecified") if re.search(rf"\b{w}\b", ctx.question, re.IGNORECASE)}
    return bool(said) and bool(_holding_word(ctx, table, column, next(iter(said))))


def _null_test(node: exp.Expression) -> None:
    node.replace(exp.Is(this=node.this.copy(), expression=exp.Null()))


def _letters(value: str) -> str:
    """The value's letters and digits, in lower case: what no spacing, case or punctuation changes."""
    return re.sub(r"[^0-9a-z]", "", value.casefold())


def _written_otherwise(ctx: SqlContext, dictionaries: list[str], table: str, column: str, value: str) -> tuple[str, str] | None:
    """The same code as this database writes it, and how it writes codes: without the dot ('401.9': '4019'), or after
    its code system ('4019': 'icd9|4019', where one value of the column is that)."""
    undotted = value.replace(".", "")
    if dictionaries and undotted != value and _holds(ctx, dictionaries, column, undotted):
        return "codes without the dot", undotted
    prefixed = _prefixed(ctx, table, column, value)
    return ("it with its code system", prefixed[0]) if len(prefixed) == 1 else None


def _prefixed(ctx: SqlContext, table: str, column: str, value: str) -> list[str]:
    """The column's values that are ``value`` after a namespace and a separator ('icd9|4019' for '4019'); none for an
    empty value or a column too large to read."""
    if not value.strip():
        return []
    try:
        values = ctx.db.values.values(table, column)
    except DatabaseError:
        return []
    tail = value.lower()
    return [v for v in values if v.lower().endswith(tail) and len(v) > len(tail) and v[-len(tail) - 1] in "|:"]


_EXCEPT = re.compile(r"\b(?:excluding|except(?: for)?|other than|apart from|aside from|but not|not counting|not including|"
                     r"without)\s+(?:the\s+|any\s+)?", re.IGNORECASE)


def _excluded_in(question: str, value: str) -> bool:
    """Does the question say the value right after a word of exception ("other than blood cultures")?"""
    return any(_says_in_full(question[m.end():m.end() + len(value) + 12], value) for m in _EXCEPT.finditer(question))


def _says_in_full(question: str, value: str) -> bool:
    """Does the question say every word of the value, in order, each whole or with a plural ending ("blood cultures"
    says 'blood culture'; "blood" alone does not)?"""
    words = re.findall(r"[a-z0-9]+", value.lower())
    said = " ".join(re.findall(r"[a-z0-9]+", question.lower()))
    return bool(words) and re.search(r"\b" + r"\s+".join(re.escape(w) + r"(?:s|es)?" for w in words) + r"\b", said) is not None


def _holding_word(ctx: SqlContext, table: str, column: str, value: str, most: int = 3) -> list[str]:
    """The column's values that hold ``value`` as a word of their own (in any letter case), the most frequent first; at
    most ``most`` of them, and none when more than 50 do (a plain word, not a family of names)."""
    word = value.strip().lower()
    if not re.fullmatch(r"[a-z][a-z -]{1,40}", word):
        return []
    source, name = quoted_names(ctx, table, column)
    try:
        rows = ctx.db.db.execute(f"SELECT {name}, COUNT(*) FROM {source} WHERE LOWER({name}) {_contains(word)} GROUP BY {name} "
                                 "ORDER BY COUNT(*) DESC LIMIT 51", timeout_s=5).rows
    except DatabaseError:
        return []
    whole = [str(r[0]) for r in rows if r[0] is not None and re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", str(r[0]).lower())]
    return whole[:most] if len(rows) <= 50 else []


def _contains(text: str) -> str:
    """``LIKE '%text%' ESCAPE '\\'`` with the text's own wildcards and backslashes taken literally."""
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return f"LIKE {exp.Literal.string(pattern).sql()} ESCAPE '\\'"


def _named_once(ctx: SqlContext, table: str, column: str, value: str) -> bool:
    """The column holds exactly one value that contains ``value`` in any letter case (asked of the data)."""
    source, name = quoted_names(ctx, table, column)
    try:
        rows = ctx.db.db.execute(f"SELECT COUNT(DISTINCT {name}) FROM {source} WHERE LOWER({name}) {_contains(value.lower())}",
                                 timeout_s=5).rows
    except DatabaseError:
        return False
    return bool(rows) and rows[0][0] == 1


def _dictionaries(ctx: SqlContext, table: str, column: str) -> list[str]:
    """The dictionary tables (``d_*``, as MIMIC names them) other than ``table`` that have ``column``: the codes it may
    take (``icd_code``: the diagnosis and the procedure dictionaries)."""
    return [t.qualified_name for t in ctx.db.schema.tables
            if t.name.lower() != table and t.name.lower().startswith("d_") and t.column(column) is not None]


def _holds(ctx: SqlContext, tables: list[str], column: str, value: str) -> str | None:
    """The first of ``tables`` that has ``value`` in ``column``."""
    quoted = value.replace("'", "''")
    for table in tables:
        try:
            if ctx.db.db.execute(f"SELECT 1 FROM {table} WHERE {column} = '{quoted}' LIMIT 1", timeout_s=5).rows:
                return table
        except DatabaseError:
            continue
    return None


def check_patient_ids(ctx: SqlContext) -> CheckResult:
    """Patient ids compared in the query exist."""
    if ctx.tree is None:
        return NOTHING
    patient_tables = {e.id_column: e.table for e in ctx.profile.entities if e.name == "patient"}
    findings = []
    for col, lit in ids_compared(ctx.tree, patient_tables):
        table = patient_tables[col.name.lower()]
        if ctx.db.schema.table(table) is None:
            continue
        quoted = lit.this if not lit.is_string else lit.this.replace("'", "''")
        value = quoted if not lit.is_string else f"'{quoted}'"
        try:
            source = stored_table(ctx, table).sql(dialect=ctx.dialect)
            hit = ctx.db.db.execute(f"SELECT 1 FROM {source} WHERE {col.name} = {value} LIMIT 1", timeout_s=5)
        except DatabaseError:
            continue
        if not hit.rows:
            findings.append(Finding("unknown_patient", "error", f"No patient with {col.name} = {lit.this}.", ctx.span_of(lit.this)))
    return found(*findings)


def check_patterns(ctx: SqlContext) -> CheckResult:
    """A LIKE pattern no row of its column matches, anywhere in the table, while exactly one other text column of that
    table has matching rows: the pattern is likely on the wrong column (``celllabel LIKE '%flowsheet%'``: the flowsheet's
    path is ``cellpath``). Reported, not repaired. A pattern nothing matches at all is reported as such
    (``matches_no_record``), not as an error: a sample database may lack what the full one holds, and a name may be
    recorded in another table (an x-ray among treatments, not labs)."""
    if ctx.tree is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    findings: list[Finding] = []
    edits: list[Edit] = []
    for table, column, lit in literal_comparisons(ctx.tree, tables, (exp.Like,)):
        node = lit.parent
        table = owner_table(ctx, table, column, tables)
        info = ctx.db.schema.table(table) if table else None
        if info is None or info.column(column) is None or not re.search(r"[a-z]{3}", lit.this.lower()) \
                or node is None or negated(node):
            continue
        if _matches(ctx, info.qualified_name, column, lit.this):
            # it matches some rows of the table, but maybe none of those the query keeps, where another column does
            # ("intake" in the labels of other stays, in this stay's paths): the answer is then an empty one
            elsewhere = _matches_only_in(ctx, info, column, node)
            if elsewhere:
                findings.append(Finding("pattern_matches_nothing", "warning", f"None of the rows the query keeps has {column} "
                                        f"LIKE '{lit.this}', so it answers with nothing; in those rows it matches "
                                        f"{table}.{elsewhere}.", ctx.span_of(f"'{lit.this}'")))
            continue
        others = [c.name for c in info.columns if c.name.lower() != column and re.search(r"char|text|string", c.type.lower())
                  and _matches(ctx, info.qualified_name, c.name, lit.this)]
        if len(others) != 1:
            # Nothing anywhere: a sample database's gap, or a name recorded elsewhere ("absent here" is not "does not
            # exist"). Not moved, not called wrong; but an answer resting on it is no answer to vouch for. Alternatives
            # joined by OR (spellings of one drug) are left alone: the others may match.
            # a CASE counts what matches, 0 included; a pattern that only removes rows (EXCEPT's right side, a LEFT JOIN
            # kept where nothing joined) removes none, and the answer stands
            if node.find_ancestor(exp.Or, exp.Case, exp.If) is None and not _only_removes(node):
                findings.append(Finding("matches_no_record", "warning", f"No record of {table} has {column} LIKE '{lit.this}': the "
                                        "answer rests on a condition nothing in these records meets (absent from this database, "
                                        "or recorded under another name or table).", ctx.span_of(f"'{lit.this}'")))
            continue
        meant = others[0]
        # reported, not moved: the other column may hold the name for another reason (a test's name, not its result)
        findings.append(Finding("pattern_matches_nothing", "warning", f"No row of {table} has {column} LIKE '{lit.this}'; it matches "
                                f"{table}.{meant}.", ctx.span_of(f"'{lit.this}'")))
    return found(*findings, edits=edits)


def _empty(rows: list[tuple[Any, ...]]) -> bool:
    return all(v is None for row in rows for v in row)


def _matches_only_in(ctx: SqlContext, info: Any, column: str, node: Any) -> str | None:
    """The one other text column of the table whose rows would answer where the query, matching ``column`` against
    the pattern, answers with nothing (no rows, or only NULL); None otherwise."""
    if not isinstance(node.this, exp.Column) or isinstance(ctx.execution, DatabaseError) or not _empty(ctx.execution.rows) \
            or node.find_ancestor(exp.Or, exp.Case, exp.If) is not None or _only_removes(node):
        return None
    assert ctx.tree is not None
    answering = []
    for other in info.columns:
        if other.name.lower() == column or not re.search(r"char|text|string", other.type.lower()):
            continue
        moved = node.copy()
        moved.this.set("this", exp.to_identifier(other.name))
        try:
            rows = ctx.db.db.execute(rewritten(ctx.tree, node, moved).sql(dialect=ctx.dialect), timeout_s=5, max_rows=50).rows
        except DatabaseError:
            continue
        if not _empty(rows):
            answering.append(other.name)
    return answering[0] if len(answering) == 1 else None


def _only_removes(node: Any) -> bool:
    """The condition decides only which rows are taken away: inside the right side of EXCEPT, or the ON of a LEFT JOIN."""
    child: Any = node
    parent: Any = node.parent
    while parent is not None:
        if isinstance(parent, exp.Except) and child is parent.expression:
            return True
        if isinstance(parent, exp.Join) and child is parent.args.get("on") and (parent.side or "").upper() == "LEFT":
            return True
        child, parent = parent, parent.parent
    return False


def _matches(ctx: SqlContext, table: str, column: str, pattern: str) -> bool:
    source, col = quoted_names(ctx, table, column)
    query = f"SELECT 1 FROM {source} WHERE {col} LIKE {exp.Literal.string(pattern).sql(dialect=ctx.dialect)} LIMIT 1"
    try:
        return bool(ctx.db.db.execute(query, timeout_s=5).rows)
    except DatabaseError:
        return True  # not knowable: say nothing
