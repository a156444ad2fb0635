"""Identifiers are used as what they identify: a join links a patient id with a patient id, and a number the query
compares with an admission id is an admission's.

Both read the database profile's entities (which column identifies a patient, an admission, a stay) and nothing
else, so they hold for any schema the profile describes:

- **join keys**: ``a.subject_id = b.hadm_id`` (or ``hadm_id IN (SELECT subject_id ...)``) links two different
  entities; whatever it returns, it is not the records of one patient or one visit;
- **row keys**: ``a.row_id = b.row_id`` links two tables by their own row numbers (primary keys neither refers to):
  the rows it pairs are unrelated; the repair joins them by the one foreign key the schema declares between them;
- **id kinds**: ``hadm_id = 10000032`` where no admission has that id but a patient does: the number is the other
  entity's id. The repair compares the column the number belongs to, when the query's table has it;
- **referenced table**: a code looked up in another dictionary than the one its foreign key refers to
  (``diagnoses_icd.icd_code`` in ``d_icd_procedures``); the repair reads the table the key refers to;
- **kind of a shared key**: a column whose keys refer to rows of several tables (``cost.event_id``: a prescription's,
  a procedure's, a lab test's row) linked to one of them without the column that says which (``cost.event_type``):
  rows of the other kinds with the same number come in too; the repair states the kind. The same column naming
  another table than the one linked (``cost.event_type``, or ``d_items.linksto`` for the events table that reads the
  items) is an error with no repair.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import partial

from sqlglot import exp

from ehrguard.db.lexicon import normal_form
from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import (
    NOTHING,
    CheckResult,
    Edit,
    SqlContext,
    TreeEdit,
    add_condition,
    answers_differently,
    copy_with_map,
    found,
    ids_compared,
    negated,
    stored_info,
    stored_table,
)
from ehrguard.verify.checks.concepts import (
    EXCLUSION,
    clinical_wording,
    excluded_words,
    inside_longer_name,
    named_values,
    singular,
    supported,
)
from ehrguard.verify.checks.lab_items import lab_items
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with
from ehrguard.verify.verdict import Finding


def entity_columns(ctx: SqlContext) -> dict[str, str]:
    """Id column -> the entity it identifies (patient, admission, stay), from the profile."""
    return {e.id_column.lower(): e.name for e in ctx.profile.entities}


def _has_column(ctx: SqlContext, table: str, column: str) -> bool:
    info = ctx.db.schema.table(table) if table else None
    return info is not None and info.column(column) is not None


def _projected_column(query: exp.Expression) -> exp.Column | None:
    """The one column a subquery selects (``SELECT t.hadm_id FROM ...``), else None."""
    select = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        return None
    only = select.expressions[0]
    only = only.this if isinstance(only, exp.Alias) else only
    return only if isinstance(only, exp.Column) else None


def _linked_pairs(tree: exp.Expression) -> list[tuple[exp.Column, exp.Column]]:
    """Column pairs the query links: ``a.x = b.y`` and ``x IN (SELECT y ...)``."""
    pairs = []
    for node in tree.find_all(exp.EQ):
        if isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Column):
            pairs.append((node.this, node.expression))
    for within in tree.find_all(exp.In):
        query = within.args.get("query")
        inner = _projected_column(query) if query is not None else None
        if isinstance(within.this, exp.Column) and inner is not None:
            pairs.append((within.this, inner))
    return pairs


def _links(ctx: SqlContext, tree: exp.Expression) -> tuple[dict[str, str], dict[str, str], list[tuple[exp.Column, exp.Column]]]:
    """What both join checks read: the entity id columns, the query's table aliases, and the column pairs it links."""
    return entity_columns(ctx), aliases(tree)[0], _linked_pairs(tree)


def check_join_keys(ctx: SqlContext) -> CheckResult:
    """A join (or an IN-subquery) that links one entity's id with another's: a patient id with an admission id."""
    if ctx.tree is None:
        return NOTHING
    ids, tables, pairs = _links(ctx, ctx.tree)
    findings = []
    edits: list[Edit] = []
    for left, right in pairs:
        a, b = left.name.lower(), right.name.lower()
        if a == b or a not in ids or b not in ids or ids[a] == ids[b]:
            continue
        # The repair links one entity on both sides: the side whose table also has the other side's id column takes
        # it; when both could, the one the schema declares a foreign key for. Otherwise which was meant is a guess.
        homes = {id(left): table_of(ctx, left, tables), id(right): table_of(ctx, right, tables)}
        options = [(col, other, partner) for col, other, partner in ((right, a, left), (left, b, right))
                   if _has_column(ctx, homes[id(col)], other)]
        if len(options) > 1:
            options = [o for o in options if _declared(ctx, homes[id(o[0])], homes[id(o[2])], o[1])]
        fix = options[0][:2] if len(options) == 1 else None
        findings.append(Finding("join_key_mismatch", "error",
                                f"The query links {left.sql()} ({ids[a]} id) with {right.sql()} ({ids[b]} id): "
                                f"the rows it joins belong to different {ids[a]}s and {ids[b]}s.",
                                ctx.span_of(right.sql()) or ctx.span_of(left.sql()), fix[1] if fix else None))
        if fix is not None:
            edits.append(rename(*fix))
    return found(*findings, edits=edits)


def check_row_keys(ctx: SqlContext) -> CheckResult:
    """A join that links two tables by their own row numbers (each table's primary key, neither referring to the
    other): the rows it pairs are unrelated. The repair joins them by the one foreign key the schema declares between
    the two tables, when there is exactly one."""
    if ctx.tree is None:
        return NOTHING
    ids, tables, pairs = _links(ctx, ctx.tree)
    findings = []
    edits: list[Edit] = []
    for left, right in pairs:
        one, other = table_of(ctx, left, tables), table_of(ctx, right, tables)
        a, b = left.name.lower(), right.name.lower()
        if not one or not other or one == other:
            continue
        if (a in ids) != (b in ids):
            found_row = _row_key_to_entity(ctx, (left, one), (right, other), ids)
            if found_row is not None:
                findings.append(found_row[0])
                edits += found_row[1]
            continue
        if a in ids or b in ids:
            continue
        if not (_is_key(ctx, one, a) and _is_key(ctx, other, b)) or _declared(ctx, one, other, a) or _declared(ctx, one, other, b):
            continue
        links = _foreign_keys(ctx, one, other)
        findings.append(Finding("row_key_join", "error",
                                f"The query links {left.sql()} with {right.sql()}: each numbers its own table's rows, so the rows "
                                "it pairs are unrelated." + (f" Join them on {links[0][1]} instead." if len(links) == 1 else ""),
                                ctx.span_of(left.sql()), links[0][1] if len(links) == 1 else None))
        if len(links) == 1:
            column, referred, referring = links[0]
            mine, theirs = (column, referred) if referring == one else (referred, column)
            edits += [rename(left, mine), rename(right, theirs)]
    return found(*findings, edits=edits)


