"""The question asks about one side of a clinical contrast and the query reads the other: intake answered from
output, weight from a height item, systolic from diastolic, a lab test from charted vitals, marital status from
ethnicity.

What the query reads is taken from everything it names: its tables and columns, its text literals, and the
dictionary label of every item it selects by number (``itemid = 226730`` is 'Height (cm)' in ``d_items``). A side
counts only when the question names it and not the other, and the query names the other and not it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found, quoted_names
from ehrguard.verify.checks.columns import column_kind
from ehrguard.verify.checks.keys import rename
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with, literal_comparisons
from ehrguard.verify.verdict import Finding

# eICU names the ICU stay "unit" (``unitadmittime``); a care unit is any ward, a dose unit a measure.
_UNIT = r"^unit|unit(?=admit|disch|stay)"
# Pairs of opposite clinical notions, each side as the stems people and schemas write it (general clinical English).
CONTRASTS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("intake", "input", "infus"), ("output", "urin", "void", "drain", "stool", "emesis", "vomit")),
    (("weight",), ("height",)),
    (("systolic",), ("diastolic",)),
    (("lab(?!el)", "laborator"), ("chart", "vital")),
    (("marital", "married", "divorced", "widowed"), ("ethnic", "race")),
    (("admission", "admit"), ("discharge", "disch")),
    ((_UNIT, "icu", "intensive care", "critical care"), ("hospital",)),
)
# What flows out of a patient, by name (general clinical English): the output side of intake and output.
_OUTPUTS = ("urin", "void", "drain", "stool", "emesis", "vomit")
_NAMES = {"intake": "intake", "input": "intake", "infus": "intake", "output": "output", "weight": "weight",
          "height": "height", "systolic": "systolic", "diastolic": "diastolic", "lab(?!el)": "a lab test",
          "laborator": "a lab test", "chart": "charted values", "vital": "vital signs", "marital": "marital status",
          "married": "marital status", "divorced": "marital status", "widowed": "marital status", "ethnic": "ethnicity",
          "race": "race", "admission": "the admission", "admit": "the admission", "discharge": "the discharge",
          "disch": "the discharge", _UNIT: "the ICU stay", "icu": "the ICU stay", "intensive care": "the ICU stay",
          "critical care": "the ICU stay",
          "hospital": "the hospital stay",
          **{stem: "output" for stem in _OUTPUTS}}


def _split(name: str) -> str:
    return name.lower().replace("_", " ")


def item_labels(ctx: SqlContext, tree: exp.Expression) -> list[str]:
    """The dictionary labels of the items the query selects by number (``itemid = N`` / ``IN (...)``)."""
    numbers: dict[str, set[str]] = {}
    for node in tree.find_all(exp.EQ, exp.In):
        col = node.this
        if not isinstance(col, exp.Column) or not col.name.lower().endswith("itemid"):
            continue
        literals = node.expressions if isinstance(node, exp.In) else [node.expression]
        numbers.setdefault(col.name.lower(), set()).update(
            lit.this for lit in literals if isinstance(lit, exp.Literal) and not lit.is_string)
    labels: list[str] = []
    for column, values in numbers.items():
        listed = ", ".join(v for v in values if v.isdigit())
        if not listed:
            continue
        for source, key, label in _labelled_dictionaries(ctx, column):
            try:
                rows = ctx.db.db.execute(f"SELECT {label} FROM {source} WHERE {key} IN ({listed})", timeout_s=5).rows
            except DatabaseError:
                continue
            labels.extend(str(r[0]) for r in rows if r[0] is not None)
    return labels


def _labelled_dictionaries(ctx: SqlContext, key: str) -> Iterator[tuple[str, str, str]]:
    """The dictionaries (``d_*`` tables) with a ``key`` column and a ``label``: each one's quoted name, key and label."""
    for table in ctx.db.schema.tables:
        key_column, label_column = table.column(key), table.column("label")
        if table.name.lower().startswith("d_") and key_column is not None and label_column is not None:
            source, key_name = quoted_names(ctx, table.qualified_name, key_column.name)
            yield source, key_name, quoted_names(ctx, table.qualified_name, label_column.name)[1]


