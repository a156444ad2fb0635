"""The question offers the answers to choose from ("home or a nursing facility?", "IV or PO?") and the query returns a
field none of whose values is one of them: "Where did 027-101368 go after the December stay, home or SNF?" answered
with ``hospitaldischargestatus`` ('alive', 'expired') says nothing of where the patient went.

The offered choices are read from the end of the question (``A or B?``); the field's values from the data (a
category field, a few dozen values at most). A choice is held when a value says its words, when it is a value's
initials ('snf': 'skilled nursing facility'), or when a value means the same in other words ('caucasian' for "white",
read with the sentence embeddings). General English; nothing here was taken from a benchmark's questions.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found
from ehrguard.verify.checks.concepts import abbreviates, singular
from ehrguard.verify.checks.keys import category_values
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.offline.embedding import load_embedder
from ehrguard.verify.verdict import Finding

# "..., home or SNF?", "male or female?", "given IV or PO": the word before the last "or" and the words after it.
_OFFERED = re.compile(r"\b([a-z][\w/-]*) or (?:to |into |on |an? |the |to an? |to the )?([a-z][\w/-]*(?: [a-z][\w/-]*){0,2})\s*[?.)]*\s*$",
                      re.IGNORECASE)
_MOST_VALUES = 30
# How close in meaning (MiniLM, cosine) a choice and a value must be to be one thing in two words: 'white' and
# 'caucasian' (0.64), 'survive' and 'alive' (0.57) are; 'home' and 'alive' (0.39), 'female' and 'single' (0.50) are not.
_SAME_MEANING = 0.55
_NOT_A_CHOICE = frozenset(("not", "no", "none", "neither", "both", "either", "something", "anything", "else", "other", "more",
                           "less", "fewer", "higher", "lower", "after", "before", "earlier", "later", "first", "last", "latest",
                           "highest", "lowest", "most", "least"))


def offered_choices(question: str) -> list[str]:
    """The answers a question offers to choose from, in lower case ("home or SNF?" -> ['home', 'snf']); none when it
    offers none, or a choice is no answer ("or not", "or more")."""
    m = _OFFERED.search(question.strip())
    if m is None:
        return []
    choices = [c.lower() for c in m.groups()]
    if any(set(c.split()) & _NOT_A_CHOICE for c in choices):
        return []
    return choices


def _held(choice: str, values: list[str]) -> bool:
    words = {singular(w) for w in re.findall(r"[a-z0-9]+", choice)}
    for value in values:
        said = re.findall(r"[a-z0-9]+", value.lower())
        # said in full, as initials ('snf'), or the value is the choice's code ('f' for female)
        if words <= {singular(w) for w in said} or abbreviates(choice, said) or choice in value.lower() \
                or (said and len(value) <= 3 and abbreviates(value.lower(), choice.split())):
            return True
    return False


def _said_otherwise(choices: list[str], values: list[str]) -> bool:
    """Does a value say a choice in other words ("white": 'caucasian', "survive": 'alive')? Read with the sentence
    embeddings; without them nothing can be told apart, so every choice counts as said."""
    embedder = load_embedder()
    if embedder is None:
        return True
    vectors = embedder.embed([*choices, *values])
    return bool((vectors[:len(choices)] @ vectors[len(choices):].T).max() >= _SAME_MEANING)


def check_offered_choices(ctx: SqlContext) -> CheckResult:
    """The question offers answers to choose from and the query returns one category field whose values hold none of
    them: it answers another question. Nothing to repair (which field holds the answer, if any, is not certain)."""
    if not isinstance(ctx.tree, exp.Select) or len(ctx.tree.expressions) != 1:
        return NOTHING
    choices = offered_choices(ctx.question)
    column = ctx.tree.expressions[0].unalias()
    if len(choices) != 2 or not isinstance(column, exp.Column):
        return NOTHING
    tables, _ = aliases(ctx.tree)
    table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
    values = category_values(ctx, table, column.name, _MOST_VALUES) if table else None
    if not values or any(_held(c, values) for c in choices) or _said_otherwise(choices, values):
        return NOTHING
    shown = ", ".join(repr(v) for v in sorted(values)[:6])
    return found(Finding("choices_not_held", "error", f"The question asks whether it was {choices[0]} or {choices[1]}; the query "
                         f"returns {table}.{column.name}, whose values ({shown}) are neither.", ctx.span_of(column.sql()), None))
