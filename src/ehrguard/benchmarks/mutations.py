"""``ehrguard bench mutations``: a generated safety set, from question/gold-SQL pairs the rules were not written on.

Each answerable pair of an EHRSQL split becomes a *correct* case (its gold SQL as the candidate) and, for every
mutation that applies to its SQL and changes what it returns on the database, a *wrong* case (the mutated SQL as
the candidate, the gold SQL as gold). The mutations are the usual text-to-SQL mistakes: the other end of an order,
MIN for MAX, AVG for SUM, DISTINCT dropped, rows counted instead of patients, another value of the same column, a
value's case or spelling, a dropped filter, another time window, LIMIT 1 added, IS NULL negated, the machine clock,
a join on another entity's key, a stated id taken for another entity's, the patient's id condition dropped,
another field of the same table and type returned, an OFFSET dropped (the second to last value taken as the last).

The cases are scored like :mod:`ehrguard.benchmarks.safety` (unsafe, harmful, over-caution, fix rates). The set is
as large as the split allows and is drawn with a fixed seed; which split a number was measured on is part of it.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from ehrguard.benchmarks.safety import SafetyCase, _answer
from ehrguard.errors import DatabaseError, DatasetError
from ehrguard.evaluation.execution_match import NOW, normalize_gold

Mutation = Callable[[exp.Expression, random.Random, Any], exp.Expression | None]


def _parse(sql: str) -> exp.Expression:
    tree = sqlglot.parse_one(sql, read="sqlite")
    assert isinstance(tree, exp.Expression)  # sqlglot >= 30 types parse_one as its Expr base class
    return tree


def _copy_and(tree: exp.Expression, kind: tuple[type[exp.Expression], ...],
              change: Callable[[exp.Expression], bool]) -> exp.Expression | None:
    """A copy of ``tree`` with ``change`` applied to the first node of ``kind`` it accepts; None if none does."""
    tree = tree.copy()
    for node in tree.find_all(*kind):
        if change(node):
            return tree
    return None


def flip_order(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    def change(node: exp.Expression) -> bool:
        node.set("desc", not node.args.get("desc"))
        return True

    return _copy_and(tree, (exp.Ordered,), change)


def max_min(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    def change(node: exp.Expression) -> bool:
        node.replace((exp.Min if isinstance(node, exp.Max) else exp.Max)(this=node.this.copy()))
        return True

    return _copy_and(tree, (exp.Max, exp.Min), change)


def avg_sum(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    def change(node: exp.Expression) -> bool:
        node.replace((exp.Sum if isinstance(node, exp.Avg) else exp.Avg)(this=node.this.copy()))
        return True

    return _copy_and(tree, (exp.Avg, exp.Sum), change)


def drop_distinct(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    def change(node: exp.Expression) -> bool:
        if isinstance(node.this, exp.Distinct) and len(node.this.expressions) == 1:
            node.set("this", node.this.expressions[0].copy())
            return True
        return False

    return _copy_and(tree, (exp.Count,), change)


def count_rows(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    def change(node: exp.Expression) -> bool:
        if isinstance(node.this, exp.Distinct):
            node.set("this", exp.Star())
            return True
        return False

    return _copy_and(tree, (exp.Count,), change)


def _string_literals(tree: exp.Expression) -> list[tuple[exp.Column, exp.Literal]]:
    out = []
    for node in tree.find_all(exp.EQ):
        if isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Literal) and node.expression.is_string:
            if not node.this.name.lower().endswith("id") and re.search(r"[A-Za-z]", node.expression.this):
                out.append((node.this, node.expression))
    return out


def _with_literal(tree: exp.Expression, rng: random.Random, new_value: Callable[[exp.Column, exp.Literal, exp.Expression], str | None],
                  min_length: int = 1) -> exp.Expression | None:
    """A copy of ``tree`` with one of its text literals (drawn by ``rng``) replaced by ``new_value``; None if it has
    none, or ``new_value`` has nothing to put there."""
    tree = tree.copy()
    hits = [(c, lit) for c, lit in _string_literals(tree) if len(lit.this) >= min_length]
    if not hits:
        return None
    column, lit = rng.choice(hits)
    value = new_value(column, lit, tree)
    if value is None:
        return None
    lit.replace(exp.Literal.string(value))
    return tree


def other_value(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """Another value of the same column, from the database (a wrong drug, test or unit)."""

    def pick(column: exp.Column, lit: exp.Literal, tree: exp.Expression) -> str | None:
        tables = {(t.alias or t.name).lower(): t.name for t in tree.find_all(exp.Table)}
        table = tables.get(column.table.lower()) if column.table else (next(iter(tables.values())) if len(tables) == 1 else None)
        if table is None:
            return None
        try:
            rows = db.execute(f"SELECT DISTINCT {column.name} FROM {table} WHERE {column.name} IS NOT NULL LIMIT 400", timeout_s=10).rows
        except DatabaseError:  # a column the query names through an alias the generator cannot resolve
            return None
        values = sorted({str(r[0]) for r in rows if r[0] is not None and str(r[0]) != lit.this})
        return rng.choice(values) if values else None

    return _with_literal(tree, rng, pick)


def value_case(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    return _with_literal(tree, rng, lambda _c, lit, _t: lit.this.upper() if lit.this != lit.this.upper() else lit.this.lower())


def value_typo(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    def drop_one(_c: exp.Column, lit: exp.Literal, _t: exp.Expression) -> str:
        i = rng.randrange(1, len(lit.this) - 1)
        return lit.this[:i] + lit.this[i + 1:]

    return _with_literal(tree, rng, drop_one, min_length=6)


def drop_filter(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """One condition of an AND that compares a column with a text value, left out."""
    tree = tree.copy()
    for _, lit in _string_literals(tree):
        eq = lit.parent
        parent = eq.parent if eq is not None else None
        if isinstance(parent, exp.And):
            other = parent.expression if parent.this is eq else parent.this
            parent.replace(other.copy())
            return tree
    return None


def _id_columns() -> dict[str, str]:
    """Entity id column -> entity, over the built-in profiles (subject_id: patient, hadm_id: admission, ...)."""
    from ehrguard.profiles import PROFILES

    return {e.id_column: e.name for profile in PROFILES.values() for e in profile.entities}


def _other_id(table_columns: set[str], name: str, rng: random.Random) -> str | None:
    ids = _id_columns()
    others = sorted(c for c in ids if c in table_columns and ids.get(name) not in (None, ids[c]))
    return rng.choice(others) if others else None


def _columns_of(db: Any, table: str) -> set[str]:
    from ehrguard.db.schema import read_schema

    info = read_schema(db).table(table) if table else None
    return {c.name.lower() for c in info.columns} if info is not None else set()


def _table_of(tree: exp.Expression, column: exp.Column) -> str:
    """The table a column belongs to: its qualifier resolved through the query's aliases, else the query's one table."""
    names = {(t.alias or t.name).lower(): t.name.lower() for t in tree.find_all(exp.Table)}
    if column.table:
        return names.get(column.table.lower(), column.table.lower())
    scope = column.find_ancestor(exp.Select)
    tables = {t.name.lower() for t in scope.find_all(exp.Table)} if scope is not None else set()
    return next(iter(tables)) if len(tables) == 1 else ""


def _swap_id(tree: exp.Expression, column: exp.Column, rng: random.Random, db: Any) -> bool:
    """Rename an entity id column to another entity's id column of the same table (drawn by ``rng``); False if none."""
    other = _other_id(_columns_of(db, _table_of(tree, column)), column.name.lower(), rng)
    if other is None:
        return False
    column.set("this", exp.to_identifier(other))
    return True