def _visit_tables(ctx: SqlContext) -> set[str]:
    """The tables of the profile's patients and visits (admissions, icustays): they name the visit, not a side of
    anything."""
    return {e.table.lower() for e in ctx.profile.entities}


def _what_the_query_reads(ctx: SqlContext, tree: exp.Expression) -> list[tuple[str, bool]]:
    """The names the query reads by, each with whether words run together in it (schema names) or stand apart
    (values, dictionary labels): tables (not those of visits or patients), columns (not ids), text literals and the
    labels of the items it selects by number."""
    entities = _visit_tables(ctx)
    parts = [(_split(t.name), True) for t in tree.find_all(exp.Table) if t.name.lower() not in entities]
    for c in tree.find_all(exp.Column):
        name = c.name.lower()
        if name.endswith(("id", "status", "location", "source")):
            continue  # a status, place or source recorded at admission or discharge is an attribute of the visit
        name = re.sub(r"^chart(?=time|date)", "", name)  # ``charttime`` says nothing of charts
        if isinstance(c.parent, exp.Is):  # whether a discharge time is set says the visit is over, not when it ended
            name = re.sub(r"disch(?:arge)?", "", name)
        if c.find_ancestor(exp.Order) is not None:
            continue  # ordering visits by their admission picks the visit; it is not what is read
        parts.append((_split(name), True))
    parts += [(lit.this.lower(), False) for lit in tree.find_all(exp.Literal) if lit.is_string]
    parts += [(label.lower(), False) for label in item_labels(ctx, tree)]
    parts += [(side, False) for side in _visit_sides_returned(ctx, tree)]
    return parts


# The visit a table of the profile's entities records, as a side of the ICU / hospital contrast.
_ENTITY_SIDE = {"stay": "icu", "admission": "hospital"}


def _visit_sides_returned(ctx: SqlContext, tree: exp.Expression) -> list[str]:
    """The visits whose own columns the query returns (a length of stay from ``icustays.intime``/``outtime`` is the ICU
    stay's; from ``admissions.admittime``/``dischtime`` the hospital's): its time columns, as the profile names them.
    Only a table that records one kind of visit
    (eICU's ``patient`` holds both, and says which in its column names), only what the outermost SELECT returns."""
    if not isinstance(tree, exp.Select):
        return []
    kinds: dict[str, set[str]] = {}
    for e in ctx.profile.entities:
        kinds.setdefault(e.table.lower(), set()).add(e.name)
    times = {c.lower() for c in ctx.profile.time_columns}
    tables, _ = aliases(tree)
    sides = []
    for expression in tree.expressions:
        for column in expression.find_all(exp.Column):
            table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
            if f"{table}.{column.name}".lower() not in times:
                continue  # the visit's times say which visit; its attributes (a care unit, a location) do not
            held = kinds.get((table or "").lower(), set())
            if len(held) == 1 and (side := _ENTITY_SIDE.get(next(iter(held)))):
                sides.append(side)
    return sides


# How a question writes a stem when the stem alone would start other words ("lab" starts labetalol and labor), or in
# a phrase of its own ("how much fluid did she take in").
# "The admission that began on ..." names the visit; the moment or the measures of admitting are the admission side.
_ATTRIBUTE = r"(?:location|status|disposition|destination|source|type)s?\b"
# The work done towards a discharge ("for discharge planning", "discharge summary") is no moment of discharge.
_DISCHARGE_WORK = r"(?:plan\w*|summar\w*|instructions?|criteria|readiness|team|coordinat\w*|letters?|paperwork|medications?|meds)\b"
_IN_QUESTIONS = {"intake": r"(?:intake|(?:take|takes|took|taken|taking) in\b)", "lab(?!el)": r"labs?\b",
                 _UNIT: r"(?<!care )(?<!dose )units?\b(?! of)",
                 "admission": r"admission (?:times?|dates?|days?|hours?|weights?|heights?|source|diagnos[ie]s)\b",
                 # a place or status recorded at discharge is an attribute of the visit, as in the query's columns
                 "discharge": rf"discharge(?!s?\s+(?:{_ATTRIBUTE}|{_DISCHARGE_WORK}))",
                 "disch": rf"disch(?!arges?\s+(?:{_ATTRIBUTE}|{_DISCHARGE_WORK}))"}


