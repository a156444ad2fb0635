"""What the question states must be in the SQL: its numbers, the group of patients it names, an age bound.

- **numbers**: a number the question states (a patient id, a dose, a count of days) appears nowhere in the query,
  not even converted between hours and days, days and weeks, months and years: the query answers for another
  patient, another threshold or another window, or for none;
- **groups**: the question names a group a categorical column codes (women: ``gender = 'F'``; emergency admissions;
  married patients) and the query never reads that column;
- **age**: the question bounds the age ("older than 65", "aged 40", "in their 60s") and the query reads no age
  or birth column.

Words for sex are general English; everything else comes from the database: the text columns of the profile's
entity tables and the values they hold.
"""

from __future__ import annotations

import re
from typing import cast

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.sqltree import clause
from ehrguard.verify.checks.base import (
    NOTHING,
    CheckResult,
    SqlContext,
    TreeEdit,
    add_condition,
    few_values,
    found,
    quoted_names,
    visits_by_id,
)
from ehrguard.verify.checks.bounds import range_mentions
from ehrguard.verify.checks.concepts import _words, excluded_words
from ehrguard.verify.checks.contrasts import item_labels
from ehrguard.verify.checks.conventions import one_row_per_person
from ehrguard.verify.checks.keys import entity_columns, holds_id
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with
from ehrguard.verify.checks.windows import mask_dates, stated_window
from ehrguard.verify.offline.features import mask_values
from ehrguard.verify.verdict import Finding

_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![.\d]*[a-z_])", re.I)
_SQL_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# Units a window is restated in: a number may come back multiplied or divided by these.
_CONVERSIONS = (24, 7, 12, 60, 30, 365, 365 / 12)
# How people say the codes of sex (values 'F' / 'M' in MIMIC, 'female' / 'male' in eICU).
_SEX_WORDS = {"female": ("f", "female"), "females": ("f", "female"), "woman": ("f", "female"), "women": ("f", "female"),
              "girl": ("f", "female"), "girls": ("f", "female"), "male": ("m", "male"), "males": ("m", "male"),
              "man": ("m", "male"), "men": ("m", "male"), "boy": ("m", "male"), "boys": ("m", "male")}
# How people name a route of administration, and the stems databases write it with (general clinical usage: PO is
# by mouth, SC / SubQ under the skin, ...). A route is named when one of its words is in the question.
_ROUTES = {
    "by mouth": ("po", "oral"), "oral": ("po", "oral"), "orally": ("po", "oral"),
    "intravenous": ("iv", "intraven"), "intravenously": ("iv", "intraven"), "iv": ("iv", "intraven"),
    "subcutaneous": ("sc", "subq", "subcut"), "subcutaneously": ("sc", "subq", "subcut"),
    "intramuscular": ("im", "intramusc"), "intramuscularly": ("im", "intramusc"),
    "rectal": ("pr", "rectal"), "rectally": ("pr", "rectal"), "sublingual": ("sl", "subling"),
    "inhaled": ("ih", "inhal", "neb"), "inhalation": ("ih", "inhal", "neb"), "nebulized": ("neb", "inhal"),
    "topical": ("tp", "topical"), "topically": ("tp", "topical"), "transdermal": ("td", "transderm"),
    "nasogastric": ("ng", "nasogast"),
}
_AGE_BOUND = re.compile(r"\b(?:aged?\s+(?:over|under|above|below|between|at least|\d)|older than|younger than|"
                        r"\d+\s*(?:-\s*)?years?(?:\s*|-)old|\d+ or older|\d+ or younger|in (?:their|his|her) \d0s|"
                        r"over the age|under the age|age (?:group|range|of \d))", re.I)


# Nouns after which a number names a category, not a quantity ("type 2 diabetes", "stage iv", "grade 3").
_CLASSIFIER = r"(?:type|stage|grade|class|phase|level|category|part|step|lead|factor)"


def _thousands(text: str) -> str:
    """Thousands separators read: "1,000" is one number."""
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)


def _numbers(text: str) -> list[str]:
    """The quantities a text states: thousands separators read ("1,000 ml"), numbers naming a category left out."""
    text = _thousands(text)
    text = re.sub(rf"\b{_CLASSIFIER}\s+\d+\b", " ", text, flags=re.I)
    return list(dict.fromkeys(_NUMBER.findall(text)))


