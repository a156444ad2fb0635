"""One end of an order picked from records that tie for it.

"The last heart rate" of a patient charted twice at the same minute, "the most prescribed drug" when two drugs were
prescribed equally often: ``ORDER BY ... LIMIT 1`` returns one of the tied rows, whichever the database meets first,
and another engine, index or day may return the other. The check asks the database for the first two rows in the
query's own order, with the order's keys beside them; when both keys are equal and the answers differ, the answer
is one of several the records support equally. No repair: whether the user wants every tied answer or a rule that
breaks the tie is theirs to say.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ehrguard.db.engine import Result
from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found
from ehrguard.verify.checks.ordinals import takes_first
from ehrguard.verify.verdict import Finding

_PROBE_TIMEOUT_S = 5.0


def _key_expressions(select: exp.Select) -> list[exp.Expression] | None:
    """The ORDER BY keys as expressions the SELECT list may repeat (a position or an output alias read as the output
    it names); None when a key cannot be read so."""
    outputs = select.expressions
    aliases = {e.alias_or_name.lower(): e for e in outputs if isinstance(e, exp.Alias)}
    keys = []
    for ordered in select.args["order"].expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and not key.is_string:
            position = int(key.this)
            if not 1 <= position <= len(outputs):
                return None
            key = outputs[position - 1]
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            key = aliases[key.name.lower()]
        keys.append((key.this if isinstance(key, exp.Alias) else key).copy())
    return keys


def _first_two(ctx: SqlContext, select: exp.Select, keys: list[exp.Expression]) -> list[tuple[Any, ...]] | None:
    probe = select.copy()
    probe.set("limit", exp.Limit(expression=exp.Literal.number(2)))
    probe.set("expressions", [*probe.expressions, *(k.as_(f"ehrguard_tie_key_{i}") for i, k in enumerate(keys))])
    try:
        result = ctx.db.db.execute(probe.sql(dialect=ctx.dialect), timeout_s=_PROBE_TIMEOUT_S, max_rows=2)
    except DatabaseError:
        return None
    return [tuple(row) for row in result.rows]


def check_tied_end(ctx: SqlContext) -> CheckResult:
    select = ctx.tree
    if (not isinstance(select, exp.Select) or not takes_first(select) or select.args.get("distinct")
            or any(isinstance(e, exp.Star) for e in select.expressions)):
        return NOTHING
    if not isinstance(ctx.execution, Result) or len(ctx.execution.rows) != 1:
        return NOTHING
    keys = _key_expressions(select)
    rows = _first_two(ctx, select, keys) if keys else None
    if not rows or len(rows) != 2:
        return NOTHING
    width = len(select.expressions)
    (answer, key), (other, other_key) = ((r[:width], r[width:]) for r in rows)
    if key != other_key or any(v is None for v in key) or answer == other:
        return NOTHING
    shown = ", ".join(str(v) for v in key)
    return found(Finding(
        "tied_end", "warning",
        f"Records tie for the first place of the query's order ({shown}) with different answers "
        f"({_shown(answer)}, {_shown(other)}, ...): LIMIT 1 returns one of them, whichever the database meets first.",
        span=ctx.span_of("limit 1"),
    ))


def _shown(values: tuple[Any, ...]) -> str:
    return str(values[0]) if len(values) == 1 else "(" + ", ".join(str(v) for v in values) + ")"