def _row_key_to_entity(ctx: SqlContext, first: tuple[exp.Column, str], second: tuple[exp.Column, str],
                       ids: dict[str, str]) -> tuple[Finding, list[Edit]] | None:
    """One side is a table's own row number (its primary key), the other an entity's id that does not refer to it
    (``medication.medicationid = patient.patientunitstayid``): the numbers are unrelated. Repaired to the entity's id
    column of the row's own table when the schema declares that foreign key between the two tables."""
    (row, row_table), (entity, entity_table) = (first, second) if second[0].name.lower() in ids else (second, first)
    key, column = row.name.lower(), entity.name.lower()
    info = ctx.db.schema.table(entity_table)
    refers = info is not None and any(fk.column.lower() == column and fk.ref_table.lower() == row_table and fk.ref_column.lower() == key
                                      for fk in info.foreign_keys)
    if not _is_key(ctx, row_table, key) or key in ids or refers:
        return None
    fixable = _declared(ctx, row_table, entity_table, column)
    finding = Finding("row_key_join", "error",
                      f"The query links {row.sql()}, the number of a row of {row_table}, with {entity.sql()}, "
                      f"{_a(ids[column])}'s id: the rows it pairs are unrelated." + (f" Join on {row_table}.{column}." if fixable else ""),
                      ctx.span_of(row.sql()), column if fixable else None)
    return finding, [rename(row, column)] if fixable else []


def referenced_keys(ctx: SqlContext) -> dict[tuple[str, str], set[str]]:
    """(table, column) -> the tables its declared foreign keys refer to (several for a column that refers to rows of
    several tables, as ``cost.event_id`` does); every column some key refers to is there too, with no table (a
    dictionary's code, a visit's id)."""
    out: dict[tuple[str, str], set[str]] = {}
    for info in ctx.db.schema.tables:
        for fk in info.foreign_keys:
            out.setdefault((info.name.lower(), fk.column.lower()), set()).add(fk.ref_table.lower())
            out.setdefault((fk.ref_table.lower(), fk.ref_column.lower()), set())
    return out


def check_referenced_table(ctx: SqlContext) -> CheckResult:
    """A code looked up in another table than the one the schema says it refers to: ``diagnoses_icd.icd_code`` in
    ``d_icd_procedures`` (a diagnosis read with a procedure's title). Only where the other table's column is itself a
    column some foreign key refers to (another dictionary, another entity's table) and the code's column refers to one
    table; repaired by reading the table the key refers to, when it has every column the query reads from the other."""
    if ctx.tree is None:
        return NOTHING
    keys = referenced_keys(ctx)
    if not keys:
        return NOTHING
    tables = aliases(ctx.tree)[0]
    pairs = list(_linked_pairs(ctx.tree))
    for node in ctx.tree.find_all(exp.EQ):  # code = (SELECT d.code FROM d WHERE ...)
        for col, query in ((node.this, node.expression), (node.expression, node.this)):
            inner = _projected_column(query) if isinstance(query, exp.Subquery) else None
            if isinstance(col, exp.Column) and inner is not None:
                pairs.append((col, inner))
    findings, edits = [], []
    for left, right in pairs:
        for code, looked_up in ((left, right), (right, left)):
            mine, theirs = table_of(ctx, code, tables), table_of(ctx, looked_up, tables)
            refers = keys.get((mine, code.name.lower()), set())
            if len(refers) != 1 or not theirs or theirs in refers or theirs == mine or (theirs, looked_up.name.lower()) not in keys:
                continue
            if keys[(theirs, looked_up.name.lower())] & refers:
                continue  # both refer to the same table: siblings, not a lookup
            meant = next(iter(refers))
            findings.append(Finding("wrong_reference", "error",
                                    f"The query looks up {mine}.{code.name} in {theirs}; the schema says it refers to {meant}.",
                                    ctx.span_of(theirs), meant))
            edits += _retarget(ctx, looked_up, theirs, meant)
            break
    return found(*findings, edits=edits)


# Rows read to find the column that says which table a row belongs with (its values are a handful of table names).
KIND_SAMPLE = 100_000


def sampled_values(ctx: SqlContext, table: str, column: str, most: int) -> list[str] | None:
    """Up to ``most`` distinct values of a column, read from a bounded sample of its table's rows (a column with a
    handful of values would otherwise be read to the end of a large table); None when they cannot be read."""
    sample = exp.select(exp.column(column)).from_(stored_table(ctx, table)).limit(KIND_SAMPLE).subquery("sample")
    query = exp.select(exp.column(column)).distinct().from_(sample).limit(most)
    try:
        return [str(r[0]) for r in ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows if r[0] is not None]
    except DatabaseError:
        return None


def category_values(ctx: SqlContext, table: str, column: str, most: int) -> list[str] | None:
    """The values of a text field of at most ``most`` values (a care unit, a route, a discharge status), read from a
    sample of the data; None for another field (not text, an id or a time, or more values)."""
    info = ctx.db.schema.table(table)
    field = info.column(column) if info is not None else None
    if field is None or column.lower().endswith(("id", "time", "date")) or not re.search(r"char|text|string", field.type, re.I):
        return None
    values = sampled_values(ctx, table, column, most + 1)
    return values if values is not None and len(values) <= most else None


