"""The value index: does this literal exist in that column, and what is the nearest value that does?

The verification layer asks it about every literal a candidate query compares with a
text column (``d_labitems.label = 'single vessel'`` when the data only holds
``procedure on single vessel``). Distinct values are loaded once per column; fuzzy
lookup shortlists candidates through a character-trigram index, then ranks them with a
similarity that rewards both edit closeness and word containment.
"""

from __future__ import annotations

import difflib
import os
import re
import threading
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ehrguard.db.lexicon import Lexicon
from ehrguard.db.schema import read_schema
from ehrguard.errors import DatabaseError
from ehrguard.profiles import PROFILES

# Columns whose values questions name directly (the MIMIC-IV profile's value columns); others are indexed on demand.
DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = PROFILES["mimic_iv"].value_columns_by_table()

MAX_DISTINCT = 500_000  # a column with more distinct values than this is not indexed (free text)


@dataclass(frozen=True)
class Match:
    value: str
    score: float  # 0..1, 1 = identical


@dataclass(frozen=True)
class Lookup:
    table: str
    column: str
    literal: str
    exists: bool
    nearest: tuple[Match, ...]
    indexed: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "column": self.column,
            "literal": self.literal,
            "exists": self.exists,
            "indexed": self.indexed,
            "nearest": [m.__dict__ for m in self.nearest],
        }


def _trigrams(text: str) -> set[str]:
    padded = f"  {text} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def similarity(a: str, b: str) -> float:
    """Edit similarity blended with word overlap, so ``'single vessel'`` is close to ``'procedure on single vessel'``."""
    a_l, b_l = a.lower(), b.lower()
    ratio = difflib.SequenceMatcher(None, a_l, b_l).ratio()
    wa, wb = set(re.findall(r"\w+", a_l)), set(re.findall(r"\w+", b_l))
    containment = len(wa & wb) / len(wa) if wa else 0.0
    return max(ratio, 0.5 * ratio + 0.5 * containment)


class _ColumnIndex:
    def __init__(self, values: list[str]) -> None:
        self.values = values
        self.exact = set(values)
        self._grams: dict[str, list[int]] | None = None
        self._forms: dict[str, dict[str, str]] = {}  # "normal" / "lower" -> form -> the first value with it
        self._lock = threading.Lock()

    @property
    def grams(self) -> dict[str, list[int]]:
        """Trigram -> the values holding it, built on the first fuzzy lookup (most columns are only read whole)."""
        with self._lock:
            if self._grams is None:
                grams: dict[str, list[int]] = defaultdict(list)
                for i, v in enumerate(self.values):
                    for g in _trigrams(v.lower()):
                        grams[g].append(i)
                self._grams = grams
            return self._grams

    def forms(self, by: str) -> dict[str, str]:
        """Each :func:`~ehrguard.db.lexicon.normal_form` (``by="normal"``) or lower form (``"lower"``) of the values,
        with the first value that has it; built on first use."""
        from ehrguard.db.lexicon import lower_form, normal_forms

        with self._lock:
            table = self._forms.get(by)
            if table is None:
                table = {}
                for v, k in zip(self.values, normal_forms(self.values) if by == "normal" else map(lower_form, self.values), strict=True):
                    table.setdefault(k, v)
                self._forms[by] = table
            return table

    def nearest(self, literal: str, k: int) -> list[Match]:
        counts: dict[int, int] = defaultdict(int)
        for g in _trigrams(literal.lower()):
            for i in self.grams.get(g, ()):
                counts[i] += 1
        shortlist = sorted(counts, key=lambda i: -counts[i])[:200]
        scored = [Match(self.values[i], round(similarity(literal, self.values[i]), 4)) for i in shortlist]
        scored.sort(key=lambda m: (-m.score, m.value))
        return scored[:k]


