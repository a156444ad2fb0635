"""Question <-> SQL alignment: what the question asks for is what the SQL computes.

Each check reads one kind of meaning from the question with general English (which end of an order, which
aggregate, still in hospital or died, which calendar window) and the same meaning from the parse tree, using the
database's profile for which columns hold times. A check speaks only when the question states the meaning
unambiguously and the SQL computes the other one; its repair is proposed only where the fix is certain (flip the
order, swap the aggregate, rewrite the window). None of the phrases below were taken from a benchmark's questions;
docs/verifier.md says how the checks were measured on EHRSQL questions they were not written from.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from ehrguard.db.engine import Result
from ehrguard.errors import DatabaseError
from ehrguard.sqltree import clause
from ehrguard.verify.checks.base import (
    NOTHING,
    TIME_NAME,
    CheckResult,
    Edit,
    SqlContext,
    TextEdit,
    TreeEdit,
    add_condition,
    data_fact,
    found,
    stored_table,
    visits_by_id,
)
from ehrguard.verify.checks.concepts import name_columns, named_values
from ehrguard.verify.checks.keys import VISIT_BY_PLACE, category_values, codes_named, dictionary_of, label_column
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with
from ehrguard.verify.offline.forms import stated_time_filter
from ehrguard.verify.offline.templates import NUMBER_WORDS
from ehrguard.verify.offline.time_filters import TimeFilter, sql_time_filters
from ehrguard.verify.verdict import Finding

_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|few|several|couple of)"
_SPAN = r"(?:seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?|decades?|quarters?|semesters?|shifts?)"
# "last"/"first" naming a window ("last year", "the last 3 days", "the first 24 hours"), not an end of an order.
_WINDOW_AFTER = rf"(?!\s+(?:{_NUMBER}\s+)?{_SPAN}\b)"

# Which end of an order the question asks for, in time and in magnitude. General English.
_LATE = re.compile(rf"\b(?:(?:last|final){_WINDOW_AFTER}|latest|most recent(?:ly)?|newest)\b", re.IGNORECASE)
_EARLY = re.compile(rf"\b(?:first{_WINDOW_AFTER}|earliest|initial(?:ly)?)\b", re.IGNORECASE)
_HIGH = re.compile(r"\b(?:highest|largest|greatest|biggest|maximum|maximal|max|peak|top|most(?!\s+recent)(?=\s+\w))\b", re.IGNORECASE)
_LOW = re.compile(r"\b(?:lowest|smallest|minimum|minimal|min|fewest|bottom|nadir|trough|least(?=\s+\w))\b", re.IGNORECASE)
_BOUND = re.compile(r"\bat (?:least|most)\b", re.IGNORECASE)  # "at least 3 times" is a threshold, not an order

# Which aggregate the question asks for.
_AVERAGE = re.compile(r"\b(?:average|averaged|mean(?!\s+(?:arterial|blood|bp|corpuscular|platelet))|avg)\b", re.IGNORECASE)
# "How much" of something given or put out over a time: an amount (urine, intake, a drug given), not a weight or a price.
_HOW_MUCH = re.compile(r"\bhow much (?:[a-z0-9%.-]+ ){0,4}?(?:urine|output|intake|fluids?|volume|blood loss|drain(?:age|ed)?|"
                       r"given|received|infused|administered|put out|make|made|produce|produced|take in|took in|drink|drank)\b",
                       re.IGNORECASE)
_TOTAL = re.compile(r"\b(?:total(?!\s+(?:number|count)\b)|sum|summed|cumulative|altogether)\b", re.IGNORECASE)

# Still in hospital (no discharge yet), and death.
_STAY = r"(?:hospital |icu |unit )?(?:visit|stay|admission|encounter|hospitali[sz]ation)s?"
# "Not discharged" is a stay still open only on its own: "not discharged home", "... to hospice", "... alive" says
# where or how the stay ended (X: a value the question names, masked).
_UNQUALIFIED = r"(?!\s+(?:to|home|x|alive|dead|against|with|early|late)\b)"
_STILL_IN = re.compile(r"\b(?:currently|still|presently|right now)\b(?:\s+\w+){0,3}?\s+(?:admitted|hospitali[sz]ed|in (?:the )?"
                       rf"(?:hospital|icu|unit|ward))\b|\b(?:not (?:yet )?(?:been )?|yet to be |never )discharged\b{_UNQUALIFIED}"
                       rf"|\b(?:current|this|ongoing|present) {_STAY}\b|\bcurrent (?:patients?|number|census)\b"
                       r"|\b(?:currently|right now|at present|presently|at the moment|as of now)\b", re.IGNORECASE)
# A visit named by its place in the patient's history: EHRSQL-style databases mean one that has ended.
_ENDED_VISIT = re.compile(rf"\b(?:first|last|previous|prior|earliest|initial|second) {_STAY}\b", re.IGNORECASE)
_DEATH = re.compile(r"\b(?:died|dies|dead|death|deaths|deceased|mortality|passed away|did not survive|expired)\b", re.IGNORECASE)
_DEATH_COLUMN = re.compile(r"(?:^dod$|death|expire|dischargestatus$)")
# Survival asked for, and the values a death record writes for each side (general English).
_SURVIVED = re.compile(r"\b(?:survived|survivors?|survive|alive|living|still living|did not die|didn't die|discharged alive)\b",
                       re.IGNORECASE)
_RATE = re.compile(r"\b(?:rate|ratio|percent|percentage|proportion|share|fraction|odds|survival)\b", re.IGNORECASE)
_ALIVE_VALUE = re.compile(r"^\s*(?:alive|living|survived|discharged alive)\s*$", re.IGNORECASE)
_DEAD_VALUE = re.compile(r"^\s*(?:expired|dead|died|deceased|death)\s*$", re.IGNORECASE)
# Where a death happened, as a question restricts it (general English): during a hospital or ICU visit, or after the
# visit ended. A patient's date of death (MIMIC's dod) also records deaths after discharge; a visit's own record of
# death (a discharge location or status 'died', an expiry flag, a time of death) records only deaths during it.
_VISIT_PLACE = r"(?:hospital|icu|intensive care(?: unit)?|unit|ward|stay|admission|hospitali[sz]ation|visit|encounter)s?"
_DIED_IN_VISIT = re.compile(
    r"\b(?:in-?hospital|inpatient|icu|intensive care|in-?unit|hospital|ward) (?:deaths?|mortality)\b"
    r"|\b(?:died|dies|dying|deaths?|mortality|expired|passed away)\b(?:\s+(?:eventually|later|subsequently|ultimately|finally|"
    r"while|there|also|actually)){0,2}\s+"
    rf"(?:in|during|at|while in|while at|over|through(?:out)?)\s+(?:the |their |his |her |this |that |a |an |same |its )?"
    rf"(?:(?:first|last|index|current|same|latest|most recent|icu|hospital) )?{_VISIT_PLACE}\b"
    r"|\b(?:died|dying|death) (?:before|prior to) (?:being |their |his |her )?discharged?\b"
    r"|\b(?:did not|didn't|never|failed to) survive (?:to )?(?:the |their |his |her )?(?:hospital|stay|admission|"
    r"hospitali[sz]ation|icu|discharge)\b", re.IGNORECASE)
_DIED_AFTER_VISIT = re.compile(
    r"\b(?:after|following|post-?|since|within \w+ (?:days?|weeks?|months?|years?) (?:of|after|from))\s*"
    r"(?:their |the |his |her |hospital )*(?:discharge(?! from (?:the )?(?:icu|unit|intensive))|leaving (?:the )?hospital)\b"
    r"|\bout-of-hospital\b|\b(?:died|death|deaths) (?:at home|outside (?:the |of )?hospital|in hospice)\b",
    re.IGNORECASE)


@dataclass(frozen=True)
class _Ends:
    """The ends of an order a question or a query uses: in time (early/late) and in magnitude (low/high)."""

    time: frozenset[str]
    size: frozenset[str]


def masked_question(ctx: SqlContext) -> str:
    """The question without the names the SQL compares with ("bilirubin, total" is a test, not a total asked for)."""
    question = ctx.question
    if ctx.tree is None:
        return question
    for lit in sorted((lit.this for lit in ctx.tree.find_all(exp.Literal) if lit.is_string and len(lit.this.strip("%")) >= 3),
                      key=len, reverse=True):
        question = re.sub(rf"(?<!\w){re.escape(lit.strip('%'))}(?!\w)", " ", question, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", question)  # one space where a name was: "how much [drug] infusion volume" reads as written


def question_ends(question: str) -> _Ends:
    q = _BOUND.sub(" ", question)
    time = {name for name, pattern in (("early", _EARLY), ("late", _LATE)) if pattern.search(q)}
    size = {name for name, pattern in (("low", _LOW), ("high", _HIGH)) if pattern.search(q)}
    return _Ends(frozenset(time), frozenset(size))


def _is_time(ctx: SqlContext, column: exp.Column, tables: dict[str, str]) -> bool:
    """A column that holds moments: named by the profile, else by its declared type or its name."""
    name = column.name.lower()
    owner = tables.get(column.table.lower(), column.table.lower())
    if f"{owner}.{name}" in ctx.profile.time_columns or any(c.endswith("." + name) for c in ctx.profile.time_columns):
        return True
    return bool(TIME_NAME.search(name))


def _is_stored(ctx: SqlContext, column: exp.Column, tables: dict[str, str], defined: set[str]) -> bool:
    """A column of a table in the schema (not an alias the query computes)."""
    owner = column.table.lower()
    if owner:
        table = tables.get(owner)
        return owner not in defined and table is not None and (info := ctx.db.schema.table(table)) is not None and \
            info.column(column.name) is not None
    return column.name.lower() not in defined and any(
        (info := ctx.db.schema.table(t)) is not None and info.column(column.name) is not None for t in tables.values())


def _order_nodes(ctx: SqlContext) -> list[tuple[exp.Expression, str, str]] | None:
    """(node, family, end) for every ORDER BY key and every MAX/MIN in the query; family is time or size. None when
    one of them orders by a value the query computes itself (a rate, a difference): which end of it the question
    means is not knowable here, and the other orders may serve it."""
    if ctx.tree is None:
        return []
    tables, defined = aliases(ctx.tree)
    out = []
    for node in ctx.tree.find_all(exp.Ordered, exp.Max, exp.Min):
        arg = node.this
        while isinstance(arg, exp.Cast | exp.Paren) and not isinstance(arg, exp.Column):
            arg = arg.this
        if isinstance(arg, exp.Count):
            family = "size"  # ordered by how many
        elif isinstance(arg, exp.Column) and _is_stored(ctx, arg, tables, defined):
            family = "time" if _is_time(ctx, arg, tables) else "size"
        elif isinstance(node, exp.Max | exp.Min) and isinstance(arg, exp.Column):
            family = "size"  # the largest of a value the query computes (a total per visit): MAX is its high end
        else:
            return None
        if isinstance(node, exp.Ordered):
            end = "high" if node.args.get("desc") else "low"
        else:
            end = "high" if isinstance(node, exp.Max) else "low"
        if family == "time":
            end = "late" if end == "high" else "early"
        out.append((node, family, end))
    return out


_OPPOSITE = {"early": "late", "late": "early", "low": "high", "high": "low"}
_WORDS = {"early": "the earliest", "late": "the latest", "low": "the lowest", "high": "the highest"}


def _flip(node: exp.Expression) -> None:
    if isinstance(node, exp.Ordered):
        node.set("desc", not node.args.get("desc"))
        node.set("nulls_first", False)  # the end asked for is a value: a missing one (a stay still open) never comes first
    elif isinstance(node, exp.Max | exp.Min):  # the argument moves (not a copy), so edits aimed inside it still apply
        node.replace((exp.Min if isinstance(node, exp.Max) else exp.Max)(this=node.this))


def _ends_used(nodes: list[tuple[exp.Expression, str, str]]) -> dict[str, set[str]]:
    return {"time": {end for _, fam, end in nodes if fam == "time"}, "size": {end for _, fam, end in nodes if fam == "size"}}


def _ends_taken(ends: set[str]) -> str:
    """The ends of an order a query takes, in words and in a fixed order ("the lowest and the highest": a query with
    MIN and MAX; one picked from the set named either, depending on the process's string hashing)."""
    return " and ".join(_WORDS[e] for e in sorted(ends, key=list(_WORDS).index))


def _opposite_only(wanted: frozenset[str], used: set[str]) -> bool:
    """The question names one end and the query takes only the other."""
    return len(wanted) == 1 and bool(used) and not wanted & used


def check_direction(ctx: SqlContext) -> CheckResult:
    """The end of an order the question asks for (highest, last, first, ...) is the one the SQL takes.

    Within one family (time, magnitude): the question names one end and the SQL takes only the other: an error,
    repaired by flipping every ORDER BY / MAX / MIN of that family. Across families: the question asks for the latest
    (or earliest) and the SQL orders only by a value, or the question asks for the highest (or lowest) and the SQL
    orders only by time: an error with no certain repair."""
    nodes = _order_nodes(ctx)
    if not nodes:
        return NOTHING  # no order, or one by a computed value
    asked = question_ends(masked_question(ctx))
    used = _ends_used(nodes)
    findings: list[Finding] = []
    edits: list[Edit] = []
    for family, wanted in (("time", asked.time), ("size", asked.size)):
        if not _opposite_only(wanted, used[family]):
            continue
        want = next(iter(wanted))
        findings.append(Finding("wrong_direction", "error",
                                f"The query takes {_WORDS[_OPPOSITE[want]]}; the question asks for {_WORDS[want]}.",
                                None, f"{_WORDS[want]} (flip the order)"))
        edits.extend(TreeEdit(_flip, target=node) for node, fam, _ in nodes if fam == family)
    if not findings:
        if asked.time and not asked.size and used["size"] and not used["time"]:
            end = _ends_taken(used["size"])
            certain = len(asked.time) == 1 and not _SIZE_WORDS.search(ctx.question)
            time = _only_time_column(ctx, nodes) if certain else None
            extreme = _extreme_as_order(ctx, nodes) if certain and time is None and not VISIT_BY_PLACE.search(ctx.question) \
                and not _EXTREME_WORDS.search(ctx.question) else None
            shown = f"ORDER BY {time[1].sql()}" if time else (f"ORDER BY {extreme[1].sql()} LIMIT 1" if extreme else None)
            findings.append(Finding("wrong_order_kind", "error",
                                    f"The query takes {end} value; the question asks for {_WORDS[min(asked.time)]} in time.",
                                    None, shown))
            if time is not None:
                edits.append(TreeEdit(_order_by_time(time[1], late=asked.time == {"late"}), target=time[0]))
            elif extreme is not None:
                edits.append(TreeEdit(_first_by_time(extreme[0], extreme[1], late=asked.time == {"late"}), target=ctx.tree))
        elif asked.size and not asked.time and used["time"] and not used["size"]:
            findings.append(Finding("wrong_order_kind", "error", f"The query takes {_ends_taken(used['time'])} in time; the question "
                                    f"asks for {_WORDS[min(asked.size)]} value."))
    return found(*findings, edits=edits)


# Words for the lowest or highest a value reached: "the nadir heart rate" is a MIN, whatever "first" says elsewhere.
_EXTREME_WORDS = re.compile(r"\b(?:nadir|trough|peak|worst|best|max(?:imum)?|min(?:imum)?|extreme)\b", re.IGNORECASE)
# A size the question may ask about in words the order reading does not know ("the heaviest", "the longest"), or an
# order it states ("sorted by value"): then which order is meant is not certain, and the order is not repaired.
_SIZE_WORDS = re.compile(r"\b(?!latest\b|earliest\b|arrest\b|interest\b|request\b|suggest\b|protest\b|digest\b|contest\b|"
                         r"manifest\b|harvest\b|honest\b|modest\b|forest\b|inquest\b|attest\b|invest\b|unrest\b)[a-z]{3,}est\b"
                         r"|\b(?:sort|sorted|order|ordered|rank|ranked)\b", re.IGNORECASE)


def _only_time_column(ctx: SqlContext, nodes: list[tuple[exp.Expression, str, str]]) -> tuple[exp.Expression, exp.Column] | None:
    """The one ORDER BY key of a query ordered by a value, and the one time column of that value's table: what "the
    latest" of its rows is ordered by when nothing else could be meant."""
    if len(nodes) != 1 or not isinstance(nodes[0][0], exp.Ordered) or not isinstance(nodes[0][0].this, exp.Column):
        return None
    time = _one_time_column(ctx, nodes[0][0].this)
    return (nodes[0][0], time) if time is not None else None


def _extreme_as_order(ctx: SqlContext, nodes: list[tuple[exp.Expression, str, str]]) -> tuple[exp.Column, exp.Column] | None:
    """``SELECT MIN(valuenum) FROM ...`` (one value, nothing grouped or ordered) where the first in time is asked: the
    value's column and its table's one time column."""
    if len(nodes) != 1 or not isinstance(nodes[0][0], exp.Max | exp.Min) or not isinstance(ctx.tree, exp.Select):
        return None
    extreme, tree = nodes[0][0], ctx.tree
    if tree.expressions != [extreme] or any(tree.args.get(k) for k in ("group", "order", "limit", "having", "joins")):
        return None
    column = extreme.this
    time = _one_time_column(ctx, column) if isinstance(column, exp.Column) else None
    return (column, time) if time is not None else None


def _one_time_column(ctx: SqlContext, column: exp.Column) -> exp.Column | None:
    """The one time column of the table a column is read from, qualified as the column is; None when it has several
    (which one orders its rows is then a guess) or none."""
    assert ctx.tree is not None
    tables, _ = aliases(ctx.tree)
    owner = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
    info = ctx.db.schema.table(owner) if owner else None
    times = [c.name for c in (info.columns if info is not None else ()) if _is_time(ctx, exp.column(c.name, table=owner), {owner: owner})]
    if len(times) > 1:
        # a visit's own id, in its own table, orders the visits by when they began (eICU's patientunitstayid: unitadmittime)
        entity = next((e.name for e in ctx.profile.entities if e.table.lower() == (owner or "").lower()
                       and e.id_column.lower() == column.name.lower()), None)
        start = visit_start(ctx, entity) if entity else None
        times = [start] if start in times else times
    return exp.column(times[0], table=column.table or None) if len(times) == 1 else None


def _first_by_time(value: exp.Column, time: exp.Column, *, late: bool) -> Callable[[exp.Expression], None]:
    def apply(select: exp.Expression) -> None:
        select.set("expressions", [value.copy()])
        select.set("order", exp.Order(expressions=[exp.Ordered(this=time.copy(), desc=late)]))
        select.set("limit", exp.Limit(expression=exp.Literal.number(1)))

    return apply


def _order_by_time(time: exp.Column, *, late: bool) -> Callable[[exp.Expression], None]:
    def apply(node: exp.Expression) -> None:
        node.set("this", time.copy())
        node.set("desc", late)

    return apply


def _swap(kind: type[exp.Expression]) -> Callable[[exp.Expression], None]:
    def apply(node: exp.Expression) -> None:
        node.replace(kind(this=node.this))

    return apply


def check_aggregate(ctx: SqlContext) -> CheckResult:
    """An average where the question asks for a total, or a total where it asks for an average."""
    if ctx.tree is None:
        return NOTHING
    question = masked_question(ctx)
    avg, total = bool(_AVERAGE.search(question)), bool(_TOTAL.search(question))
    avgs = list(ctx.tree.find_all(exp.Avg))
    sums = [s for s in ctx.tree.find_all(exp.Sum) if s.find_ancestor(exp.Div) is None]  # SUM(x) / n is an average written out
    if avg and not total and sums and not avgs:
        return found(Finding("wrong_aggregate", "error", "The query adds the values up; the question asks for their average.",
                             ctx.span_of("sum("), "AVG"), edits=[TreeEdit(_swap(exp.Avg), target=s) for s in sums])
    if (total or _HOW_MUCH.search(question)) and not avg and avgs:  # "how much urine yesterday": the amount, not a mean
        asked = "the total" if total else "how much in all"
        return found(Finding("wrong_aggregate", "error", f"The query takes an average; the question asks for {asked}.",
                             ctx.span_of("avg("), "SUM"), edits=[TreeEdit(_swap(exp.Sum), target=a) for a in avgs])
    if avg and total and sums and not avgs:  # "the average total cost": the outer aggregate averages the totals
        outer = min(sums, key=lambda node: node.depth)
        return found(Finding("wrong_aggregate", "error", "The query adds up the totals; the question asks for their average.",
                             ctx.span_of("sum("), "AVG"), edits=[TreeEdit(_swap(exp.Avg), target=outer)])
    if avg and total and avgs and not sums:
        inner = max(avgs, key=lambda node: node.depth)
        return found(Finding("wrong_aggregate", "error", "The query averages where the question asks for totals (an average of totals).",
                             ctx.span_of("avg("), "SUM"), edits=[TreeEdit(_swap(exp.Sum), target=inner)])
    extremes = list(ctx.tree.find_all(exp.Max, exp.Min))
    if total and not avg and not sums and not avgs and len(extremes) == 1 and not question_ends(question).size \
            and not _names_a_total(ctx) and not _extreme_of_time_or_count(ctx, typing.cast(exp.Expression, extremes[0]), question):
        took = "largest" if isinstance(extremes[0], exp.Max) else "smallest"
        return found(Finding("wrong_aggregate", "error", f"The query takes the {took} value; the question asks for the total.",
                             None, "SUM"), edits=[TreeEdit(_swap(exp.Sum), target=typing.cast(exp.Expression, extremes[0]))])
    return NOTHING


def _extreme_of_time_or_count(ctx: SqlContext, extreme: exp.Expression, question: str) -> bool:
    """The latest or first moment ("when ... a total gastrectomy"), or an extreme beside a count ("how many in total"):
    not a total answered by one value."""
    assert ctx.tree is not None
    column = extreme.this
    tables, _ = aliases(ctx.tree)
    timed = isinstance(column, exp.Column) and _is_time(ctx, column, tables)
    return timed or bool(re.search(r"\bwhen\b", question, re.IGNORECASE)) or ctx.tree.find(exp.Count) is not None


def _names_a_total(ctx: SqlContext) -> bool:
    """The query reads an item or value whose name says total ("bilirubin, total"): the question's "total" may be its name."""
    from ehrguard.verify.checks.contrasts import item_labels

    assert ctx.tree is not None
    names = [lit.this for lit in ctx.tree.find_all(exp.Literal) if lit.is_string] + item_labels(ctx, ctx.tree)
    return any(re.search(r"\btotal\b", n, re.IGNORECASE) for n in names)


def _numbers_in_text(ctx: SqlContext, table: str, column: str) -> str:
    """A text column whose values are numbers (a dose kept as text: "numbers"), or begin with one followed by a unit
    ("81 mg": "leading"); "" otherwise, or when every number has as many digits (then text order is number order).
    Read from the data once per open database."""

    def share(rows: list[tuple[Any, ...]], pattern: str) -> bool:
        values = [str(r[0]).strip() for r in rows if r and r[0] is not None]
        numbers = [m.group(1) for v in values if (m := re.match(pattern, v))]
        return len(values) >= 5 and len(numbers) >= 0.9 * len(values) and len({len(n) for n in numbers}) > 1

    sql = f"SELECT DISTINCT {column} FROM {stored_table(ctx, table).sql(dialect=ctx.dialect)} WHERE {column} IS NOT NULL LIMIT 200"
    if data_fact(ctx, ("numbers_in_text", table, column), sql, lambda rows: share(rows, r"([-+]?\d+(?:\.\d+)?)$")):
        return "numbers"
    if data_fact(ctx, ("numbers_lead_text", table, column), sql, lambda rows: share(rows, r"[-+]?(\d+)(?:\.\d+)?(?![\d.])")):
        return "leading"
    return ""


def _cast_real(node: exp.Expression) -> None:
    cast = exp.Cast(this=exp.Null(), to=exp.DataType.build("REAL"))
    node.replace(cast)
    cast.set("this", node)  # the column itself moves under the CAST, so edits aimed at it still apply


def _as_number(literal: exp.Expression) -> None:
    literal.replace(exp.Literal.number(literal.this))


def _compared_number(node: exp.Expression) -> tuple[exp.Column, exp.Literal] | None:
    """``column < 1000`` / ``'1000' <= column``: the column and the number it is compared with (a number written as text
    too: against a text column SQLite compares either as text)."""
    for column, other in ((node.this, node.expression), (node.expression, node.this)):
        if isinstance(column, exp.Column) and isinstance(other, exp.Literal) and re.fullmatch(r"[-+]?\d+(?:\.\d+)?", other.this.strip()):
            return column, other
    return None


def _from_derived(column: exp.Column, derived: set[str]) -> bool:
    """The column is read from a CTE or a derived table (whose column of the same name may be cast already), not from the
    stored table: qualified by one, or unqualified in a SELECT that reads one."""
    if column.table:
        return column.table.lower() in derived
    select = column.find_ancestor(exp.Select)
    if select is None:
        return False
    sources = [clause(select, "from"), *(select.args.get("joins") or [])]
    return any(src is not None and (isinstance(src.this, exp.Subquery) or (isinstance(src.this, exp.Table)
                                                                              and src.this.name.lower() in derived)) for src in sources)


def check_text_numbers(ctx: SqlContext) -> CheckResult:
    """MAX / MIN / ORDER BY over a text column that holds numbers, or a comparison of it with a number, compares them as
    strings ('750' > '1250'; dose > '1000' keeps '5')."""
    if ctx.tree is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    derived = {cte.alias_or_name.lower() for cte in ctx.tree.find_all(exp.CTE)}
    derived |= {sub.alias_or_name.lower() for sub in ctx.tree.find_all(exp.Subquery) if sub.alias}
    findings, edits = [], []
    for node in ctx.tree.find_all(exp.Max, exp.Min, exp.Ordered, exp.GT, exp.GTE, exp.LT, exp.LTE):
        literal = None
        if isinstance(node, exp.GT | exp.GTE | exp.LT | exp.LTE):
            pair = _compared_number(node)
            if pair is None:
                continue
            column, literal = pair
        else:
            column = node.this
        if not isinstance(column, exp.Column) or _from_derived(column, derived):
            continue
        table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        info = ctx.db.schema.table(table) if table else None
        col = info.column(column.name) if info is not None else None
        text = col is not None and re.search(r"char|text|clob|string", col.type.lower())
        kind = _numbers_in_text(ctx, table, column.name) if text else ""
        if not kind:
            continue
        if kind == "numbers":
            findings.append(Finding("text_compared_as_text", "error",
                                    f"{table}.{column.name} holds numbers as text: the query compares them as strings "
                                    "('750' comes after '1250').",
                                    ctx.span_of(column.sql(dialect="sqlite")), f"CAST({column.sql(dialect='sqlite')} AS REAL)"))
            edits.append(TreeEdit(_cast_real, target=column))
            if literal is not None and literal.is_string:
                edits.append(TreeEdit(_as_number, target=literal))
        else:  # a number and its unit in one text: no cast is sure to read every value, and units may differ
            findings.append(Finding("text_compared_as_text", "error",
                                    f"{table}.{column.name} holds amounts with their units as text ('81 mg'): the query "
                                    "compares them as strings ('81 mg' comes after '325 mg'), not by amount."))
    return found(*findings, edits=edits)


def _discharge_columns(ctx: SqlContext) -> set[str]:
    return {c.rsplit(".", 1)[1] for c in ctx.profile.time_columns if re.search(r"disch|outtime", c.rsplit(".", 1)[1])}


def _is_null(node: exp.Is) -> bool:
    return isinstance(node.expression, exp.Null)


def _not_null_to_null(node: exp.Expression) -> None:
    node.replace(node.this)  # NOT (x IS NULL) -> x IS NULL


def _null_to_not_null(node: exp.Expression) -> None:
    node.replace(exp.Not(this=node.copy()))


def check_still_admitted(ctx: SqlContext) -> CheckResult:
    """A question about patients still in hospital needs a discharge time that is missing (IS NULL); one about a
    visit that has ended (the first, the last ...) and not a current one must not keep only stays without one."""
    if ctx.tree is None:
        return NOTHING
    discharge = _discharge_columns(ctx)
    if not discharge:
        return NOTHING
    tests = [node for node in ctx.tree.find_all(exp.Is) if isinstance(node.this, exp.Column) and node.this.name.lower() in discharge]
    open_only = [t for t in tests if _is_null(t) and not isinstance(t.parent, exp.Not)]
    question = masked_question(ctx)
    if not (_STILL_IN.search(question) and _STILL_IN.search(ctx.question)):  # as written too: "not discharged home"
        # "how many hours since the admission" implies a stay still open: only a visit named by its place in the
        # patient's history (the first, the last ...) says the stay has ended.
        if open_only and _ENDED_VISIT.search(question):
            return found(Finding("current_not_asked", "error", "The query keeps only stays that have not ended (no discharge time); "
                                 "the question asks about a visit that has ended.", ctx.span_of("is null"), "IS NOT NULL"),
                         edits=[TreeEdit(_null_to_not_null, target=t) for t in open_only])
        return NOTHING
    if open_only:
        return NOTHING
    negated = [t.parent for t in tests if isinstance(t.parent, exp.Not)]
    if negated:
        return found(Finding("discharged_not_current", "error",
                             "The query keeps stays that have ended (discharge time set); the question asks about patients "
                             "still in hospital.",
                             ctx.span_of("is not null"), "IS NULL"), edits=[TreeEdit(_not_null_to_null, target=n) for n in negated])
    if _names_an_open_visit(ctx, discharge):
        return NOTHING  # "this admission" named by its id, and the records say it has not ended
    open_stay = _open_stay_condition(ctx, discharge) if _OPEN_STAY.search(question) and _OPEN_STAY.search(ctx.question) else None
    return found(Finding("missing_current_filter", "warning",
                         "The question asks about patients still in hospital; the query does not require a stay without a discharge time.",
                         None, open_stay.sql(dialect=ctx.dialect) if open_stay is not None else None),
                 edits=[TreeEdit(add_condition(open_stay))] if open_stay is not None else [])


# Words that say the stay is going on (not a bare "right now", which may only anchor the question's time): the only
# wording the open-stay repair acts on.
_OPEN_STAY = re.compile(r"\b(?:currently|still|presently|right now)\s+(?:\w+\s+){0,2}?(?:admitted|hospitali[sz]ed|in (?:the )?"
                        r"(?:hospital|icu|unit|ward))\b|\bin (?:the )?(?:hospital|icu|unit|ward) (?:right now|currently|at present|"
                        rf"at the moment)\b|\b(?:not (?:yet )?(?:been )?|yet to be )discharged\b{_UNQUALIFIED}", re.IGNORECASE)


def _open_stay_condition(ctx: SqlContext, discharge: set[str]) -> exp.Expression | None:
    """``<visit>.<discharge time> IS NULL`` where that is certain: the query is one SELECT over one table (no join, no
    subquery) and that table records exactly one discharge time (MIMIC's admissions: dischtime; not eICU's patient,
    whose unit and hospital times are two readings of "still in")."""
    tree = ctx.tree
    if not isinstance(tree, exp.Select) or tree.args.get("joins") or sum(1 for _ in tree.find_all(exp.Select)) != 1:
        return None
    tables = list(tree.find_all(exp.Table))
    visits = {e.table.lower() for e in ctx.profile.entities if e.name != "patient"}
    info = ctx.db.schema.table(tables[0].name) if len(tables) == 1 and tables[0].name.lower() in visits else None
    ends = [c.name for c in info.columns if c.name.lower() in discharge] if info is not None else []
    if len(ends) != 1:
        return None
    return exp.Is(this=exp.column(ends[0], table=tables[0].alias_or_name), expression=exp.Null())


def _names_an_open_visit(ctx: SqlContext, discharge: set[str]) -> bool:
    """The query keeps to a visit by its id (``hadm_id = 27411876``) that the visit's table records with no discharge
    time: the stay the question calls current, named by its number."""
    assert ctx.tree is not None
    for col, lit, home in visits_by_id(ctx, ctx.tree):
        info = ctx.db.schema.table(home)
        for name in discharge:
            if info is None or info.column(name) is None:
                continue
            query = exp.select("1").from_(exp.to_table(info.qualified_name)).where(
                exp.and_(exp.column(col.name).eq(lit.copy()), exp.column(name).is_(exp.null()))).limit(1)
            try:
                if ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows:
                    return True
            except DatabaseError:
                continue
    return False


def _survival_reversed(ctx: SqlContext, death: bool) -> CheckResult:
    """The query keeps the other side of survival than the question asks: the living where it asks about death
    ('alive', a date of death that IS NULL), or the dead where it asks about survivors. Repaired to the column's other
    value (when it holds two) or the other null test."""
    findings, edits = [], []
    wrong_value = _ALIVE_VALUE if death else _DEAD_VALUE
    asked, took = ("death", "patients who were alive") if death else ("survivors", "patients who died")
    for node in ctx.tree.find_all(exp.EQ, exp.Is) if ctx.tree is not None else ():
        column = node.this
        if not isinstance(column, exp.Column) or not _DEATH_COLUMN.search(column.name.lower()):
            continue
        if node.find_ancestor(exp.Where) is None or node.find_ancestor(exp.Case, exp.If) is not None:
            continue  # not a condition the rows are kept by
        start = node.parent if isinstance(node.parent, exp.Not) else node
        if start.find_ancestor(exp.Not, exp.Exists) is not None:
            continue  # under NOT IN / NOT EXISTS the kept side is the other one: too easy to read backwards
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            if not _is_time(ctx, column, aliases(ctx.tree)[0] if ctx.tree is not None else {}):
                continue  # a status or flag that IS NOT NULL is an outcome known, either way; only a date of death is death
            negated = isinstance(node.parent, exp.Not)
            if negated == death:  # "dod IS NOT NULL" for death, "dod IS NULL" for survivors: the right side
                continue
            findings.append(Finding("reversed_survival", "error", f"The query keeps {took}; the question asks about {asked}.",
                                    None, "IS NOT NULL" if death else "IS NULL"))
            edits.append(TreeEdit(_null_to_not_null, target=node) if death
                         else TreeEdit(_not_null_to_null, target=typing.cast(exp.Expression, node.parent)))
        elif isinstance(node, exp.EQ) and isinstance(node.expression, exp.Literal) and node.expression.is_string \
                and wrong_value.search(node.expression.this):
            other = _other_value(ctx, column, node.expression.this)
            findings.append(Finding("reversed_survival", "error", f"The query keeps {took}; the question asks about {asked}.",
                                    None, f"'{other}'" if other else None))
            if other:
                edits.append(TreeEdit(_replace_with(other), target=node.expression))
    return found(*findings, edits=edits)


def _other_value(ctx: SqlContext, column: exp.Column, value: str) -> str | None:
    """The one other value a two-valued column holds (eICU's discharge status: 'alive' or 'expired')."""
    tables, _ = aliases(ctx.tree) if ctx.tree is not None else ({}, set())
    table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
    if not table:
        return None

    def read() -> tuple[str, ...]:
        source = stored_table(ctx, table).sql(dialect=ctx.dialect)
        sql = f"SELECT DISTINCT {column.name} FROM {source} WHERE {column.name} IS NOT NULL LIMIT 3"
        try:
            return tuple(str(r[0]) for r in ctx.db.db.execute(sql, timeout_s=5).rows)
        except DatabaseError:
            return ()

    values = ctx.db.derived(("distinct_up_to_3", table, column.name.lower()), read)
    return next((v for v in values if v.lower() != value.lower()), None) if len(values) == 2 else None


def check_death(ctx: SqlContext) -> CheckResult:
    """A question about death needs the query to read a death record (date of death, expiry flag, discharge status),
    on the side the question asks about."""
    if ctx.tree is None:
        return NOTHING
    question = masked_question(ctx)
    # "non-survivors" are the dead: a question naming them beside the survivors asks about both sides
    death = bool(_DEATH.search(question)) or bool(re.search(r"\bnon-?survivors?\b", question, re.IGNORECASE))
    alive = bool(_SURVIVED.search(re.sub(r"\bnon-?survivors?\b", " ", question, flags=re.IGNORECASE)))
    # a rate of death or survival is counted from both sides ("1 - survivors / all"): no side to reverse
    if death != alive and not _RATE.search(question):
        reversed_side = _survival_reversed(ctx, death)
        if reversed_side.findings:
            return reversed_side
    if not death:  # death may be named only by a value the query looks for ("died"): masked above, still asked
        read = _death_records(ctx) if _DEATH.search(ctx.question) else []
        return _death_place(ctx, ctx.question, read) if read else NOTHING
    schema_has = {c.name.lower() for t in ctx.db.schema.tables for c in t.columns if _DEATH_COLUMN.search(c.name.lower())}
    if not schema_has:
        return NOTHING  # the schema holds no death record: grounding says so, not this check
    read = _death_records(ctx)
    if read:
        return _death_place(ctx, ctx.question, read)
    if any(isinstance(lit, exp.Literal) and lit.is_string and re.search(r"expired|death|died", lit.this, re.IGNORECASE)
           for lit in ctx.tree.find_all(exp.Literal)):
        return NOTHING
    return found(Finding("missing_death_filter", "warning",
                         "The question asks about death; the query never reads a death record (" + ", ".join(sorted(schema_has)) + ")."))


# A visit's time by its name, also as a query names it in its own columns ("last_disch", "admit_day").
_VISIT_TIME_NAME = re.compile(r"disch|admit|intime|outtime")


@dataclass(frozen=True)
class _DeathRecord:
    """One record of death a query reads: its column, and whether it is the patient's (a date of death that also
    counts deaths after discharge) or a visit's (its discharge status or location, an expiry flag, a time of death)."""

    name: str
    of_patient: bool
    timed_by_visit: bool  # compared with a time of the visit (``dod <= dischtime``): a death during it, in effect


def _death_records(ctx: SqlContext) -> list[_DeathRecord]:
    """The records of death the query reads: columns of death, and columns compared with a value that says died."""
    assert ctx.tree is not None
    tables, _ = aliases(ctx.tree)
    patient_tables, _ = _patient_and_visit_tables(ctx)
    columns: list[exp.Column] = [c for c in ctx.tree.find_all(exp.Column) if _DEATH_COLUMN.search(c.name.lower())]
    for lit in ctx.tree.find_all(exp.Literal):
        parent = lit.parent
        if lit.is_string and _DEAD_VALUE.search(lit.this.strip("%")) and isinstance(parent, (exp.EQ, exp.Like, exp.In)):
            columns += list(parent.find_all(exp.Column))
    out = []
    for column in columns:
        owner = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        if not owner:
            continue
        comparison = column.find_ancestor(exp.EQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Between, exp.NEQ)
        timed = comparison is not None and any(
            c is not column and (_is_time(ctx, c, tables) or _VISIT_TIME_NAME.search(c.name.lower()))
            and not _DEATH_COLUMN.search(c.name.lower())
            and not re.fullmatch(r"dob|\w*birth\w*", c.name.lower()) for c in comparison.find_all(exp.Column))
        out.append(_DeathRecord(f"{owner}.{column.name.lower()}", _short(owner) in patient_tables, timed))
    return out


def _death_place(ctx: SqlContext, question: str, read: list[_DeathRecord]) -> CheckResult:
    """The query reads death, but not where the question places it: a patient's date of death (which also counts
    deaths after discharge) for a death during a visit ("died in hospital", "in-hospital mortality"), or only a visit's
    record of death (deaths before discharge) for a death after the visit ended. Not repaired: the visit's record is
    another table's column, and how the query links it is the query's own choice."""
    in_visit, after_visit = bool(_DIED_IN_VISIT.search(question)), bool(_DIED_AFTER_VISIT.search(question))
    if in_visit == after_visit:
        return NOTHING  # neither place stated, or both (a comparison of the two)
    visit_records = sorted({r.name for r in read if not r.of_patient} | set(_visit_death_records(ctx)))
    if in_visit and all(r.of_patient and not r.timed_by_visit for r in read) and visit_records:
        dates = ", ".join(sorted({r.name for r in read}))
        return found(Finding("death_outside_visit", "warning",
                             f"The question asks about deaths during a hospital or ICU stay; the query reads the date of "
                             f"death ({dates}), which also counts deaths after discharge. A death during a stay is "
                             f"recorded in {' or '.join(visit_records[:2])}."))
    if after_visit and all(not r.of_patient for r in read):
        kept = ", ".join(sorted({r.name for r in read}))
        date_of_death = _patient_death_dates(ctx)
        return found(Finding("death_outside_visit", "warning",
                             f"The question asks about deaths after discharge; the query reads only the stay's own record of "
                             f"death ({kept}), which counts deaths before discharge"
                             + (f". The date of death is {date_of_death[0]}." if date_of_death else ".")))
    return NOTHING


def _visit_death_records(ctx: SqlContext) -> list[str]:
    """The columns of visit tables that record a death during the visit: a column of death (an expiry flag, a time of
    death, a discharge status), or a discharge column that holds a value saying died (read from the data)."""
    _, visit_tables = _patient_and_visit_tables(ctx)

    def read() -> tuple[str, ...]:
        out = []
        for info in ctx.db.schema.tables:
            short = _short(info.name)
            if short not in visit_tables:
                continue
            for column in info.columns:
                name = column.name.lower()
                if _DEATH_COLUMN.search(name):
                    out.append(f"{short}.{name}")
                elif "disch" in name and not TIME_NAME.search(name) and _holds_dead_value(ctx, info.qualified_name, column.name):
                    out.append(f"{short}.{name}")
        return tuple(out)

    return list(ctx.db.derived(("visit_death_records",), read))


def _patient_death_dates(ctx: SqlContext) -> list[str]:
    """The patient tables' dates of death (MIMIC's ``patients.dod``)."""
    patient_tables, _ = _patient_and_visit_tables(ctx)
    return [f"{_short(info.name)}.{c.name.lower()}" for info in ctx.db.schema.tables
            if _short(info.name) in patient_tables for c in info.columns
            if _DEATH_COLUMN.search(c.name.lower()) and TIME_NAME.search(c.name.lower())]


def _short(table: str) -> str:
    """A table's name without its schema, in lower case (``mimiciv_hosp.patients`` -> ``patients``)."""
    return table.split(".")[-1].lower()


def _patient_and_visit_tables(ctx: SqlContext) -> tuple[set[str], set[str]]:
    """The tables (short names) of patients only, and those of visits (eICU's ``patient`` rows are unit stays: a
    visit's table, not a patient-only one)."""
    visits = {_short(e.table) for e in ctx.profile.entities if e.name != "patient"}
    patients = {_short(e.table) for e in ctx.profile.entities if e.name == "patient"} - visits
    return patients, visits


def _holds_dead_value(ctx: SqlContext, table: str, column: str) -> bool:
    sql = f"SELECT DISTINCT {column} FROM {exp.to_table(table).sql(dialect=ctx.dialect)} WHERE {column} IS NOT NULL LIMIT 100"
    try:
        return any(_DEAD_VALUE.search(str(r[0])) for r in ctx.db.db.execute(sql, timeout_s=5).rows)
    except DatabaseError:
        return False


def contradicts(written: TimeFilter, stated: TimeFilter) -> bool:
    """Does the SQL's window exclude what the question states? Only windows of one kind are compared, and a finer
    window inside the stated one ("in 2100" read, March 2100 written) is not a contradiction: the question may
    name the month in words this reading does not parse."""
    if written.kind != stated.kind:
        return False
    if written.kind == "absolute":
        if written.op != stated.op:
            return True
        return not (written.value.startswith(stated.value) or stated.value.startswith(written.value))
    return (written.unit, written.amount, written.op) != (stated.unit, stated.amount, stated.op) or \
        (bool(written.fmt and stated.fmt) and (written.fmt, written.value) != (stated.fmt, stated.value))


def check_time_window(ctx: SqlContext) -> CheckResult:
    """The calendar window the question states ("in 2100", "last month", "since 3 days ago") is the one the SQL
    filters on, written the EHRSQL way; a different one is an error, repaired by writing the question's window for
    the same column."""
    wanted = stated_time_filter(ctx.question)
    if wanted is None:
        return NOTHING
    filters = [hit for hit in sql_time_filters(ctx.sql) if contradicts(hit[0], wanted)]
    if not filters:
        return NOTHING
    def rewrite(sql: str) -> str:  # found again in the text it receives: earlier edits may have moved it
        for _, (a, b), column in sorted((hit for hit in sql_time_filters(sql) if contradicts(hit[0], wanted)), key=lambda h: -h[1][0]):
            sql = sql[:a] + wanted.render(column) + sql[b:]
        return sql

    return found(Finding("wrong_time_window", "error", f"The query's time window ({ctx.sql[filters[0][1][0]:filters[0][1][1]]}) "
                         "is not the one the question states.", filters[0][1], wanted.render(filters[0][2])),
                 edits=[TextEdit(rewrite)])


def _drop_limit(node: exp.Expression) -> None:
    node.set("limit", None)


def _limit_number(ctx: SqlContext) -> int | None:
    """The number of rows the outer LIMIT keeps, when it is written as a number."""
    assert isinstance(ctx.tree, exp.Select)
    limit = ctx.tree.args["limit"].expression
    return int(limit.this) if isinstance(limit, exp.Literal) and limit.this.isdigit() else None


def _limit_cuts(ctx: SqlContext) -> bool:
    """Without its outer LIMIT the query returns more rows than the LIMIT keeps (asked of the database, capped), and
    they are not all one row repeated (a stay's two unit-stay rows with the same hospital times: LIMIT 1 loses nothing)."""
    assert isinstance(ctx.tree, exp.Select)
    n = _limit_number(ctx)
    if n is None:
        return False
    unlimited = ctx.tree.copy()
    unlimited.set("limit", None)
    try:
        result = ctx.db.db.execute(unlimited.sql(dialect=ctx.dialect), timeout_s=5, max_rows=max(n + 1, 1000))
    except DatabaseError:
        return False
    rows = [repr(r) for r in result.rows]  # repr: a DuckDB list or a PostgreSQL array is no set member
    return len(rows) > n and set(rows[:n]) != set(rows)


def _states_limit(ctx: SqlContext) -> bool:
    """The question names the number of rows the LIMIT keeps ("list the five oldest stays": LIMIT 5 is asked for)."""
    n = _limit_number(ctx)
    if n is None:
        return False
    words = _written(n)
    time_unit = r"(?:years?|months?|weeks?|days?|hours?|minutes?|seconds?|times?)\b"
    return any(re.search(rf"\b(?:top|first|last|latest|earliest|most recent|highest|lowest)\s+{w}\b"
                         rf"|\b{w}\s+(?:of\s+(?:the\s+)?)?(?!{time_unit})(?:most|least|[a-z]+est|[a-z]+s)\b", ctx.question,
                         re.IGNORECASE)
               for w in words)


_SINGULAR_VERBS = frozenset({"was", "is", "has", "does", "did", "do", "had", "have", "can", "should", "would", "will"})
_NOT_PLURAL = frozenset({"this", "its", "his", "hers", "yes", "less", "gas", "plus", "always", "perhaps", "whereas", "as", "us"})


def asks_plural(question: str) -> bool:
    """The question asks for things of a kind in the plural: "which drugs ...", "what lab tests were ...", "what are
    the ...". Read from the first words after "which" / "what": a plural verb or a plural noun (ending in -s, not
    -ss, -us, -is) before any singular verb."""
    m = re.search(r"\b(?:which|what)\s+(.*)", question, re.IGNORECASE)
    if m is None:
        return False
    for word in re.findall(r"[a-z']+", m.group(1).lower())[:4]:
        if word in ("are", "were"):
            return True
        if word in _SINGULAR_VERBS:
            return False
        if word not in _NOT_PLURAL and re.fullmatch(r"[a-z]{2,}[^siu']s", word):
            return True
    return False


# How a question says in which order to show all it asks for ("most recent death first", "sorted by date", "in
# descending order"): an order of the list, not an end of it.
_ORDER_INSTRUCTION = re.compile(r"\b(?:most recent|latest|newest|oldest|earliest|highest|lowest|largest|smallest|longest|"
                                r"shortest|biggest)(?: [a-z]+){0,3} first\b|\b(?:in|by) (?:descending|ascending|chronological|"
                                r"reverse chronological|alphabetical) order\b"
                                r"|\b(?:sorted|ordered) (?:by|from) (?:the )?[a-z]+(?: (?:time|date))?\b", re.IGNORECASE)


def _written(n: int) -> list[str]:
    """How a question may write the number ``n``: its digits, and its word where it has one ("ten")."""
    return [str(n)] + ([NUMBER_WORDS[n - 1]] if 1 <= n <= len(NUMBER_WORDS) else [])


def _says_number(question: str, n: int | None) -> bool:
    """The question writes the number ``n`` (in digits or as a word)."""
    return n is not None and any(re.search(rf"(?<![\w.]){w}(?!\w|\.\d)", question, re.IGNORECASE) for w in _written(n))


# One thing at an end of a ranking: "which single drug was ordered most often", "what unit had the fewest stays".
_ONE_AT_AN_END = re.compile(rf"\b(?:most|least|fewest|highest|lowest|largest|smallest|biggest|greatest)\b|\btop\b(?!\s+{_NUMBER})",
                            re.IGNORECASE)
_A_LIST = re.compile(rf"\b(?:each|every|per|all|list\w*|rank\w*|sorted|order(?:ed)? by|in order|on top|first|history|trend|"
                     rf"with (?:the )?counts?|for comparison|top\s+{_NUMBER}|{_NUMBER}\s+most)\b", re.IGNORECASE)


def check_one_asked(ctx: SqlContext) -> CheckResult:
    """The question asks for the one thing at an end of a ranking ("which single drug was ordered most often") and
    the query returns the whole ranking (ORDER BY, no LIMIT): the answer is its first row, shown among every other.
    Repaired by LIMIT 1 (ties at the top are then ``tied_end``'s to show)."""
    if not isinstance(ctx.tree, exp.Select) or ctx.tree.args.get("limit") is not None or ctx.tree.args.get("order") is None:
        return NOTHING
    if not isinstance(ctx.execution, Result) or len(ctx.execution.rows) < 2:
        return NOTHING
    question = _ORDER_INSTRUCTION.sub(" ", masked_question(ctx))
    m = re.search(r"\b(?:which|what)\s+(?:single\s+|one\s+)?[a-z]+", question, re.IGNORECASE)
    if m is None or asks_plural(question) or not _ONE_AT_AN_END.search(question) or _A_LIST.search(question):
        return NOTHING
    if not _ranked_by_aggregate(ctx.tree):
        return NOTHING  # a list in an order of time or value ("the sodium values, highest first") is the answer as asked
    return found(Finding("one_asked_all_listed", "error", "The question asks for the one at the end of a ranking; the query "
                         f"returns all {len(ctx.execution.rows)} rows of it.", None, "LIMIT 1"),
                 edits=[TreeEdit(_limit_one)])


def _ranked_by_aggregate(select: exp.Select) -> bool:
    """Is the query's order a ranking of groups: by an aggregate (``COUNT(*)``, ``SUM(x)``), directly or by the alias
    of a returned aggregate?"""
    order = select.args.get("order")
    aggregates = {p.alias.lower() for p in select.expressions if isinstance(p, exp.Alias) and isinstance(p.this, exp.AggFunc)}
    for key in order.expressions if order is not None else ():
        node = key.this
        if isinstance(node, exp.AggFunc) or (isinstance(node, exp.Column) and not node.table and node.name.lower() in aggregates):
            return True
    return False


def _limit_one(tree: exp.Expression) -> None:
    if isinstance(tree, exp.Select):
        tree.set("limit", exp.Limit(expression=exp.Literal.number(1)))


def check_limit(ctx: SqlContext) -> CheckResult:
    """LIMIT on the outer query with no ORDER BY (which rows are kept is up to the engine), or where the question
    asks for every one (all, every, each, list, or things in the plural: "which drugs ...") and names no end or
    number of them: the answer is cut."""
    if not isinstance(ctx.tree, exp.Select) or ctx.tree.args.get("limit") is None:
        return NOTHING
    if not _limit_cuts(ctx) or _states_limit(ctx):
        return NOTHING
    if ctx.tree.args.get("order") is None:
        if ctx.tree.args.get("offset") is not None:
            return NOTHING  # rows skipped in no order: idioms' offset_without_order, with nothing certain to repair
        # names only, repeating: whatever the number the question is worded in ("what is stay X allergic to?"), the
        # answer is the names, each once; one row in no order kept an arbitrary one of them
        listed = _names_repeat(ctx)
        return found(Finding("limit_cuts_answer", "error", "The query keeps only the first rows the database happens to return; "
                             "nothing orders them and the question does not ask for a sample.", ctx.span_of("limit"),
                             "every name once (DISTINCT, no LIMIT)" if listed else "no LIMIT"),
                     edits=[TreeEdit(_distinct_list if listed else _drop_limit)])
    if not _asks_all(ctx):
        return NOTHING
    ordered_list = bool(_ORDER_INSTRUCTION.search(ctx.question))
    if ordered_list and _says_number(ctx.question, _limit_number(ctx)):
        return NOTHING  # "sorted by time, show only ten": the number the LIMIT keeps is asked for
    asked = question_ends(_ORDER_INSTRUCTION.sub(" ", masked_question(ctx)))
    if asked.time or asked.size or re.search(r"\b(?:top|first|last)\s+" + _NUMBER, ctx.question, re.IGNORECASE) \
            or _SIZE_WORDS.search(_ORDER_INSTRUCTION.sub(" ", ctx.question)):
        return NOTHING  # an end of an order is asked ("the oldest patients"): ties at that end are tied_end's question
    if ordered_list:  # the order is asked for: only the limit goes (each-name-once would drop the ORDER BY)
        return found(Finding("limit_cuts_answer", "error", "The query keeps only the first rows; the question asks for all of them, "
                             "in an order.", ctx.span_of("limit"), "no LIMIT"), edits=[TreeEdit(_drop_limit)])

    if _names_repeat(ctx):
        # "list the diagnoses": each name once, as a list of names is read (the rows repeat a name per record)
        return found(Finding("limit_cuts_answer", "error", "The query keeps only the first rows; the question asks for all of "
                             "them.", ctx.span_of("limit"), "every name once (DISTINCT, no LIMIT)"), edits=[TreeEdit(_distinct_list)])
    return found(Finding("limit_cuts_answer", "error", "The query keeps only the first rows; the question asks for all of them.",
                         ctx.span_of("limit"), "no LIMIT"), edits=[TreeEdit(_drop_limit)])


def check_repeated_names(ctx: SqlContext) -> CheckResult:
    """A list of names ("which drugs was ... given") read one row per record, so the same name comes back once per
    prescription or per test: each name once is the list asked for. Only names (the profile's name columns), with
    no LIMIT or ORDER BY, where the question asks for things in the plural and not how often or when."""
    if not isinstance(ctx.tree, exp.Select) or ctx.tree.args.get("limit") is not None or ctx.tree.args.get("order") is not None:
        return NOTHING
    if not _asks_all(ctx) or _HOW_OFTEN.search(ctx.question):
        return NOTHING
    names = {(t.lower(), c.lower()) for t, c in name_columns(ctx)}
    tables, _ = aliases(ctx.tree)
    for projection in ctx.tree.expressions:
        node = projection.this if isinstance(projection, exp.Alias) else projection
        owner = owner_table(ctx, tables.get(node.table.lower(), node.table.lower()), node.name, tables) \
            if isinstance(node, exp.Column) else None
        if not owner or ((owner.lower(), node.name.lower()) not in names and not _a_category(ctx, owner, node.name)):
            return NOTHING
    if not _names_repeat(ctx):
        return NOTHING
    return found(Finding("repeated_names", "warning", "The list names the same thing more than once (once per record); "
                         "the question asks which ones.", None, "every name once (DISTINCT)"), edits=[TreeEdit(_distinct_list)])


_MOST_CATEGORIES = 50


# The visits named as things the answer is about ("the discharge places of her admissions", "each stay's unit").
_VISITS_NAMED = re.compile(r"\b(?:admissions?|stays?|visits?|encounters?|hospitali[sz]ations?)\b", re.IGNORECASE)


def _a_category(ctx: SqlContext, table: str, column: str) -> bool:
    """A field of a few dozen values at most. Of a visits' table only where the question names no visits: "the
    discharge places of her admissions" lists one per admission, repeats and all; "which units has she been admitted
    to" asks which."""
    if table.lower() in {e.table.lower() for e in ctx.profile.entities} and _VISITS_NAMED.search(ctx.question):
        return False
    values = category_values(ctx, table, column, _MOST_CATEGORIES)
    return values is not None and len(values) > 1


# How often or when something happened: the rows of a list are the answer, repeats and all.
_HOW_OFTEN = re.compile(r"\b(?:how (?:many|often)|times?|when|each|every|prescriptions|orders|records|entries|results|measurements|"
                        r"readings|administrations|doses|events)\b", re.IGNORECASE)


def _asks_all(ctx: SqlContext) -> bool:
    """All of something asked for: all, every, each, list, or things of a kind in the plural."""
    return bool(re.search(r"\b(?:all|every|each|list)\b", ctx.question, re.IGNORECASE)) or asks_plural(masked_question(ctx))


def _names_repeat(ctx: SqlContext) -> bool:
    """The query returns names only (text columns, no aggregate, not DISTINCT already), and without its LIMIT the same
    row comes back more than once."""
    assert isinstance(ctx.tree, exp.Select)
    if ctx.tree.args.get("distinct") or ctx.tree.find(exp.AggFunc) is not None or ctx.tree.args.get("group"):
        return False
    tables, _ = aliases(ctx.tree)
    for projection in ctx.tree.expressions:
        node = projection.this if isinstance(projection, exp.Alias) else projection
        if not isinstance(node, exp.Column):
            return False
        owner = owner_table(ctx, tables.get(node.table.lower(), node.table.lower()), node.name, tables)
        info = ctx.db.schema.table(owner) if owner else None
        col = info.column(node.name) if info is not None else None
        if col is None or not ("char" in col.type.lower() or "text" in col.type.lower()):
            return False
    unlimited = ctx.tree.copy()
    unlimited.set("limit", None)
    unlimited.set("order", None)
    try:
        rows = ctx.db.db.execute(unlimited.sql(dialect=ctx.dialect), timeout_s=5, max_rows=10_000).rows
    except DatabaseError:
        return False
    return len({repr(r) for r in rows}) < len(rows)


def _distinct_list(node: exp.Expression) -> None:
    node.set("limit", None)
    node.set("order", None)  # a list of names has no order to keep, and DISTINCT may not order by what it drops
    node.set("distinct", exp.Distinct())


def _events_tables(ctx: SqlContext) -> set[str]:
    """Tables of events coded by an item dictionary: an ``itemid`` column, and not a dictionary (``d_...``) themselves."""
    return {t.name.lower() for t in ctx.db.schema.tables if t.column("itemid") is not None and not t.name.lower().startswith("d_")}


def _names_an_item(condition: exp.Expression, select: exp.Select) -> bool:
    """A condition of ``select`` that picks items: itemid = / IN a literal, or IN a subquery that compares something
    other than the table an item links to (a label, a category). An item filter inside a subquery that picks a value
    of another column picks the items of that subquery's rows, not of ``select``'s (``charttime = (SELECT ... WHERE
    label = 'daily weight')`` leaves every item in)."""
    for node in condition.find_all(exp.EQ, exp.In):
        column = node.this
        if not (isinstance(column, exp.Column) and column.name.lower() == "itemid") or _picks_a_value(node, select):
            continue
        query = node.args.get("query")
        if query is None:
            return True  # a literal item id (or a list of them)
        inner = query.this if isinstance(query, exp.Subquery) else query
        where = inner.args.get("where") if isinstance(inner, exp.Select) else None
        if where is not None and any(isinstance(c.this, exp.Column) and c.this.name.lower() != "linksto"
                                     for c in where.find_all(exp.EQ, exp.Like, exp.In)):
            return True
    return False


def _picks_a_value(node: exp.Expr, select: exp.Select) -> bool:
    """Is ``node`` inside a subquery of ``select`` that is compared with another column than an item's
    (``charttime = (SELECT ...)``)? Its item filter picks that value, not the items ``select`` reads; one inside an
    EXISTS or an ``itemid IN`` does pick them."""
    outermost = None
    for ancestor in _ancestors(node, select):
        if isinstance(ancestor, exp.Subquery):
            outermost = ancestor
    if outermost is None:
        return False
    parent = outermost.parent
    comparisons = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
    if not isinstance(parent, comparisons):
        return False
    other = parent.expression if parent.this is outermost else parent.this
    return isinstance(other, exp.Column) and other.name.lower() != "itemid"


def _ancestors(node: exp.Expr, stop: exp.Expr) -> list[exp.Expr]:
    """The nodes above ``node``, up to ``stop`` (left out)."""
    out: list[exp.Expr] = []
    current = node.parent
    while current is not None and current is not stop:
        out.append(current)
        current = current.parent
    return out


def _summed(column: exp.Column) -> bool:
    """The column is added up (SUM(x), SUM(CAST(x AS REAL)), SUM(x * 1.0)) in its own SELECT."""
    return isinstance(column.find_ancestor(exp.Sum, exp.Select), exp.Sum)


def check_item_filter(ctx: SqlContext) -> CheckResult:
    """A value read from an events table (a chart, lab, input or output event) needs the item it measures: without
    one, the query mixes every kind of measurement (heart rates with weights). A SUM is left alone: the total of
    every input (or output) is a question of its own."""
    if ctx.tree is None:
        return NOTHING
    events = _events_tables(ctx)
    if not events:
        return NOTHING
    for select in ctx.tree.find_all(exp.Select):
        source = clause(select, "from")
        table = source.this if source is not None else None
        if not isinstance(table, exp.Table) or table.name.lower() not in events or select.args.get("joins"):
            continue
        # A total across items is a total intake or output; any other reading of several items' values mixes them.
        reads_value = any(c.name.lower() in ("valuenum", "value", "amount", "totalamount") and not _summed(c)
                          for e in select.expressions for c in ([e] if isinstance(e, exp.Column) else e.find_all(exp.Column)))
        where = select.args.get("where")
        if where is not None and _names_an_item(where, select) or select.args.get("group") is not None:
            continue
        if reads_value:
            return found(Finding("missing_item_filter", "error", f"The query reads every kind of {table.name} item together; "
                                 "the question asks about one measurement."))
        named = _named_items(ctx, table.name) if select.find(exp.Sum) is not None and not _excludes_items(select) else []
        if named:  # a total of every item, where the question names one ("total foley output")
            return found(Finding("missing_item_filter", "error", f"The query adds up every kind of {table.name} item; the question "
                                 f"names '{named[0]}'."))
    return NOTHING


def _excludes_items(select: exp.Select) -> bool:
    """The SELECT leaves some items out (``itemid <> 226559``, ``NOT IN``): it says which items it totals."""
    where = select.args.get("where")
    return where is not None and any(isinstance(c, exp.Column) and c.name.lower() == "itemid"
                                     for node in where.find_all(exp.NEQ, exp.Not) for c in node.find_all(exp.Column))


def _named_items(ctx: SqlContext, table: str) -> list[str]:
    """The names of items of the table's item dictionary the question names that the table has rows of."""
    reference = dictionary_of(ctx, table, "itemid")
    label = label_column(ctx, reference[0]) if reference is not None else None
    if reference is None or label is None:
        return []
    named = named_values(ctx, [(reference[0], label)], ctx.question)[(reference[0], label)]
    return [v for v in named if len(v) >= 4 and codes_named(ctx, table, "itemid", reference, label, v)]


_HOSPITAL_VISIT = re.compile(r"\b(first|last|earliest|latest|initial|final|most recent) (?:hospital (?:visit|stay|encounter|admission)"
                             r"|hospitali[sz]ation|admission to the hospital|hospital)\b", re.IGNORECASE)
_ICU_VISIT = re.compile(r"\b(first|last|earliest|latest|initial|final|most recent) (?:icu|intensive care unit|unit) "
                        r"(?:visit|stay|encounter|admission)\b", re.IGNORECASE)
_LATE_WORDS = ("last", "latest", "final", "most recent")


def visit_start(ctx: SqlContext, entity: str) -> str | None:
    """The column a visit of this kind starts at (admission: the hospital admission time; stay: the unit's)."""
    table = next((e.table for e in ctx.profile.entities if e.name == entity), None)
    if table is None:
        return None
    starts = [c.rsplit(".", 1)[1] for c in ctx.profile.time_columns if c.rsplit(".", 1)[0] == table and re.search(r"admit|intime", c)]
    prefer = "hosp" if entity == "admission" else "unit"
    return next((c for c in starts if prefer in c), starts[0] if len(starts) == 1 else None)


def check_visit_order(ctx: SqlContext) -> CheckResult:
    """"The first hospital visit" is the earliest admission, "the last ICU stay" the latest one: the ORDER BY on the
    visit's start time must go that way. Repaired by flipping it."""
    if ctx.tree is None:
        return NOTHING
    question = masked_question(ctx)
    nodes = _order_nodes(ctx)
    if nodes and _opposite_only(question_ends(question).time, _ends_used(nodes)["time"]):
        return NOTHING  # check_direction flips every order in time already
    findings: list[Finding] = []
    edits: list[Edit] = []
    for entity, pattern in (("admission", _HOSPITAL_VISIT), ("stay", _ICU_VISIT)):
        ends = {("late" if m.group(1).lower() in _LATE_WORDS else "early") for m in pattern.finditer(question)}
        column = visit_start(ctx, entity)
        if len(ends) != 1 or column is None:
            continue
        want = next(iter(ends))
        orders = [o for o in ctx.tree.find_all(exp.Ordered) if isinstance(o.this, exp.Column) and o.this.name.lower() == column]
        wrong = [o for o in orders if ("late" if o.args.get("desc") else "early") != want]
        if wrong and len(wrong) == len(orders):
            visit = "hospital visit" if entity == "admission" else "ICU stay"
            findings.append(Finding("wrong_visit", "error", f"The query takes {_WORDS[_OPPOSITE[want]]} {visit}; the question asks for "
                                    f"{_WORDS[want]} one.", None, "flip the order of the visits"))
            edits.extend(TreeEdit(_flip, target=o) for o in wrong)
    return found(*findings, edits=edits)