def kind_columns(ctx: SqlContext) -> dict[tuple[str, str], tuple[str, dict[str, str]]]:
    """(table, column) -> the column of that table that says which table a row belongs with, and which of its values
    names which table. Two shapes, both read from the declared foreign keys and the data (a text column whose values
    are all names of those tables, at least two):

    - a key that refers to rows of several tables: ``cost.event_id`` -> ``cost.event_type`` ('prescriptions', ...);
    - a dictionary several tables refer to: ``d_items.itemid`` (chartevents, inputevents and outputevents refer to it)
      -> ``d_items.linksto`` ('chartevents', ...), the table that holds each item's records."""

    def build() -> dict[tuple[str, str], tuple[str, dict[str, str]]]:
        referenced = referenced_keys(ctx)
        referring: dict[tuple[str, str], set[str]] = {}
        for referrer in ctx.db.schema.tables:
            for fk in referrer.foreign_keys:
                referring.setdefault((fk.ref_table.lower(), fk.ref_column.lower()), set()).add(referrer.name.lower())
        out: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}
        for (table, column), refers in referenced.items():
            tables = refers or referring.get((table, column), set())
            info = stored_info(ctx, table) if len(tables) > 1 else None  # the table the probe below reads
            for other in info.columns if info is not None else ():
                if other.name.lower() == column or not any(k in other.type.lower() for k in ("char", "text", "string")):
                    continue
                values = sampled_values(ctx, table, other.name, len(tables) + 1)
                if values is not None and len(values) >= 2 and all(v.lower() in tables for v in values):
                    out[(table, column)] = (other.name, {v.lower(): v for v in values})
                    break
        return out

    return ctx.db.derived(("kind_columns",), build)


def check_key_kind(ctx: SqlContext) -> CheckResult:
    """The column that says which table a row belongs with, against the table the query links the row to:

    - **missing**: a key that refers to rows of several tables linked to one of them without it:
      ``cost.event_id IN (SELECT prescriptions.row_id ...)`` with no ``cost.event_type = 'prescriptions'`` in the same
      SELECT also takes the cost of a lab test or a procedure whose row has the same number. Repaired by stating it;
    - **contradicted**: it names another table than the one linked: ``cost.event_type = 'diagnoses_icd'`` beside
      prescriptions' rows, or ``chartevents.itemid IN (SELECT itemid FROM d_items WHERE ... linksto = 'inputevents')``
      (input items looked for among the charted values: nothing, or other items, comes back). Not repaired: the kind
      or the table read may be the one meant."""
    kinds = kind_columns(ctx) if ctx.tree is not None else {}
    if ctx.tree is None or not kinds:
        return NOTHING
    tables, referenced = aliases(ctx.tree)[0], referenced_keys(ctx)
    findings, edits = [], []
    for left, right in _linked_pairs(ctx.tree):
        for keeper, other in ((left, right), (right, left)):
            mine, linked = table_of(ctx, keeper, tables), table_of(ctx, other, tables)
            entry = kinds.get((mine, keeper.name.lower()))
            select = keeper.find_ancestor(exp.Select)
            if entry is None or linked not in entry[1] or select is None:
                continue
            kind_column, names = entry
            value = names[linked]
            stated = [(c, lit) for c, lit in _compared_literals(select) if c.name.lower() == kind_column.lower()]
            wrong = [(c, lit) for c, lit in stated if lit.this.lower() in names and lit.this.lower() != linked]
            if wrong:  # which side is wrong, the kind or the table read, is not known: no repair
                findings.append(Finding("wrong_key_kind", "error",
                                        f"The query reads {linked} rows but keeps {mine}.{kind_column} = '{wrong[0][1].this}': "
                                        f"those are another table's.", ctx.span_of(f"'{wrong[0][1].this}'")))
            elif not stated and referenced.get((mine, keeper.name.lower())):
                findings.append(Finding("missing_key_kind", "error",
                                        f"The query links {mine}.{keeper.name} to {linked} rows without {mine}.{kind_column} = "
                                        f"'{value}': rows of other kinds with the same number come in too.", ctx.span_of(keeper.sql()),
                                        f"{mine}.{kind_column} = '{value}'"))
                condition = exp.column(kind_column, table=keeper.table or None).eq(exp.Literal.string(value))
                edits.append(TreeEdit(add_condition(condition), target=select))
            break
    return found(*findings, edits=edits)


