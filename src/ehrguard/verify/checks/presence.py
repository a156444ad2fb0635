"""A question about the records that have a field filled in ("admissions with a documented discharge location",
"patients without a recorded date of death") must test that field for a value.

``missing_presence`` (error) speaks when the question says a field is recorded / documented / known (or not), the
field's words name one column of a table the query reads (its name's words, as :mod:`.columns` reads them), the
query never reads that column, and testing it changes the answer. The repair adds
``column IS NOT NULL`` (``IS NULL`` for a field said to be missing) to the query's own conditions.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, add_condition, changes_the_answer, found
from ehrguard.verify.checks.columns import STEM, question_words
from ehrguard.verify.checks.keys import entity_columns, sampled_values
from ehrguard.verify.offline.lexicon import CLOSED_CLASS_AFTER_RELATIVE
from ehrguard.verify.verdict import Finding

_FILLED = r"(?:recorded|documented|known|charted|listed|available|entered|noted|filled in|on file|on record)"
# "with a documented discharge location", "have a recorded date of death"; "without / no recorded X"
_BEFORE = re.compile(rf"\b(with|ha(?:ve|s|d)|without|no|lacking|missing)\s+(?:an?\s+|any\s+|the\s+|their\s+|its\s+)?{_FILLED}\s+"
                     r"((?:[a-z]+\s+){0,3}[a-z]+)", re.IGNORECASE)
# "whose discharge location is recorded / is not recorded / is missing / is unknown"
_AFTER = re.compile(rf"\b(?:whose|where (?:the|their|its))\s+((?:[a-z]+\s+){{0,3}}?[a-z]+)\s+(?:is|was|are|were)\s+(not\s+)?"
                    rf"({_FILLED}|missing|unknown|empty|blank)\b", re.IGNORECASE)
_ABSENT = {"without", "no", "lacking", "missing"}
# Parts of a column's name that say what kind of field it is, not which (a name, a description, a value).
_SAYS_NOTHING = frozenset(("name", "names", "desc", "description", "label", "text", "value", "val", "str", "num"))
_GRAMMAR = CLOSED_CLASS_AFTER_RELATIVE | {"who", "whom", "which", "what", "when", "where", "and", "or", "any"}


def _field(words: str) -> str:
    """The field's own words: up to the first word of grammar but "of" ("date of death"; "weight who received": weight)."""
    kept = []
    for w in words.split():
        if w.lower() in _GRAMMAR and w.lower() != "of":
            break
        kept.append(w)
    return " ".join(kept).removesuffix(" of")


# A positive culture is one where an organism grew; a negative one, none (general clinical usage; "cx" is a culture).
_CULTURE = re.compile(r"\b(positive|negative)\s+(?:[a-z]+\s+){0,2}?(?:cultures?|cx)\b", re.IGNORECASE)


# The result of a culture that grew nothing, as microbiology records write it (general laboratory wording).
_NOTHING_GREW = re.compile(r"^\s*(?:no growth\b.*|no (?:\w+ )?(?:organisms?|bacteria|growth) (?:seen|isolated|detected|found)\b.*|"
                           r"negative|none|not detected|no organisms?)\s*$", re.IGNORECASE)


def _nothing_grew(ctx: SqlContext, table: str, column: str) -> list[str]:
    """The values of an organism column that say nothing grew ('no growth'), read from a sample of the data."""
    return sorted(v for v in sampled_values(ctx, table, column, 200) or [] if _NOTHING_GREW.match(v))


def _asked(question: str) -> list[tuple[str, bool]]:
    """(the field's words, whether it must be filled in) for each field the question says is or is not recorded."""
    out = [(_field(m.group(2)), m.group(1).lower() not in _ABSENT) for m in _BEFORE.finditer(question)]
    out += [("organism", m.group(1).lower() == "positive") for m in _CULTURE.finditer(question)]
    for m in _AFTER.finditer(question):
        empty = m.group(3).lower() in ("missing", "unknown", "empty", "blank")
        out.append((m.group(1), bool(m.group(2)) == empty))
    return [(words, filled) for words, filled in out if words]