def _ranges(text: str) -> list[tuple[float, float]]:
    """The ranges a text states ("aged 63-73", "between 40 and 60", "5 to 10 days"); dates and ids are not ranges."""
    return [(lo, hi) for lo, hi, _, _ in range_mentions(_thousands(text))]


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _restated(n: float, in_sql: set[float]) -> bool:
    """The number, or the same quantity in another unit of time, is among the query's numbers."""
    def near(v: float) -> bool:
        return any(abs(v - x) <= 1e-9 * max(1.0, abs(x)) for x in in_sql)  # ids differ in the last digit

    return near(n) or any(near(n * k) or near(n / k) for k in _CONVERSIONS)


def _constant(node: exp.Expression) -> float | None:
    """The value of arithmetic on number literals only (``1 * 365/2``), else None."""
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if isinstance(node, exp.Literal):
        return None if node.is_string else _as_number(node.this)
    if not isinstance(node, exp.Mul | exp.Div | exp.Add | exp.Sub):
        return None
    a, b = _constant(node.this), _constant(node.expression)
    if a is None or b is None:
        return None
    if isinstance(node, exp.Mul):
        return a * b
    if isinstance(node, exp.Div):
        return a / b if b else None
    return a + b if isinstance(node, exp.Add) else a - b


def _sql_numbers(text: str, tree: exp.Expression | None = None) -> set[float]:
    """Every number a text writes (the query's: also inside its strings, '-3 day', '2100-05') and, given the query's
    tree, every constant it computes."""
    out = {v for v in (_as_number(t) for t in _SQL_NUMBER.findall(_thousands(text))) if v is not None}
    if tree is not None:
        out |= {v for node in tree.find_all(exp.Mul, exp.Div, exp.Add, exp.Sub) if (v := _constant(node)) is not None}  # type: ignore[arg-type]
    return out


def check_stated_numbers(ctx: SqlContext) -> CheckResult:
    """Every number the question states is somewhere in the query (as written or restated in another unit of time),
    or in the label of an item it selects by number ("nacl 0.9%": the labels are read only when needed)."""
    if ctx.tree is None:
        return NOTHING
    # A date the period check reads is a period, checked there (wrong_time_window, missing_time_window): its parts are
    # not quantities. Elsewhere a date's numbers still count.
    question = mask_dates(ctx.question) if stated_window(ctx.question, ctx.db.profile.now) is not None else ctx.question
    stated = [(n, v) for n in _numbers(question) if (v := _as_number(n)) is not None]
    if not stated:
        return NOTHING
    in_sql = _sql_numbers(ctx.sql, ctx.tree)
    missing = [(n, v) for n, v in stated if not _restated(v, in_sql) and not _restated_in_other_unit(question, n, v, in_sql)]
    # a code stated with its dot, written without it in a string of the query ("ICD-9 401.9": 'icd9|4019')
    codes = [lit.this for lit in ctx.tree.find_all(exp.Literal) if lit.is_string and not re.search(r"\d{4}-\d{2}", lit.this)]
    missing = [(n, v) for n, v in missing if not ("." in n and len(n.replace(".", "")) >= 3 and any(
        re.search(rf"(?:^|[|:]){re.escape(n.replace('.', ''))}$", code) for code in codes))]
    if missing:  # a patient the query names by one of their visits' ids
        kept = {n for n in _numbers(_without_people(question, _people_of_visits(ctx, ctx.tree)))}
        missing = [(n, v) for n, v in missing if n in kept]
    # A number inside a range the question states and the query uses describes a case the range is drawn around
    # ("a 68-year-old man ... patients aged 63-73"): the range accounts for it.
    ranges = [(lo, hi) for lo, hi in _ranges(ctx.question) if _restated(lo, in_sql) and _restated(hi, in_sql)]
    missing = [(n, v) for n, v in missing if not any(lo < v < hi for lo, hi in ranges)]
    if missing:
        in_labels = _sql_numbers(" ".join(item_labels(ctx, ctx.tree)))
        missing = [(n, v) for n, v in missing if not _restated(v, in_labels)]
    if not missing:
        return NOTHING
    listed = ", ".join(n for n, _ in missing[:3])
    message = (f"The question states {listed}; the query never uses {'it' if len(missing) == 1 else 'them'}: "
               "it answers for another patient, threshold or period, or for none.")
    # the numbers a date states are still the question's: a query's year is not free to take a patient's number
    written = [v for n in _numbers(ctx.question) if (v := _as_number(n)) is not None]
    swap = _substitution(ctx, ctx.tree, missing, written) if len(missing) == 1 else None
    if swap is None:
        added = _id_condition(ctx, ctx.tree, missing[0][0]) if len(missing) == 1 else None
        if added is None:
            return found(Finding("missing_stated_number", "warning", message))
        condition, edit = added
        return found(Finding("missing_stated_number", "warning", f"{message} Added {condition}.", None, condition),
                     edits=[edit])
    slot, text = swap
    return found(Finding("missing_stated_number", "warning", f"{message} It compares {slot.this!r} instead.",
                         ctx.span_of(slot.this), text),
                 edits=[TreeEdit(_replace_with(text, string=slot.is_string), target=slot)])


