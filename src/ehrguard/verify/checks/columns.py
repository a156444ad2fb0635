"""The column the query returns is the one the question asks for: "when was the patient discharged" is not answered
with the admission time, "which procedure" not with its code (``check_name_returned``).

Read from the schema alone: a question word names a column when the word's first letters appear in the column's
name (``discharged`` -> ``dischtime``, ``admitted`` -> ``unitadmittime``). The query's returned column is compared
with the other columns of its table of the same declared type (times with times, text with text), ids left out and
columns the query reads elsewhere (a filter on the route accounts for the word "route"):
when the question names one of those better than the returned column (more of its words, counting only words
that tell the columns apart) and none of the returned column's, the query returns the wrong field.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, found
from ehrguard.verify.checks.concepts import name_columns_by_table
from ehrguard.verify.checks.keys import VISIT_BY_PLACE, entity_columns, kind_columns, referenced_keys, rename
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding

STEM = 4  # letters of a question word looked for in a column name


# Plain words for fields whose names say it otherwise (general English: sex is recorded as gender, how tall as height;
# a drug discontinued has stopped, a treatment begun has started; not "end", which ends stays and years as well).
_START_NAMES = ("start",)
_STOP_NAMES = ("stop", "endtime")
_FIELD_WORDS: dict[str, tuple[str, ...]] = {
    "sex": ("gender",), "gender": ("sex",), "race": ("ethnicity",), "ethnicity": ("race",), "died": ("death",), "tall": ("height",),
    "weigh": ("weight",), "weighs": ("weight",), "weighed": ("weight",), "heavy": ("weight",),
    "payer": ("insurance",), "payor": ("insurance",), "insurer": ("insurance",), "coverage": ("insurance",),
    **dict.fromkeys(("begin", "began", "begun", "beginning", "initiated", "initiation", "commenced", "commencement"), _START_NAMES),
    **dict.fromkeys(("discontinued", "discontinuation", "discontinue", "ceased", "halted", "terminated", "stopped"), _STOP_NAMES),
}


# "end time" names the stop time as a compound ("the end of 2100", "end-stage" and "the stay that ended" do not).
_END_TIME = re.compile(r"\bend(?:ing)? (?:time|date)\b", re.IGNORECASE)


def question_words(question: str) -> list[str]:
    """The question's words, each followed by the field names it stands for in plain English (sex: gender)."""
    words = re.findall(r"[a-z]+", _END_TIME.sub(" stop endtime ", question.lower()))
    return [x for w in words for x in (w, *_FIELD_WORDS.get(w, ()))]


def _stems(question: str) -> set[str]:
    return {w[:STEM] for w in question_words(question) if len(w) >= STEM}


def _names(column: str, stems: set[str], words: list[str]) -> set[str]:
    """The question's words that name a column: a word's first letters inside the name (``disch`` of discharged in
    ``dischtime``), a part of the name that starts a word (``org`` of ``org_name``: organism), or a short name made of
    the initials of words in a row (``dob``: date of birth)."""
    inside = {s for s in stems if s in column}
    parts = {w[:STEM] for part in column.split("_") if len(part) >= 3 for w in words if w.startswith(part)}
    n = len(column)
    initials = {f"{column}=" + "".join(words[i:i + n]) for i in range(len(words) - n + 1)
                if 2 <= n <= 4 and column.isalpha() and "".join(w[0] for w in words[i:i + n]) == column}
    return inside | parts | initials


def column_kind(declared: str) -> str:
    """The type family of a declared column type: TIMESTAMP(0) and TIMESTAMP are one kind, VARCHAR(50) and TEXT another."""
    t = declared.lower()
    if "time" in t or "date" in t:
        return "time"
    if "char" in t or "text" in t or "string" in t:
        return "text"
    return "number" if t else ""


def _returned_columns(tree: exp.Expression) -> list[exp.Column]:
    """The columns the outermost SELECT returns, bare or inside one function or aggregate (``MAX(x)``)."""
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return []
    out = []
    for projection in select.expressions:
        node = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(node, exp.Column):
            out.append(node)
        elif isinstance(node, exp.Func) and len(cols := list(node.find_all(exp.Column))) == 1:
            out.append(cols[0])
    return out