class ValueIndex:
    """Distinct values of text columns of one database, loaded lazily and cached.

    A database built by ``ehrguard db build`` has a value lexicon beside it (:mod:`ehrguard.db.lexicon`):
    its columns are read from there, and :meth:`find` looks phrases up in it without loading any column.
    """

    def __init__(self, db: Any, *, lexicon_columns: list[tuple[str, str]] | None = None) -> None:
        """``lexicon_columns``: the (table, column) names its lexicon holds; when the lexicon is missing or stale
        (the database changed) and the database's folder is writable, it is written anew on first use."""
        self.db = db
        self._schema = read_schema(db)
        self._columns: dict[tuple[str, str], _ColumnIndex | None] = {}
        self._lock = threading.Lock()
        self._lexicon: Lexicon | None | bool = False  # False: not opened yet
        self._lexicon_lock = threading.Lock()
        self._lexicon_columns = lexicon_columns or []

    def _stored(self) -> Lexicon | None:
        """The database's current lexicon, or None (writing it first when it is missing or stale, see ``__init__``)."""
        with self._lexicon_lock:  # not self._lock: columns already loaded stay readable while a lexicon is written
            if self._lexicon is False:
                from ehrguard.db.lexicon import load_lexicon

                path = getattr(self.db, "path", None)
                self._lexicon = load_lexicon(path) if path is not None else None
                if self._lexicon is None and path is not None and self._lexicon_columns:
                    self._lexicon = self._rebuild(Path(path))
            return self._lexicon if isinstance(self._lexicon, Lexicon) else None

    def _drop_lexicon(self, exc: Exception) -> None:
        """A lexicon that fails to answer (a damaged file) is set aside, said once: the values come from the database."""
        import sys

        with self._lexicon_lock:
            if isinstance(self._lexicon, Lexicon):
                print(f"ehrguard: {exc}", file=sys.stderr)
                self._lexicon = None

    def _rebuild(self, path: Path) -> Lexicon | None:
        """Write the lexicon beside a database that has none for its current version, when its folder allows."""
        import sqlite3
        import sys
        import time

        from ehrguard.db.lexicon import build_lexicon, lexicon_path, load_lexicon

        if not os.access(lexicon_path(path).parent, os.W_OK):
            return None  # read-only: the values are read from the database; `ehrguard doctor` says how to fix it
        state = "stale (the database changed)" if lexicon_path(path).is_file() else "missing"
        started = time.perf_counter()
        try:
            build_lexicon(self.db, self._lexicon_columns, timeout_s=120)
        except (DatabaseError, OSError, sqlite3.Error) as exc:
            print(f"ehrguard: the value lexicon of {path} is {state} and could not be written ({exc}); the values are "
                  f"read from the database.", file=sys.stderr)
            return None
        print(f"ehrguard: the value lexicon of {path} was {state}: written anew in {time.perf_counter() - started:.1f} s.",
              file=sys.stderr)
        return load_lexicon(path)

    def _load(self, table: str, column: str) -> _ColumnIndex | None:
        key = (table.lower(), column.lower())
        with self._lock:
            if key in self._columns:
                return self._columns[key]
        t = self._schema.table(table)
        c = t.column(column) if t else None
        index: _ColumnIndex | None = None
        lexicon, name = self._stored(), f"{key[0]}.{key[1]}"
        stored: list[str] | None = None
        if lexicon is not None and lexicon.has(name) and lexicon.complete(name):
            try:
                stored = lexicon.values(name)
            except DatabaseError as exc:
                self._drop_lexicon(exc)
                lexicon = None
        if lexicon is not None and lexicon.has(name):  # the database's lexicon holds this column (all of it, or too many)
            index = _ColumnIndex(stored) if stored is not None else None
        elif t is not None and c is not None:
            q_table = t.qualified_name
            result = self.db.execute(
                f'SELECT DISTINCT CAST("{c.name}" AS TEXT) FROM {q_table} WHERE "{c.name}" IS NOT NULL',
                max_rows=MAX_DISTINCT,
                timeout_s=120,
            )
            if not result.truncated:
                index = _ColumnIndex([r[0] for r in result.rows])
        with self._lock:
            self._columns[key] = index
        return index

    def values(self, table: str, column: str) -> list[str]:
        index = self._load(table, column)
        return list(index.values) if index else []

    def distinct_count(self, table: str, column: str) -> int:
        """How many distinct values the column holds (0 when it has too many to index)."""
        lexicon, name = self._stored(), f"{table.lower()}.{column.lower()}"
        if lexicon is not None and lexicon.has(name):
            return lexicon.distinct_count(name)
        index = self._load(table, column)
        return len(index.values) if index else 0

    def find(self, columns: Iterable[tuple[str, str]], keys: Collection[str], *,
             by: str = "normal") -> dict[tuple[str, str], dict[str, str]]:
        """Which of ``keys`` the values of each column have, each with the first value that has it: ``by="normal"``
        compares :func:`~ehrguard.db.lexicon.normal_form`, ``by="lower"`` lower-cased values without surrounding
        spaces. A column too large to index holds none.

        Examples:
            >>> ValueIndex(db).find([("prescriptions", "drug")], {"heparin", "aspirin x"})  # doctest: +SKIP
            {('prescriptions', 'drug'): {'heparin': 'Heparin'}}
        """
        columns = list(dict.fromkeys(columns))
        lexicon = self._stored()
        names = {f"{t.lower()}.{c.lower()}": (t, c) for t, c in columns}
        try:
            stored = lexicon.find([n for n in names if lexicon.has(n)], keys, by=by) if lexicon is not None else {}
        except DatabaseError as exc:
            self._drop_lexicon(exc)
            stored = {}
        out: dict[tuple[str, str], dict[str, str]] = {}
        for name, (table, column) in names.items():
            if name in stored:
                out[(table, column)] = stored[name]
                continue
            index = self._load(table, column)
            forms = index.forms(by) if index is not None else {}
            out[(table, column)] = {k: forms[k] for k in keys if k in forms}
        return out

    def lookup(self, table: str, column: str, literal: str, *, k: int = 3) -> Lookup:
        """Is ``literal`` a value of ``table.column``? Also the ``k`` nearest values.

        Examples:
            >>> ValueIndex(db).lookup("d_labitems", "label", "single vessel")  # doctest: +SKIP
            Lookup(..., exists=False, nearest=(Match('procedure on single vessel', 0.77), ...))
        """
        index = self._load(table, column)
        if index is None:
            return Lookup(table, column, literal, exists=False, nearest=(), indexed=False)
        exists = literal in index.exact
        nearest = () if exists else tuple(index.nearest(literal, k))
        return Lookup(table, column, literal, exists=exists, nearest=nearest)

    def find_column(self, literal: str, *, tables: dict[str, tuple[str, ...]] | None = None) -> list[tuple[str, str]]:
        """Which indexed columns hold ``literal`` exactly (to say where a value really lives)."""
        hits = []
        for table, columns in (tables or DEFAULT_COLUMNS).items():
            if self._schema.table(table) is None:
                continue
            for column in columns:
                index = self._load(table, column)
                if index is not None and literal in index.exact:
                    hits.append((table, column))
        return hits