# A time unit after a number ("3 days", "48-hour"), and a window a query writes as a string ('-7 day', INTERVAL '7' DAY).
_UNITS = ("minute", "hour", "day", "week", "month", "year")
_UNIT_AFTER = re.compile(r"\s*-?\s*(minute|hour|day|week|month|year)s?\b", re.I)
_WINDOW = re.compile(r"^\s*([-+]?)\s*(\d+(?:\.\d+)?)\s*(minute|hour|day|week|month|year)s?\s*$", re.I)
# How many of the second unit one of the first holds, where that is exact (a month is not a fixed number of days).
_EXACT = {("week", "day"): 7, ("day", "hour"): 24, ("hour", "minute"): 60, ("week", "hour"): 168, ("year", "month"): 12,
          ("day", "minute"): 1440}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In)


# Units of measure people state and records may hold in another unit of the same kind (general physics): the factor
# to the kind's base unit. A stated "220 lbs" is used by a query comparing a weight in kilograms with 99.8.
_MEASURES: dict[str, tuple[str, float]] = {
    "kg": ("mass", 1.0), "kgs": ("mass", 1.0), "kilogram": ("mass", 1.0), "kilograms": ("mass", 1.0), "g": ("mass", 1e-3),
    "gram": ("mass", 1e-3), "grams": ("mass", 1e-3), "mg": ("mass", 1e-6), "lb": ("mass", 0.45359237),
    "lbs": ("mass", 0.45359237), "pound": ("mass", 0.45359237), "pounds": ("mass", 0.45359237), "oz": ("mass", 0.028349523125),
    "ounce": ("mass", 0.028349523125), "ounces": ("mass", 0.028349523125),
    "meter": ("length", 1.0), "meters": ("length", 1.0), "metre": ("length", 1.0),
    "metres": ("length", 1.0), "cm": ("length", 0.01), "mm": ("length", 1e-3),
    "inch": ("length", 0.0254), "inches": ("length", 0.0254), "ft": ("length", 0.3048), "foot": ("length", 0.3048),
    "feet": ("length", 0.3048),
    "l": ("volume", 1.0), "liter": ("volume", 1.0), "liters": ("volume", 1.0), "litre": ("volume", 1.0),
    "litres": ("volume", 1.0), "ml": ("volume", 1e-3), "dl": ("volume", 0.1), "cc": ("volume", 1e-3),
    "fahrenheit": ("temperature", 0.0), "celsius": ("temperature", 0.0),
}
# A bare letter names a unit only after a degree sign ("101 °F"); "in" and "m" are words or minutes as often as units.
_MEASURE_AFTER = re.compile(r"\s*(?:(?:°\s*|degrees?\s+)(f|c|fahrenheit|celsius)|("
                            + "|".join(sorted(_MEASURES, key=len, reverse=True)) + r"))\b(?!\s*(?:/|per\b))", re.I)
# A converted threshold is written rounded: 220 lbs as 99.8, 100 or 99.79 kg; a temperature to about a third of a
# degree Celsius (38 °C as 100 °F, 38.5 °C as 101 °F; 101 °F is not 38 °C).
_MEASURE_TOLERANCE = 0.015
_TEMPERATURE_TOLERANCE = {"celsius": 0.3, "fahrenheit": 0.54}  # in the unit converted to


def _unit_after(question: str, number: str, unit: re.Pattern[str]) -> re.Match[str] | None:
    """The first match of ``unit`` right after the number where the question writes it, else None."""
    text = _thousands(question)
    return next((m for n in re.finditer(rf"(?<![\w.]){re.escape(number)}(?![\w.])", text)
                 if (m := unit.match(text, n.end())) is not None), None)


def _measure_after(question: str, number: str) -> str | None:
    """The unit of measure the question writes right after a number ("220 lbs", "101.3 °F"), else None."""
    if (unit := _unit_after(question, number, _MEASURE_AFTER)) is None:
        return None
    word = (unit.group(1) or unit.group(2)).lower()
    return {"f": "fahrenheit", "c": "celsius"}.get(word, word)


