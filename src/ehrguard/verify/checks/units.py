"""A duration or an amount in the unit the question asks for: "how many days did the stay last" answered in hours is
off by 24; "how many liters" answered with a sum the records keep in mL is off by 1,000 (``check_measure_unit``, at the
end).

A duration is a difference of two moments, taken by the query in days (SQLite's ``julianday``, ``strftime('%J', ...)``)
or in seconds (``strftime('%s', ...)``, ``unixepoch``), then scaled by numbers (``* 24``, ``/ 3600.0``), perhaps
through an aggregate (``AVG(...) * 24``). The scale gives the unit the query answers in; the question names its
unit ("in hours", "how many days"). When both are read and differ, the scale is rewritten for the question's unit.
Only minutes, hours, days and weeks: months and years have no single length.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found, quoted_names, replaced_by
from ehrguard.verify.checks.keys import sampled_values
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with
from ehrguard.verify.verdict import Finding

SECONDS = {"minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_ASKED = re.compile(r"\bhow many (minutes|hours|days|weeks)\b|\bin (minutes|hours|days|weeks)\b|\((minutes|hours|days|weeks)\)"
                    r"|\bnumber of (minutes|hours|days|weeks)\b"
                    # "hours between admission and ICU arrival", "days from diagnosis to discharge"
                    r"|(?<!\d )(?<!\d)\b(minutes|hours|days|weeks)\s+(?:between|from|elapsed|passed|spent)\b", re.IGNORECASE)
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


# A span of time the question states ("the first 24 hours", "within 7 days", "3-day"), and the same number written
# by the query in another unit: ``INTERVAL 24 DAY`` (DuckDB, PostgreSQL), ``INTERVAL '24 days'``, SQLite's
# ``datetime(intime, '+24 days')``. General English units of time; seconds are left out ("24 s" is rarely written).
_SPAN_UNITS = {"min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute", "h": "hour", "hr": "hour",
               "hrs": "hour", "hour": "hour", "hours": "hour", "day": "day", "days": "day", "week": "week", "weeks": "week",
               "month": "month", "months": "month", "year": "year", "years": "year"}
_STATED_SPAN = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[\s-]*(" + "|".join(sorted(_SPAN_UNITS, key=len, reverse=True)) + r")\b",
                          re.IGNORECASE)
_MODIFIER = re.compile(r"^\s*([+-]?)\s*(\d+(?:\.\d+)?)\s+(minutes?|hours?|days?|months?|years?)\s*$", re.IGNORECASE)


def _stated_spans(question: str) -> dict[float, set[str]]:
    """Each number the question states as a span of time, with the units it states it in."""
    out: dict[float, set[str]] = {}
    for m in _STATED_SPAN.finditer(question):
        out.setdefault(float(m.group(1)), set()).add(_SPAN_UNITS[m.group(2).lower()])
    return out


def _written_spans(tree: exp.Expression) -> list[tuple[float, str, exp.Expression]]:
    """Each span of time the query writes: (number, unit, the node that holds it)."""
    out: list[tuple[float, str, exp.Expression]] = []
    for node in tree.find_all(exp.Interval):
        text, unit = node.this, node.args.get("unit")
        if isinstance(text, exp.Literal) and isinstance(unit, exp.Var):
            word = unit.name.lower()
            if re.fullmatch(r"\d+(?:\.\d+)?", text.this) and (word in _SPAN_UNITS or word.rstrip("s") in _SPAN_UNITS):
                out.append((float(text.this), _SPAN_UNITS.get(word, _SPAN_UNITS.get(word.rstrip("s"), "")), node))
    for lit in tree.find_all(exp.Literal):
        m = _MODIFIER.match(lit.this) if lit.is_string and isinstance(lit.parent, exp.Anonymous | exp.Func) else None
        if m:
            out.append((float(m.group(2)), _SPAN_UNITS[m.group(3).lower()], lit))
    return out


def _respan(unit: str) -> Callable[[exp.Expression], None]:
    """A tree edit: the span's unit rewritten as ``unit`` (its number kept); SQLite has no weeks: 7 days each."""

    def apply(node: exp.Expression) -> None:
        if isinstance(node, exp.Interval):
            node.set("unit", exp.Var(this=unit.upper()))
            return
        m = _MODIFIER.match(node.this)
        assert m is not None
        sign, number = m.group(1) or "+", float(m.group(2))
        amount, word = (number * 7, "day") if unit == "week" else (number, unit)
        node.replace(exp.Literal.string(f"{sign}{amount:g} {word}s"))

    return apply


