"""The bounds every query runs under: time, rows, bytes, memory, and the size of the SQL itself.

A row cap alone does not bound a result (200 rows of 5 MB blobs are a gigabyte), so a result is
also capped in bytes, counted while it is fetched, and each text or blob value is cut at
``max_value_bytes``. SQL is measured before any parser or engine sees it: its length, how deeply
its parentheses nest, how many set operations it chains and how many tokens it has. A parse or
plan step cannot be interrupted in every engine, so it is bounded by bounding its input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ehrguard.config import float_setting, int_setting
from ehrguard.errors import QueryTooLargeError

# No engine-side text or blob value may grow past this, whatever the result keeps of it: it bounds
# what one function call (printf, zeroblob, repeat, group_concat) can allocate.
ENGINE_VALUE_BYTES = 64 << 20

# Bounds on the shape of SQL. EHRSQL and SCARE gold queries nest at most about ten parentheses deep (sqlglot,
# which the checks parse with, runs out of stack near 48),
# chain a handful of set operations and have a few hundred tokens.
MAX_NESTING = 32
MAX_SET_OPERATIONS = 500
MAX_TOKENS = 50_000

# One pass over SQL text: strings, quoted and bracketed identifiers, comments, whitespace, and everything else in runs.
_LEXEME = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|`[^`]*`?|\[[^\]]*\]?|--[^\n]*|/\*.*?(?:\*/|\Z)|\s+|;|[^'\"`\[\s;/-]+|.",
                     re.DOTALL)
_SET_OPERATION = re.compile(r"\b(?:UNION|INTERSECT|EXCEPT)\b", re.IGNORECASE)
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class QueryLimits:
    """The limits of one query: wall-clock seconds, rows, bytes in all, and bytes per value."""

    timeout_s: float
    max_rows: int
    max_bytes: int
    max_value_bytes: int

    @classmethod
    def resolve(cls, timeout_s: float | None = None, max_rows: int | None = None) -> QueryLimits:
        """The arguments, checked against their settings' bounds, or the settings where an argument is None.

        Raises:
            ConfigError: a limit is not finite, not positive, or above its cap.
        """
        return cls(
            timeout_s=float_setting("query_timeout", timeout_s, source="timeout_s"),
            max_rows=int_setting("max_rows", max_rows, source="max_rows"),
            max_bytes=int_setting("max_result_bytes"),
            max_value_bytes=int_setting("max_value_bytes"),
        )


def check_sql_size(sql: str) -> None:
    """Refuse SQL too large or too deeply built to parse, check or plan in bounded time.

    Raises:
        QueryTooLargeError: the SQL is longer than ``max_sql_chars``, nests parentheses deeper than
            :data:`MAX_NESTING`, chains more than :data:`MAX_SET_OPERATIONS` set operations, or has
            more than :data:`MAX_TOKENS` tokens. The message names the limit.
    """
    limit = int_setting("max_sql_chars")
    if len(sql) > limit:
        raise QueryTooLargeError(
            f"The SQL is {len(sql):,} characters long; the limit is {limit:,} (EHRGUARD_MAX_SQL_CHARS). Shorten it."
        )
    bare = _bare(sql)
    depth = deepest = 0
    for char in bare:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > MAX_NESTING:
        raise QueryTooLargeError(f"The SQL nests parentheses {deepest} deep; the limit is {MAX_NESTING}. Flatten it.")
    chained = len(_SET_OPERATION.findall(bare))
    if chained > MAX_SET_OPERATIONS:
        raise QueryTooLargeError(
            f"The SQL chains {chained:,} UNION/INTERSECT/EXCEPT operations; the limit is {MAX_SET_OPERATIONS}. Split it."
        )
    tokens = len(_TOKEN.findall(bare))
    if tokens > MAX_TOKENS:
        raise QueryTooLargeError(f"The SQL has {tokens:,} tokens; the limit is {MAX_TOKENS:,}. Shorten it.")


def _bare(sql: str) -> str:
    """The SQL with every string and quoted identifier emptied and every comment a space: what is left is structure."""
    out = []
    for m in _LEXEME.finditer(sql):
        text = m.group(0)
        if text.startswith(("--", "/*")):
            out.append(" ")
        elif text[0] in "'\"`[":
            out.append("''")
        else:
            out.append(text)
    return "".join(out)


def statement_body(sql: str) -> str:
    """The statement without what trails its last token: whitespace, comments and semicolons (to wrap it in a subquery)."""
    end = 0
    for m in _LEXEME.finditer(sql):
        text = m.group(0)
        if not (text.isspace() or text == ";" or text.startswith(("--", "/*"))):
            end = m.end()
    return sql[:end]


_CONTROL = re.compile(r"[\x00-\x1f]")


def sent_size(value: str | bytes | bytearray) -> int:
    """Bytes a text or blob value takes as the JSON a result is sent in: UTF-8, a control character as \\uXXXX (6
    bytes), a quote or backslash escaped; a blob as hex text (2 per byte). Counting characters instead let a result
    of 16 MiB of characters go out as 94 MB."""
    if not isinstance(value, str):
        return 2 * len(value)
    controls = len(value) - len(_CONTROL.sub("", value))
    return len(value.encode("utf-8", "surrogatepass")) + 5 * controls + value.count('"') + value.count("\\")


def _bounded(row: Sequence[Any], cap: int) -> tuple[tuple[Any, ...], int, bool]:
    """The row with each text or blob value cut at ``cap`` characters or bytes, its size as sent (:func:`sent_size`), and
    whether a value was cut."""
    size, cut, values = 0, False, list(row)
    for i, value in enumerate(values):
        if isinstance(value, str | bytes | bytearray):
            if len(value) > cap:
                values[i], cut = value[:cap], True
            size += sent_size(values[i]) + 8
        else:
            size += 8 if value is None or isinstance(value, int | float) else len(str(value)) + 8
    return tuple(values), size, cut


def size_text(n: int) -> str:
    """A byte count in words: ``16 MiB``, ``64 KiB``, ``100,000 bytes`` (a unit only where it is exact)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} bytes"