def _converted(value: float, unit: str) -> list[float]:
    """The same quantity in every other unit of its kind (Fahrenheit and Celsius by their own formula)."""
    kind, factor = _MEASURES[unit]
    if kind == "temperature":
        return [(value - 32) * 5 / 9] if unit == "fahrenheit" else [value * 9 / 5 + 32]
    return [value * factor / other for name, (k, other) in _MEASURES.items() if k == kind and other != factor]


def _restated_in_other_unit(question: str, text: str, value: float, in_sql: set[float]) -> bool:
    """The number states a quantity in a unit of measure, and the query uses it converted to another unit (rounded)."""
    unit = _measure_after(question, text)
    if unit is None:
        return False
    if _MEASURES[unit][0] == "temperature":
        tolerance = _TEMPERATURE_TOLERANCE["celsius" if unit == "fahrenheit" else "fahrenheit"]
        return any(abs(v - x) <= tolerance for v in _converted(value, unit) for x in in_sql)
    return any(abs(v - x) <= _MEASURE_TOLERANCE * max(abs(v), 1e-9) for v in _converted(value, unit) for x in in_sql)


def _stated_unit(question: str, number: str) -> str | None:
    """The time unit the question writes right after a number ("within 3 days" -> day), else None."""
    unit = _unit_after(question, number, _UNIT_AFTER)
    return unit.group(1).lower() if unit is not None else None


def _slots(tree: exp.Expression, entities: set[str]) -> list[tuple[exp.Literal, float, str | None]]:
    """The numbers a query compares data with, each with its time unit when it is a window: a number literal (or a
    string holding only a number) in a comparison with a column, and a window string ('-7 day', INTERVAL '7' DAY).
    Zero is left out (``> 0`` asks whether there is any), as are LIMIT, OFFSET, calendar formats and the numbers of
    items and rows (ids other than the ``entities``' columns)."""
    out: list[tuple[exp.Literal, float, str | None]] = []
    for lit in tree.find_all(exp.Literal):
        parent = lit.parent
        if isinstance(parent, exp.Interval) and lit.arg_key == "this":
            unit = str(parent.args.get("unit") or "").lower().rstrip("s")
            value = _as_number(lit.this)
            if unit in _UNITS and value is not None and value != 0:
                out.append((lit, value, unit))
            continue
        window = _WINDOW.match(lit.this) if lit.is_string else None
        if window is not None:
            value = float(window.group(2))
            if value != 0:
                out.append((lit, value, window.group(3).lower()))
            continue
        value = _as_number(lit.this)
        operand = lit.parent if isinstance(lit.parent, exp.Neg) else lit  # a direct operand, not a factor inside one
        if value is None or value == 0 or not isinstance(operand.parent, _COMPARISONS):
            continue
        columns = [c.name.lower() for c in operand.parent.find_all(exp.Column)]
        # an item's or a row's number selects a thing the question names in words; an entity's id is stated as a number
        if columns and not any(c.endswith("id") and c not in entities for c in columns):
            out.append((lit, value, None))
    return out


def _substitution(ctx: SqlContext, tree: exp.Expression, missing: list[tuple[str, float]],
                  stated: list[float]) -> tuple[exp.Literal, str] | None:
    """The one number the query compares that the question does not state, and what to write there instead: the one
    stated number it never uses (converted when the query counts the window in a smaller unit). None unless exactly one
    of each is there and their units agree: with two candidates either way, which replaces which is a guess."""
    (text, value), = missing
    if _measure_after(ctx.question, text) is not None:
        return None  # "220 lbs", "38 °C": the records may hold the measure in another unit (MIMIC-IV keeps temperatures
        # in °F and °C, weights in kg and lbs); the number is not the query's to take as it is
    free = [(lit, v, unit) for lit, v, unit in _slots(tree, set(entity_columns(ctx))) if not any(_restated(n, {v}) for n in stated)]
    if len(free) != 1:
        return None
    slot, _, slot_unit = free[0]
    unit = _stated_unit(ctx.question, text)
    if (unit is None) != (slot_unit is None):
        return None
    if unit is not None and slot_unit is not None and unit != slot_unit:
        factor = _EXACT.get((unit, slot_unit))
        if factor is None:
            return None
        value *= factor
        text = f"{value:g}"
    if slot.is_string and (window := _WINDOW.match(slot.this)) is not None:
        start, end = window.span(2)
        text = slot.this[:start] + text + slot.this[end:]
    return slot, text


