"""A table that records several kinds of event, told apart by a column that names the kind, is read for the kind the
question names.

Some tables hold rows about other tables' records: a cost row is the charge of a diagnosis, a procedure, a lab test or
a prescription, and its kind column says which by the name of the table the event is recorded in (MIMIC-IV's
``cost.event_type``: 'diagnoses_icd', 'labevents'; eICU's ``cost.eventtype``: 'medication', 'lab'). "The total cost of
diagnoses coded for admission 22595853" reads the diagnoses' rows of that table; a query that sums every row of the
admission answers for all kinds together.

``missing_kind`` (error, repaired by ``column = 'kind'``) speaks when a table the query reads has such a column (a
text column whose values, at least two of them, are names of the schema's own tables: found from the schema and the
data, not from a list), the query never reads that column, nor the table of the kind but to join the events by their id, the question names
exactly one of the kinds as what is paid for (a word of it beside a word of money or the table's name: "the cost of
diagnoses", "lab costs", "medication charges"), and keeping to that kind changes the answer. A kind the question leaves
out ("excluding labs") is repaired by ``column <> 'kind'`` the same way.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, add_condition, changes_the_answer, found, stored_info
from ehrguard.verify.checks.concepts import EXCLUSION
from ehrguard.verify.checks.keys import kind_columns, sampled_values
from ehrguard.verify.offline.lexicon import CLOSED_CLASS_AFTER_RELATIVE
from ehrguard.verify.verdict import Finding

# A table of kinds has few of them: a column of more values is a name or a label, not a kind.
MAX_KINDS = 12
# Parts of a table's name that say how it is stored, not what it records ('diagnoses_icd': diagnoses; 'labevents': lab).
_STORAGE = re.compile(r"_?(?:icd|events?|items?|data|table)$")
# Words of money (general English): the kinds of a table of charges are named beside them ("medication charges", "the
# cost of lab tests", "paid for procedures").
_MONEY = frozenset(("cost", "costs", "charge", "charges", "charged", "bill", "bills", "billed", "billing", "spent", "spend",
                    "spending", "paid", "pay", "price", "prices", "expense", "expenses", "fee", "fees"))
# A kind is named beside the table's own name or a word of money, within this many words.
NEAR = 3


def _base(word: str) -> str:
    """A noun's singular, as far as matching needs it: diagnoses -> diagnosis, labs -> lab, therapies -> therapy."""
    if len(word) > 5 and word.endswith("ses"):
        return word[:-3] + "sis"
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith(("ss", "is", "us")) else word


# Other words of clinical English for the same kinds of record (a drug order is a prescription, a medication, a med).
_SAME_KIND = ({"prescription", "medication", "drug", "med"}, {"lab", "laboratory"}, {"diagnosis", "dx"},
              {"procedure", "proc"}, {"treatment", "therapy"})


def _kind_words(value: str) -> set[str]:
    """The words a question names a kind by: the table name's parts that say what it records ('diagnoses_icd' ->
    diagnosis; 'labevents' -> lab), in the singular, and their other words (_SAME_KIND)."""
    words = {_base(part) for part in re.split(r"[_\s]+", _STORAGE.sub("", value.lower())) if len(part) >= 3}
    return words.union(*(same for same in _SAME_KIND if same & words))


# Words that may follow a kind's name when the kind is what is paid for ("lab tests", "diagnosis codes", "medication
# charges", "diagnoses coded"); any other noun makes the kind's word a modifier of something else ("drug abuse").
_AFTER_KIND = frozenset(("test", "tests", "order", "orders", "code", "codes", "result", "results", "item", "items", "work",
                         "service", "services", "alone", "only"))
_ARTICLES = frozenset(("the", "a", "an", "any", "all", "their", "his", "her", "its"))


