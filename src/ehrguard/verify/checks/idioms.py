"""SQL that runs and means something else than its writer meant, whatever the question: read from the SQL alone.

- ``minutes_for_month`` (error): ``strftime('%M', t)`` is the minute, ``'%m'`` the month (SQLite, and every engine
  that reads strftime formats); grouping or comparing by '%M' where the question speaks of months, never the
  minute. Repaired to ``'%m'``.
- ``count_of_nulls`` (error): ``COUNT(col)`` counts the rows where ``col`` is not NULL, so with ``col IS NULL`` among
  the conditions it is 0 whatever the data. Repaired to ``COUNT(*)``.
- ``whole_number_quotient`` (error): two whole numbers divided (``9 / 5``) give a whole number in SQLite and
  PostgreSQL (1, not 1.8): a unit conversion or a fraction written so is cut. Repaired to a decimal dividend.
- ``having_row_column`` (error): a HAVING condition on a column that is neither grouped nor aggregated tests one
  arbitrary row of each group (SQLite) and does not keep the rows the aggregates count. Repaired by moving the
  condition into WHERE, when it is one of the HAVING's AND-ed conditions and compares the column with a constant.
- ``offset_without_order`` (error): OFFSET skips rows in an order only ORDER BY gives; without one, which row is
  returned is whichever the engine meets first (a "median" taken as the middle row of an unsorted table). No repair:
  the order meant is not written.
- ``not_a_median`` (error): the question asks for a median and the query takes the mean (AVG) with nothing that
  computes a median (no MEDIAN or percentile, no row taken from the middle of an order). No repair (SQLite has no
  MEDIAN).
- ``time_text_arithmetic`` (error, SQLite): SQLite keeps moments as text, and ``outtime - intime`` subtracts the numbers
  the texts begin with (the years): 0 for a stay within one year. Repaired to ``julianday(outtime) -
  julianday(intime)``, the difference in days.
- ``field_difference`` (error): the question asks how long something lasted or how much time passed, and the query
  subtracts one calendar field of two moments (``strftime('%H', outtime) - strftime('%H', intime)``, ``EXTRACT(HOUR
  FROM ...)``): the hour of the day, the minute, the day of the month start again, so a stay from 22:00 to 02:00 the
  next day gives -20 hours. The day of the year and the year are left alone (the day-of-year difference is the
  calendar days within one year, the way EHRSQL writes them; years give a crude age). On SQLite, repaired to the
  difference of the moments in the field's unit when the question asks for that unit.
- ``time_compared_with_number`` (error): a moment compared with a bare number (``dischtime > 48``): SQLite orders any
  text after any number, so the condition keeps every row (or none); other engines refuse it. No repair: which
  duration or offset was meant is not written. ``time_compared_with_text`` (error): a moment compared with a word that
  holds no digit (``dischtime = 'home'``), which no moment equals.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from functools import partial

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.sqltree import clause
from ehrguard.verify.checks.alignment import _is_stored, _is_time, masked_question
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found, rows_and
from ehrguard.verify.checks.schema_refs import aliases
from ehrguard.verify.verdict import Finding

_MONTHS = re.compile(r"\b(?:months?|monthly|per calendar month)\b", re.IGNORECASE)
_MINUTES = re.compile(r"\b(?:minutes?|mins?)\b", re.IGNORECASE)


def check_idioms(ctx: SqlContext) -> CheckResult:
    if ctx.tree is None:
        return NOTHING
    findings: list[Finding] = []
    edits: list[Edit] = []
    for check in (_minutes_for_month, _count_of_nulls, _whole_number_quotient, _having_row_column, _count_of_a_test, _not_in_nulls,
                  _count_skips_nulls, _offset_without_order, _not_a_median, _time_text_arithmetic,
                  _time_compared_with_number, _field_difference):
        result = check(ctx)
        findings += result.findings
        edits += result.edits
    return found(*findings, edits=edits)


def _minutes_for_month(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    if not _MONTHS.search(ctx.question) or _MINUTES.search(ctx.question):
        return NOTHING
    formats = [lit for lit in ctx.tree.find_all(exp.Literal)
               if lit.is_string and "%M" in lit.this and "%H" not in lit.this
               and isinstance(lit.parent, (exp.TimeToStr, exp.Anonymous, exp.StrToTime))]
    if not formats:
        return NOTHING
    return found(Finding("minutes_for_month", "error", "'%M' is the minute of a time ('%m' is the month); the question asks about "
                         "months.", ctx.span_of("%M"), "'%m'"),
                 edits=[TreeEdit(_month_format, target=f) for f in formats])


def _month_format(node: exp.Expression) -> None:
    node.replace(exp.Literal.string(node.this.replace("%M", "%m")))


def _count_of_nulls(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    findings, edits = [], []
    for count in ctx.tree.find_all(exp.Count):
        col = count.this
        select = count.find_ancestor(exp.Select)
        where = select.args.get("where") if select is not None else None
        if select is None or not isinstance(col, exp.Column) or where is None \
                or any(j.args.get("side") for j in select.args.get("joins") or ()):
            continue  # an outer join's unmatched rows are NULL on purpose (an anti-join)
        nulls = [i for i in where.find_all(exp.Is) if isinstance(i.this, exp.Column) and i.this.name.lower() == col.name.lower()
                 and i.this.table.lower() == col.table.lower()
                 and isinstance(i.expression, exp.Null) and i.find_ancestor(exp.Not, exp.Or) is None]
        if nulls:
            findings.append(Finding("count_of_nulls", "error", f"COUNT({col.sql()}) counts the rows where {col.name} is not NULL; the "
                                    f"query keeps only rows where it is NULL, so the count is always 0.",
                                    ctx.span_of(count.sql()), "COUNT(*)"))
            edits.append(TreeEdit(_count_rows, target=count))
    return found(*findings, edits=edits)


def _count_rows(count: exp.Expression) -> None:
    count.set("this", exp.Star())


def _whole_number_quotient(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    if ctx.dialect not in ("sqlite", "postgres"):
        return NOTHING  # DuckDB, BigQuery: '/' divides exactly
    divisions = [div for div in ctx.tree.find_all(exp.Div)
                 if _whole(div.this) is not None and _whole(div.expression) not in (None, 0)
                 and _whole(div.this) % _whole(div.expression) != 0]  # type: ignore[operator]
    if not divisions:
        return NOTHING
    shown = ", ".join(f"{_whole(d.this)} / {_whole(d.expression)}" for d in divisions[:3])
    return found(Finding("whole_number_quotient", "error", f"{shown}: whole numbers divided give a whole number here (9 / 5 is 1); "
                         "the fraction is lost.", None, "a decimal (9.0 / 5)"),
                 edits=[TreeEdit(_decimal_literal, target=d) for d in divisions])


def _decimal_literal(div: exp.Expression) -> None:
    div.set("this", exp.Literal.number(f"{_whole(div.this)}.0"))


def _whole(node: exp.Expression) -> int | None:
    inner = node.unnest()
    if isinstance(inner, exp.Literal) and not inner.is_string and inner.this.isdigit():
        return int(inner.this)
    return None


def _having_row_column(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    findings, edits = [], []
    for select in ctx.tree.find_all(exp.Select):
        having, group = select.args.get("having"), select.args.get("group")
        if having is None or group is None or select.find(exp.Max, exp.Min) is not None:
            continue  # beside MIN/MAX, SQLite reads a bare column from the row holding the extreme (a documented idiom)
        if any(not isinstance(g, exp.Column) for g in group.expressions):
            continue  # grouped by position or by an expression: which columns that covers is not read here
        grouped = {c.name.lower() for c in group.find_all(exp.Column)}
        loose = [c for c in having.find_all(exp.Column) if c.find_ancestor(exp.AggFunc) is None and c.name.lower() not in grouped
                 and c.find_ancestor(exp.Select) is select
                 and c.name.lower() not in {p.alias.lower() for p in select.expressions if isinstance(p, exp.Alias)}]
        if not loose:
            continue
        movable: list[exp.Expression] = [cond for cond in _conjuncts(having.this) if isinstance(cond, _COMPARISONS)
                   and isinstance(cond.this, exp.Column) and cond.this in loose and isinstance(cond.expression, exp.Literal)]
        findings.append(Finding("having_row_column", "error", f"HAVING tests {loose[0].sql()}, which is neither grouped nor aggregated: it "
                                "reads one arbitrary row of each group, and the counts still take every row.",
                                ctx.span_of(loose[0].sql()), "the condition in WHERE" if movable else None))
        if movable and len(movable) == len(loose):
            edits.append(TreeEdit(_move_to_where(movable), target=select))
    return found(*findings, edits=edits)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like)


def _count_of_a_test(ctx: SqlContext) -> CheckResult:
    """``COUNT(drugstoptime IS NULL)``: a test is true or false, never NULL, so COUNT counts every row. Repaired to count
    the rows where it holds."""
    assert ctx.tree is not None
    tests = [c for c in ctx.tree.find_all(exp.Count) if isinstance(c.this, (exp.Is, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE))]
    if not tests:
        return NOTHING
    return found(Finding("count_of_a_test", "error", f"COUNT({tests[0].this.sql()}) counts every row: the test is true or false, "
                         "never NULL. The rows where it holds are counted by COUNT(CASE WHEN ... THEN 1 END).",
                         ctx.span_of(tests[0].sql()), "COUNT(CASE WHEN ... THEN 1 END)"),
                 edits=[TreeEdit(_count_when, target=c) for c in tests])


def _count_when(count: exp.Expression) -> None:
    count.set("this", exp.Case(ifs=[exp.If(this=count.this.copy(), true=exp.Literal.number(1))]))


def _not_in_nulls(ctx: SqlContext) -> CheckResult:
    """``x NOT IN (SELECT col ...)`` where the subquery returns a NULL: no x is then ever "not in" it, and the answer is
    empty whatever the data. Found by asking the subquery for its NULLs; repaired by leaving them out of it."""
    assert ctx.tree is not None
    findings, edits = [], []
    for node in ctx.tree.find_all(exp.Not):
        inner = node.this
        query = inner.args.get("query") if isinstance(inner, exp.In) else None
        sub = query.this if isinstance(query, exp.Subquery) else query
        if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 or not isinstance(sub.expressions[0], exp.Column) \
                or sub.args.get("limit") or sub.args.get("order"):
            continue
        column = sub.expressions[0]
        probe = sub.copy()
        probe.where(exp.Is(this=column.copy(), expression=exp.Null()), copy=False)
        probe.set("limit", exp.Limit(expression=exp.Literal.number(1)))
        try:
            rows = ctx.db.db.execute(probe.sql(dialect=ctx.dialect), timeout_s=5).rows
        except DatabaseError:
            continue  # correlated, or too slow
        if rows:
            findings.append(Finding("not_in_nulls", "error", f"The NOT IN list ({column.sql()}) holds NULL, so no value is ever "
                                    "'not in' it: the condition keeps nothing.", ctx.span_of(column.sql()),
                                    f"{column.sql()} IS NOT NULL in the subquery"))
            edits.append(TreeEdit(partial(_without_nulls, column), target=sub))
    return found(*findings, edits=edits)


def _without_nulls(column: exp.Column, select: exp.Expression) -> None:
    assert isinstance(select, exp.Select)
    select.where(exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null())), copy=False)


# Records counted ("how many orders"), and words that make a column's being filled in the point ("died", "completed").
_RECORDS_COUNTED = re.compile(r"\b(?:orders|prescriptions|records|entries|events|rows|results|tests|doses|administrations|"
                              r"measurements|readings)\b", re.IGNORECASE)
_FILLED_IN_ASKED = re.compile(r"\b(?:died|dead|deaths?|deceased|expired|passed away|complet\w*|ended|finished|discharged|stopped|"
                              r"recorded|documented|charted|filled|missing|null|known|with an?|have an?|has an?)\b", re.IGNORECASE)


def _count_skips_nulls(ctx: SqlContext) -> CheckResult:
    """``COUNT(stoptime)`` for "how many orders": COUNT of a column counts the rows where it is filled in, and here some
    are not (asked of the query's own rows), while the question never names that column. Ids are left to the
    counting checks. Repaired to count the rows."""
    tree = ctx.tree
    if not isinstance(tree, exp.Select) or tree.args.get("group") or len(tree.expressions) != 1:
        return NOTHING
    count = tree.expressions[0].this if isinstance(tree.expressions[0], exp.Alias) else tree.expressions[0]
    if not isinstance(count, exp.Count) or not isinstance(count.this, exp.Column) or count.this.name.lower().endswith("id"):
        return NOTHING
    column = count.this
    if not _RECORDS_COUNTED.search(ctx.question) or _FILLED_IN_ASKED.search(ctx.question):
        return NOTHING  # "how many patients died" counts the filled-in dates on purpose; only records counted are read
    parts = [p for p in column.name.lower().split("_") if len(p) >= 3] or [column.name.lower()]
    if any(p[:4] in w or w[:4] in p for p in parts for w in re.findall(r"[a-z]{3,}", ctx.question.lower())):
        return NOTHING  # the question names the column ("how many have a stop time"): its filled-in rows are asked
    figures = rows_and(ctx, tree, exp.Count(this=column.copy()))
    if figures is None or figures[0] == figures[1]:
        return NOTHING
    return found(Finding("count_skips_nulls", "error", f"COUNT({column.sql()}) counts only the rows where {column.name} is filled in "
                         f"({figures[1]} of {figures[0]}); the question counts them all.", ctx.span_of(count.sql()), "COUNT(*)"),
                 edits=[TreeEdit(_count_rows, target=count)])


def _offset_without_order(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    unordered = [s for s in ctx.tree.find_all(exp.Select) if s.args.get("offset") is not None and not s.args.get("order")
                 and s.args["offset"].expression.sql() != "0"  # OFFSET 0 skips nothing
                 and not _ordered_source(s)]
    if not unordered:
        return NOTHING
    return found(Finding("offset_without_order", "error", "The query skips rows with OFFSET but gives no ORDER BY, so which row "
                         "it returns is whichever the database meets first, not a place in any order.", ctx.span_of("offset")))


def _ordered_source(select: exp.Select) -> bool:
    """The rows come from one subquery or CTE that orders them (``FROM (SELECT age ... ORDER BY age) LIMIT 1 OFFSET n``)."""
    source = clause(select, "from")
    inner = source.this if source is not None else None
    if isinstance(inner, exp.Table) and not inner.db:  # a CTE of the statement, by its name
        root = select.root()
        ctes = {c.alias_or_name.lower(): c.this for w in root.find_all(exp.With) for c in w.expressions}
        inner = ctes.get(inner.name.lower(), inner)
    while isinstance(inner, exp.Subquery):
        inner = inner.this
    return isinstance(inner, exp.Select) and inner.args.get("order") is not None and not select.args.get("joins")


def _stored_times(ctx: SqlContext) -> Callable[[exp.Expression], exp.Column | None]:
    """A test for a node that is a column of a stored table holding moments (not a name the query computes: a
    ``wait_time`` of hours, an epoch ``start_time``)."""
    assert ctx.tree is not None
    tables, defined = aliases(ctx.tree)

    def test(node: exp.Expression) -> exp.Column | None:
        column = node.unnest()
        return column if isinstance(column, exp.Column) and _is_stored(ctx, column, tables, defined) \
            and _is_time(ctx, column, tables) else None

    return test


_BIRTH_OR_DEATH = re.compile(r"dob|dod|birth|death", re.IGNORECASE)


def _time_text_arithmetic(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    if ctx.dialect != "sqlite":
        return NOTHING  # PostgreSQL and DuckDB subtract timestamps to an interval
    stored = _stored_times(ctx)
    subs = [sub for sub in ctx.tree.find_all(exp.Sub) if stored(sub.this) and stored(sub.expression)]
    # a birth date subtracted gives whole years, the crude age people mean by it: not this mistake
    subs = [sub for sub in subs if not any(_BIRTH_OR_DEATH.search(c.name) for c in sub.find_all(exp.Column))]
    if not subs:
        return NOTHING
    # compared with a number, or where years are asked, what the number means is not known: reported, not repaired
    certain = not re.search(r"\b(?:years?|age|old)\b", ctx.question, re.IGNORECASE) and not any(
        isinstance(sub.parent, exp.GT | exp.GTE | exp.LT | exp.LTE | exp.EQ | exp.NEQ) for sub in subs)
    return found(Finding("time_text_arithmetic", "error", f"SQLite keeps moments as text: {subs[0].sql()} subtracts the years they "
                         "begin with, not the moments.", ctx.span_of(subs[0].sql()),
                         "julianday(...) - julianday(...) (days)" if certain else None),
                 edits=[TreeEdit(_in_days, target=sub) for sub in subs] if certain else [])


def _time_compared_with_number(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    stored = _stored_times(ctx)
    for node in ctx.tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ):
        for one, other in ((node.this, node.expression), (node.expression, node.this)):
            value = other.unnest()
            if not (stored(one) and isinstance(value, exp.Literal)):
                continue
            if not value.is_string:
                return found(Finding("time_compared_with_number", "error", f"{node.sql()} compares a moment with a number, which "
                                     "keeps every row or none; a duration or a date was meant.", ctx.span_of(node.sql())))
            # 'home' is no moment: a date or time always has digits (PostgreSQL reads 'today' and 'now' as moments)
            if ctx.dialect == "sqlite" and value.this.strip() and not re.search(r"\d", value.this):  # '' is "missing" to many
                return found(Finding("time_compared_with_text", "error", f"{node.sql()} compares a moment with a word, which no "
                                     "moment equals; another column was meant.", ctx.span_of(node.sql())))
    return NOTHING


# Calendar fields that start again, each with its unit and how many of them a day holds; the day of the year and the
# year are not among them (see the module's docstring).
_WRAPPING_FIELDS = {"%H": ("hour", 24), "%I": ("hour", 24), "%M": ("minute", 1440), "%S": ("second", 86400), "%d": ("day", 1),
                    "%m": ("month", 0), "%w": ("day", 1)}
_EXTRACTED_FIELDS = {"hour": ("hour", 24), "minute": ("minute", 1440), "second": ("second", 86400), "day": ("day", 1),
                     "month": ("month", 0), "dow": ("day", 1)}
# A question about how much time passed (general English; "LOS in days": a length of stay in a unit).
_DURATION_ASKED = re.compile(r"\b(?:how long|how many (?:hours?|minutes?|seconds?|days?|weeks?|months?)|duration|length of (?:stay|time)|"
                             r"los|(?:in|as) (?:hours|minutes|days|weeks)|"
                             r"elapsed|time (?:between|from|until|since|taken|spent)|(?:hours?|minutes?|days?) (?:between|from|after|"
                             r"since|until|before|passed|elapsed))\b", re.IGNORECASE)


def _field_of(node: exp.Expression) -> tuple[str, int, exp.Expression] | None:
    """The calendar field a node takes of a moment (its unit, how many per day, the moment), through casts."""
    node = typing.cast(exp.Expression, node.unnest())
    while isinstance(node, exp.Cast):
        node = typing.cast(exp.Expression, node.this.unnest())
    if isinstance(node, exp.TimeToStr):
        fmt = node.args.get("format")
        field = _WRAPPING_FIELDS.get(fmt.this) if isinstance(fmt, exp.Literal) else None
        moment = node.this.this if isinstance(node.this, exp.TsOrDsToTimestamp) else node.this
        return (*field, moment) if field else None
    if isinstance(node, exp.Extract) and isinstance(node.this, exp.Var | exp.Identifier | exp.Literal):
        field = _EXTRACTED_FIELDS.get(node.this.name.lower())
        return (*field, node.expression) if field else None
    return None


def _field_difference(ctx: SqlContext) -> CheckResult:
    assert ctx.tree is not None
    if not _DURATION_ASKED.search(ctx.question):
        return NOTHING
    stored = _stored_times(ctx)
    for sub in ctx.tree.find_all(exp.Sub):
        later, earlier = _field_of(sub.this), _field_of(sub.expression)
        if later is None or earlier is None or later[0] != earlier[0] or later[2].sql() == earlier[2].sql():
            continue
        if not (stored(later[2]) and stored(earlier[2])):
            continue  # a moment against a constant ("hours after midnight") is a time of day, asked as such
        if _part_of_a_sum(sub):
            continue  # one term of days * 24 + hours: the formula adds the coarser fields back
        unit, per_day = later[0], later[1]
        asked = re.search(rf"\bhow many {unit}s?\b", ctx.question, re.IGNORECASE)
        certain = ctx.dialect == "sqlite" and per_day and asked is not None
        suggestion = "julianday(date(...)) - julianday(date(...))" if per_day == 1 else f"(julianday(...) - julianday(...)) * {per_day}"
        return found(Finding("field_difference", "error", f"{sub.sql()} subtracts the {unit} each moment shows, not the time "
                             f"between them: the {unit} starts again each {'day' if unit != 'day' else 'month'}.",
                             ctx.span_of(sub.sql()), suggestion if certain else None),
                     edits=[TreeEdit(partial(_in_unit, later[2], earlier[2], per_day), target=sub)] if certain else [])
    return NOTHING


def _part_of_a_sum(sub: exp.Expression) -> bool:
    """Is this difference one term of a larger sum or difference within its expression?"""
    node = sub.parent
    while node is not None and not isinstance(node, exp.Select | exp.Where | exp.Having | exp.Order):
        if isinstance(node, exp.Add | exp.Sub):
            return True
        node = node.parent
    return False


def _in_unit(later: exp.Expression, earlier: exp.Expression, per_day: int, sub: exp.Expression) -> None:
    """The moments' difference in the unit asked: hours, minutes, seconds; days counted as calendar days (a day of
    the month subtracted counted them so), as the difference of the two dates."""
    def moment(m: exp.Expression) -> exp.Expression:
        day = exp.Anonymous(this="date", expressions=[m.copy()])
        return exp.Anonymous(this="julianday", expressions=[day if per_day == 1 else m.copy()])
    days = exp.Sub(this=moment(later), expression=moment(earlier))
    sub.replace(exp.Paren(this=days) if per_day == 1 else exp.Mul(this=exp.Paren(this=days), expression=exp.Literal.number(per_day)))


def _in_days(sub: exp.Expression) -> None:
    sub.set("this", exp.Anonymous(this="julianday", expressions=[sub.this.unnest().copy()]))
    sub.set("expression", exp.Anonymous(this="julianday", expressions=[sub.expression.unnest().copy()]))


# The statistic, not the anatomy ("the median nerve", "a median sternotomy").
_MEDIAN = re.compile(r"\b(?:median(?!\s+(?:nerve|sternotomy|cubital|arcuate|vein|artery|lobe|plane|line|incision))|50th percentile|"
                     r"middle value)\b", re.IGNORECASE)
# What computes a median, in the dialects ehrguard reads: a function, a percentile, or rows counted along an order.
_MEDIAN_SQL = re.compile(r"\b(?:median|percentile_cont|percentile_disc|quantile\w*|approx_quantiles?|approx_percentile|ntile|row_number|"
                         r"percent_rank|cume_dist|offset)\b", re.IGNORECASE)


def _not_a_median(ctx: SqlContext) -> CheckResult:
    tree = ctx.tree
    if not isinstance(tree, exp.Select) or not _MEDIAN.search(masked_question(ctx)) or _MEDIAN_SQL.search(tree.sql()):
        return NOTHING
    # only a plain mean is certain: one SELECT of AVG over rows (a self-join or a HAVING may pick the middle rows)
    if any(tree.args.get(k) for k in ("group", "having", "joins")) or sum(1 for _ in tree.find_all(exp.Select)) != 1 \
            or not any(isinstance((e.this if isinstance(e, exp.Alias) else e).unnest(), exp.Avg) for e in tree.expressions):
        return NOTHING
    return found(Finding("not_a_median", "error", "The question asks for the median; the query computes the mean (AVG).",
                         ctx.span_of("avg(")))


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node.this if isinstance(node, exp.Paren) else node]


def _move_to_where(conditions: list[exp.Expression]) -> Callable[[exp.Expression], None]:
    wanted = [c.sql() for c in conditions]

    def apply(select: exp.Expression) -> None:
        assert isinstance(select, exp.Select)
        having = select.args["having"]
        kept = [c for c in _conjuncts(having.this) if c.sql() not in wanted]
        moved = [c for c in _conjuncts(having.this) if c.sql() in wanted]
        for cond in moved:
            select.where(cond.copy(), copy=False)
        select.set("having", exp.Having(this=exp.and_(*kept)) if kept else None)

    return apply