def _people_of_visits(ctx: SqlContext, tree: exp.Expression) -> list[str]:
    """The ids of the patients whose admissions or stays the query names by their own ids (``hadm_id = 24181354`` for
    "patient 10004235 ... the admission that started on ...", ``patientunitstayid = 2859392`` for "027-102233"), as the
    data gives them: the visit stands for its patient."""
    out: list[str] = []
    for column, literal, home in visits_by_id(ctx, tree):
        table = ctx.db.schema.table(home)
        people = [c.name for c in table.columns if c.name.lower() in ctx.db.profile.person_ids] if table else []
        if table is None or not people:
            continue
        source, visit_id = quoted_names(ctx, table.qualified_name, column.name)
        ids = ", ".join(quoted_names(ctx, table.qualified_name, p)[1] for p in people)
        sql = f"SELECT DISTINCT {ids} FROM {source} WHERE {visit_id} = {literal.sql(dialect=ctx.dialect)} LIMIT 5"
        try:  # asked each time, like keys.holds_id: remembering every id pair asked about would grow a server's memory
            out += [str(v) for row in ctx.db.db.execute(sql, timeout_s=5).rows for v in row if v is not None]
        except DatabaseError:
            continue
    return out


def _without_people(question: str, people: list[str]) -> str:
    """The question with the given patient ids left out (they are accounted for)."""
    for person in people:
        question = re.sub(rf"(?<![\w-]){re.escape(person)}(?![\w-])", " ", question)
    return question


def _id_condition(ctx: SqlContext, tree: exp.Expression, number: str) -> tuple[str, TreeEdit] | None:
    """The condition that keeps a one-SELECT query to the patient, admission or stay whose id the question states and
    the query drops: only when exactly one kind of entity has that id, the query's filter compares no id, and the table
    it reads from (or the one table it joins that has it) holds that id column."""
    if not number.isdigit() or not isinstance(tree, exp.Select) or sum(1 for _ in tree.find_all(exp.Select)) != 1:
        return None
    ids = entity_columns(ctx)
    where = tree.args.get("where")
    if where is not None and {c.name.lower() for c in where.find_all(exp.Column)} & set(ids):
        return None  # the query does keep to some entity: which one it should be is the substitution's question
    owners = []
    for entity in ctx.profile.entities:
        try:
            found_id = holds_id(ctx, entity.table, entity.id_column, exp.Literal(this=number, is_string=False))
        except DatabaseError:
            return None
        if found_id:
            owners.append(entity.id_column.lower())
    if len(owners) != 1:
        return None
    column = owners[0]
    sources = [t for t in tree.find_all(exp.Table) if (info := ctx.db.schema.table(t.name)) is not None and info.column(column) is not None]
    start = clause(tree, "from")
    first = start.this if start is not None else None
    source = first if first in sources else (sources[0] if len(sources) == 1 else None)
    if not isinstance(source, exp.Table):
        return None
    qualifier = source.alias_or_name
    condition = exp.column(column, table=qualifier).eq(exp.Literal.number(number))
    return condition.sql(dialect=ctx.dialect), TreeEdit(add_condition(condition))


def _referenced(tree: exp.Expression) -> set[str]:
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def _category_columns(ctx: SqlContext) -> list[tuple[str, str]]:
    """The text columns of the profile's entity tables with few distinct values: the categories people are grouped by
    (a group is a group of patients, admissions or stays; an event's kind is not)."""
    out = []
    ids = entity_columns(ctx)
    for table in dict.fromkeys(e.table for e in ctx.profile.entities):
        info = ctx.db.schema.table(table)
        if info is None:
            continue
        for col in info.columns:
            name, kind = col.name.lower(), col.type.lower()
            if name in ids or (kind and "char" not in kind and "text" not in kind and "string" not in kind):
                continue
            if few_values(ctx, info.qualified_name, col.name):
                out.append((table, name))
    return out


def _values(ctx: SqlContext, table: str, column: str) -> list[str]:
    key = ("category_values", table, column)
    info = ctx.db.schema.table(table)
    col = info.column(column) if info is not None else None
    if info is None or col is None:
        return []
    source, name = quoted_names(ctx, info.qualified_name, col.name)

    def read() -> list[str]:
        try:
            rows = ctx.db.db.execute(f"SELECT DISTINCT {name} FROM {source} WHERE {name} IS NOT NULL", timeout_s=5).rows
        except Exception:  # noqa: BLE001 - a column that cannot be read names no group
            return []
        return [str(r[0]).lower() for r in rows]

    return ctx.db.derived(key, read)


# The nouns a group is a group of: a value names a group when it modifies one ("elective admissions", "married
# patients", "patients who were married"), not when the word is used for something else ("other drugs", "a single dose").
_GROUPED = r"(?:patients?|people|persons?|admissions?|visits?|stays?|encounters?|cases?|cohort|population)"