def _says(text: str, stems: tuple[str, ...], *, inside_words: bool = False) -> str | None:
    """The first stem the text holds at the start of a word, or anywhere in a word with ``inside_words`` (schema names
    run words together: ``outputevents``, ``admissionweight``)."""
    if inside_words:
        return next((s for s in stems if re.search(s, text)), None)
    return next((s for s in stems if re.search("(?<![a-z])" + _IN_QUESTIONS.get(s, s), text)), None)


_CONDITION_NAME = re.compile(r"\b[a-z]+\s+(?:heart\s+|renal\s+|cardiac\s+)?(?:failure|dysfunction|murmur|hypertension|hypotension|"
                             r"disease|syndrome|insufficiency)\b")


def check_contrasts(ctx: SqlContext) -> CheckResult:
    """The question names one side of a contrast and the query reads only the other."""
    if ctx.tree is None:
        return NOTHING
    # a side's word inside a condition's name ("diastolic heart failure", "output failure") names the condition
    question = _CONDITION_NAME.sub(" ", ctx.question.lower())
    reads = _what_the_query_reads(ctx, ctx.tree)
    findings = []
    edits: list[Edit] = []
    for one, other in CONTRASTS:
        # A name holding both sides (eICU's ``intakeoutput``) says neither.
        sides = [(_says(part, one, inside_words=run), _says(part, other, inside_words=run)) for part, run in reads]
        sides = [(a, b) for a, b in sides if (a is None) != (b is None)]
        for asked, wrong, index in ((one, other, 0), (other, one, 1)):
            said, unsaid = _says(question, asked), _says(question, wrong)
            if said is None or unsaid is not None:
                continue
            took = next((s[1 - index] for s in sides if s[1 - index] is not None), None)
            if took is not None and not any(s[index] is not None for s in sides):
                # A narrower word ("urine", "drain") names some of the outputs: moving to the output table would read
                # them all, an answer to another question. What to read then is a guess; no repair.
                narrower = said in ("output", *_OUTPUTS) and _says(question, _OUTPUTS) is not None
                swaps = [] if narrower else _other_side(ctx, ctx.tree, wrong, asked, said)
                findings.append(Finding("wrong_concept", "error",
                                        f"The question asks about {_NAMES[said]}; the query reads {_NAMES[took]} instead.",
                                        None, _NAMES[said] if swaps else None))
                edits += swaps
            elif took is None and not sides and (table := _both_sides_unchosen(ctx, one, other)) is not None:
                findings.append(Finding("side_not_chosen", "warning",
                                        f"The question asks about {_NAMES[said]}; the query reads {table}, which records "
                                        f"{_NAMES[one[0]]} and {_NAMES[other[0]]} alike, and keeps both.", None))
    return found(*findings, edits=edits)


def _both_sides_unchosen(ctx: SqlContext, one: tuple[str, ...], other: tuple[str, ...]) -> str | None:
    """A table whose name holds both sides of a contrast (eICU's ``intakeoutput``), read with no condition on a value of
    its own (the rows of one side are then all of them: a drug's name chooses its rows, a patient's id does not)."""
    assert ctx.tree is not None
    tables, _ = aliases(ctx.tree)
    entities = _visit_tables(ctx)
    for t in ctx.tree.find_all(exp.Table):
        name = t.name.lower()
        if name in entities or _says(name, one, inside_words=True) is None or _says(name, other, inside_words=True) is None:
            continue
        chosen = [c for table, c, _ in literal_comparisons(ctx.tree, tables, (exp.EQ, exp.In, exp.Like, exp.ILike, exp.Glob))
                  if owner_table(ctx, table, c, tables) == name and not c.endswith("id")]
        chosen += [c.name for c in ctx.tree.find_all(exp.Column) if not c.name.lower().endswith("id")
                   and owner_table(ctx, tables.get(c.table.lower(), c.table.lower()), c.name.lower(), tables) == name
                   and (f := c.find_ancestor(exp.Func)) is not None and any(lit.is_string for lit in f.find_all(exp.Literal))]
        if not chosen:
            return t.name
    return None