def check_returned_id(ctx: SqlContext) -> CheckResult:
    """The query returns (or counts) one id column of a table where the question names another of its id columns by
    the thing it identifies ("how many different hospitals": ``hospitalid``, not ``wardid``), and not the returned
    one's. Ids of the profile's patients and visits are left to the checks of keys."""
    if ctx.tree is None:
        return NOTHING
    words = [w for w in re.findall(r"[a-z]+", ctx.question.lower()) if len(w) >= 4]
    tables, _ = aliases(ctx.tree)
    entity_ids = set(entity_columns(ctx))
    read = {c.name.lower() for c in ctx.tree.find_all(exp.Column)}

    def named(column: str) -> bool:
        thing = re.sub(r"_?id$", "", column)
        return len(thing) >= 4 and any(w.startswith(thing) or thing.startswith(w) for w in words)

    for col in _returned_columns(ctx.tree):
        name = col.name.lower()
        if not name.endswith("id") or name in entity_ids:
            continue
        table = owner_table(ctx, tables.get(col.table.lower(), col.table.lower()), name, tables)
        info = ctx.db.schema.table(table) if table else None
        if info is None or named(name):
            continue
        others = [c.name for c in info.columns if c.name.lower().endswith("id") and c.name.lower() not in entity_ids
                  and c.name.lower() != name and named(c.name.lower())]
        if any(o.lower() in read for o in others):
            continue  # the other id is read already ("the units of hospital 73"): the question's word is about it
        if len(others) == 1:
            return found(Finding("wrong_column", "error", f"The query returns {table}.{col.name}; the question asks about "
                                 f"{table}.{others[0]}.", ctx.span_of(col.name), others[0]),
                         edits=[rename(col, others[0])])
    return NOTHING


def check_returned_column(ctx: SqlContext) -> CheckResult:
    """The query returns a column the question names less well than another column of the same table and kind."""
    if ctx.tree is None:
        return NOTHING
    # "after the last admission" says which visit, not which field ("where was she discharged to after the last
    # admission" asks for the discharge location, not the admission's)
    question = VISIT_BY_PLACE.sub(" ", ctx.question)
    words = question_words(question)
    tables, _ = aliases(ctx.tree)
    # A column the query reads elsewhere (filters, joins, orders by) accounts for the question's words about it.
    returned = {c.name.lower() for c in _returned_columns(ctx.tree)}
    elsewhere = {c.name.lower() for c in ctx.tree.find_all(exp.Column)} - returned
    ids = entity_columns(ctx)
    findings: list[Finding] = []
    for col in _returned_columns(ctx.tree):
        name = col.name.lower()
        table = owner_table(ctx, tables.get(col.table.lower(), col.table.lower()), name, tables)
        info = ctx.db.schema.table(table) if table else None
        mine = info.column(name) if info is not None else None
        if info is None or mine is None or name in ids or name.endswith("id"):
            continue
        peers = [c.name.lower() for c in info.columns
                 if column_kind(c.type) == column_kind(mine.type) and not c.name.lower().endswith("id") and c.name.lower() not in ids]
        if len(peers) < 2:
            continue
        # The table's own name ("admissions by payer") names the records counted, not one of their fields ("the
        # admission type" still names one).
        table_words = [w for w in words if w != table.lower()]
        named = {p: _names(p, {w[:STEM] for w in table_words if len(w) >= STEM}, table_words) for p in peers}
        telling = {s for p in peers for s in named[p] if not all(s in named[q] for q in peers)}
        score = {p: len(named[p] & telling) if p not in elsewhere or p == name else 0 for p in peers}
        best = max(score.values())
        winners = [p for p in peers if score[p] == best]
        if best == 0 or score[name] > 0 or returned & set(winners):
            continue  # the question names something of the returned column, or the query returns the named one too
        asked = " or ".join(f"{table}.{w}" for w in winners[:3])
        # No repair: which field was meant is read from words, not certain enough to answer with.
        findings.append(Finding("wrong_column", "warning", f"The query returns {table}.{name}; the question asks for {asked}.",
                                ctx.span_of(col.sql()) or ctx.span_of(name)))
    return found(*findings)


# Words by which a question asks for a code, a number or where a record is kept rather than what a thing is called.
_CODE_WORDS = frozenset(("code", "codes", "icd", "icd9", "icd10", "id", "ids", "identifier", "identifiers", "number", "numbers",
                         "itemid", "table", "tables", "category", "categories", "version"))


def check_name_returned(ctx: SqlContext) -> CheckResult:
    """The query returns a code of a table that holds names where the question asks for the thing itself: a diagnosis
    code (``d_icd_diagnoses.icd_code``) for "which procedure" or "the name of the diagnosis", the table an item's
    records are kept in (``d_items.linksto``) for "the name of the output". Read from the database: the name column of
    a table is its one value column with many distinct values (``concepts.name_columns``); a code is a column some
    foreign key refers to (not an entity's id), one named for codes, or the column that says which table a row belongs
    with (``keys.kind_columns``). Only when the question asks for no code, id, number, table or category and names
    nothing of the returned column; repaired by returning the name."""
    if ctx.tree is None:
        return NOTHING
    words = re.findall(r"[a-z0-9]+", ctx.question.lower())
    if set(words) & _CODE_WORDS:
        return NOTHING
    select = ctx.tree if isinstance(ctx.tree, exp.Select) else ctx.tree.find(exp.Select)
    if select is None:
        return NOTHING
    by_table = name_columns_by_table(ctx)
    tables, _ = aliases(ctx.tree)
    stems, ids, keys = _stems(ctx.question), entity_columns(ctx), referenced_keys(ctx)
    kinds = {(table, kind.lower()) for (table, _), (kind, _) in kind_columns(ctx).items()}
    findings: list[Finding] = []
    edits: list[Edit] = []
    for projection in select.expressions:
        col = projection.this if isinstance(projection, exp.Alias) else projection
        if not isinstance(col, exp.Column):
            continue
        name = col.name.lower()
        table = owner_table(ctx, tables.get(col.table.lower(), col.table.lower()), name, tables)
        meant = [c.lower() for c in by_table.get(table or "", [])]
        code = "code" in name or (table, name) in kinds or ((table, name) in keys and not keys[(table, name)])
        if len(meant) != 1 or meant[0] == name or name in ids or not code or _names(name, stems, words):
            continue
        findings.append(Finding("code_for_name", "warning",
                                f"The query returns {table}.{col.name}; the question asks what it is called ({table}.{meant[0]}).",
                                ctx.span_of(col.sql()) or ctx.span_of(name), meant[0]))
        edits.append(rename(col, meant[0]))
    return found(*findings, edits=edits)