# "A single stay", "any single admission": "single" counting one, as English uses it, not a marital status.
_ONE = re.compile(r"\b(?:a|one|any|every|each) single\b")


def _names_group(value: str, text: str, column: str = "") -> bool:
    """The question names the value as a group: "married patients", "patients who were married", or after a word
    its column is named for ("discharged home": ``discharge_location``; "discharged to home")."""
    text = _ONE.sub(" one ", text)
    v = re.escape(value)
    if re.search(rf" {v} (?:\w+ )?{_GROUPED} ", text) or re.search(rf" {_GROUPED} (?:who|that) (?:are|were|is|was) {v} ", text):
        return True
    name = column.replace("_", "")
    return any(w[:5] in name for w in re.findall(rf" ([a-z]{{6,}}) (?:to |at |in |from )?(?:the |a )?{v} ", text))


def check_stated_groups(ctx: SqlContext) -> CheckResult:
    """The question names a group one categorical column codes (sex, admission type, marital status, ...) and the
    query never reads that column; or bounds the age and reads no age or birth column."""
    if ctx.tree is None:
        return NOTHING
    referenced = _referenced(ctx.tree)
    # A group word inside a value the query looks for ("vancomycin oral liquid", "other chronic ... disease") is that
    # value's, not a group of its own.
    looked_for = " | ".join(" ".join(_words(lit.this)) for lit in ctx.tree.find_all(exp.Literal) if lit.is_string)
    words = _words(ctx.question)
    text = " " + " ".join(words) + " "
    findings = []
    edits: list[TreeEdit] = []
    columns = _category_columns(ctx)
    holders: dict[str, set[str]] = {}  # a value -> every category column that holds it (first and last care unit)
    for table, column in columns:
        for v in _values(ctx, table, column):
            holders.setdefault(v, set()).add(column)
    for table, column in columns:
        if column in referenced:
            continue
        values = _values(ctx, table, column)
        sex = [w for w in words if w in _SEX_WORDS and any(v in values for v in _SEX_WORDS[w]) and w not in looked_for]
        named = [v for v in values if len(v) >= 4 and not v.isdigit() and _words(v) and _names_group(" ".join(_words(v)), text, column)
                 and " ".join(_words(v)) not in looked_for and not holders.get(v, set()) & referenced]
        said = sex or named
        if said:
            # The value that codes the group: a sex word's code as this column writes it ('f', 'female'), or the value named.
            codes = [v for v in values if v in _SEX_WORDS[said[0]]] if sex else [said[0]]
            added = _group_condition(ctx, ctx.tree, table, column, codes[0]) if len(codes) == 1 and len(set(said)) == 1 else None
            findings.append(Finding("missing_group_filter", "warning",
                                    f"The question asks about '{said[0]}' patients or visits ({table}.{column}); the query never "
                                    f"reads {table}.{column}, so it does not keep to that group. Add a condition on it.",
                                    None, added[0] if added else None))
            if added is not None:
                edits.append(added[1])
    route = _missing_route(ctx, text, looked_for, referenced)
    if route is not None:
        findings.append(route)
    if _AGE_BOUND.search(ctx.question) and not any(c == "age" or c.endswith("_age") or "birth" in c or c == "dob" for c in referenced):
        findings.append(Finding("missing_age_filter", "warning",
                                "The question bounds the patients' age; the query reads no age or date of birth."))
    return found(*findings, edits=edits)


def _group_condition(ctx: SqlContext, tree: exp.Expression, table: str, column: str, code: str) -> tuple[str, TreeEdit] | None:
    """The condition that keeps a one-SELECT query to a group: ``column = code`` on ``table`` when the query reads that
    table, else on ``table`` joined by an entity id it holds once per row and the table the query reads from has. The
    code is written as the data writes it. None for any other shape."""
    if not isinstance(tree, exp.Select) or sum(1 for _ in tree.find_all(exp.Select)) != 1:
        return None
    info = ctx.db.schema.table(table)
    start = clause(tree, "from")
    source = start.this if start is not None else None
    if info is None or not isinstance(source, exp.Table):
        return None
    written = _written(ctx, info.qualified_name, column, code)
    if written is None:
        return None
    from_info = ctx.db.schema.table(source.name)
    own = [t for t in tree.find_all(exp.Table) if t.name.lower() == table.lower()]
    join = None
    if own:
        holder = own[0].alias_or_name
    else:
        keys = [c for c in entity_columns(ctx) if info.column(c) is not None and from_info is not None and from_info.column(c) is not None
                and one_row_per_person(ctx, info.qualified_name, c)]
        if not keys:
            return None
        holder = table
        join = exp.column(keys[0], table=table).eq(exp.column(keys[0], table=source.alias_or_name))
    condition = exp.column(column, table=holder).eq(exp.Literal.string(written))

    mine = {c.name.lower() for c in from_info.columns} if join is not None and from_info is not None else set()
    qualifier = source.alias_or_name

    def apply(select: exp.Expression) -> None:
        if isinstance(select, exp.Select):
            if join is not None:  # the query's bare columns are its table's: say so, or the join makes them ambiguous
                for col in select.find_all(exp.Column):
                    if not col.table and col.name.lower() in mine:
                        col.set("table", exp.to_identifier(qualifier))
                select.join(exp.to_table(info.qualified_name if info.namespace else table), on=join.copy(), copy=False)
            select.where(condition.copy(), copy=False)

    return condition.sql(dialect=ctx.dialect), TreeEdit(apply)