def _said_more_than_once(question: str, number: float) -> bool:
    """The question writes the number more than once ("6 hours on day 6"): which one the query's span is, is unsure."""
    return len([m for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", question) if float(m.group(0)) == number]) > 1


def _added_to_a_date(node: exp.Expression) -> bool:
    """The span moves a date the query writes itself (``datetime('2100-12-26', '+1 day')``, ``DATE '2150-01-01' +
    INTERVAL 1 DAY``): the end of a day or a period, not the span the question states."""
    holder = node.parent
    if isinstance(node, exp.Literal) and isinstance(holder, exp.Anonymous | exp.Func):
        first = holder.expressions[0] if getattr(holder, "expressions", None) else holder.args.get("this")
        return isinstance(first, exp.Literal) and first.is_string or isinstance(first, exp.Cast | exp.TsOrDsToDate)
    if isinstance(holder, exp.Add | exp.Sub):
        other = holder.this if holder.expression is node else holder.expression
        return isinstance(other, exp.Literal) and other.is_string or isinstance(other, exp.Cast) and isinstance(other.this, exp.Literal)
    return False


def check_span_unit(ctx: SqlContext) -> CheckResult:
    """The question states a span of time ("the first 24 hours") and the query writes the same number in another unit
    (``INTERVAL 24 DAY``): off by a factor of 24. Only a number the question states in one unit and never in the
    query's; repaired by writing the question's unit."""
    if ctx.tree is None:
        return NOTHING
    stated = _stated_spans(ctx.question)
    findings, edits = [], []
    for number, unit, node in _written_spans(ctx.tree):
        units = stated.get(number, set())
        if len(units) != 1 or unit in units or _said_more_than_once(ctx.question, number) or _added_to_a_date(node):
            continue
        asked = next(iter(units))
        findings.append(Finding("wrong_span_unit", "error", f"The query takes {number:g} {unit}s; the question says {number:g} "
                                f"{asked}s.", None, f"{number:g} {asked}s"))
        edits.append(TreeEdit(_respan(asked), target=node))
    return found(*findings, edits=edits)


# Rows read to learn the unit of a duration column from the two moments it measures.
DURATION_SAMPLE = 200


def duration_unit(ctx: SqlContext, table: str, column: str) -> str | None:
    """The unit of time a numeric column of ``table`` keeps a duration in, read from the data: the column equals the
    time between two moments of the same row (``icustays.los`` is ``outtime - intime`` in days). Minutes, hours, days
    or weeks; None when no pair of the table's moments matches it on nearly every row read."""

    def build() -> str | None:
        info = ctx.db.schema.table(table)
        col = info.column(column) if info is not None else None
        if info is None or col is None or not re.search(r"int|real|double|float|numeric|decimal", col.type.lower()):
            return None
        moments = [c.name for c in info.columns if re.search(r"timestamp|datetime|date", c.type.lower())]
        source, name = quoted_names(ctx, info.qualified_name, column)
        for start in moments:
            for end in moments:
                if start == end:
                    continue
                _, a = quoted_names(ctx, info.qualified_name, start)
                _, b = quoted_names(ctx, info.qualified_name, end)
                sql = (f"SELECT {a}, {b}, {name} FROM {source} WHERE {name} > 0 AND {a} IS NOT NULL AND {b} IS NOT NULL "
                       f"LIMIT {DURATION_SAMPLE}")
                try:
                    rows = ctx.db.db.execute(sql, timeout_s=5).rows
                except DatabaseError:
                    return None
                spans = [(_seconds_between(r[0], r[1]), float(r[2])) for r in rows]
                unit = _unit_of_ratios([seconds / value for seconds, value in spans if seconds])
                if unit is not None and len(rows) >= 10:
                    return unit
        return None

    return ctx.db.derived(("duration_unit", table.lower(), column.lower()), build)


def _seconds_between(a: object, b: object) -> float:
    from datetime import datetime

    try:
        x = a if isinstance(a, datetime) else datetime.fromisoformat(str(a))
        y = b if isinstance(b, datetime) else datetime.fromisoformat(str(b))
    except ValueError:
        return 0.0
    return (y - x).total_seconds()


def _unit_of_ratios(ratios: list[float]) -> str | None:
    """The unit whose length in seconds nearly every ratio (seconds between the moments / the column) is, within 2%."""
    for unit, seconds in SECONDS.items():
        near = sum(abs(r - seconds) <= 0.02 * seconds for r in ratios)
        if ratios and near >= 0.95 * len(ratios):
            return unit
    return None


def check_duration_column(ctx: SqlContext) -> CheckResult:
    """The question states a span ("stayed longer than 48 hours") and the query compares a duration column the records
    keep in another unit with the same number (``los > 48``, ``los`` in days). Repaired by the number in the column's
    unit (``los > 2``)."""
    if ctx.tree is None:
        return NOTHING
    stated = _stated_spans(ctx.question)
    if not stated:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    findings, edits = [], []
    for node in ctx.tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
        column, number = node.this, node.expression
        if not isinstance(column, exp.Column) or _number(number) is None:
            continue
        units = stated.get(_number(number) or 0.0, set())
        asked = next(iter(units)) if len(units) == 1 else None
        if asked not in SECONDS:
            continue
        table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        if not table or _unit_column(ctx, table, column.name.lower()) is not None:
            continue  # a unit column beside it: rows may differ in unit (procedureevents.value in min, hour or day)
        held = duration_unit(ctx, table, column.name)
        if held is None or held == asked:
            continue
        value = (_number(number) or 0.0) * SECONDS[asked] / SECONDS[held]
        findings.append(Finding("wrong_span_unit", "error", f"The records keep {table}.{column.name} in {held}s; the query compares "
                                f"it with {number.sql()}, which the question says in {asked}s.", None, f"{value:g}"))
        edits.append(TreeEdit(_replace_with(f"{value:g}", string=False), target=number))
    return found(*findings, edits=edits)


# Units of measure a question asks an amount in, with their size in a base unit of their dimension (mL, mg, cm;
# temperatures have no common factor and are only compared). General SI and US customary units, as clinicians write
# them; the units the records keep are read from the data (a text column beside the value: ``totalamountuom``).
_MEASURES: dict[str, tuple[str, float | None, str]] = {
    "L": ("volume", 1000.0, r"lit(?:er|re)s?|l"), "mL": ("volume", 1.0, r"ml|millilit(?:er|re)s?|cc"),
    "kg": ("mass", 1e6, r"kg|kilo(?:gram)?s?"), "g": ("mass", 1000.0, r"g|grams?"), "mg": ("mass", 1.0, r"mg|milligrams?"),
    "mcg": ("mass", 0.001, r"mcg|micrograms?|µg|ug"), "lb": ("mass", 453592.37, r"lbs?|pounds?"),
    "cm": ("length", 1.0, r"cm|centimet(?:er|re)s?"), "m": ("length", 100.0, r"met(?:er|re)s?"),
    "in": ("length", 2.54, r"inch(?:es)?"), "ft": ("length", 30.48, r"feet|foot|ft"),
    "°C": ("temperature", None, r"(?:deg(?:rees)? )?(?:celsius|centigrade)|°\s?c|deg(?:rees)? c"),
    "°F": ("temperature", None, r"(?:deg(?:rees)? )?fahrenheit|°\s?f|deg(?:rees)? f"),
}
_UNIT_WORD = "|".join(pattern for _, _, pattern in _MEASURES.values())
# The unit an amount is asked in: "how many liters", "in mL", "(kg)", "total liters". A bare unit after a number states
# a value ("a 10 mg dose"), not the unit of the answer.
_ASKED_MEASURE = re.compile(rf"(?:\bhow many |\bin |\(|\b(?:number of|total|amount in) )({_UNIT_WORD})(?![\w°])", re.IGNORECASE)


# How a message names each unit.
_SAID = {"L": "liters", "g": "grams", "lb": "pounds", "m": "meters", "in": "inches", "ft": "feet"}


def asked_measure(question: str) -> str | None:
    """The one unit of measure the question asks its amount in; None when it names none or several."""
    units = {_data_unit(m.group(1)) for m in _ASKED_MEASURE.finditer(question)}
    return units.pop() if len(units) == 1 else None


def _data_unit(text: str) -> str | None:
    """The unit a value of the records' unit column names ('ml', '°c', 'kg'), when it is one of ours."""
    for name, (_, _, pattern) in _MEASURES.items():
        if re.fullmatch(rf"(?:{pattern})\.?", text.strip(), re.IGNORECASE):
            return name
    return None


def _unit_column(ctx: SqlContext, table: str, column: str) -> str | None:
    """The text column of ``table`` that says the unit of ``column``: named for units (uom, unit) and sharing the
    value's first letters, or the table's only such column."""
    info = ctx.db.schema.table(table)
    if info is None:
        return None
    units = [c.name for c in info.columns if re.search(r"uom|unit", c.name, re.IGNORECASE) and c.name.lower() != column
             and ("char" in c.type.lower() or "text" in c.type.lower() or not c.type)]
    same = [u for u in units if u.lower()[:4] == column[:4]]
    return same[0] if len(same) == 1 else (units[0] if len(units) == 1 else None)


def _scaled(node: exp.Expression) -> bool:
    """The value is multiplied or divided by a number on its way to the answer (converted already)."""
    return any(isinstance(p, exp.Mul | exp.Div) for p in _ancestors(node))


def _ancestors(node: exp.Expression) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    parent = node.parent
    while isinstance(parent, exp.Expression) and not isinstance(parent, exp.Select):
        out.append(parent)
        parent = parent.parent
    return out


def check_measure_unit(ctx: SqlContext) -> CheckResult:
    """The amount the query returns is in another unit than the one the question asks for ("how many liters" summed
    from ``inputevents.totalamount``, which the records keep in mL): off by a factor. The records' unit is read from
    the unit column beside the value, over the rows the query reads; repaired by the factor between the two units
    (temperatures: none)."""
    if ctx.tree is None or not isinstance(ctx.tree, exp.Select):
        return NOTHING
    asked = asked_measure(ctx.question)
    if asked is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    findings: list[Finding] = []
    edits: list[Edit] = []
    for projection in ctx.tree.expressions:
        columns = list(projection.find_all(exp.Column))
        if len(columns) != 1:
            continue
        if _scaled(columns[0]):
            findings += _converted_backwards(ctx, columns[0], asked, tables, edits)
            continue
        value = columns[0]
        table = owner_table(ctx, tables.get(value.table.lower(), value.table.lower()), value.name, tables)
        unit_column = _unit_column(ctx, table, value.name.lower()) if table else None
        held = _units_read(ctx, value, unit_column) if unit_column is not None else None
        where = f"({unit_column})"
        if held is None:  # no unit column: the name of what the query reads may say it ('Weight (Lbs)', 'temperature celsius')
            held, where = _named_unit(ctx.tree, _MEASURES[asked][0]), "by the name the query looks for"
        if held is None or held == asked or _MEASURES[held][0] != _MEASURES[asked][0]:
            continue
        factor = _factor(held, asked)
        said, wanted = _SAID.get(held, held), _SAID.get(asked, asked)
        findings.append(Finding("wrong_measure_unit", "error", f"The records keep {table}.{value.name} in {said} "
                                f"{where}; the question asks for {wanted}.", ctx.span_of(value.sql()),
                                f"in {wanted}" if factor is not None else None))
        if factor is not None:
            edits.append(_converted(projection, factor))
    return found(*findings, edits=edits)


def _converted_backwards(ctx: SqlContext, value: exp.Column, asked: str, tables: dict[str, str], edits: list[Edit]) -> list[Finding]:
    """The query converts the value by the factor between the records' unit and the asked one, but the wrong way: kg
    divided by 2.2046 for "in lbs" (pounds are kg times 2.2046). Only one multiplication or division by a number on the
    value's way to the answer; the same number within 2% of the factor's inverse. Repaired by turning it over."""
    scalings = [p for p in _ancestors(value) if isinstance(p, exp.Mul | exp.Div)]
    if len(scalings) != 1:
        return []
    scaling = scalings[0]
    # the number on the right, or on either side of a product ("2.54 * valuenum")
    literal = scaling.expression if isinstance(scaling.expression, exp.Literal) else \
        scaling.this if isinstance(scaling, exp.Mul) and isinstance(scaling.this, exp.Literal) else None
    number = _number(literal) if literal is not None else None
    if literal is None or number is None or number <= 0:
        return []
    amount = scaling.expression if literal is scaling.this else scaling.this
    table = owner_table(ctx, tables.get(value.table.lower(), value.table.lower()), value.name, tables)
    unit_column = _unit_column(ctx, table, value.name.lower()) if table else None
    assert ctx.tree is not None
    held = _units_read(ctx, value, unit_column) if unit_column is not None else _named_unit(ctx.tree, _MEASURES[asked][0])
    if held is None or held == asked or _MEASURES[held][0] != _MEASURES[asked][0]:
        return []
    factor = _factor(held, asked)
    if factor is None or factor == 1.0:
        return []
    taken = number if isinstance(scaling, exp.Mul) else 1 / number
    if abs(taken * factor - 1) > 0.02:
        return []
    said, wanted = _SAID.get(held, held), _SAID.get(asked, asked)
    right = exp.Div if isinstance(scaling, exp.Mul) else exp.Mul  # the same number, the other way
    edits.append(TreeEdit(replaced_by(right(this=amount.copy(), expression=literal.copy())), target=scaling))
    return [Finding("converted_backwards", "error", f"The records keep {table}.{value.name} in {said}; the query "
                    f"{'divides' if isinstance(scaling, exp.Div) else 'multiplies'} by {literal.sql()}, which converts "
                    f"{wanted} to {said}, not {said} to {wanted}.", ctx.span_of(scaling.sql()), f"in {wanted}")]


# Units as the names of items and results write them ('Weight (Lbs)', 'Height (cm)', 'Temperature Fahrenheit'): the
# distinctive words and any unit in parentheses; a bare letter (g, l, m) is too often something else.
_NAMED_UNIT = re.compile(r"\((" + _UNIT_WORD + r")\.?\)|(?<![a-z])(celsius|centigrade|fahrenheit|lbs|pounds|kg|kilograms|cm|inches|"
                         r"ml|liters|litres)(?![a-z])", re.IGNORECASE)


def _named_unit(tree: exp.Expression, dimension: str) -> str | None:
    """The one unit of ``dimension`` that the text values the query compares name ('Weight (Lbs)' -> lb)."""
    units = set()
    for lit in tree.find_all(exp.Literal):
        if lit.is_string and isinstance(lit.parent, exp.EQ | exp.In | exp.Like | exp.ILike):
            for m in _NAMED_UNIT.finditer(lit.this):
                unit = _data_unit(m.group(1) or m.group(2))
                if unit is not None and _MEASURES[unit][0] == dimension:
                    units.add(unit)
    return units.pop() if len(units) == 1 else None


def _factor(held: str, asked: str) -> float | None:
    a, b = _MEASURES[held][1], _MEASURES[asked][1]
    return None if a is None or b is None else a / b


def _units_read(ctx: SqlContext, value: exp.Column, unit_column: str) -> str | None:
    """The one unit of ours that every row the query reads is kept in (its FROM, joins and WHERE; NULL units left out)."""
    probe = ctx.tree.copy() if ctx.tree is not None else None
    if not isinstance(probe, exp.Select):
        return None
    for key in ("group", "having", "order", "limit", "offset", "distinct"):
        probe.set(key, None)
    probe.set("expressions", [exp.column(unit_column, table=value.table or None)])
    probe.set("distinct", exp.Distinct())
    try:
        rows = ctx.db.db.execute(probe.limit(20).sql(dialect=ctx.dialect), timeout_s=5).rows
    except DatabaseError:
        return None
    units = {_data_unit(str(r[0])) for r in rows if r[0] is not None}
    return units.pop() if len(units) == 1 and None not in units else None


def _exact(value: float) -> str:
    """A factor written to seven significant digits, with a decimal point (so an integer column is not divided as
    integers): 1000.0, 2.54, 30.48, 2.204623."""
    text = f"{value:.7g}"
    return text if "." in text or "e" in text else text + ".0"


def _converted(projection: exp.Expression, factor: float) -> TreeEdit:
    def apply(node: exp.Expression) -> None:
        alias = node.alias if isinstance(node, exp.Alias) else None
        inner = node.this if isinstance(node, exp.Alias) else node
        number = exp.Literal.number(_exact(factor if factor >= 1 else 1 / factor))
        scaled = exp.Mul(this=inner.copy(), expression=number) if factor >= 1 else exp.Div(this=inner.copy(), expression=number)
        node.replace(exp.alias_(scaled, alias) if alias else scaled)

    return TreeEdit(apply, target=projection)


# A body-mass index is a weight in kilograms over the square of a height in metres; heights kept in centimetres (an
# adult's is 140-200 there, never above 3 in metres) make the index 10,000 times too small.
_HEIGHT = re.compile(r"height", re.IGNORECASE)
_WEIGHT = re.compile(r"weight", re.IGNORECASE)
_CENTIMETRES = 100.0  # the median height at or above which the column cannot be in metres (nor in inches: 48-84)


def _squared(node: exp.Expression) -> exp.Column | None:
    """The column a denominator squares: ``h * h``, ``(h * h)``, ``POWER(h, 2)``, ``POW(h, 2)``."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Mul) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Column) \
            and node.this.sql().lower() == node.expression.sql().lower():
        return node.this
    if isinstance(node, exp.Pow) and isinstance(node.this, exp.Column) and _number(node.expression) == 2.0:
        return node.this
    return None


def _median_of(ctx: SqlContext, table: str, column: str) -> float | None:
    """The median of a sample of the column's numeric values; None when they cannot be read or are not numbers."""
    numbers = []
    for value in sampled_values(ctx, table, column, 200) or []:
        try:
            numbers.append(float(value))
        except ValueError:
            continue
    numbers = sorted(n for n in numbers if n > 0)
    return numbers[len(numbers) // 2] if numbers else None


def check_bmi_unit(ctx: SqlContext) -> CheckResult:
    """A weight divided by the square of a height the records keep in centimetres (``admissionweight /
    (admissionheight * admissionheight)``): a body-mass index needs metres, so the answer is 10,000 times too small.
    The height's unit is read from its values (a median of 100 or more is centimetres). Repaired by dividing the height
    by 100."""
    if ctx.tree is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    findings, edits = [], []
    for division in ctx.tree.find_all(exp.Div):
        height = _squared(division.expression)
        weights = [c for c in division.this.find_all(exp.Column) if _WEIGHT.search(c.name)]
        if height is None or not weights or not _HEIGHT.search(height.name) or _scaled_index(division):
            continue
        table = owner_table(ctx, tables.get(height.table.lower(), height.table.lower()), height.name, tables)
        median = _median_of(ctx, table, height.name) if table else None
        if median is None or median < _CENTIMETRES:
            continue
        findings.append(Finding("bmi_in_centimetres", "error", f"The query divides by the square of {table}.{height.name}, "
                                f"which the records keep in centimetres (typical value {median:g}); a body-mass index "
                                "needs the height in metres. Divided it by 100.", ctx.span_of(division.sql(dialect="sqlite")),
                                "height in metres"))
        edits += [TreeEdit(_in_metres, target=c) for c in division.expression.find_all(exp.Column)
                  if c.sql().lower() == height.sql().lower()]
    return found(*findings, edits=edits)


def _scaled_index(division: exp.Div) -> bool:
    """The index is scaled already: multiplied by 10,000 (kg / cm² x 10,000) or by 703 (lb / in² x 703) in the
    expression it is part of (any number of 100 or more beside the division, above it or in its numerator)."""
    top: exp.Expression = division
    parent = top.parent
    while isinstance(parent, exp.Binary | exp.Paren | exp.Func):
        top = typing.cast(exp.Expression, parent)
        parent = top.parent
    denominator = {id(lit) for lit in division.expression.find_all(exp.Literal)}
    return any(lit.is_number and float(lit.this) >= 100 for lit in top.find_all(exp.Literal) if id(lit) not in denominator)


def _in_metres(node: exp.Expression) -> None:
    node.replace(exp.Paren(this=exp.Div(this=node.copy(), expression=exp.Literal.number("100.0"))))