def _named_column(ctx: SqlContext, words: str, tables: list[str]) -> tuple[str, str] | None:
    """The one column of the query's tables whose name the field's words name best (every part of the name)."""
    every = question_words(words)
    said = [w for w in every if len(w) >= 3]
    ids = entity_columns(ctx)
    scored = []
    initials: list[tuple[str, str]] = []
    for table in tables:
        info = ctx.db.schema.table(table)
        for column in info.columns if info is not None else ():
            name = column.name.lower()
            parts = [p for p in re.split(r"_", name) if p]
            if name in ids or name.endswith("id") or not parts:
                continue
            # a short name of initials ("dod": date of death), only where no name is spelt out
            if 2 <= len(name) <= 4 and name.isalpha() and any("".join(w[0] for w in every[i:i + len(name)]) == name
                                                             for i in range(len(every) - len(name) + 1)):
                initials.append((table, column.name))
                continue
            # every part of the name that tells the field (not "name", "desc": 'org_name' is the organism) said, and
            # as many of the field's words as possible inside the name
            telling = [p for p in parts if p not in _SAYS_NOTHING] or parts
            if all(any(w.startswith(p[:STEM]) or w[:STEM] in p for w in said) for p in telling):
                scored.append((sum(1 for w in said if w[:STEM] in name), table, column.name))
    if not scored:
        return initials[0] if len(initials) == 1 else None
    best = max(s[0] for s in scored)
    top = [s for s in scored if s[0] == best]
    return (top[0][1], top[0][2]) if len(top) == 1 else None


def _left_joined(select: exp.Select, alias: str | None) -> bool:
    return any((j.side or "").upper() in ("LEFT", "RIGHT", "FULL") and j.this.alias_or_name.lower() == (alias or "")
               for j in select.args.get("joins") or ())


def asked_fields(ctx: SqlContext) -> set[str]:
    """The columns (lower case) of the query's tables the question says are, or are not, recorded."""
    if not isinstance(ctx.tree, exp.Select):
        return set()
    tables = sorted(set(ctx.own_tables(ctx.tree).values()))
    return {named[1].lower() for words, _ in _asked(ctx.question) if (named := _named_column(ctx, words, tables)) is not None}


def check_presence(ctx: SqlContext) -> CheckResult:
    """The question keeps the records whose field is (or is not) filled in; the query never tests the field."""
    if not isinstance(ctx.tree, exp.Select) or isinstance(ctx.execution, DatabaseError):
        return NOTHING
    asked = _asked(ctx.question)
    if not asked:
        return NOTHING
    own = ctx.own_tables(ctx.tree)  # alias -> table
    read = {c.name.lower() for c in ctx.tree.find_all(exp.Column)}
    for words, filled in asked:
        named = _named_column(ctx, words, sorted(set(own.values())))
        if named is None or named[1].lower() in read:
            continue
        table, column = named
        alias = next((a for a, t in own.items() if t == table), None)
        if _left_joined(ctx.tree, alias):
            continue  # its emptiness also says the join found no row: which one the question means is not certain
        qualifier = alias if alias and (len(own) > 1 or alias != table) else None
        test = exp.column(column, table=qualifier).is_(exp.Null())
        condition: exp.Expression = exp.Not(this=test) if filled else test
        nothing_grew = _nothing_grew(ctx, table, column) if words == "organism" else []
        if nothing_grew:  # a culture is negative when no organism is named, or the name says none grew ('no growth')
            grew = exp.Not(this=exp.column(column, table=qualifier).isin(*(exp.Literal.string(v) for v in nothing_grew)))
            if filled:
                condition = exp.And(this=condition, expression=grew)
            else:
                condition = exp.Paren(this=exp.Or(this=condition, expression=grew.this))
        if not changes_the_answer(ctx, condition):
            continue
        shown = re.sub(r"\bNOT (\S+) (IS NULL|IN \()", lambda m: f"{m.group(1)} {'IS NOT NULL' if m.group(2) == 'IS NULL' else 'NOT IN ('}",
                       condition.sql(dialect="sqlite"))
        state = "recorded" if filled else "not recorded"
        return found(Finding("missing_presence", "error",
                             f"The question keeps the records whose {words.strip()} is {state}; the query never tests {table}.{column} "
                             f"for a value. Added {shown}.", None, shown),
                     edits=[TreeEdit(add_condition(condition))])
    return NOTHING