def _written(ctx: SqlContext, table: str, column: str, code: str) -> str | None:
    """``code`` as the column writes it (its letter case), when exactly one value of the column is that code."""
    source, name = quoted_names(ctx, table, column)
    try:
        rows = ctx.db.db.execute(f"SELECT DISTINCT {name} FROM {source} WHERE LOWER({name}) = {exp.Literal.string(code.lower()).sql()}",
                                 timeout_s=5).rows
    except DatabaseError:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def _missing_route(ctx: SqlContext, text: str, looked_for: str, referenced: set[str]) -> Finding | None:
    """The question names a route of administration (by mouth, intravenous, ...), the query reads a table that records
    routes, and never reads its route column."""
    named = [phrase for phrase in _ROUTES if f" {phrase} " in text and phrase not in looked_for
             and not re.search(rf"{_CLASSIFIER} {phrase} ", text)]
    if not named:
        return None
    for table in dict.fromkeys(t.name for t in ctx.tree.find_all(exp.Table)) if ctx.tree is not None else ():
        info = ctx.db.schema.table(table)
        routes = [c.name.lower() for c in info.columns if "route" in c.name.lower()] if info is not None else []
        if routes and not set(routes) & referenced:
            return Finding("missing_route_filter", "warning",
                           f"The question names a route ('{named[0]}'); the query never reads {table}.{routes[0]}, so it keeps "
                           "every route. Add a condition on it.")
    return None


def _stated_ids(ctx: SqlContext, tree: exp.Expression, id_columns: set[str]) -> set[str]:
    """The ids the query compares an entity id column with that the question states: the query is about them."""
    stated = set(_numbers(ctx.question)) | {w for w in re.findall(r"[\w-]+", ctx.question) if any(ch.isdigit() for ch in w)}
    return {lit.this for node in tree.find_all(exp.EQ)
            if isinstance(node.this, exp.Column) and node.this.name.lower() in id_columns
            and isinstance(lit := node.expression, exp.Literal) and lit.this in stated}


# A question that compares the patient with everyone reads everyone's records on purpose.
_EVERYONE = re.compile(r"\b(?:all|other|every|any) (?:patients?|people|admissions|stays)\b|\beveryone\b|\baverage\b|\bmean\b|"
                       r"\bmedian\b|\bpercentile\b|\bcompared?\b|\brank", re.I)


def check_unscoped_reads(ctx: SqlContext) -> CheckResult:
    """The question is about one patient (or visit) the query names, but one part of the query reads a table of
    everyone's records with no patient, visit or stay condition at all: that part answers for every patient (the
    'first hospital visit' picked among all patients' visits)."""
    if ctx.tree is None:
        return NOTHING
    id_columns = set(entity_columns(ctx)) | {c.lower() for c in ctx.db.profile.person_ids}
    if not _stated_ids(ctx, ctx.tree, id_columns) or _EVERYONE.search(ctx.question):
        return NOTHING
    _, defined = aliases(ctx.tree)  # a CTE may carry a table's name ("WITH admissions AS (... his ...)")
    for select in ctx.tree.find_all(exp.Select):
        sources = [t for t in select.find_all(exp.Table)
                   if t.find_ancestor(exp.Select) is select and t.name.lower() not in defined]  # its own tables, not a subquery's
        person_tables = [t for t in sources if (info := ctx.db.schema.table(t.name)) is not None
                         and any(info.column(c) is not None for c in id_columns)]
        if not person_tables:
            continue
        scoping = [select.args.get("where"), select.args.get("group")] + [j.args.get("on") for j in select.args.get("joins") or ()]
        names = {c.name.lower() for part in scoping if part is not None for c in part.find_all(exp.Column)}
        if names & id_columns:
            continue
        table = person_tables[0].name
        return found(Finding("unscoped_read", "warning",
                             f"The question is about one patient, but part of the query reads {table} with no patient, "
                             "visit or stay condition: that part answers for every patient. Add the patient's condition "
                             "to it.", ctx.span_of(table)))
    return NOTHING