def _named_kinds(question: str, table: str, kinds: list[str]) -> tuple[list[str], list[str]]:
    """The kinds the question asks for, and those it leaves out. Asked for: a kind's word (whole, singular or plural)
    within NEAR words of the table's name or a word of money ("the cost of labs"), not followed by a noun it would
    qualify ("drug abuse admissions"). Left out: a kind's word first after a word of exception ("excluding labs",
    "other than the drugs"; not "excluding admissions with a diagnosis of ...", which leaves out visits)."""
    words = re.findall(r"[a-z]+", question.lower())
    anchors = [i for i, w in enumerate(words) if w in _MONEY or _base(w) == _base(table.lower())]
    first_excluded = set()
    for m in EXCLUSION.finditer(question):
        after = [w for w in re.findall(r"[a-z]+", question[m.end():].lower()) if w not in _ARTICLES]
        if after:
            first_excluded.add(_base(after[0]))

    def paid_for(i: int) -> bool:
        following = words[i + 1] if i + 1 < len(words) else ""
        return not following or following in _MONEY or following in _AFTER_KIND or following in CLOSED_CLASS_AFTER_RELATIVE \
            or following.endswith("ed")

    asked, left_out = [], []
    for kind in kinds:
        said = _kind_words(kind)
        at = [i for i, w in enumerate(words) if _base(w) in said]
        if said & first_excluded:
            left_out.append(kind)
        elif any(paid_for(i) and any(abs(i - j) <= NEAR for j in anchors) for i in at):
            asked.append(kind)
    return asked, left_out


def _kind_column(ctx: SqlContext, table: str) -> tuple[str, list[str]] | None:
    """The column of ``table`` whose values name tables of the schema (the kinds), with those values; None if none.
    Read once per database, from a bounded sample of the table's rows (``keys.sampled_values``): every table a query
    reads is asked, and a full scan of a large one's text columns has no place in a verification."""

    def build() -> tuple[str, list[str]] | None:
        info = stored_info(ctx, table)
        tables = {t.name.lower() for t in ctx.db.schema.tables}
        for column in info.columns if info is not None else ():
            if column.name.lower().endswith("id") or not re.search(r"char|text|string", column.type.lower()):
                continue
            values = sampled_values(ctx, table, column.name, MAX_KINDS + 1)
            if values is None or not 2 <= len(values) <= MAX_KINDS:
                continue
            kinds = [v for v in values if v and v.lower() in tables]
            if len(kinds) >= 2:
                return column.name, kinds
        return None

    return ctx.db.derived(("kind_column", table.lower()), build)


def check_kind(ctx: SqlContext) -> CheckResult:
    """The question names one kind of event, or leaves one out; the query reads a table of several kinds and keeps all
    of them."""
    if not isinstance(ctx.tree, exp.Select) or isinstance(ctx.execution, DatabaseError):
        return NOTHING
    read_tables = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
    read_columns = {c.name.lower() for c in ctx.tree.find_all(exp.Column)}
    by_event = any(re.fullmatch(r"event_?id", c) for c in read_columns)
    own = ctx.own_tables(ctx.tree)
    for alias, table in own.items():
        kind_column = _kind_column(ctx, table)
        if kind_column is None or kind_column[0].lower() in read_columns:
            continue  # no kinds here, or the query reads which kind each row is
        if by_event and any(t == table for t, _ in kind_columns(ctx)):
            continue  # events joined by a key the schema declares: missing_key_kind's to say
        column, kinds = kind_column
        asked, left_out = _named_kinds(ctx.question, table, kinds)
        if len(asked) == 1 and not left_out and (asked[0].lower() not in read_tables or by_event):
            # (the kind's own table read, but to join its events by their id, chooses visits, not the kind's rows)
            kind, keep = asked[0], True
        elif len(left_out) == 1 and not asked and left_out[0].lower() not in read_tables:
            kind, keep = left_out[0], False
        else:
            continue  # no kind named, several, or the kind's own table chooses the visits
        qualifier = alias if len(own) > 1 or alias != table else None
        test = exp.column(column, table=qualifier)
        literal = exp.Literal.string(kind)
        condition = exp.EQ(this=test, expression=literal) if keep else exp.NEQ(this=test, expression=literal)
        if not changes_the_answer(ctx, condition):
            continue
        shown = condition.sql(dialect="sqlite")
        every = ", ".join(plain_name(k) for k in kinds)
        said = (f"The question asks only about {plain_name(kind)} records, but the query reads every kind in {table} ({every})"
                if keep else f"The question leaves out the {plain_name(kind)} records, but the query reads them with the rest of "
                f"{table} ({every})")
        return found(Finding("missing_kind", "error", f"{said}. Added {shown}.", None, shown), edits=[TreeEdit(add_condition(condition))])
    return NOTHING


def plain_name(name: str) -> str:
    """A table's name as words, for a clinician: 'diagnoses_icd' -> 'diagnoses', 'labevents' -> 'lab events'."""
    words = [w for w in re.sub(r"(?<=[a-z])(events?)$", r" \1", name.lower()).replace("_", " ").split() if w not in ("icd", "d")]
    return " ".join(words) or name
