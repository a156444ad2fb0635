"""A place in an order the question states ("the second most recent value", "the third most common drug", "his
second admission") that the query never takes.

The places a query takes are read from its parse tree: ``LIMIT 1 OFFSET k`` (SQLite's ``LIMIT k, 1`` parses the
same) takes place ``k + 1``, a ranking window compared with a number (``RANK() OVER (...) = 3``) takes that place,
``LIMIT n`` the n-th (its last row, taken by an outer query), a row's value compared with the first so as to leave
it out ("x < (SELECT MAX(x) ...)", "id NOT IN (SELECT ... LIMIT 1)") the second, and ``ORDER BY ... LIMIT 1`` with
no offset the first. Ordinals inside a name the query looks for ("malignant neoplasm of lower third of esophagus")
are masked first; "second" as a unit of time, "a second opinion" or "one third of" is no place. When the question
states one place the query does not take and the query takes one place by exactly one ``LIMIT 1`` with no offset,
the repair adds the offset.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, found
from ehrguard.verify.offline.features import mask_values
from ehrguard.verify.verdict import Finding

ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5}
PLACES = {word: n for word, n in ORDINALS.items() if n >= 2}  # a place past the first, as a question states it
_STATED = re.compile(r"(?<![\w-])(?<!\d )(second|third|fourth|fifth|2nd|3rd|4th|5th)(?!\w)(?!-(?:line|degree|hand|rate|class)\b)"
                     r"(?!\s+(?:of|opinion|line|hand|half|quarter|trimester|degree|look|thought|place)\b)", re.IGNORECASE)
_RANKING = (exp.RowNumber, exp.Rank, exp.DenseRank)


def stated_places(question: str, sql: str | None = None) -> list[int]:
    """The places in an order the question states, in order of mention (names the SQL looks for masked)."""
    # a day of a month ("december 3rd", "3rd of december") is a date, not a place in an order
    text = _PENULTIMATE.sub("second-to-last", _DAY_OF_MONTH.sub(" ", mask_values(question, sql)))
    return [PLACES[m.group(1).lower()] for m in _STATED.finditer(text)]


# The place before the last in other words (general English): "penultimate", "next-to-last", "one before the last".
# (not of a day or another unit of time, which a query reaches by date arithmetic, not by a place in its order)
_PENULTIMATE = re.compile(r"\b(?:penultimate|(?:next|previous|one)[- ]to[- ]last|(?:the )?one before (?:the )?last)\b"
                          r"(?!\s+(?:day|night|week|month|year|hour|shift|morning|evening)s?\b)", re.IGNORECASE)
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:tember)?|oct(?:ober)?|"
          r"nov(?:ember)?|dec(?:ember)?)")
_DAY_OF_MONTH = re.compile(rf"\b{_MONTH}\.?\s+(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)\b|\b\d{{1,2}}(?:st|nd|rd|th)\s+(?:of\s+)?{_MONTH}\b",
                           re.IGNORECASE)


def _number(node: exp.Expression | None) -> int | None:
    return int(node.this) if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit() else None


def takes_first(select: exp.Select) -> bool:
    """An ordered SELECT that keeps one row and skips none."""
    limit = select.args.get("limit")
    return (bool(select.args.get("order")) and isinstance(limit, exp.Limit) and _number(limit.expression) == 1
            and select.args.get("offset") is None)


def _ranked(tree: exp.Expression, node: exp.Expression) -> bool:
    """``node`` is a ranking window, or the name of an output defined as one."""
    if isinstance(node, exp.Window) and isinstance(node.this, _RANKING):
        return True
    if isinstance(node, exp.Column):
        return any(isinstance(a.this, exp.Window) and isinstance(a.this.this, _RANKING)
                   for a in tree.find_all(exp.Alias) if a.alias.lower() == node.name.lower())
    return False


def places_taken(tree: exp.Expression) -> set[int]:
    places = set()
    for select in tree.find_all(exp.Select):
        offset = select.args.get("offset")
        limit = select.args.get("limit")
        if offset is not None and isinstance(limit, exp.Limit) and _number(limit.expression) == 1:
            k = _number(offset.expression if isinstance(offset, exp.Offset) else offset)
            if k is not None:
                places.add(k + 1)
        elif takes_first(select):
            places.add(1)
        if isinstance(limit, exp.Limit) and (n := _number(limit.expression)) is not None and n >= 2 and offset is None:
            places.add(n)  # the n first rows, the last of them taken outside ("LIMIT 2", then the other order's first)
    for cmp in tree.find_all(exp.GT, exp.LT, exp.NEQ, exp.Not):
        # a row's value against the first, leaving it out: "x < (SELECT MAX(x) ...)", "id NOT IN (SELECT ... LIMIT 1)"
        if isinstance(cmp, exp.Not):
            sides = [cmp.this.args.get("query")] if isinstance(cmp.this, exp.In) else []
        else:
            sides = [b for a, b in ((cmp.this, cmp.expression), (cmp.expression, cmp.this)) if isinstance(a, exp.Column)]
        if any(isinstance(side, exp.Subquery | exp.Select) and (side.find(exp.Max, exp.Min) or side.find(exp.Limit)) for side in sides):
            places.add(2)
    for eq in tree.find_all(exp.EQ):
        for side, other in ((eq.this, eq.expression), (eq.expression, eq.this)):
            n = _number(other)
            if n is not None and _ranked(tree, side):
                places.add(n)
    return places


def check_stated_place(ctx: SqlContext) -> CheckResult:
    tree = ctx.tree
    if tree is None:
        return NOTHING
    stated = stated_places(ctx.question, ctx.sql)
    if not stated:
        return NOTHING
    taken = places_taken(tree)
    missing = [n for n in dict.fromkeys(stated) if n not in taken]
    if not missing:
        return NOTHING
    words = ", ".join(next(w for w, p in PLACES.items() if p == n) for n in missing)
    firsts = [s for s in tree.find_all(exp.Select) if takes_first(s)]
    edits: list[TreeEdit] = []
    if len(missing) == 1 and taken == {1} and len(firsts) == 1:
        skip = missing[0] - 1

        def add_offset(node: exp.Expression) -> None:
            node.set("offset", exp.Offset(expression=exp.Literal.number(skip)))

        edits.append(TreeEdit(add_offset, firsts[0]))
    skipping = [s for s in tree.find_all(exp.Select) if isinstance(s.args.get("limit"), exp.Limit) and s.args.get("order")
                and _number(s.args["limit"].expression) == 1 and s.args.get("offset") is not None]
    dated = re.search(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d|\d{4}-\d{2}", ctx.question, re.IGNORECASE)
    if not firsts and len(missing) == 1 and len(skipping) == 1 and len(taken) == 1 and not dated:
        # "the 2nd most recent" taken with OFFSET 2 (the third): the place is off by the count of rows skipped
        wanted = missing[0] - 1

        def set_offset(node: exp.Expression) -> None:
            node.set("offset", exp.Offset(expression=exp.Literal.number(wanted)))

        return found(Finding("missing_place", "error", f"The question asks for the {words} of an order; the query takes place "
                             f"{next(iter(taken))} (OFFSET {next(iter(taken)) - 1}).", span=ctx.span_of("offset"),
                             suggestion=f"LIMIT 1 OFFSET {wanted}"), edits=[TreeEdit(set_offset, skipping[0])])
    if firsts:
        return found(Finding("missing_place", "error",
                             f"The question asks for the {words} of an order; the query takes only the first (LIMIT 1 with no OFFSET).",
                             span=ctx.span_of("limit 1"), suggestion=f"LIMIT 1 OFFSET {missing[0] - 1}" if edits else None),
                     edits=edits)
    return found(Finding("missing_place", "warning",
                         f"The question asks for the {words} of an order; the query takes no such place (no OFFSET, no rank)."))