def fetch_bounded(fetch: Callable[[int], Sequence[Sequence[Any]]], limits: QueryLimits) -> tuple[list[tuple[Any, ...]], str]:
    """Rows from ``fetch(n)`` (the next ``n`` rows, empty at the end) within the row and byte caps.

    Rows are fetched a few at a time, as many as the byte budget left allows at the largest row
    seen, so one huge row never arrives in the same batch as a thousand others.

    Returns:
        The rows kept and the reason they are incomplete ("" when the result is whole).
    """
    rows: list[tuple[Any, ...]] = []
    total, largest, batch, cut = 0, 64, 1, False
    while True:
        chunk = fetch(min(batch, limits.max_rows + 1 - len(rows)))
        if not chunk:
            break
        for raw in chunk:
            if len(rows) == limits.max_rows:
                return rows, _reason(f"there are more than {limits.max_rows:,} rows (the row cap); the first are shown", cut, limits)
            row, size, was_cut = _bounded(raw, limits.max_value_bytes)
            if total + size > limits.max_bytes:
                return rows, _reason(
                    f"the result is larger than {size_text(limits.max_bytes)} (EHRGUARD_MAX_RESULT_BYTES); the first "
                    f"{len(rows):,} rows are shown", cut or was_cut, limits)
            rows.append(row)
            total += size
            largest = max(largest, size)
            cut = cut or was_cut
        batch = max(1, min(512, (limits.max_bytes - total) // (4 * largest)))
    return rows, _reason("", cut, limits)


def _reason(first: str, cut: bool, limits: QueryLimits) -> str:
    parts = [first] if first else []
    if cut:
        parts.append(f"values longer than {size_text(limits.max_value_bytes)} were cut (EHRGUARD_MAX_VALUE_BYTES)")
    return "; ".join(parts)