# The ICU, however a person names it; "ICU" inside a name the query looks for is masked first.
_ICU = re.compile(r"\b(?:icu|intensive care|critical care unit|micu|sicu|cvicu|ccu)\b", re.IGNORECASE)


def check_icu_scope(ctx: SqlContext) -> CheckResult:
    """The question keeps to the ICU ("drugs given in the ICU", "during the ICU stay"), the schema holds records of
    the whole hospital stay beside the ICU's (tables without the ICU stay's id column), and the query reads nothing of
    an ICU stay: no table that holds the stay id, no stay id. Its answer takes in the whole hospital stay. A schema
    whose visits are ICU stays (eICU: one table holds both) is never asked."""
    stay, admission = ctx.profile.entity("stay"), ctx.profile.entity("admission")
    if ctx.tree is None or stay is None or admission is None or not _ICU.search(mask_values(ctx.question, ctx.sql)):
        return NOTHING
    if stay.table.lower() == admission.table.lower():
        return NOTHING  # the records are an ICU's: its stays are the visits (eICU)
    column = stay.id_column.lower()
    read = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
    if any((info := ctx.db.schema.table(name)) is not None and info.column(column) is not None for name in read):
        return NOTHING
    if any(c.name.lower() == column for c in ctx.tree.find_all(exp.Column)):
        return NOTHING
    return found(Finding("missing_icu_scope", "warning",
                         f"The question keeps to the ICU; the query reads nothing of an ICU stay ({stay.table}, {stay.id_column}), "
                         "so its answer takes in the whole hospital stay."))


def check_stated_exclusion(ctx: SqlContext) -> CheckResult:
    """The question leaves something out in so many words ("heparin (not flushes)") and the query keeps it: nothing
    in the query leaves anything out (no NOT, ``<>``, NOT LIKE / NOT IN, EXCEPT, NULL test), and a text condition of
    the query keeps values that name what is left out (``drug LIKE '%heparin%'`` keeps 'heparin flush'), asked of the
    data. An exclusion made another way (a positive list, DISTINCT for repeats, an OFFSET) keeps no such value."""
    if ctx.tree is None:
        return NOTHING
    # the names the query looks for are masked first: "other than motorcycle" inside a diagnosis's title is a name
    excluded = excluded_words(mask_values(ctx.question, ctx.sql))
    if not excluded or any(isinstance(n, exp.Not | exp.NEQ | exp.Except | exp.Is) or n.args.get("negate") for n in ctx.tree.walk()):
        return NOTHING  # NOT LIKE / NOT IN are a LIKE / IN that negates
    tables, _ = aliases(ctx.tree)
    for found_node in ctx.tree.find_all(exp.EQ, exp.In, exp.Like):
        node = cast(exp.Expression, found_node)  # a comparison is an expression (sqlglot types it apart)
        column = node.this
        if not isinstance(column, exp.Column) or not any(isinstance(v, exp.Literal) and v.is_string for v in node.find_all(exp.Literal)):
            continue
        table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        info = ctx.db.schema.table(table) if table else None
        if info is None or info.column(column.name) is None:
            continue
        for word in sorted(excluded):
            kept = _kept_value(ctx, info.qualified_name, column.name, node, word)
            if kept:
                return found(Finding("missing_exclusion", "warning",
                                     f"The question leaves out '{word}'; the query keeps it ({table}.{column.name} "
                                     f"'{kept}'), so what the question excludes is counted in."))
    return NOTHING


def _kept_value(ctx: SqlContext, table: str, column: str, condition: exp.Expression, word: str) -> str | None:
    """A value of the column that the query's condition keeps and that holds the word (asked of the data)."""
    kept = condition.copy()
    for col in kept.find_all(exp.Column):
        col.set("table", None)
    source, name = quoted_names(ctx, table, column)
    pattern = exp.Literal.string(f"%{word}%").sql()
    try:
        rows = ctx.db.db.execute(f"SELECT {name} FROM {source} WHERE ({kept.sql(dialect=ctx.dialect)}) AND LOWER({name}) LIKE "
                                 f"{pattern} LIMIT 1", timeout_s=5).rows
    except DatabaseError:
        return None
    return str(rows[0][0]) if rows else None