def _compared_literals(select: exp.Select) -> list[tuple[exp.Column, exp.Literal]]:
    """``column = 'text'`` and ``column IN ('text', ...)`` conditions of this SELECT itself, in its WHERE or its joins'
    ON (not of its subqueries)."""
    places = [select.args.get("where"), *(j.args.get("on") for j in select.args.get("joins") or [])]
    out = []
    for place in (p for p in places if p is not None):
        for node in place.find_all(exp.EQ, exp.In):
            if node.find_ancestor(exp.Select) is not select:
                continue
            if isinstance(node, exp.In):
                pairs = [(node.this, lit) for lit in node.expressions]
            else:
                pairs = [(node.this, node.expression), (node.expression, node.this)]
            out += [(c, lit) for c, lit in pairs if isinstance(c, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string]
    return out


def _retarget(ctx: SqlContext, column: exp.Column, table: str, meant: str) -> list[Edit]:
    """Read ``meant`` where the SELECT of ``column`` reads ``table``, when ``meant`` has every column read from it."""
    select, tree = column.find_ancestor(exp.Select), ctx.tree
    if select is None or tree is None:
        return []
    sources = [t for t in select.find_all(exp.Table) if t.name.lower() == table and t.find_ancestor(exp.Select) is select]
    info = ctx.db.schema.table(meant)
    if len(sources) != 1 or info is None:
        return []
    names = {sources[0].alias_or_name.lower(), table}
    if any(info.column(c.name) is None for c in tree.find_all(exp.Column) if c.table.lower() in names):
        return []
    edits: list[Edit] = [rename(sources[0], meant)]
    if not sources[0].alias:  # qualified by the table's own name: the qualifiers follow it
        edits += [TreeEdit(partial(_requalify, meant), target=c) for c in tree.find_all(exp.Column) if c.table.lower() == table]
    return edits


def _requalify(name: str, node: exp.Expression) -> None:
    node.set("table", exp.to_identifier(name))


def check_coarse_joins(ctx: SqlContext) -> CheckResult:
    """A join on a coarser entity's id than the visit the question keeps to: "patient 10020740 during ICU stay
    35889503" answered by joining chartevents to icustays on the patient's id and keeping the stay in icustays only,
    so every stay's chartevents of that patient come in. Only when the question states both the patient and the
    visit (naming the visit then can only narrow to it), the query keeps to the visit on one side of the link only,
    and both tables hold the visit's id column; repaired by linking them on it."""
    if ctx.tree is None:
        return NOTHING
    ids, tables, pairs = _links(ctx, ctx.tree)
    order = [e.id_column.lower() for e in ctx.profile.entities]  # coarse to fine: patient, admission, stay
    kept: dict[str, set[tuple[str, str]]] = {}  # visit id column -> (table it is kept in, the literal)
    for node in ctx.tree.find_all(exp.EQ):
        col, lit = node.this, node.expression
        if isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and col.name.lower() in ids and lit.this in ctx.question:
            kept.setdefault(col.name.lower(), set()).add((table_of(ctx, col, tables), lit.this))
    named = named_visits(ctx)
    linked = {(table_of(ctx, a, tables), table_of(ctx, b, tables), a.name.lower()) for a, b in pairs if a.name.lower() == b.name.lower()}
    findings, edits = [], []
    for left, right in pairs:
        key = left.name.lower()
        if key != right.name.lower() or key not in order:
            continue
        one, other = table_of(ctx, left, tables), table_of(ctx, right, tables)
        stated = any(v in ctx.question for _, v in kept.get(key, ())) or _states_entity(ctx, key)
        for finer in order[order.index(key) + 1:]:
            if not (_has_column(ctx, one, finer) and _has_column(ctx, other, finer)):
                continue
            sides = {t for t, _ in kept.get(finer, ())}
            if finer in named and not sides and one != other and _joined(left, right) \
                    and not {(one, other, finer), (other, one, finer)} & linked:
                # "the first hospital visit": one visit of the patient, and the two tables linked on the patient only
                severity, message = "warning", (f"The question is about one {ids[finer]}, but the query links {left.sql()} with "
                                                f"{right.sql()} on the {ids[key]} only: rows of every {ids[finer]} of that "
                                                f"{ids[key]} are paired. Link them on {finer} too.")
            elif not sides and one != other and _joined(left, right) and not {(one, other, finer), (other, one, finer)} & linked \
                    and _adds_up_rows(ctx, () if _PATIENT_LEVEL.search(ctx.question) else order[order.index(key) + 1:]) \
                    and not _compares_visits(ctx, finer) \
                    and (filtered := _visit_filtered(ctx, finer, (one, other), tables)) is not None:
                # "the total cost of the admission that started on 2100-08-12": one side kept to some visits by what
                # the visit's own table records of them, the other side's rows of every visit of the patient paired
                # with them and added up. Which visits the question meant is not certain ("patients with an emergency
                # admission, in any of their admissions" links on the patient on purpose): no repair.
                findings.append(Finding("coarse_join", "warning",
                                        f"The query keeps to some {ids[finer]}s by {filtered}, but links {left.sql()} with "
                                        f"{right.sql()} on the {ids[key]} only and adds up the rows: the other table's rows "
                                        f"of every {ids[finer]} of that {ids[key]} come in, once per {ids[finer]} kept.",
                                        ctx.span_of(left.sql())))
                break
            elif not sides and one != other and _joined(left, right) and not {(one, other, finer), (other, one, finer)} & linked \
                    and not _PATIENT_LEVEL.search(ctx.question) and not _OTHER_VISIT.search(ctx.question) \
                    and _counts_visits(ctx, finer) and not _sides_compared(ctx, left, right, tables) \
                    and _relinked_differs(ctx, left, right, finer):
                # "how many admissions included an ICU stay" answered by pairing each admission with the ICU stays of
                # every admission of its patient: an admission without a stay of its own comes in
                severity, message = "error", (f"The query counts {ids[finer]}s, but links {left.sql()} with {right.sql()} on "
                                              f"the {ids[key]} only: an {ids[finer]} is kept when any {ids[finer]} of its "
                                              f"{ids[key]} has a matching row, not only when it has one of its own.")
            elif stated and len(sides & {one, other}) == 1:
                severity, message = "error", (f"The query links {left.sql()} with {right.sql()} but keeps to one {ids[finer]} "
                                              f"({finer}) in {next(iter(sides & {one, other}))} only: the other table's rows of "
                                              f"every {ids[finer]} of that {ids[key]} come in.")
            else:
                continue
            findings.append(Finding("coarse_join", severity, message, ctx.span_of(left.sql()), finer))
            edits += [rename(left, finer), rename(right, finer)]
            break
    return found(*findings, edits=edits)


# Another visit of the same person: an order between visits, or the person said as such.
_OTHER_VISIT = re.compile(r"\b(?:previous|prior|earlier|later|before|after|preceding|following|same (?:patient|person)|"
                          r"another|other)\b", re.IGNORECASE)


def _sides_compared(ctx: SqlContext, left: exp.Column, right: exp.Column, tables: dict[str, str]) -> bool:
    """Does the query compare the two linked tables' columns beyond the link (``d.hadm_id <> a.hadm_id``, ``i.outtime <
    a.admittime``)? Then it pairs a visit with the person's other visits on purpose."""
    assert ctx.tree is not None
    sides = {table_of(ctx, left, tables), table_of(ctx, right, tables)}
    for node in ctx.tree.find_all(exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE):
        if node is left.parent:
            continue
        owners = {table_of(ctx, c, tables) for c in node.find_all(exp.Column)}
        if sides <= owners:
            return True
    return False


def _counts_visits(ctx: SqlContext, finer: str) -> bool:
    """The outermost SELECT counts or lists the visits themselves: ``COUNT(DISTINCT x.hadm_id)``, ``SELECT DISTINCT
    x.hadm_id``."""
    select = ctx.tree if isinstance(ctx.tree, exp.Select) else None
    if select is None or len(select.expressions) != 1:
        return False
    only = select.expressions[0].unalias()
    if isinstance(only, exp.Count) and isinstance(only.this, exp.Distinct):
        counted = only.this.expressions
        return len(counted) == 1 and isinstance(counted[0], exp.Column) and counted[0].name.lower() == finer
    return bool(select.args.get("distinct")) and isinstance(only, exp.Column) and only.name.lower() == finer


def _relinked_differs(ctx: SqlContext, left: exp.Column, right: exp.Column, finer: str) -> bool:
    """Does the query linked on ``finer`` instead answer otherwise here?"""
    assert ctx.tree is not None
    copy, counterpart = copy_with_map(ctx.tree)
    for column in (left, right):
        counterpart[id(column)].set("this", exp.to_identifier(finer))
    return answers_differently(ctx, copy)


# The question ties a condition to the patient, not to one visit ("stays of patients who ever had an urgent admission"):
# a link on the patient is what it asks.
_PATIENT_LEVEL = re.compile(r"\b(?:patients?|people|persons|subjects)\s+(?:who|that|with|whose)\b|\bever\b|\bbelong", re.IGNORECASE)


def _adds_up_rows(ctx: SqlContext, finer: Sequence[str] = ()) -> bool:
    """The outermost SELECT adds rows up: SUM, AVG, a COUNT that is not DISTINCT, or a DISTINCT count of a visit id
    finer than the link (``COUNT(DISTINCT stay_id)`` over a link on the patient counts the stays of every visit of
    the patients kept)."""
    select = ctx.tree if isinstance(ctx.tree, exp.Select) else None
    if select is None:
        return False

    def adds(a: exp.Expression) -> bool:
        if isinstance(a, exp.Sum | exp.Avg):
            return True
        if not isinstance(a.this, exp.Distinct):
            return True
        counted = a.this.expressions
        return len(counted) == 1 and isinstance(counted[0], exp.Column) and counted[0].name.lower() in finer

    return any(adds(a) for e in select.expressions for a in e.find_all(exp.Sum, exp.Avg, exp.Count)
               if a.find_ancestor(exp.Select) is select)


def _compares_visits(ctx: SqlContext, visit: str) -> bool:
    """Two visit ids compared with each other otherwise than by equality (``d.hadm_id <> a.hadm_id``: other visits)."""
    assert ctx.tree is not None
    return any(isinstance(n.this, exp.Column) and isinstance(n.expression, exp.Column) and n.this.name.lower() == visit
               and n.expression.name.lower() == visit for n in ctx.tree.find_all(exp.NEQ, exp.GT, exp.LT, exp.GTE, exp.LTE))


def _visit_filtered(ctx: SqlContext, visit: str, joined: tuple[str, str], tables: dict[str, str]) -> str | None:
    """A condition of the query's WHERE on a column of the visit's own table (one of the two joined), other than an
    id: the visits it keeps (``date(admissions.admittime) = '2100-08-12'``). The condition's text, or None."""
    assert ctx.tree is not None
    home = next((e.table.lower() for e in ctx.profile.entities if e.id_column.lower() == visit), None)
    where = ctx.tree.args.get("where") if isinstance(ctx.tree, exp.Select) else None
    if home not in joined or where is None:
        return None
    ids = set(entity_columns(ctx))
    for condition in where.find_all(exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.Is, exp.Like, exp.In):
        columns = list(condition.find_all(exp.Column))
        if len(columns) == 1 and columns[0].name.lower() not in ids and table_of(ctx, columns[0], tables) == home:
            return condition.sql(dialect=ctx.dialect)
    return None


# One particular visit, named by its place: "the first hospital visit", "his last admission", "the current ICU stay".
_ONE_VISIT = {"admission": r"(?:hospital )?(?:admission|visit|hospitali[sz]ation|encounter|hospital stay)",
              "stay": r"(?:icu|intensive care|unit) (?:stay|visit|admission)"}


def _joined(left: exp.Column, right: exp.Column) -> bool:
    """The two columns are compared with each other (a join pairs rows), not linked by ``IN (SELECT ...)`` (a filter)."""
    eq = left.parent
    return isinstance(eq, exp.EQ) and {id(eq.this), id(eq.expression)} == {id(left), id(right)}


# or by the month it began in ("her september hospitalization")
_PLACE = (r"(?:first|last|latest|most recent|current|ongoing|present|earliest|previous|second|final|january|february|march|april|"
          r"june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)")
# The phrase that names a visit by its place, any kind of visit: "the last admission", "her first ICU stay".
VISIT_BY_PLACE = re.compile(rf"\b{_PLACE} (?:{'|'.join(_ONE_VISIT.values())})\b", re.IGNORECASE)


def named_visits(ctx: SqlContext) -> set[str]:
    """The id columns of the visits the question names one of by its place (first, last, current, ...)."""
    out = set()
    for entity in ctx.profile.entities:
        noun = _ONE_VISIT.get(entity.name)
        if noun and re.search(rf"\b{_PLACE} {noun}\b", ctx.question, re.IGNORECASE):
            out.add(entity.id_column.lower())
    return out


def _states_entity(ctx: SqlContext, column: str) -> bool:
    """The question states an id of the entity ``column`` identifies (a number the data holds in that column)."""
    home = next((e.table for e in ctx.profile.entities if e.id_column.lower() == column), None)
    if home is None:
        return False
    for number in re.findall(r"(?<![\w.])\d{3,}(?![\w.])", ctx.question):
        try:
            if holds_id(ctx, home, column, exp.Literal(this=number, is_string=False)):
                return True
        except DatabaseError:
            continue
    return False


def _is_key(ctx: SqlContext, table: str, column: str) -> bool:
    info = ctx.db.schema.table(table)
    col = info.column(column) if info is not None else None
    return col is not None and col.primary_key


def _foreign_keys(ctx: SqlContext, one: str, other: str) -> list[tuple[str, str, str]]:
    """The foreign keys the schema declares between two tables: (column in the referring table, column referred to,
    the referring table)."""
    out = []
    for a, b in ((one, other), (other, one)):
        info = ctx.db.schema.table(a)
        for fk in info.foreign_keys if info is not None else ():
            if fk.ref_table.lower() == b:
                out.append((fk.column.lower(), fk.ref_column.lower(), a))
    return out


def _declared(ctx: SqlContext, one: str, other: str, column: str) -> bool:
    """The schema declares a foreign key on ``column`` between the two tables (either way)."""
    for a, b in ((one, other), (other, one)):
        info = ctx.db.schema.table(a) if a else None
        if info is not None and any(fk.column.lower() == column and fk.ref_table.lower() == b and fk.ref_column.lower() == column
                                    for fk in info.foreign_keys):
            return True
    return False


def table_of(ctx: SqlContext, column: exp.Column, tables: dict[str, str]) -> str:
    """The table a column is read from: its qualifier's, else the one table of its own SELECT that has it."""
    if column.table:
        return tables.get(column.table.lower(), column.table.lower())
    select = column.find_ancestor(exp.Select)
    return owner_table(ctx, "", column.name.lower(), ctx.own_tables(select) if select is not None else {})


def holds_id(ctx: SqlContext, table: str, column: str, lit: exp.Literal) -> bool:
    """Does an entity have this id? Asked each time (an id lookup is indexed; remembering every id ever asked about
    would grow a server's memory without bound). The value is written as the query wrote it, a number or a string."""
    value = exp.Literal.string(lit.this) if lit.is_string else exp.Literal.number(lit.this)
    query = exp.select("1").from_(stored_table(ctx, table)).where(exp.column(column).eq(value)).limit(1)
    return bool(ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows)


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def rename(target: exp.Column | exp.Table, name: str) -> TreeEdit:
    """An edit that gives a column (or a table) another name, keeping its qualifier (or alias)."""
    def apply(node: exp.Expression) -> None:
        node.set("this", exp.to_identifier(name))

    return TreeEdit(apply, target=target)


def check_id_kinds(ctx: SqlContext) -> CheckResult:
    """A number compared with one entity's id column that no such entity has, while another entity's id column holds
    it: the query took a patient id for an admission id (or the other way round)."""
    if ctx.tree is None:
        return NOTHING
    ids = entity_columns(ctx)
    homes = {e.id_column.lower(): e.table for e in ctx.profile.entities}
    tables, _ = aliases(ctx.tree)
    findings: list[Finding] = []
    edits: list[Edit] = []
    for col, lit in ids_compared(ctx.tree, ids):
        name = col.name.lower()
        try:
            if holds_id(ctx, homes[name], name, lit):
                continue
            other = next((c for c in ids if c != name and ids[c] != ids[name] and holds_id(ctx, homes[c], c, lit)), None)
        except DatabaseError:
            continue
        if other is None:
            continue  # no entity has it: check_patient_ids speaks for patients; an unknown visit is just empty
        table = owner_table(ctx, tables.get(col.table.lower(), col.table.lower()), name, tables)
        fixable = _has_column(ctx, table, other)
        findings.append(Finding("wrong_id_kind", "error",
                                f"{lit.this} is {_a(ids[other])} id ({other}), not {_a(ids[name])} id ({name}): no {ids[name]} "
                                f"has it.",
                                ctx.span_of(lit.this), other if fixable else None))
        if fixable:
            edits.append(rename(col, other))
    return found(*findings, edits=edits)


def check_codes(ctx: SqlContext) -> CheckResult:
    """A number compared with a column whose declared foreign key refers to a dictionary that has no such code
    (``labevents.itemid = 220045``: 220045 is no lab item): no row can ever match, and the answer reads as "none".
    When another dictionary defines the code, its label is named; the table is repaired to the one table that refers
    to that dictionary by the same column, when the question names the label and that table has every column the
    query reads (``chartevents`` for the heart rate). Entity ids are left to the id checks."""
    if ctx.tree is None or not referenced_keys(ctx):
        return NOTHING
    entities = {e.id_column.lower() for e in ctx.profile.entities}
    tables = aliases(ctx.tree)[0]
    findings: list[Finding] = []
    edits: list[Edit] = []
    for col, table, reference, numbers, literals in _coded(ctx, tables):
        if col.name.lower() in entities:
            continue
        for lit in numbers:
            try:
                if holds_id(ctx, reference[0], reference[1], lit):
                    continue
                elsewhere = _defined_elsewhere(ctx, reference, lit)
            except DatabaseError:
                continue
            where = f"; {lit.this} is '{elsewhere[1]}' in {elsewhere[0]}" if elsewhere else ""
            # A list that holds codes of this dictionary too loses them if the table changes: only a lone code moves.
            meant = _reader_of(ctx, elsewhere[0], col, lit, table, tables) \
                if elsewhere and len(numbers) == 1 and len(literals) == 1 and _names_label(ctx.question, elsewhere[1]) else None
            findings.append(Finding("unknown_code", "error",
                                    f"{reference[0]} has no {reference[1]} {lit.this}, so {table}.{col.name} never equals it here"
                                    f"{where}.", ctx.span_of(lit.sql()), meant))
            if meant:
                edits += _retarget(ctx, col, table, meant) if col.table else _retarget_unqualified(ctx, col, table, meant)
            break
    return found(*findings, edits=edits)


def _coded(ctx: SqlContext, tables: dict[str, str]) -> Iterator[tuple[exp.Column, str, tuple[str, str], list[exp.Literal],
                                                                     list[exp.Expression]]]:
    """Every column compared with numbers (``= N``, ``IN (...)``) whose declared foreign key refers to a dictionary:
    the column, its table, the (dictionary, code column), the numbers and all the compared values."""
    assert ctx.tree is not None
    for node in ctx.tree.find_all(exp.EQ, exp.In):
        col = node.this
        literals = node.expressions if isinstance(node, exp.In) else [node.expression]
        numbers = [lit for lit in literals if isinstance(lit, exp.Literal) and not lit.is_string and lit.this.isdigit()]
        if not isinstance(col, exp.Column) or not numbers:
            continue
        table = table_of(ctx, col, tables)
        reference = dictionary_of(ctx, table, col.name.lower())
        if reference is not None:
            yield col, table, reference, numbers, literals


def check_code_names(ctx: SqlContext) -> CheckResult:
    """A code of a dictionary with names (``chartevents.itemid = 220210``, 'respiratory rate') where the question names
    another of that dictionary's names ("heart rate") and not the code's own: the query reads the wrong item. Repaired
    to the named item's code when one code of the table has that name; a name several codes share is only reported."""
    if ctx.tree is None or not referenced_keys(ctx):
        return NOTHING
    tables = aliases(ctx.tree)[0]
    coded: list[tuple[exp.Column, str, tuple[str, str], str, list[exp.Literal], int]] = []
    for col, table, reference, numbers, literals in _coded(ctx, tables):
        label = label_column(ctx, reference[0])
        if label is not None:
            coded.append((col, table, reference, label, numbers, len(literals)))
    if not coded:
        return NOTHING
    try:
        names = {(ref, lit.this): name_of(ctx, ref[0], ref[1], label, lit.this)
                 for _, _, ref, label, numbers, _ in coded for lit in numbers}
    except DatabaseError:
        return NOTHING
    everything = " ".join(n for n in names.values() if n)
    findings: list[Finding] = []
    edits: list[Edit] = []
    plain = clinical_wording(ctx.question)
    for col, table, reference, label, numbers, count in coded:
        named_codes = [names[(reference, lit.this)] for lit in numbers]
        own = [n for n in named_codes if n is not None]
        if len(own) < len(named_codes):
            continue  # a code with no name
        if any(supported(n, ctx.question) for n in own):
            # named, but maybe only inside a longer name the question says ("ionized calcium": 'free calcium' asked,
            # 'calcium, total' read)
            longer = inside_longer_name(ctx, reference[0], label, own[0], plain, everything) if len(own) == 1 else []
            instead = {v: held for v in longer if (held := [c for c in codes_named(ctx, table, col.name, reference, label, v)
                                                            if _same_fluid(reference[0], numbers[0].this, c)])}
            if instead:
                # one longer name, held by one code: the code of the name the question says in full
                held_longer = next(iter(instead.values()))
                sure = held_longer[0] if len(instead) == 1 and len(held_longer) == 1 and count == 1 else None
                findings.append(Finding("wrong_code", "error", f"The query reads {reference[0]} {numbers[0].this} ('{own[0]}'); "
                                        f"the question names {' or '.join(repr(v) for v in list(instead)[:3])}.",
                                        ctx.span_of(numbers[0].sql()), sure))
                if sure is not None:
                    edits.append(TreeEdit(_replace_with(sure, string=False), target=numbers[0]))
            continue  # a code the question names
        named = named_values(ctx, [(reference[0], label)], ctx.question)[(reference[0], label)]
        # another item only if the table has rows of it ("bun" is a lab item no result refers to: a name, not a reading)
        # ... and measured in what the query's item is ("wbc" names the urine item: no other name for the blood count)
        instead = {v: held for v in named if not supported(v, everything) and not any(normal_form(v) in normal_form(n or "") for n in own)
                   and (held := [c for c in codes_named(ctx, table, col.name, reference, label, v)
                                 if _same_fluid(reference[0], numbers[0].this, c)])}
        if not instead:
            continue
        shown = ", ".join(f"{lit.this} ('{n}')" for lit, n in zip(numbers, own, strict=True))
        alternatives = " or ".join(f"'{v}'" for v in list(instead)[:3])
        held = next(iter(instead.values()))
        # a short name (an abbreviation clinicians use for more than one test) is only reported
        certain = len(instead) == 1 and len(held) == 1 and count == 1 and len(next(iter(instead)).strip()) > 4
        meant = held[0] if certain else None
        findings.append(Finding("wrong_code", "error", f"The query reads {reference[0]} {shown}; the question names {alternatives}.",
                                ctx.span_of(numbers[0].sql()), meant))
        if meant is not None:
            edits.append(TreeEdit(_replace_with(meant, string=False), target=numbers[0]))
    return found(*findings, edits=edits)


def _same_fluid(dictionary: str, code: str, other: str) -> bool:
    """Two lab codes measured in the same fluid, as the shipped MIMIC-IV lab dictionary says (other dictionaries: no
    such knowledge, and nothing stands against the move)."""
    if dictionary != "d_labitems":
        return True
    one, two = lab_items().get(code), lab_items().get(other)
    return one is None or two is None or one[1] == two[1]


def label_column(ctx: SqlContext, table: str) -> str | None:
    """A dictionary's column of names, when the profile indexes it as a value column."""
    info = ctx.db.schema.table(table)
    names = [c.name for c in (info.columns if info is not None else ()) if c.name.lower() in ("label", "name", "title", "long_title")]
    own = info.name.lower() if info is not None else table.lower()
    indexed = {tuple(v.lower().rsplit(".", 2)[-2:]) for v in ctx.db.profile.value_columns}  # (table, column), schema aside
    return next((n for n in names if (own, n.lower()) in indexed), None)


def name_of(ctx: SqlContext, dictionary: str, code_column: str, label: str, code: str) -> str | None:
    """The name a dictionary gives a numeric code (``d_items`` 220045: 'heart rate'); None when it has none."""
    query = exp.select(exp.column(label)).from_(stored_table(ctx, dictionary)).where(
        exp.column(code_column).eq(code_literal(code))).limit(1)
    rows = ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows
    return str(rows[0][0]) if rows and rows[0][0] is not None else None


def codes_named(ctx: SqlContext, table: str, column: str, reference: tuple[str, str], label: str, name: str) -> list[str]:
    """The codes the dictionary gives this name that the table has rows for."""
    query = exp.select(exp.column(reference[1])).from_(stored_table(ctx, reference[0])).where(
        exp.column(label).eq(exp.Literal.string(name))).limit(20)
    try:
        codes = [str(r[0]) for r in ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows if r[0] is not None]
        return [c for c in codes if c.isdigit() and holds_id(ctx, table, column, code_literal(c))]
    except DatabaseError:
        return []


def code_literal(code: str) -> exp.Literal:
    """A code written as a number (``exp.Literal.number`` may give a negation)."""
    return exp.Literal(this=code, is_string=False)


def dictionary_of(ctx: SqlContext, table: str, column: str) -> tuple[str, str] | None:
    """The (table, column) the one declared foreign key of ``table.column`` refers to."""
    info = ctx.db.schema.table(table) if table else None
    refs = [(fk.ref_table.lower(), fk.ref_column.lower()) for fk in (info.foreign_keys if info is not None else ())
            if fk.column.lower() == column]
    return refs[0] if len(refs) == 1 else None


def _defined_elsewhere(ctx: SqlContext, reference: tuple[str, str], lit: exp.Literal) -> tuple[str, str] | None:
    """Another table that foreign keys refer to by the same column and that defines the code: (table, its label)."""
    for info in ctx.db.schema.tables:
        name = info.name.lower()
        if name == reference[0] or info.column(reference[1]) is None or not _referred_to(ctx, name, reference[1]):
            continue
        label = next((c.name for c in info.columns if c.name.lower() in ("label", "name", "title", "long_title")), None)
        if label is None or not holds_id(ctx, name, reference[1], lit):
            continue
        return name, name_of(ctx, name, reference[1], label, lit.this) or ""
    return None


def _referred_to(ctx: SqlContext, table: str, column: str) -> bool:
    return any(fk.ref_table.lower() == table and fk.ref_column.lower() == column
               for info in ctx.db.schema.tables for fk in info.foreign_keys)


def _reader_of(ctx: SqlContext, dictionary: str, col: exp.Column, lit: exp.Literal, instead_of: str,
               tables: dict[str, str]) -> str | None:
    """The one table (other than ``instead_of``) whose foreign key on the column refers to ``dictionary``, that has
    every column the query reads from ``instead_of`` and rows with the code."""
    select = col.find_ancestor(exp.Select)
    read = {c.name.lower() for c in (select.find_all(exp.Column) if select is not None else ())
            if c.find_ancestor(exp.Select) is select and table_of(ctx, c, tables) == instead_of}
    readers = [info.name.lower() for info in ctx.db.schema.tables if info.name.lower() != instead_of
               and any(fk.column.lower() == col.name.lower() and fk.ref_table.lower() == dictionary for fk in info.foreign_keys)
               and all(info.column(c) is not None for c in read)]
    readers = [r for r in readers if holds_id(ctx, r, col.name.lower(), lit)]
    return readers[0] if len(readers) == 1 else None


def _names_label(question: str, label: str) -> bool:
    """Every word of the label (two letters or more, parentheses left out) is in the question."""
    words = re.findall(r"[a-z0-9]{2,}", re.sub(r"\([^)]*\)", " ", label.lower()))
    return bool(words) and all(re.search(rf"(?<![a-z0-9]){re.escape(w)}(?![a-z0-9])", question.lower()) for w in words)


def _retarget_unqualified(ctx: SqlContext, column: exp.Column, table: str, meant: str) -> list[Edit]:
    """Read ``meant`` instead of ``table`` in a SELECT that reads that one table and writes its columns unqualified,
    when ``meant`` has every column the SELECT reads."""
    select = column.find_ancestor(exp.Select)
    info = ctx.db.schema.table(meant)
    if select is None or info is None or select.args.get("joins"):
        return []
    sources = [t for t in select.find_all(exp.Table) if t.find_ancestor(exp.Select) is select]
    if len(sources) != 1 or sources[0].name.lower() != table:
        return []
    own = [c for c in select.find_all(exp.Column) if c.find_ancestor(exp.Select) is select]
    if any(c.table or info.column(c.name) is None for c in own):
        return []
    return [rename(sources[0], meant)]


# Words that say a record is a measurement, not which kind it is ("excluding blood gas values").
_WHAT_IS_MEASURED = frozenset(("value", "result", "reading", "measurement", "level", "test", "sample", "draw", "one"))


def check_excluded_item(ctx: SqlContext) -> CheckResult:
    """The question leaves a kind of record out ("serum K (not the gas)", "glucose, excluding fingersticks") and the
    query reads an item by its number whose dictionary row says just that kind: 50822 is 'potassium, whole blood', of
    the 'Blood Gas' category. The words of the whole dictionary row are read (its name, fluid, category), not only its
    name; the query reads what the question excludes, and no other item is certain, so nothing is repaired."""
    if ctx.tree is None:
        return NOTHING
    plain = clinical_wording(ctx.question)
    # what each exception leaves out, as a whole: "excluding blood gas values" leaves out blood gases, not blood
    # ("non-invasive" names a kind of its own, as the dictionary writes it: 'non invasive blood pressure systolic')
    excluded = [words - _WHAT_IS_MEASURED for m in EXCLUSION.finditer(plain) if not m.group(0).lower().startswith("non")
                if (words := excluded_words(plain[m.start():m.end() + 40].split(",")[0].split(";")[0], shortest=3))]
    excluded = [w for w in excluded if w]
    if not excluded:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    findings = []
    for node in ctx.tree.find_all(exp.EQ, exp.In):
        column = node.this
        if not isinstance(column, exp.Column) or negated(node):
            continue
        codes = [node.expression] if isinstance(node, exp.EQ) else list(node.expressions)
        codes = [c for c in codes if isinstance(c, exp.Literal) and not c.is_string and c.this.isdigit()]
        table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        reference = dictionary_of(ctx, table, column.name.lower()) if table and codes else None
        if reference is None:
            continue
        for code in codes:
            row = _dictionary_row(ctx, reference, code.this)
            said = {singular(t): t for t in re.findall(r"[a-z]+", row.lower())}
            hit = {said[w] for words in excluded if words <= said.keys() for w in words}
            if hit:
                findings.append(Finding("excluded_item", "error", f"The question leaves out '{', '.join(sorted(hit))}'; the query reads "
                                        f"{column.name} {code.this}, which the records describe as {row!r}.",
                                        ctx.span_of(code.sql()), None))
    return found(*findings)


def _dictionary_row(ctx: SqlContext, reference: tuple[str, str], code: str) -> str:
    """The text values of a dictionary's row for a code, joined ('potassium, whole blood; blood; blood gas')."""
    query = exp.select("*").from_(stored_table(ctx, reference[0])).where(exp.column(reference[1]).eq(code_literal(code))).limit(1)
    try:
        rows = ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows
    except DatabaseError:
        return ""
    return "; ".join(str(v) for v in rows[0] if isinstance(v, str)) if rows else ""