def join_key(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """A link between two tables on the wrong key: one side's patient / admission / stay id swapped for another's."""
    def change(node: exp.Expression) -> bool:
        query = node.args.get("query") if isinstance(node, exp.In) else None
        if isinstance(node, exp.In):
            select = query.this if isinstance(query, exp.Subquery) else query
            side = select.expressions[0] if isinstance(select, exp.Select) and len(select.expressions) == 1 else None
        else:
            side = node.expression if isinstance(node.this, exp.Column) else None
        return isinstance(side, exp.Column) and side.name.lower() in _id_columns() and _swap_id(tree, side, rng, db)

    return _copy_and(tree, (exp.EQ, exp.In), change)


def id_kind(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """A stated id compared with another entity's id column: the patient's number taken for an admission's."""
    def change(node: exp.Expression) -> bool:
        col, lit = node.this, node.expression
        return (isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and col.name.lower() in _id_columns()
                and _swap_id(tree, col, rng, db))

    return _copy_and(tree, (exp.EQ,), change)


def drop_id_filter(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """The condition naming the patient (or visit) left out of an AND: every patient's records."""
    tree = tree.copy()
    for node in tree.find_all(exp.EQ):
        col, parent = node.this, node.parent
        if isinstance(col, exp.Column) and isinstance(node.expression, exp.Literal) and col.name.lower() in _id_columns() \
                and isinstance(parent, exp.And):
            other = parent.expression if parent.this is node else parent.this
            parent.replace(other.copy())
            return tree
    return None


def other_column(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """The field returned swapped for another of its table with the same declared type (the admission time for the
    discharge time, the drug for its route)."""
    from ehrguard.db.schema import read_schema

    tree = tree.copy()
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return None
    for projection in select.expressions:
        col = projection.this if isinstance(projection, exp.Alias) else projection
        if not isinstance(col, exp.Column) or col.name.lower().endswith("id"):
            continue
        table = _table_of(tree, col)
        info = read_schema(db).table(table) if table else None
        mine = info.column(col.name) if info is not None else None
        if info is None or mine is None:
            continue
        kind = mine.type.split("(")[0].lower()
        peers = sorted(c.name for c in info.columns if c.type.split("(")[0].lower() == kind and c.name.lower() != col.name.lower()
                       and not c.name.lower().endswith("id"))
        if peers:
            col.set("this", exp.to_identifier(rng.choice(peers)))
            return tree
    return None


def time_window(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """Another calendar window: one year or month further back, or another year."""
    sql = tree.sql(dialect="sqlite")
    shifted = re.sub(r"'-(\d+) (year|month|day)'", lambda m: f"'-{int(m[1]) + 1} {m[2]}'", sql, count=1)
    if shifted == sql:
        shifted = re.sub(r"'(2\d{3})'", lambda m: f"'{int(m[1]) - 1}'", sql, count=1)
    return _parse(shifted) if shifted != sql else None


def add_limit(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    if not isinstance(tree, exp.Select) or tree.args.get("limit") is not None:
        return None
    return tree.copy().limit(1)


def negate_null(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    tree = tree.copy()
    for node in tree.find_all(exp.Is):
        if isinstance(node.expression, exp.Null):
            if isinstance(node.parent, exp.Not):
                node.parent.replace(node.copy())
            else:
                node.replace(exp.Not(this=node.copy()))
            return tree
    return None


def machine_clock(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    sql = tree.sql(dialect="sqlite")
    changed = sql.replace(f"'{NOW}'", "'now'", 1)
    return _parse(changed) if changed != sql else None


def drop_offset(tree: exp.Expression, rng: random.Random, db: Any) -> exp.Expression | None:
    """The place in an order lost: ``LIMIT 1 OFFSET 1`` ("the second to last value") taken as ``LIMIT 1``."""
    tree = tree.copy()
    for select in tree.find_all(exp.Select):
        if select.args.get("offset") is not None:
            select.set("offset", None)
            return tree
    return None


MUTATIONS: dict[str, Mutation] = {
    "order_direction": flip_order, "min_max": max_min, "avg_sum": avg_sum, "distinct_dropped": drop_distinct,
    "rows_not_patients": count_rows, "other_value": other_value, "value_case": value_case, "value_spelling": value_typo,
    "missing_filter": drop_filter, "time_window": time_window, "limit_added": add_limit, "null_negated": negate_null,
    "machine_clock": machine_clock, "join_key": join_key, "id_kind": id_kind, "id_filter_dropped": drop_id_filter,
    "other_column": other_column, "offset_dropped": drop_offset,
}


def generate_cases(pairs: list[tuple[str, str]], db: Any, db_id: str, *, seed: int = 0, per_kind: int = 60, correct: int = 300,
                   max_pairs: int | None = None) -> Iterator[SafetyCase]:
    """Correct cases (gold as candidate, at most ``correct``) and wrong ones (at most ``per_kind`` per mutation)
    from ``pairs`` (the first ``max_pairs`` of them in a seeded order); a mutation is kept only when it runs and
    answers differently."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    order = order[:max_pairs] if max_pairs is not None else order
    counts = dict.fromkeys(MUTATIONS, 0)
    kept_correct = 0
    for i in order:
        question, gold = pairs[i]
        try:
            tree = _parse(gold)
        except sqlglot.errors.SqlglotError:
            continue
        gold_answer = _answer(db, gold)
        if gold_answer is None:
            continue
        if kept_correct < correct:
            kept_correct += 1
            yield SafetyCase(f"{db_id}-{i}-gold", db_id, "correct", "gold", question, gold, gold)
        for name, mutate in MUTATIONS.items():
            if counts[name] >= per_kind:
                continue
            mutated = mutate(tree, random.Random(f"{seed}-{i}-{name}"), db)
            if mutated is None:
                continue
            sql = mutated.sql(dialect="sqlite")
            answer = _answer(db, sql)
            if answer is None or answer == gold_answer:
                continue
            counts[name] += 1
            yield SafetyCase(f"{db_id}-{i}-{name}", db_id, "wrong", name, question, sql, gold)
        if kept_correct >= correct and all(c >= per_kind for c in counts.values()):
            return




SPLITS = {("mimic_iv", "train"), ("mimic_iv", "valid"), ("eicu", "valid")}


def split_pairs(db_id: str, split: str, data_dir: str | Path) -> list[tuple[str, str]]:
    """The answerable (question, gold SQL) pairs of one EHRSQL split: EHRSQL-2024 for MIMIC-IV, EHRSQL for eICU; the
    gold SQL normalised as the reference scorers run it (the database's "now" for ``current_time``).

    Raises:
        DatasetError: the split is not one of :data:`SPLITS`, or its files are missing.
    """
    from ehrguard.benchmarks.ehrsql import ehrsql_pairs

    if (db_id, split) not in SPLITS:
        raise DatasetError(f"No {split} split for {db_id}; choose one of: " + ", ".join(f"{d} {s}" for d, s in sorted(SPLITS)) + ".")
    root = Path(data_dir)
    if db_id == "mimic_iv":
        folder = root / "ehrsql-2024" / "mimic_iv" / split
        if not (folder / "label.json").is_file():
            raise DatasetError(f"No EHRSQL-2024 {split} split at {folder}; set EHRGUARD_DATA_DIR to the folder holding ehrsql-2024/.")
        return [(q, normalize_gold(sql)) for q, sql in ehrsql_pairs(folder) if sql != "null"]
    path = root / "ehrsql" / "eicu" / "valid.json"
    if not path.is_file():
        raise DatasetError(f"No EHRSQL eICU split at {path}; set EHRGUARD_DATA_DIR to the folder holding ehrsql/.")
    return [(x["question"], normalize_gold(x["query"])) for x in json.loads(path.read_text())
            if x.get("query") and x["query"] != "null" and not x.get("is_impossible")]


__all__ = ["MUTATIONS", "SPLITS", "generate_cases", "split_pairs"]
