"""A duration in the unit the question asks for: "how many days did the stay last" answered in hours is off by 24.

A duration is a difference of two moments, taken by the query in days (SQLite's ``julianday``, ``strftime('%J', ...)``)
or in seconds (``strftime('%s', ...)``, ``unixepoch``), then scaled by numbers (``* 24``, ``/ 3600.0``), perhaps
through an aggregate (``AVG(...) * 24``). The scale gives the unit the query answers in; the question names its
unit ("in hours", "how many days"). When both are read and differ, the scale is rewritten for the question's unit.
Only minutes, hours, days and weeks: months and years have no single length.
"""

from __future__ import annotations

import re
import typing

from sqlglot import exp

from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, found
from ehrguard.verify.verdict import Finding

SECONDS = {"minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_ASKED = re.compile(r"\bhow many (minutes|hours|days|weeks)\b|\bin (minutes|hours|days|weeks)\b|\((minutes|hours|days|weeks)\)"
                    r"|\bnumber of (minutes|hours|days|weeks)\b", re.IGNORECASE)
# Aggregates and rounding a duration passes through on its way to its scale.
_THROUGH = (exp.Paren, exp.Avg, exp.Sum, exp.Max, exp.Min, exp.Round, exp.Abs, exp.Cast)


def asked_unit(question: str) -> str | None:
    """The one unit of time the question asks a duration in; None when it names none or several."""
    units = {next(g for g in m.groups() if g).lower().rstrip("s") for m in _ASKED.finditer(question)}
    return units.pop() if len(units) == 1 else None


def _moment_unit(node: exp.Expression) -> int | None:
    """Seconds per unit of a moment taken as a number: 86400 for a day number, 1 for seconds; None otherwise."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "julianday":
        return 86400
    if isinstance(node, exp.Anonymous) and node.name.lower() == "unixepoch":
        return 1
    if isinstance(node, exp.TimeToStr) and isinstance(node.args.get("format"), exp.Literal):
        return {"%J": 86400, "%s": 1}.get(node.args["format"].this)
    return None


def _number(node: exp.Expression) -> float | None:
    return float(node.this) if isinstance(node, exp.Literal) and not node.is_string else None


def _scale(sub: exp.Sub) -> tuple[float, list[exp.Expression]] | None:
    """The factor the query multiplies the difference by on its way up, and the Mul / Div nodes that apply it."""
    factor, nodes, node = 1.0, list[exp.Expression](), typing.cast(exp.Expression, sub)
    while node.parent is not None:
        parent = node.parent
        if isinstance(parent, _THROUGH) and parent.this is node:
            node = parent
            continue
        if isinstance(parent, exp.Mul | exp.Div):
            other = parent.expression if parent.this is node else parent.this
            value = _number(other)
            if value is None or value == 0 or (isinstance(parent, exp.Div) and parent.this is not node):
                return None  # scaled by something other than a number, or a number divided by the duration
            factor = factor * value if isinstance(parent, exp.Mul) else factor / value
            nodes.append(parent)
            node = parent
            continue
        break
    return factor, nodes


def _unit_of(seconds: float) -> str | None:
    return next((u for u, s in SECONDS.items() if abs(seconds - s) <= 0.01 * s), None)


def _rescale(sub: exp.Sub, factor: float) -> TreeEdit:
    """Drop the query's scale and apply the one for the asked unit to the difference itself."""

    def apply(target: exp.Expression) -> None:
        assert isinstance(target, exp.Sub)
        scaled = _scale(target)  # the scale as the copy of the tree holds it
        for node in scaled[1] if scaled is not None else []:
            kept = node.this if _number(node.this) is None else node.expression
            node.replace(kept)
        inner = exp.Paren(this=target.copy())
        if factor == 1:
            return  # days from day numbers: the difference itself
        if factor > 1:
            target.replace(exp.Mul(this=inner, expression=exp.Literal.number(round(factor, 6))))
        else:
            target.replace(exp.Div(this=inner, expression=exp.Literal.number(f"{round(1 / factor, 6)}")))

    return TreeEdit(apply, target=sub)


def check_duration_unit(ctx: SqlContext) -> CheckResult:
    """The query's duration is in another unit than the one the question asks for."""
    if ctx.tree is None:
        return NOTHING
    asked = asked_unit(ctx.question)
    if asked is None:
        return NOTHING
    findings, edits = [], []
    for sub in ctx.tree.find_all(exp.Sub):
        if sub.find_ancestor(exp.Select) is not ctx.tree or sub.find_ancestor(exp.Where, exp.Having, exp.Order, exp.Join):
            continue  # only the duration the query returns: a filter's or an order's is in the unit of its own bound
        units = {_moment_unit(sub.this), _moment_unit(sub.expression)}
        if len(units) != 1 or None in units:
            continue
        base = units.pop()
        assert base is not None
        scaled = _scale(sub)
        if scaled is None:
            continue
        factor, _ = scaled
        written = _unit_of(base / factor)
        if written is None or written == asked:
            continue
        findings.append(Finding("wrong_duration_unit", "error", f"The query gives the duration in {written}s; the question asks "
                                f"for {asked}s.", None, f"{asked}s"))
        edits.append(_rescale(sub, base / SECONDS[asked]))
    return found(*findings, edits=edits)