# The whole words a side is written with in names and values, for a repair that writes the other side (stems such as
# "infus" or "lab" name no table or value on their own).
_WRITTEN = {"intake": ("intake", "input"), "input": ("intake", "input"), "infus": ("intake", "input"), "output": ("output",),
            "weight": ("weight",), "height": ("height",), "systolic": ("systolic",), "diastolic": ("diastolic",),
            "admission": ("admission", "admit"), "admit": ("admit", "admission"), "discharge": ("discharge", "disch"),
            "disch": ("disch", "discharge"), _UNIT: ("unit",), "icu": ("unit",), "intensive care": ("unit",), "critical care": ("unit",),
            "hospital": ("hospital",),
            **{stem: ("output",) for stem in _OUTPUTS}}


def _other_side(ctx: SqlContext, tree: exp.Expression, wrong: tuple[str, ...], asked: tuple[str, ...], said: str) -> list[Edit]:
    """Edits that make the query read the asked side where it reads the other: a table named for the other side
    becomes the table named for the asked one (its columns matched by kind, one to one), a column the same table's
    column named for the asked side (``admissionheight`` -> ``admissionweight``), a value or pattern becomes
    the same with the asked side's word, when the database holds such a table or value. Nothing when any part that
    reads the other side has no single such counterpart: then what was meant is a guess."""
    words = _WRITTEN.get(said, ())
    # The question's own word first ("intake" where "intake" and "input" both name something), then any of the side's.
    tries = [(said,), words] if said in words else [words]
    edits: list[Edit] = []
    moved_tables = set()
    entities = _visit_tables(ctx)
    for table in tree.find_all(exp.Table):
        stem = _says(table.name.lower(), wrong, inside_words=True) if table.name.lower() not in entities else None
        if stem is None or _says(table.name.lower(), asked, inside_words=True) is not None:
            continue  # a name holding both sides (``intakeoutput``) says neither
        moved = next((m for w in tries if (m := _moved_table(ctx, tree, table, stem, w)) is not None), None)
        if moved is None:
            return []
        edits += moved
        moved_tables.add(table.name.lower())
    tables, _ = aliases(tree)
    for column in tree.find_all(exp.Column):
        name = column.name.lower()
        stem = _says(re.sub(r"^chart(?=time|date)", "", name), wrong, inside_words=True) if not name.endswith("id") else None
        if stem is None or _says(name, asked, inside_words=True) is not None:
            continue
        owner = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), name, tables)
        info = ctx.db.schema.table(owner) if owner and owner not in moved_tables else None
        if info is None:
            return []
        # the same field for the asked side, in the same table (``admissionheight`` -> ``admissionweight``)
        named = next((n for w in tries if len(n := [c.name for c in info.columns if any(
            c.name.lower() == re.sub(stem, word, name) for word in w)]) == 1), None)
        if named is None:
            return []
        edits.append(rename(column, named[0]))
    for lit in tree.find_all(exp.Literal):
        stem = _says(lit.this.lower(), wrong, inside_words=True) if lit.is_string else None
        if stem is None:
            continue
        held = next((h for w in tries if len(h := _held_values(ctx, tree, lit, stem, w)) == 1), None)
        if held is None:
            return []
        edits.append(TreeEdit(_replace_with(held[0]), target=lit))
    for node in tree.find_all(exp.EQ):
        if not (isinstance(node.this, exp.Column) and node.this.name.lower().endswith("itemid")
                and isinstance(node.expression, exp.Literal) and not node.expression.is_string):
            continue
        # an item chosen by number whose label reads the other side: the item of the same label with the asked word
        # ('arterial blood pressure diastolic' -> '... systolic'), one in its dictionary
        sibling = _sibling_item(ctx, node.this.name, node.expression.this, wrong, tries)
        if sibling == "":
            return []
        if sibling is not None:
            edits.append(TreeEdit(_replace_with(sibling, string=False), target=node.expression))
    return edits