# Where a visit began and where it ended: a pair of columns named first_* / last_* (first_careunit, last_careunit).
_BEGAN = re.compile(r"\b(?:start(?:s|ed|ing)?|began|begin(?:s|ning)?|begun|admitted (?:to|in|into)|initial(?:ly)?|arriv\w*|"
                    r"came (?:in|into|to)|first)\b", re.IGNORECASE)
_ENDED = re.compile(r"\b(?:end(?:s|ed|ing)?|finish\w*|discharge[ds]?|transferred out|left|leaving|last|final(?:ly)?|ultimately)\b",
                    re.IGNORECASE)


def check_first_last(ctx: SqlContext) -> CheckResult:
    """A visit's first or last place read the other way round: "stays that started in the MICU" read from
    ``last_careunit``. Only where the table has both columns of the pair and the question says one end in words."""
    if ctx.tree is None:
        return NOTHING
    question = VISIT_BY_PLACE.sub(" ", ctx.question)  # "the initial ICU stay" says which stay, not where it began
    began, ended = bool(_BEGAN.search(question)), bool(_ENDED.search(question))
    if began == ended:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    wrong, right = ("last_", "first_") if began else ("first_", "last_")
    columns = [c for c in ctx.tree.find_all(exp.Column) if c.name.lower().startswith(wrong)]
    edits: list[Edit] = []
    repaired: list[str] = []
    for col in columns:
        owner = owner_table(ctx, tables.get(col.table.lower(), col.table.lower()), col.name, tables)
        info = ctx.db.schema.table(owner) if owner else None
        other = right + col.name[len(wrong):]
        if info is None or info.column(other) is None:
            continue
        edits.append(rename(col, info.column(other).name))  # type: ignore[union-attr]
        repaired.append(col.name)
    if not edits:
        return NOTHING
    name = repaired[0]
    return found(Finding("first_or_last", "error", f"The query reads {name}; the question asks where the stay "
                         f"{'began' if began else 'ended'} ({right + name[len(wrong):]}).", ctx.span_of(name), right + name[len(wrong):]),
                 edits=edits)


_PER = re.compile(r"\b(?:per|for each|for every)\s+([a-z]+)", re.IGNORECASE)


def check_grouped_by(ctx: SqlContext) -> CheckResult:
    """Groups by another column than the one the question groups by: "deaths per hospital" grouped by ``wardid`` when
    the table has ``hospitalid``. Read from the schema: the question's "per X" / "by X" / "each X" names a column of
    the grouped table (``X`` or ``Xid``), and the query groups that table by another column and never by that one."""
    if not isinstance(ctx.tree, exp.Select) or ctx.tree.args.get("group") is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    grouped = [c for c in ctx.tree.args["group"].expressions if isinstance(c, exp.Column)]
    if len(grouped) != 1 or len(ctx.tree.args["group"].expressions) != 1:
        return NOTHING
    col = grouped[0]
    owner = owner_table(ctx, tables.get(col.table.lower(), col.table.lower()), col.name, tables)
    info = ctx.db.schema.table(owner) if owner else None
    if info is None:
        return NOTHING
    words = [m.group(1).lower() for m in _PER.finditer(ctx.question)]
    if any(w.rstrip("s") in col.name.lower() for w in words):
        return NOTHING  # one of the question's groupings is the query's
    for word in words:
        singular = word[:-1] if word.endswith("s") and not word.endswith("ss") else word
        named = [c.name for c in info.columns if c.name.lower() in (singular, singular + "id", singular + "_id")]
        if not named:
            continue
        edits: list[Edit] = [rename(c, named[0]) for c in ctx.tree.find_all(exp.Column)
                             if c.name.lower() == col.name.lower() and c.table.lower() == col.table.lower()
                             and c.find_ancestor(exp.Select) is ctx.tree]
        return found(Finding("grouped_by_other", "error", f"The query groups by {col.name}; the question groups by {word} "
                             f"({named[0]}).", ctx.span_of(col.name), named[0]), edits=edits)
    return NOTHING
