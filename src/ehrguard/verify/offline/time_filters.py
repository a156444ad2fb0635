"""Calendar filters: the periods a question states ("since 2 years ago", "in 03/2100", "this month", "yesterday",
"on 06/13/this year") and the same filters as EHRSQL-style SQL writes them, each a :class:`TimeFilter` that renders
for any time column.

The known forms (:mod:`.forms`) turn a question's period into a slot with these, and the alignment check
(:mod:`ehrguard.verify.checks.alignment`) compares the period a question states with the one its SQL filters on.
The phrases are general English calendar expressions; "now" is the databases' fixed present (``NOW``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ehrguard.evaluation.execution_match import NOW


@dataclass(frozen=True)
class TimeFilter:
    """A calendar filter a question states ("since 2 years ago", "in 03/2100", "this month", "yesterday"),
    rendered for any time column the way EHRSQL-style SQL writes it."""

    kind: str  # "ago", "calendar" or "absolute"
    unit: str = ""  # year / month / day (ago, calendar)
    amount: int = 0  # how many units back (ago, calendar)
    fmt: str = ""  # strftime format after '%' (absolute; calendar's extra part)
    op: str = "="  # absolute and ago: = (in, on), >= (since), <= (until)
    value: str = ""

    def render(self, column: str) -> str:
        if self.kind == "ago":
            return f"datetime({column}) {self.op} datetime('{NOW}','-{self.amount} {self.unit}')"
        if self.kind == "calendar":
            sql = f"datetime({column},'start of {self.unit}') = datetime('{NOW}','start of {self.unit}','-{self.amount} {self.unit}')"
            return sql + (f" AND strftime('%{self.fmt}',{column}) = '{self.value}'" if self.fmt else "")
        return f"strftime('%{self.fmt}',{column}) {self.op} '{self.value}'"


def _two(d: str) -> str:
    return d.zfill(2)


def _back(word: str) -> int:
    return 0 if word == "this" else 1


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH = "(" + "|".join(_MONTHS) + ")"
_OP = {"since": ">=", "until": "<="}  # "in", "on": =
_BACK = r"(this|last|previous)"  # "this year" is 0 years back; "last year", "the previous year" 1


def _month(name: str) -> str:
    return f"{_MONTHS.index(name) + 1:02d}"


# Question phrases, most specific first (on a canonical question with numbers as digits).
_TIME_PHRASES: list[tuple[re.Pattern[str], Any]] = [(re.compile(p), f) for p, f in (
    (r"\b(since|until) (\d+) (year|month|day)s? ago\b", lambda m: TimeFilter("ago", m[3], int(m[2]), op=_OP[m[1]])),
    (rf"\b(?:on |in )?(\d{{1,2}})/(\d{{1,2}})/{_BACK} year\b",
     lambda m: TimeFilter("calendar", "year", _back(m[3]), "m-%d", value=f"{_two(m[1])}-{_two(m[2])}")),
    (rf"\b(?:in )?(\d{{1,2}})/{_BACK} year\b", lambda m: TimeFilter("calendar", "year", _back(m[2]), "m", value=_two(m[1]))),
    (rf"\b(?:in )?{_MONTH} (?:of )?{_BACK} year\b", lambda m: TimeFilter("calendar", "year", _back(m[2]), "m", value=_month(m[1]))),
    (rf"\b(?:on )?{_BACK} month/(\d{{1,2}})\b", lambda m: TimeFilter("calendar", "month", _back(m[1]), "d", value=_two(m[2]))),
    (rf"\b{_BACK} (year|month)\b", lambda m: TimeFilter("calendar", m[2], _back(m[1]))),
    (r"\btoday\b", lambda m: TimeFilter("calendar", "day", 0)),
    (r"\byesterday\b", lambda m: TimeFilter("calendar", "day", 1)),
    (r"\b(in|on|since|until) (\d{1,2})/(\d{1,2})/(\d{4})\b",
     lambda m: TimeFilter("absolute", fmt="Y-%m-%d", op=_OP.get(m[1], "="), value=f"{m[4]}-{_two(m[2])}-{_two(m[3])}")),
    (r"\b(in|since|until) (\d{1,2})/(\d{4})\b",
     lambda m: TimeFilter("absolute", fmt="Y-%m", op=_OP.get(m[1], "="), value=f"{m[3]}-{_two(m[2])}")),
    (r"\b(in|since|until) (\d{4})\b", lambda m: TimeFilter("absolute", fmt="Y", op=_OP.get(m[1], "="), value=m[2])),
)]

_COL = r"(?P<col>(?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)"
_NOW_LIT = re.escape(f"'{NOW}'")
# The same filters as SQL writes them; group "col" is the column.
TIME_SQL: list[tuple[re.Pattern[str], Any]] = [(re.compile(p, re.IGNORECASE), f) for p, f in (
    ((rf"datetime\(\s*{_COL}\s*,\s*'start of (?P<unit>year|month|day)'\s*\)\s*=\s*datetime\(\s*{_NOW_LIT}\s*,\s*'start of (?P=unit)'"
     rf"\s*,\s*'-(?P<n>\d+) (?P=unit)'\s*\)(?:\s+AND\s+strftime\(\s*'%(?P<fmt>m-%d|m|d)'\s*,\s*(?P=col)\s*\)\s*=\s*'(?P<v>[\d-]+)')?"),
     lambda m: TimeFilter("calendar", m["unit"].lower(), int(m["n"]), m["fmt"] or "", value=m["v"] or "")),
    (rf"datetime\(\s*{_COL}\s*\)\s*(?P<op>>=|<=)\s*datetime\(\s*{_NOW_LIT}\s*,\s*'-(?P<n>\d+) (?P<unit>year|month|day)'\s*\)",
     lambda m: TimeFilter("ago", m["unit"].lower(), int(m["n"]), op=m["op"])),
    # EHRSQL's first release writes '%y' where SQLite means '%Y'.
    (rf"strftime\(\s*'%(?P<fmt>Y|Y-%m|Y-%m-%d)'\s*,\s*{_COL}\s*\)\s*(?P<op>=|>=|<=)\s*'(?P<v>[\d-]+)'",
     lambda m: TimeFilter("absolute", fmt="Y" + m["fmt"][1:], op=m["op"], value=m["v"])),
)]


def find_time_filter(q: str) -> tuple[TimeFilter, tuple[int, int]] | None:
    """The one calendar filter a canonical question states, and where; None for none or several."""
    hits: list[tuple[TimeFilter, tuple[int, int]]] = []
    for pattern, make in _TIME_PHRASES:
        for m in pattern.finditer(q):
            if all(m.end() <= a or b <= m.start() for _, (a, b) in hits):
                hits.append((make(m), (m.start(), m.end())))
    return hits[0] if len(hits) == 1 else None


def sql_time_filters(sql: str) -> list[tuple[TimeFilter, tuple[int, int], str]]:
    """Every calendar filter the SQL writes the EHRSQL way: the filter, where it is, and its column."""
    out: list[tuple[TimeFilter, tuple[int, int], str]] = []
    for pattern, make in TIME_SQL:
        for m in pattern.finditer(sql):
            if all(m.end() <= a or b <= m.start() for _, (a, b), _ in out):
                out.append((make(m), (m.start(), m.end()), m["col"]))
    return sorted(out, key=lambda hit: hit[1])