def _sibling_item(ctx: SqlContext, key: str, number: str, wrong: tuple[str, ...], tries: list[tuple[str, ...]]) -> str | None:
    """The number of the item whose label is this item's with the other side's word written as the asked side's, in
    the dictionary that holds the item; None when its label says neither side (it reads nothing of the contrast),
    "" when it reads the other side and no single such item exists (then what was meant is a guess)."""
    if not number.isdigit():
        return None
    for source, id_name, label_name in _labelled_dictionaries(ctx, key):
        try:
            rows = ctx.db.db.execute(f"SELECT {label_name} FROM {source} WHERE {id_name} = {number}", timeout_s=5).rows
            if not rows or rows[0][0] is None:
                continue
            label = str(rows[0][0])
            stem = _says(label.lower(), wrong, inside_words=True)
            if stem is None:
                return None
            for words in tries:
                wanted = ", ".join(exp.Literal.string(re.sub(stem, w, label, flags=re.IGNORECASE)).sql(dialect=ctx.dialect)
                                   for w in words)
                siblings = ctx.db.db.execute(f"SELECT {id_name} FROM {source} WHERE {label_name} IN ({wanted})", timeout_s=5).rows
                if len(siblings) == 1:
                    return str(siblings[0][0])
            return ""
        except DatabaseError:
            return ""
    return None


def _held_values(ctx: SqlContext, tree: exp.Expression, lit: exp.Literal, stem: str, words: tuple[str, ...]) -> list[str]:
    """The literal with ``stem`` written as each of ``words``, those some row holds."""
    return [new for word in words if _holds(ctx, tree, lit, new := re.sub(stem, word, lit.this, flags=re.I))]


def _holds(ctx: SqlContext, tree: exp.Expression, lit: exp.Literal, value: str) -> bool:
    """Some row holds ``value`` where the query compares ``lit`` (``=`` or LIKE on one column of one table)."""
    comparison = lit.parent
    column = comparison.this if isinstance(comparison, exp.EQ | exp.Like | exp.ILike) else None
    if not isinstance(column, exp.Column):
        return False
    tables, _ = aliases(tree)
    table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name.lower(), tables)
    info = ctx.db.schema.table(table) if table else None
    if info is None or info.column(column.name) is None:
        return False
    source, name = quoted_names(ctx, info.qualified_name, column.name)
    test = exp.Literal.string(value).sql(dialect=ctx.dialect)
    op = "=" if isinstance(comparison, exp.EQ) else "LIKE"
    try:
        return bool(ctx.db.db.execute(f"SELECT 1 FROM {source} WHERE {name} {op} {test} LIMIT 1", timeout_s=5).rows)
    except DatabaseError:
        return False


def _moved_table(ctx: SqlContext, tree: exp.Expression, table: exp.Table, stem: str, words: tuple[str, ...]) -> list[Edit] | None:
    """Read the table named for the asked side instead of ``table``: the new name, and each column the query reads
    from the old table renamed to the one column of the new table of its kind (times, numbers, text; ids keep their
    names). None when there is no such table or a column has no single counterpart."""
    names = [new for word in words if ctx.db.schema.table(new := re.sub(stem, word, table.name, flags=re.I)) is not None]
    old_info = ctx.db.schema.table(table.name)
    if len(names) != 1 or old_info is None:
        return None
    new_info = ctx.db.schema.table(names[0])
    assert new_info is not None
    edits: list[Edit] = [rename(table, names[0])]
    tables, _ = aliases(tree)
    for column in tree.find_all(exp.Column):
        if owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name.lower(), tables) != table.name.lower():
            continue
        name = column.name
        if new_info.column(name) is None:
            mine = old_info.column(name)
            kind = column_kind(mine.type) if mine is not None else ""
            peers = [c.name for c in new_info.columns if kind and column_kind(c.type) == kind and old_info.column(c.name) is None]
            if len(peers) != 1:
                return None
            name = peers[0]
        qualifier = names[0] if column.table.lower() == table.name.lower() else column.table
        if (name, qualifier) != (column.name, column.table):
            edits.append(TreeEdit(_column_to(name, qualifier), target=column))
    return edits


def _column_to(name: str, qualifier: str) -> Callable[[exp.Expression], None]:
    def apply(node: exp.Expression) -> None:
        node.set("this", exp.to_identifier(name))
        if qualifier:
            node.set("table", exp.to_identifier(qualifier))

    return apply
