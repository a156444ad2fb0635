"""``ehrguard db profile``: a first draft of a database's profile, read from its schema and its data.

The owner of a schema knows what its tables mean; this draft saves the typing and says where it guessed:

* **entities** (patient, admission, ICU stay): a table whose name says what it holds (``patients``, ``people``,
  ``persons``; ``admissions``, ``encounters``, ``visits``; ``icustays``, ``stays``), and its id column: the column
  whose values are unique in it and which the most other tables also have (the key the events hang on);
* **time columns**: date/time types, and text columns whose sampled values all read as dates or date-times;
* **value columns**: text columns with a few to some thousands of distinct values, the names and labels questions
  quote (not ids, not times, not free text);
* **foreign keys** the schema does not declare: an id or code column unique in one table (a dictionary, an entity's
  table) and repeated in another whose sampled values that one table holds;
* **now**: when the latest time in the data is past the machine's clock (a date-shifted extract such as MIMIC's or
  EHRSQL's), that instant; else the real clock.

Every guess is a line of the TOML the owner edits; ``--db-id FILE.toml`` then uses it everywhere.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ehrguard.db import Database, read_schema
from ehrguard.db.schema import TableInfo
from ehrguard.errors import DatabaseError
from ehrguard.profiles import DatabaseProfile, Entity, EntityName

# What a table of each entity is called, in the words of English and of the schemas this project knows.
ENTITY_WORDS: dict[EntityName, tuple[str, ...]] = {
    "patient": ("patient", "patients", "people", "person", "persons", "subject", "subjects", "demographic", "demographics"),
    "admission": ("admission", "admissions", "encounter", "encounters", "visit", "visits", "hospitalization",
                  "hospitalizations", "hospitalisation", "hospitalisations", "stay_hospital"),
    "stay": ("icustay", "icustays", "icu_stay", "icu_stays", "unitstay", "unitstays", "stay", "stays"),
}
_TIME_TYPES = re.compile(r"DATE|TIME", re.IGNORECASE)
_TEXT_TYPES = re.compile(r"CHAR|TEXT|STRING|CLOB", re.IGNORECASE)
_NUMBER = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")
_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$")
SAMPLE = 200
MAX_VALUES = 200_000


def _quote(db: Database, name: str) -> str:
    quote = "`" if db.dialect in ("bigquery", "mysql") else '"'
    return quote + name.replace(quote, quote * 2) + quote


def _table_ref(db: Database, t: TableInfo) -> str:
    return ".".join(_quote(db, part) for part in t.qualified_name.split("."))


def _rows(db: Database, sql: str, max_rows: int = SAMPLE) -> list[tuple[Any, ...]]:
    try:
        return list(db.execute(sql, timeout_s=60, max_rows=max_rows).rows)
    except DatabaseError:
        return []


def _unique(db: Database, t: TableInfo, column: str) -> bool:
    col = _quote(db, column)
    rows = _rows(db, f"SELECT COUNT({col}), COUNT(DISTINCT {col}), COUNT(*) FROM {_table_ref(db, t)}", 1)
    return bool(rows) and rows[0][0] == rows[0][1] == rows[0][2] and rows[0][2] > 0


def _repeats(db: Database, t: TableInfo, column: str) -> bool:
    """Whether ``column`` holds a repeated value in a sample of ``t`` (cheap where counting every row is not)."""
    col = _quote(db, column)
    sample = [r[0] for r in _rows(db, f"SELECT {col} FROM {_table_ref(db, t)} WHERE {col} IS NOT NULL LIMIT 5000", 5000)]
    return len(set(sample)) < len(sample)


def _repeats_elsewhere(db: Database, column: str, home: TableInfo, tables: list[TableInfo]) -> bool:
    """Whether ``column`` holds a repeated value in a sample of another table that has it (up to three tables)."""
    return any(_repeats(db, t, column) for t in [t for t in tables if t is not home and t.column(column) is not None][:3])


def _lookup(db: Database, t: TableInfo) -> bool:
    """A lookup table: every id-like column of it is unique in it (it references no entity's rows many times)."""
    ids = [c.name for c in t.columns if re.search(r"(^|_)(id|mrn|pid|key|code)$|id$", c.name.lower())]
    return bool(ids) and all(_unique(db, t, c) for c in ids)


# What an id column's name says it identifies, when the name says more than "id" (eICU's patient table has one row per
# unit stay: patientunitstayid is its key, patienthealthsystemstayid the hospital stay's, uniquepid the person's).
ID_KIND: tuple[tuple[EntityName, re.Pattern[str]], ...] = (
    ("stay", re.compile(r"unitstay|icustay|icu_stay|unit_stay|stay_id")),
    ("admission", re.compile(r"hadm|admission|encounter|visit|healthsystemstay|hospitalstay|hosp_stay")),
)


def _kind_of(column: str) -> EntityName | None:
    return next((kind for kind, pattern in ID_KIND if pattern.search(column.lower())), None)


def _entities(db: Database, tables: list[TableInfo]) -> tuple[Entity, ...]:
    found: list[Entity] = []
    taken: set[str] = set()
    shared: dict[str, int] = {}  # column name -> how many tables have it
    for t in tables:
        for c in t.columns:
            shared[c.name.lower()] = shared.get(c.name.lower(), 0) + 1
    for name, words in ENTITY_WORDS.items():
        if any(e.name == name for e in found):
            continue
        for t in tables:
            if t.name.lower() not in words or t.qualified_name in taken:
                continue
            ids = [c.name for c in t.columns if re.search(r"(^|_)(id|mrn|pid|key)$|id$", c.name.lower())]
            ids.sort(key=lambda c: (-shared.get(c.lower(), 0), len(c)))
            if name == "patient":
                # a column named for a stay or an admission identifies that, not the person
                person = [c for c in ids if _kind_of(c) is None]
                key = next((c for c in person if _unique(db, t, c) and _repeats_elsewhere(db, c, t, tables)), None)
                stay_key = next((c for c in ids if _kind_of(c) is not None and _unique(db, t, c)), None)
                if key is None and stay_key is not None and person:
                    # one row per stay: the person's id repeats here; the table also holds the stay and admission ids
                    key = person[0]
                    for column in ids:
                        kind = _kind_of(column)
                        if kind is not None and not any(e.name == kind for e in found):
                            found.append(Entity(kind, t.qualified_name, column))
            else:
                # the key the events hang on: unique here, repeated in another table (a row number is unique everywhere)
                key = next((c for c in ids if _unique(db, t, c) and _repeats_elsewhere(db, c, t, tables)), None)
            if key is not None:
                found.append(Entity(name, t.qualified_name, key))
                taken.add(t.qualified_name)
                break
    order = list(ENTITY_WORDS)
    return tuple(sorted(found, key=lambda e: order.index(e.name)))


def _is_instant(value: Any) -> bool:
    return isinstance(value, datetime) or (isinstance(value, str) and bool(_INSTANT.match(value.strip())))


def _columns(db: Database, tables: list[TableInfo], ids: set[str]) -> tuple[list[str], list[str], str | None]:
    times, values, latest = [], [], None
    for t in tables:
        for c in t.columns:
            qualified = f"{t.qualified_name}.{c.name}"
            col = _quote(db, c.name)
            ref = _table_ref(db, t)
            sample: list[Any] = []
            if _TIME_TYPES.search(c.type) or _TEXT_TYPES.search(c.type):
                sample = [r[0] for r in _rows(db, f"SELECT {col} FROM {ref} WHERE {col} IS NOT NULL LIMIT {SAMPLE}")]
                if sample and all(_is_instant(v) for v in sample):
                    times.append(qualified)
                    top = _rows(db, f"SELECT MAX({col}) FROM {ref}", 1)
                    if top and top[0][0] is not None and (latest is None or str(top[0][0]) > latest):
                        latest = str(top[0][0])[:19]
                    continue
            if not _TEXT_TYPES.search(c.type) or c.name.lower() in ids or re.search(r"(^|_)id$", c.name.lower()):
                continue
            if sample and all(_NUMBER.match(str(v)) for v in sample):
                continue  # numbers stored as text: measurements or codes, not names a question quotes
            rows = _rows(db, f"SELECT COUNT(DISTINCT {col}), COUNT({col}), MAX(LENGTH({col})) FROM {ref}", 1)
            if not rows or not rows[0][0] or not 2 <= rows[0][0] <= MAX_VALUES or (rows[0][2] or 0) > 300:
                continue
            # a text different on (nearly) every row is a name only in a lookup table (a dictionary of codes and titles);
            # in a table of events it is free text (a note)
            if rows[0][0] > 0.9 * rows[0][1] and not _lookup(db, t):
                continue
            values.append(qualified)
    return times, values, latest


# An id or a code by its name: "..._id", "..._key", "..._code", "..._cd", or an entity's or item's name run into "id"
# ("itemid", "patientunitstayid", "uniquepid"); not the words that end so ("fluid", "opioid", "thyroid").
_KEY_NAME = re.compile(r"(^|_)(id|key|code|cd)$|(?:item|stay|unit|patient|visit|subject|row|person|encounter|order|admission|p)id$",
                       re.IGNORECASE)
KEY_SAMPLE = 200  # distinct values of a referring column looked up in the table it may refer to
KEY_SHARE = 0.95  # of them found there, for the key to be proposed


def _share_found(db: Database, source: TableInfo, target: TableInfo, column: str) -> float:
    """The share of a sample of ``source.column``'s distinct values that ``target.column`` holds."""
    col = _quote(db, column)
    sample = f"SELECT DISTINCT {col} AS v FROM (SELECT {col} FROM {_table_ref(db, source)} WHERE {col} IS NOT NULL LIMIT 5000) s"
    rows = _rows(db, f"SELECT COUNT(*), SUM(CASE WHEN v IN (SELECT {col} FROM {_table_ref(db, target)}) THEN 1 ELSE 0 END) "
                     f"FROM ({sample} LIMIT {KEY_SAMPLE}) d", 1)
    return (rows[0][1] or 0) / rows[0][0] if rows and rows[0][0] else 0.0


def _keys(db: Database, tables: list[TableInfo], entity_tables: set[str]) -> list[str]:
    """Keys the schema does not declare: a column named as an id or a code that is unique in one table (a dictionary's
    code, an entity's id) and repeats in another, whose values that table holds (``labevents.itemid`` ->
    ``d_labitems.itemid``; ``chartevents.itemid`` -> ``d_items.itemid``, where both dictionaries have an ``itemid``).
    A column whose values several such tables hold refers to the one that is an entity's table (``entity_tables``), else
    gets none: the data do not say which it refers to."""
    declared = {(t.qualified_name.lower(), fk.column.lower()) for t in tables for fk in t.foreign_keys}
    holders: dict[str, list[TableInfo]] = {}
    for t in tables:
        for c in t.columns:
            if _KEY_NAME.search(c.name):
                holders.setdefault(c.name.lower(), []).append(t)
    keys = []
    for column, having in holders.items():
        if len(having) < 2:
            continue
        repeated = [t for t in having if _repeats(db, t, column)]
        homes = [t for t in having if t not in repeated and _unique(db, t, column)]
        for source in repeated:
            if (source.qualified_name.lower(), column) in declared:
                continue
            holding = [home.qualified_name for home in homes if _share_found(db, source, home, column) >= KEY_SHARE]
            if len(holding) > 1:  # several tables hold every value (admissions and a summary of them): the entity's
                holding = [name for name in holding if name in entity_tables]
            if len(holding) == 1:
                name = next(c.name for c in source.columns if c.name.lower() == column)
                keys.append(f"{source.qualified_name}.{name} -> {holding[0]}.{name}")
    return keys


def draft_profile(db: Database, db_id: str) -> DatabaseProfile:
    """A first profile of ``db`` under the name ``db_id`` (see the module docstring for what is guessed and how)."""
    tables = read_schema(db).tables
    entities = _entities(db, tables)
    ids = {e.id_column.lower() for e in entities}
    times, values, latest = _columns(db, tables, ids)
    now = None
    if latest is not None and len(latest) >= 10:
        instant = latest if len(latest) == 19 else (latest[:10] + " 23:59:59")
        if instant > datetime.now().strftime("%Y-%m-%d %H:%M:%S"):
            now = instant.replace("T", " ")
    person_ids = tuple(e.id_column for e in entities if e.name == "patient")
    return DatabaseProfile(db_id, f"Drafted by `ehrguard db profile` from {db.name}: check every line", db.dialect, now, entities,
                           person_ids=person_ids, time_columns=tuple(times), value_columns=tuple(values),
                           foreign_keys=tuple(_keys(db, tables, {e.table for e in entities})))


__all__ = ["ENTITY_WORDS", "draft_profile"]
