"""Superlatives that name what they measure: "the longest stay", "the oldest patient", "the heaviest weight".

Unlike "highest" or "latest" (``alignment.check_direction``), these words say both the end of an order and the
measure it is taken on: a duration is longest at its high end; a patient is oldest at the high end of an age and at
the early end of a birth date. When the query orders (or takes MAX / MIN of) such a measure only at the other end,
the answer is its opposite: ``wrong_direction`` (error), repaired by flipping those ORDER BY keys and MAX / MIN.

A measure is read from the SQL alone: a difference of two moments of one row (``julianday(outtime) - julianday(intime)``,
``outtime - intime``; its sign from the columns' names: out, discharge, stop minus in, admit, start), a date difference
function, a column named for a length of stay, an age, a birth date, a weight or a height; an alias the query defines
is read through its definition. Which measure a word names is read from the noun after it ("the oldest patient" is an
age, "the oldest admission" is no measure of these, "the shortest stay" is a duration). The words are general English.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.alignment import _flip, _is_time, masked_question, question_ends
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, found
from ehrguard.verify.checks.schema_refs import aliases
from ehrguard.verify.verdict import Finding

# word -> {measure: the end of it the word asks for}; "high" is the large end of a size, or the late end of a moment.
_ENDS: dict[str, dict[str, str]] = {
    "longest": {"duration": "high"},
    "shortest": {"duration": "low", "height": "low"},
    "briefest": {"duration": "low"},
    "oldest": {"age": "high", "birth": "low"},
    "youngest": {"age": "low", "birth": "high"},
    "heaviest": {"weight": "high"},
    "lightest": {"weight": "low"},
    "tallest": {"height": "high"},
}
_WORDS = re.compile(r"\b(" + "|".join(_ENDS) + r")\b", re.IGNORECASE)
_DURATION_NAME = re.compile(r"^(?:los|\w*_los|los_\w*|duration\w*|\w*_duration|length_of_stay\w*|\w*_length_of_stay)$")
_DATE_DIFFERENCES = (exp.DateDiff, exp.TimestampDiff, exp.DatetimeDiff, exp.TimeDiff)
_MEASURES = {"duration": "duration", "age": "age", "birth": "birth date", "weight": "weight", "height": "height"}


def check_superlatives(ctx: SqlContext) -> CheckResult:
    """The end of a named measure the question asks for ("the longest stay") is the one the SQL takes."""
    if ctx.tree is None:
        return NOTHING
    question = masked_question(ctx)
    if question_ends(question).size:
        return NOTHING  # "highest" / "lowest" as well: check_direction reads the order, and two flips would cancel
    asked: dict[str, set[str]] = {}
    for match in _WORDS.finditer(question):
        word = match.group(1).lower()
        for measure, end in _ENDS[word].items():
            if measure in _measures_of(question[match.end():], question[:match.start()]):
                asked.setdefault(measure, set()).add(end)
    if not asked:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    nodes = []
    for node in ctx.tree.find_all(exp.Ordered, exp.Max, exp.Min):
        read = _measure(ctx, node, tables)
        if read is not None:  # a duration written start minus end is negative: its high end is the shortest
            nodes.append((node, read[0], _end(node) if read[1] > 0 else {"high": "low", "low": "high"}[_end(node)]))
    findings, edits = [], []
    for measure, wanted in asked.items():
        taken = [(node, end) for node, m, end in nodes if m == measure]
        if len(wanted) != 1 or not taken or any(end in wanted for _, end in taken):
            continue
        want = next(iter(wanted))
        word = next(w for w, ends in _ENDS.items() if ends.get(measure) == want and re.search(rf"\b{w}\b", question, re.IGNORECASE))
        took = "smallest" if want == "high" else "largest"
        if measure == "birth":
            took = "latest" if want == "low" else "earliest"
        findings.append(Finding("wrong_direction", "error", f"The query takes the {took} {_MEASURES[measure]}; the question asks for "
                                f"the {word.lower()}.", None, f"the {word.lower()} (flip the order)"))
        edits += [TreeEdit(_flip, target=node) for node, _ in taken]
    return found(*findings, edits=edits)


# What the word describes, from the nouns after it: a person has an age, a birth date, a weight and a height; a stay, a
# time or a gap has a length ("the oldest admission" is the earliest, which these words do not read; "the shortest
# stay" is no height).
_PERSON = re.compile(r"^\W*(?:\w+\W+){0,2}?(?:patients?|persons?|people|m[ae]n|wom[ae]n|adults?|child(?:ren)?|infants?|males?|"
                     r"females?|individuals?|one)\b", re.IGNORECASE)
_THING = re.compile(r"^\W*(?:\w+\W+){0,2}?(?:stays?|admissions?|visits?|encounters?|times?|intervals?|gaps?|waits?|durations?|"
                    r"los|length|records?|cultures?|orders?|prescriptions?|tests?|events?|days?|hours?|period|course|episodes?|"
                    r"hospitali[sz]ations?|readmissions?)\b", re.IGNORECASE)


def _measures_of(after: str, before: str) -> set[str]:
    """The measures a word can name, from the noun after it, else the nearest noun before it ("which of the admissions
    was the oldest"); every one when neither says."""
    person, thing = _PERSON.search(after), _THING.search(after)
    if not person and not thing:
        words = " ".join(reversed(re.findall(r"\w+", before)[-6:]))  # nearest first
        person, thing = _PERSON.search(words), _THING.search(words)
    if person and (not thing or person.end() <= thing.end()):
        return {"age", "birth", "weight", "height"}
    if thing:
        return {"duration"}
    return set(_MEASURES)


def _end(node: exp.Expression) -> str:
    if isinstance(node, exp.Ordered):
        return "high" if node.args.get("desc") else "low"
    return "high" if isinstance(node, exp.Max) else "low"


# Which moment of a pair is the later one, by the name of its column (general English: out, discharge, stop, end, death).
_LATER = re.compile(r"out|disch|stop|end|dod|death|expir|finish|leave", re.IGNORECASE)
_EARLIER = re.compile(r"^in|intime|admit|start|begin|dob|birth", re.IGNORECASE)


def _measure(ctx: SqlContext, node: exp.Expression, tables: dict[str, str]) -> tuple[str, int] | None:
    """What an ORDER BY key or a MAX / MIN argument measures, of those the words name, and its sign (-1 for a duration
    written start minus end); None for anything else."""
    arg = _unwrapped(node.this)
    if isinstance(arg, exp.Column) and not arg.table:
        arg = _unwrapped(_definition(node, arg.name) or arg)
    if isinstance(arg, exp.Sub):
        return _duration_sign(ctx, arg, tables)
    measure = _what_is_measured(ctx, arg, tables)
    return (measure, 1) if measure is not None else None


def _duration_sign(ctx: SqlContext, arg: exp.Sub, tables: dict[str, str]) -> tuple[str, int] | None:
    """A difference of two moments of one row as a duration, with its sign read from the columns' names."""
    first, second = (list(side.find_all(exp.Column)) for side in (arg.this, arg.expression))
    if not any(_is_time(ctx, c, tables) for c in first) or not any(_is_time(ctx, c, tables) for c in second):
        return None
    if arg.find(exp.Window) is not None:
        return None  # a moment of another row (LEAD, LAG): a gap between events, whose sign the names do not tell
    if len({c.table.lower() for c in first + second}) != 1:
        return None  # moments of two rows (a discharge, then the next admission): a gap, not one event's length
    if any(_LATER.search(c.name) for c in first) and any(_EARLIER.search(c.name) for c in second):
        return ("duration", 1)
    if any(_EARLIER.search(c.name) for c in first) and any(_LATER.search(c.name) for c in second):
        return ("duration", -1)
    return None  # which moment is later is not written in the names: the sign of the difference is unknown


def _what_is_measured(ctx: SqlContext, arg: exp.Expression, tables: dict[str, str]) -> str | None:
    """What a value other than a difference of moments measures: a date difference function, or a column named for a
    length of stay, an age, a birth date, a weight or a height."""
    if isinstance(arg, _DATE_DIFFERENCES):
        return "duration"
    if not isinstance(arg, exp.Column):
        return None
    name = arg.name.lower()
    if _DURATION_NAME.match(name):
        return "duration"
    if name == "age" or name.endswith("_age") or name.endswith("age") and name[:-3] in ("anchor", "admission", "admit"):
        return "age"
    if name in ("dob", "birthdate", "birth_date", "date_of_birth") or "birth" in name and _is_time(ctx, arg, tables):
        return "birth"
    if "weight" in name:
        return "weight"
    if "height" in name:
        return "height"
    return None


def _unwrapped(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Cast | exp.Paren | exp.Abs):
        node = node.this
    return node


def _definition(node: exp.Expression, name: str) -> exp.Expression | None:
    """What a name the query's own SELECT defines (``... AS los ... ORDER BY los``) stands for."""
    select = node.find_ancestor(exp.Select)
    if select is None:
        return None
    return next((e.this for e in select.expressions if isinstance(e, exp.Alias) and e.alias.lower() == name.lower()), None)
