"""The period a question states, in any wording, against the period the SQL keeps, in any SQL form.

The question side reads general English time expressions (a preposition, an anchor that is "now" or a calendar date,
an amount and a unit: "in the past 30 days", "during March 2100", "since 03/05/2100", "between 2099 and 2100",
"before May 2100") into the intervals a reader could mean: "the past year" is the twelve months up to now or the
previous calendar year, "the last 7 days" may start at the moment seven days ago or at the start of that day. Only a
period anchored to now or to a date counts: one tied to an event ("in the first 24 hours of the stay", "in her last 3
days") or a question with two periods is left alone.

The SQL side never parses a date format: the query's conditions on one time column (whatever they call: strftime,
date(), julianday, BETWEEN, LIKE '2100-03%', EXTRACT, INTERVAL arithmetic) are asked of the database itself at probe
instants inside and around each reading. A query whose kept instants match no reading is an error; the repair writes
the question's period as plain bounds on the same column. The phrases were written from the grammar of temporal
expressions, not from a benchmark's questions; the EHRSQL-style wordings (:mod:`ehrguard.verify.offline.time_filters`)
are read as they are there, and a query that writes its window the EHRSQL way is left to
:func:`ehrguard.verify.checks.alignment.check_time_window`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import cast

import sqlglot
from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.evaluation.execution_match import NOW
from ehrguard.verify.checks.base import (
    NOTHING,
    TIME_NAME,
    CheckResult,
    SqlContext,
    TreeEdit,
    data_fact,
    drop_conjunct,
    found,
    quoted_names,
    visits_by_id,
)
from ehrguard.verify.checks.conventions import anchor_now
from ehrguard.verify.checks.ordinals import ORDINALS
from ehrguard.verify.checks.schema_refs import aliases
from ehrguard.verify.offline.forms import stated_time_filter, stated_time_phrase
from ehrguard.verify.offline.time_filters import TimeFilter, sql_time_filters
from ehrguard.verify.verdict import Finding

Interval = tuple[datetime | None, datetime | None]  # [start, end); None: open on that side

_UNIT = r"(?P<unit>minute|hour|day|week|month|year)s?"
_SMALL = ("a", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_AMOUNT = r"(?P<n>\d{1,4}|" + "|".join(_SMALL) + ")"
_MONTHS = tuple(m.lower() for m in calendar.month_name[1:])
_MONTH_NAME = r"(?:" + "|".join(_MONTHS) + "|" + "|".join(m[:3] for m in _MONTHS) + r")\.?"
_YEAR = r"(?:19|20|21)\d\d"
_LENGTH = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7),
           "month": timedelta(days=30), "year": timedelta(days=365)}
# A period tied to an event, not to now: "the last 3 days of the stay", "the past 24 hours before discharge".
_TIED = re.compile(r"\s+(?:of|after|before|following|preceding|prior to|since|from|until)\b")
_POSSESSIVE = re.compile(r"\b(?:his|her|their|its|patient's|patients')\s+$")
# Words that put a bare year in time ("in 2100", "since 2099"); a bare four-digit number elsewhere may be a dose.
_YEAR_CUE = r"(?:in|during|of|since|before|after|until|till|by|from|between|and|to|through|year)"


def _amount(word: str | None) -> int:
    """How many units a phrase counts ("a", "three", "30"); a written 0 counts as none (no period)."""
    if word is None:
        return 1
    n = int(word) if word.isdigit() else max(1, _SMALL.index(word))
    if n == 0:
        raise ValueError("a period of no length")
    return n


def _add(moment: datetime, unit: str, n: int) -> datetime:
    """``moment`` moved by ``n`` units (negative: back); months and years by the calendar, the day kept in range."""
    if unit in ("month", "year"):
        months = moment.year * 12 + moment.month - 1 + n * (12 if unit == "year" else 1)
        year, month = divmod(months, 12)
        day = min(moment.day, calendar.monthrange(year, month + 1)[1])
        return moment.replace(year=year, month=month + 1, day=day)
    return moment + timedelta(**{unit + "s": n})


def _back(now: datetime, unit: str, n: int) -> list[datetime]:
    """``now`` moved ``n`` units back: a day past the month's end is clamped to it (Python, PostgreSQL, DuckDB) or rolled
    into the next month (SQLite's ``datetime(now, '-22 month')`` on the 31st); both, when they differ."""
    clamped = _add(now, unit, -n)
    if unit not in ("month", "year") or clamped.day == now.day:
        return [clamped]
    return [clamped, clamped + timedelta(days=now.day - clamped.day)]


def _day(moment: datetime) -> datetime:
    return datetime(moment.year, moment.month, moment.day)


def _start_of(moment: datetime, unit: str) -> datetime:
    if unit == "year":
        return datetime(moment.year, 1, 1)
    if unit == "month":
        return datetime(moment.year, moment.month, 1)
    if unit == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    if unit == "minute":
        return moment.replace(second=0, microsecond=0)
    return _day(moment)


def _week_starts(moment: datetime) -> list[datetime]:
    """The start of the week ``moment`` is in, for weeks that start on Monday and on Sunday."""
    return [_day(moment) - timedelta(days=moment.weekday()), _day(moment) - timedelta(days=(moment.weekday() + 1) % 7)]


def _past(now: datetime, unit: str, n: int, counted: bool) -> list[Interval]:
    """The readings of "the past n units" up to now. ``counted``: the amount was written ("the past 3 months")."""
    moments = _back(now, unit, n)
    readings: list[Interval] = [(m, None) for m in moments]  # rolling: from the same moment n units back
    if unit in ("day", "week", "month", "year"):
        readings += [(_day(m), None) for m in moments]  # from the start of that day
        days = n * 7 if unit == "week" else n
        readings.append((_day(_add(now, "day", -days + 1)) if unit in ("day", "week") else _start_of(_add(now, unit, -n + 1), unit), None))
    if unit in ("month", "year"):
        this = _start_of(now, unit)
        readings.append((_add(this, unit, -n), this))  # the n complete calendar units before this one
    if unit == "week":
        readings += [(s - timedelta(days=7 * n), s) for s in _week_starts(now)]  # complete calendar weeks
    return readings


@dataclass(frozen=True)
class Period:
    """A calendar period a date names: its first instant and the first instant after it."""

    start: datetime
    end: datetime


def _period(year: int, month: int | None = None, day: int | None = None) -> Period | None:
    try:
        if day is not None and month is not None:
            start = datetime(year, month, day)
            return Period(start, start + timedelta(days=1))
        if month is not None:
            start = datetime(year, month, 1)
            return Period(start, _add(start, "month", 1))
        return Period(datetime(year, 1, 1), datetime(year + 1, 1, 1))
    except ValueError:  # 02/30, month 13: not a date
        return None


def _part_of_year(year: int, part: str, parts: int) -> Period | None:
    """A half (``parts`` 2) or a quarter (4) of a year, counted from its start ("last" is the final one)."""
    n = parts if part == "last" else ORDINALS.get(part, int(part) if part.isdigit() else 0)
    if not 1 <= n <= parts:
        return None
    start = datetime(year, 1 + (n - 1) * 12 // parts, 1)
    return Period(start, _add(start, "month", 12 // parts))


def _instant(year: int, month: int, day: int, hour: int, minute: int) -> Period | None:
    """The minute a date and a time of day name ("2100-08-12 18:00")."""
    try:
        start = datetime(year, month, day, hour, minute)
    except ValueError:
        return None
    return Period(start, start + timedelta(minutes=1))


def _month_number(name: str) -> int:
    name = name.rstrip(".")[:3]
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name))


# Dates, most specific first; each yields the periods the words can mean (02/03/2100 read either way round).
_DATES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], list[Period | None]]]] = [(re.compile(p), f) for p, f in (
    (rf"\b(?P<y>{_YEAR})-(?P<m>\d\d)-(?P<d>\d\d)(?:t| |,? at )(?P<h>\d{{1,2}}):(?P<mi>\d\d)(?::\d\d)?\b",
     lambda m: [_instant(int(m["y"]), int(m["m"]), int(m["d"]), int(m["h"]), int(m["mi"]))]),
    (rf"\b(?P<y>{_YEAR})-(?P<m>\d\d)-(?P<d>\d\d)\b", lambda m: [_period(int(m["y"]), int(m["m"]), int(m["d"]))]),
    (rf"\b(?P<a>\d{{1,2}})/(?P<b>\d{{1,2}})/(?P<y>{_YEAR})\b",
     lambda m: [_period(int(m["y"]), int(m["a"]), int(m["b"])), _period(int(m["y"]), int(m["b"]), int(m["a"]))]),
    (rf"\b(?P<mn>{_MONTH_NAME}) (?P<d>\d{{1,2}})(?:st|nd|rd|th)?,? (?P<y>{_YEAR})\b",
     lambda m: [_period(int(m["y"]), _month_number(m["mn"]), int(m["d"]))]),
    (rf"\b(?:the )?(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<mn>{_MONTH_NAME}),? (?P<y>{_YEAR})\b",
     lambda m: [_period(int(m["y"]), _month_number(m["mn"]), int(m["d"]))]),
    (rf"\b(?P<y>{_YEAR})-(?P<m>\d\d)\b(?!-)", lambda m: [_period(int(m["y"]), int(m["m"]))]),
    (rf"\b(?P<m>\d{{1,2}})/(?P<y>{_YEAR})\b", lambda m: [_period(int(m["y"]), int(m["m"]))]),
    (rf"\b(?P<mn>{_MONTH_NAME}),? (?:of )?(?P<y>{_YEAR})\b", lambda m: [_period(int(m["y"]), _month_number(m["mn"]))]),
    # halves and quarters of a year: "the first half of 2100", "the last quarter of 2100", "Q3 2100", "2100 Q3"
    (rf"\b(?:the )?(?P<p>first|second|1st|2nd|last) half of (?:the year )?(?P<y>{_YEAR})\b",
     lambda m: [_part_of_year(int(m["y"]), m["p"], 2)]),
    (rf"\b(?:the )?(?P<p>first|second|third|fourth|1st|2nd|3rd|4th|last) quarter of (?:the year )?(?P<y>{_YEAR})\b",
     lambda m: [_part_of_year(int(m["y"]), m["p"], 4)]),
    (rf"\bq(?P<p>[1-4]),? (?:of )?(?P<y>{_YEAR})\b|\b(?P<y2>{_YEAR}),? q(?P<p2>[1-4])\b",
     lambda m: [_part_of_year(int(m["y"] or m["y2"]), m["p"] or m["p2"], 4)]),
    (rf"\b{_YEAR_CUE} (?P<date>(?:the year )?(?P<y>{_YEAR}))\b(?![-/]|\s*(?:mg|mcg|ml|g|units?|kg|cc|%))",
     lambda m: [_period(int(m["y"]))]),
)]


@dataclass(frozen=True)
class StatedWindow:
    """The one period a question states: the words, the intervals they can mean (any one of them is right), and how
    near an end a query's bound may fall and still read the same (365 days for "the past year", March 31 00:00 as
    the end of March)."""

    phrase: str
    readings: tuple[Interval, ...]
    tolerance: timedelta
    ehrsql: TimeFilter | None = None  # the EHRSQL-style reading, when that reader has one: the repair writes it so


def _dates_in(text: str) -> list[tuple[list[Period], tuple[int, int]]]:
    """Every date in ``text`` with the periods it can mean, the most specific reading where they overlap."""
    hits: list[tuple[list[Period], tuple[int, int]]] = []
    for pattern, make in _DATES:
        for m in pattern.finditer(text):
            start, end = m.span("date") if "date" in pattern.groupindex else m.span()  # the cue word is not the date
            if all(end <= a or b <= start for _, (a, b) in hits):
                periods = [p for p in make(m) if p is not None]
                if periods:
                    hits.append((list(dict.fromkeys(periods)), (start, end)))
    return sorted(hits, key=lambda h: h[1])


_AROUND = re.compile(rf"\b{_AMOUNT} {_UNIT} (?P<rel>before|after|preceding|following|prior to|leading up to|up to|from) $")
def mask_dates(text: str) -> str:
    """``text`` with every date it writes blanked out (same length; "2100-03-19", "March 5, 2100", "03/2100")."""
    for _, (a, b) in _dates_in(text.lower()):
        text = text[:a] + " " * (b - a) + text[b:]
    return text


_BEFORE = re.compile(r"\b(?:before|until|till|through|prior to|up to|no later than)\s*$")  # "by 2105" may mean "within"
_AFTER = re.compile(r"\b(?:since|after|from|starting|beginning|as of|no earlier than)\s*$")
_BETWEEN = re.compile(r"\b(?:between|from) (.+?) (?:and|to|until|till|through) (.+)$")


def _date_readings(prefix: str, periods: list[Period]) -> list[Interval]:
    """What "<prefix> <date>" keeps: the period itself (in, on, during), from it on (since, after) or up to it
    (before, until); "after" and "until" may or may not take in the period itself."""
    readings: list[Interval] = []
    after, before = _AFTER.search(prefix), _BEFORE.search(prefix)
    for p in periods:
        if after:
            strict = after[0].startswith("after") and not re.search(r"\bor after\s*$", prefix)
            readings += [(p.start, None)] + ([(p.end, None)] if strict else [])
        elif before:  # "before May" leaves May out; "until May", "on or before May" take it in
            strict = before[0].startswith("before") and not re.search(r"\bor before\s*$", prefix)
            readings += [(None, p.start)] + ([] if strict else [(None, p.end)])
        else:
            readings.append((p.start, p.end))
    return readings


# A day or month named without its year ("the 30th", "April 19", "in March"): part of a period read elsewhere.
_PARTIAL_DATE = re.compile(rf"\b\d{{1,2}}:\d\d\b|\b\d{{1,2}}(?:st|nd|rd|th)\b|\b{_MONTH_NAME} \d{{1,2}}\b|\b\d{{1,2}} {_MONTH_NAME}"
                           rf"|\b(?:in|of|during|since|until|till|through|before|after|between|from) {_MONTH_NAME}(?! \d)"
                           r"|\b\d{1,2}/\d{1,2}\b(?!/)")

_DAY_OF = re.compile(rf"\b(?:on )?(?:the (?P<d>\d{{1,2}})(?:st|nd|rd|th)?|(?P<mn>{_MONTH_NAME}) (?P<d2>\d{{1,2}})(?:st|nd|rd|th)?) "
                     r"(?:of|from|in) (?:the )?(?P<back>this|last|previous) (?P<unit>month|year)\b")

Hit = tuple[list[Interval], tuple[int, int], timedelta]


def _relative(q: str, now: datetime) -> list[Hit]:
    """Periods anchored to now: "in the past 30 days", "over the last year", "within the previous 24 hours",
    "this month", "today", "yesterday". A period tied to an event is a hit with no reading (the question is left alone)."""
    hits: list[Hit] = []
    # a day of this or last month or year: "on the 30th of this month", "on April 19 of last year"
    for m in _DAY_OF.finditer(q):
        unit = "month" if m["unit"] == "month" else "year"
        base = _add(_start_of(now, unit), unit, 0 if m["back"] == "this" else -1)
        month = _month_number(m["mn"]) if m["mn"] else base.month
        if (m["unit"] == "month") == bool(m["mn"]) or (p := _period(base.year, month, int(m["d"] or m["d2"]))) is None:
            continue  # "April 19 of this month" names no one day
        hits.append(([(p.start, p.end)], m.span(), _LENGTH["day"]))
    rolling = re.compile(rf"\b(?P<prep>(?:in|during|within|over|for) )?(?:the )?(?P<word>last|past|previous|preceding|recent) "
                         rf"(?:{_AMOUNT} )?{_UNIT}\b")
    for m in rolling.finditer(q):
        if any(a <= m.start() < b for _, (a, b), _ in hits):
            continue
        if m["word"] == "last" and not m["n"] and not m["prep"]:
            continue  # "the last day he was in the unit" is a day, not a period; "last year" alone is read below
        n = _amount(m["n"])
        tied = bool(_TIED.match(q, m.end()) or _POSSESSIVE.search(q[: m.start()]))
        hits.append(([] if tied else _past(now, m["unit"], n, m["n"] is not None), m.span(), _LENGTH[m["unit"]] * n))
    # "since last month", "since yesterday": from the start of that unit (or a unit ago) up to now
    for m in re.finditer(r"\bsince (?:(?:the )?(?:last|previous) (?P<unit>week|month|year)|(?P<day>yesterday))\b", q):
        if any(a <= m.start() < b for _, (a, b), _ in hits):
            continue
        unit = m["unit"] or "day"
        starts = [s - timedelta(days=7) for s in _week_starts(now)] if unit == "week" else [_add(_start_of(now, unit), unit, -1)]
        hits.append(([(s, None) for s in starts + _back(now, unit, 1)], m.span(), _LENGTH[unit]))
    # "3 days ago", "2 months ago" (not "since 2 months ago": the EHRSQL-style reader reads that): that day or month
    for m in re.finditer(rf"(?<!since )(?<!until )(?<!before )(?<!after )(?<!from )\b{_AMOUNT} {_UNIT} ago\b", q):
        if any(a <= m.start() < b for _, (a, b), _ in hits) or m["unit"] in ("minute", "hour", "week"):
            continue
        n, unit = _amount(m["n"]), m["unit"]
        back = _start_of(_add(now, unit, -n), unit)
        hits.append(([(back, _add(back, unit, 1))], m.span(), _LENGTH[unit]))
    for m in re.finditer(r"\b(?:today|yesterday|(?:this|the current|so far this) (?P<unit>day|week|month|year))\b", q):
        if any(a <= m.start() < b for _, (a, b), _ in hits):
            continue
        if m[0] == "yesterday":
            day = _day(now) - timedelta(days=1)
            hits.append(([(day, day + timedelta(days=1))], m.span(), _LENGTH["day"]))
            continue
        unit = m["unit"] or "day"
        starts = _week_starts(now) + [_day(now) - timedelta(days=6)] if unit == "week" else [_start_of(now, unit)]
        hits.append(([(s, None) for s in starts], m.span(), _LENGTH[unit]))
    return hits


def _from_time_filter(f: TimeFilter, now: datetime) -> list[Interval]:
    """The EHRSQL-style reading of a question's period (:mod:`.time_filters`) as intervals."""
    if f.kind == "ago":
        starts = _back(now, f.unit, f.amount)
        readings: list[Interval] = []
        for s in starts:
            readings += [(s, None), (_day(s), None)] if f.op == ">=" else [(None, s), (None, _day(s) + timedelta(days=1))]
        return readings
    if f.kind == "calendar":
        start = _add(_start_of(now, f.unit), f.unit, -f.amount)
        end = _add(start, f.unit, 1)
        try:
            if f.fmt == "m":
                start = start.replace(month=int(f.value))
                end = _add(start, "month", 1)
            elif f.fmt in ("d", "m-%d"):
                *month, day = (int(v) for v in f.value.split("-"))
                start = start.replace(month=month[0] if month else start.month, day=day)
                end = start + timedelta(days=1)
        except ValueError:
            return []
        return [(start, end)]
    period = _period(*[int(v) for v in f.value.split("-")][:3])
    if period is None:
        return []
    bounds: dict[str, Interval] = {"=": (period.start, period.end), ">=": (period.start, None), "<=": (None, period.end)}
    return [bounds[f.op]] if f.op in bounds else []


def stated_window(question: str, now: str | None) -> StatedWindow | None:
    """The one period the question states and its readings; None for none, several, one tied to an event, or one no
    calendar holds ("the past 9999 years", "between 2199 and 1900", "the last 0 days"). Periods relative to now are
    read only for a database with its own fixed "now"."""
    try:
        window = _stated_window(question, now)
    except (ValueError, OverflowError):  # a date before year 1 or past 9999
        return None
    if window is None:
        return None
    readings = tuple(r for r in window.readings if r[0] is None or r[1] is None or r[0] < r[1])
    return StatedWindow(window.phrase, readings, window.tolerance, window.ehrsql) if readings else None


def _stated_window(question: str, now: str | None) -> StatedWindow | None:
    q = re.sub(r"\s+", " ", question.lower()).strip().rstrip("?.!")
    moment = datetime.fromisoformat(now) if now else None
    hits: list[Hit] = []
    between = _BETWEEN.search(q)
    if between:
        # "in " lets a bare year count as a date there ("between 2099 and 2100")
        start_text = between[1]
        first, second = _dates_in("in " + start_text), _dates_in("in " + between[2])
        year = re.search(r"\b\d{4}\b", between[2])
        if not first and year and re.fullmatch(rf"{_MONTH_NAME}(?: \d{{1,2}}(?:st|nd|rd|th)?)?|\d{{1,2}}(?:st|nd|rd|th)? {_MONTH_NAME}",
                                                start_text):
            # "between Dec 1 and Dec 7 2100", "from March to May 2100": the year is said once, for both
            start_text = f"{start_text} {year[0]}"
            first = _dates_in("in " + start_text)
        if len(first) == 1 and first[0][1] == (3, 3 + len(start_text)) and second and second[0][1][0] == 3:
            length = min(p.end - p.start for p in first[0][0] + second[0][0])
            hits.append(([(a.start, b.end) for a in first[0][0] for b in second[0][0]],
                         (between.start(), between.start(2) + second[0][1][1] - 3), length))
    if moment is not None:
        hits += [h for h in _relative(q, moment) if all(h[1][1] <= a or b <= h[1][0] for _, (a, b), _ in hits)]
    for periods, (a, b) in _dates_in(q):
        if all(b <= s or e <= a for _, (s, e), _ in hits):
            around = _AROUND.search(q[:a])
            if around:  # "in the 2 weeks before 2100-08-27": a span reaching back or on from the date
                n, unit = _amount(around["n"]), around["unit"]
                back = around["rel"] in ("before", "preceding", "prior to", "leading up to", "up to")
                reach: list[Interval] = []
                for edge in [p.start for p in periods] + [p.end for p in periods]:
                    reach.append((_add(edge, unit, -n), edge) if back else (edge, _add(edge, unit, n)))
                hits.append((reach, (around.start(), b), _LENGTH[unit] * n))
                continue
            hits.append((_date_readings(q[:a], periods), (a, b), min(p.end - p.start for p in periods)))
    ehrsql = stated_time_phrase(question) if moment is not None else None
    old = ehrsql[0] if ehrsql is not None else None
    unplaced = [m for m in _PARTIAL_DATE.finditer(q) if all(e <= m.start() or m.end() <= s for _, (s, e), _ in hits)]
    if unplaced and (old is None or not old.fmt):
        return None  # "on the 30th of this month", "on April 19 from last year": a day these readings do not place
    if ehrsql is not None and moment is not None and not hits:  # an EHRSQL-style wording only that reader knows
        assert old is not None
        length = _LENGTH.get(old.unit, _LENGTH["day"]) * max(old.amount, 1)
        return StatedWindow(ehrsql[1], tuple(_from_time_filter(old, moment)), length, old)
    if len(hits) != 1 or not hits[0][0]:
        return None
    readings, (a, b), length = hits[0]
    if ehrsql is not None and moment is not None and _same_words(ehrsql[1], q[a:b]):
        # how the EHRSQL-style reader reads the same words; only that, where it reads a day or month in them we do not
        theirs = _from_time_filter(ehrsql[0], moment)
        if ehrsql[0].kind == "calendar" and ehrsql[0].fmt and theirs:
            return StatedWindow(ehrsql[1], tuple(theirs), length, old)
        readings = readings + theirs
    return StatedWindow(q[a:b], tuple(dict.fromkeys(readings)), length, old)


def _same_words(theirs: str, ours: str) -> bool:
    """The EHRSQL-style reader's phrase is ours, or holds ours ("this month" is not a reading of "the 30th of this
    month", nor "yesterday" of "since yesterday")."""
    def bare(text: str) -> str:
        return re.sub(r"^(?:in|on|during|the) ", "", text.strip())
    return bare(ours) in bare(theirs)


# --- the SQL side ---------------------------------------------------------------------------------------------------

_NO_END = datetime(9000, 1, 1)
_ATOMS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.Like)


@dataclass(frozen=True)
class SqlWindow:
    """The conditions a query puts on one time column (``table.column``), all in AND with the rest of their clause."""

    column: str
    predicates: tuple[exp.Expression, ...]
    one_scope: bool  # all in one WHERE clause (the repair rewrites only then)


def _conjuncts(node: exp.Expr) -> Iterator[exp.Expr]:
    if isinstance(node, exp.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    elif isinstance(node, exp.Paren):
        yield from _conjuncts(node.this)
    else:
        yield node


def _is_time_column(ctx: SqlContext, owner: str, name: str) -> bool:
    if f"{owner}.{name}" in ctx.profile.time_columns:
        return True
    table = ctx.db.schema.table(owner)
    info = table.column(name) if table is not None else None
    return info is not None and (bool(re.search(r"date|time", info.type, re.IGNORECASE)) or TIME_NAME.search(name) is not None)


def sql_window(ctx: SqlContext) -> SqlWindow | None | bool:
    """The query's conditions on its one filtered time column; None when it filters no time column; False when it
    filters several, or in a way a probe cannot read (under OR or NOT, against another column or a subquery)."""
    if ctx.tree is None:
        return False
    names, _ = aliases(ctx.tree)
    found_: dict[str, list[exp.Expression]] = {}
    clauses: set[int] = set()
    owners = [*ctx.tree.find_all(exp.Where), *(j for j in ctx.tree.find_all(exp.Join) if j.args.get("on"))]
    for owner in owners:
        condition = owner.this if isinstance(owner, exp.Where) else owner.args["on"]
        direct = set(map(id, _conjuncts(condition)))
        for atom in condition.find_all(*_ATOMS):
            if atom.find_ancestor(exp.Where, exp.Join) is not owner:
                continue  # a condition of a subquery inside this one: read with its own clause
            keys = {_column_key(ctx, c, names) for c in atom.find_all(exp.Column)}
            if len(keys) != 1 or None in keys:
                continue
            key = next(iter(keys))
            assert key is not None
            if not _is_time_column(ctx, *key.rsplit(".", 1)):
                continue
            if id(atom) not in direct or atom.find(exp.Select, exp.Subquery) is not None:
                return False  # under OR / NOT / CASE, or against a subquery: not a plain window
            found_.setdefault(key, []).append(atom)
            clauses.add(id(owner))
    if not found_:
        return None
    if len(found_) > 1:
        return False
    column, predicates = next(iter(found_.items()))
    return SqlWindow(column, tuple(predicates), len(clauses) == 1)


_DATE_TEXT = re.compile(r"\d{4}-\d\d")


def reads_no_time(ctx: SqlContext) -> bool:
    """The query reads no time at all: no time column anywhere (a condition, or an age computed from a birth date
    for "how old was he in 2100") and no date written anywhere."""
    assert ctx.tree is not None
    time_names = {c.rsplit(".", 1)[1] for c in ctx.profile.time_columns}
    if any(c.name.lower() in time_names or TIME_NAME.search(c.name.lower()) for c in ctx.tree.find_all(exp.Column)):
        return False
    return not any(lit.is_string and _DATE_TEXT.search(lit.this) for lit in ctx.tree.find_all(exp.Literal))


def _names_a_visit(ctx: SqlContext) -> bool:
    """The query names one admission or stay by an id the question does not state ("the admission that started on
    2100-03-19" looked up as ``hadm_id = 24181354``): the date chose the visit, the id stands for it. A visit the
    question names by its id ("stay 176730 on 2104-05-01") leaves the date a period within it."""
    assert ctx.tree is not None
    return any(not re.search(rf"(?<![\w-]){re.escape(literal.this)}(?![\w-])", ctx.question)
               for _, literal, _ in visits_by_id(ctx, ctx.tree))


def _column_key(ctx: SqlContext, column: exp.Column, names: dict[str, str]) -> str | None:
    """``table.column`` of a stored column the query reads (by its alias or, unqualified, the one table that has it)."""
    name = column.name.lower()
    if column.table:
        owner = names.get(column.table.lower(), column.table.lower())
        return f"{owner}.{name}" if (t := ctx.db.schema.table(owner)) is not None and t.column(name) is not None else None
    owners = {t.lower() for t in names.values() if (info := ctx.db.schema.table(t)) is not None and info.column(name) is not None}
    return f"{owners.pop()}.{name}" if len(owners) == 1 else None


def _literal(ctx: SqlContext, column: str, moment: datetime) -> exp.Expression:
    """``moment`` as the column holds it: a timestamp (DATE/TIMESTAMP columns) or text in the column's own layout."""
    table, name = column.rsplit(".", 1)
    info = ctx.db.schema.table(table)
    declared = (info.column(name).type if info is not None and info.column(name) is not None else "").lower()  # type: ignore[union-attr]
    if ctx.dialect != "sqlite" and re.search(r"date|time", declared):
        kind = "date" if "date" in declared and "time" not in declared else "timestamp"
        text = moment.strftime("%Y-%m-%d" if kind == "date" else "%Y-%m-%d %H:%M:%S")
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(kind))
    return exp.Literal.string(moment.strftime("%Y-%m-%d" if _holds_dates_only(ctx, column) else "%Y-%m-%d %H:%M:%S"))


def _holds_dates_only(ctx: SqlContext, column: str) -> bool:
    table, name = column.rsplit(".", 1)
    source, quoted = quoted_names(ctx, table, name)
    return data_fact(ctx, ("dates_only", column), f"SELECT {quoted} FROM {source} WHERE {quoted} IS NOT NULL LIMIT 1",
                     lambda rows: bool(rows) and len(str(rows[0][0])) == 10)


def _kept(ctx: SqlContext, window: SqlWindow, moments: list[datetime]) -> list[bool] | None:
    """Which of ``moments`` the query's conditions keep, asked of the database; None when the engine cannot say."""
    columns = []
    for moment in moments:
        parts = []
        for predicate in window.predicates:
            probe = predicate.copy()
            for col in list(probe.find_all(exp.Column)):
                col.replace(_literal(ctx, window.column, moment))
            parts.append(probe)
        condition = exp.and_(*parts) if len(parts) > 1 else parts[0]
        columns.append(exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))], default=exp.Literal.number(0)))
    asked = exp.select(*columns).sql(dialect=ctx.dialect)
    if ctx.db.profile.now is not None:  # the machine clock read as the database's own now (the now check says so)
        asked = anchor_now(asked, ctx.db.profile.now)
    try:
        rows = ctx.db.db.execute(asked, timeout_s=5).rows
    except DatabaseError:
        return None
    return [bool(v) for v in rows[0]] if rows else None


def _probes(reading: Interval, now: datetime, tolerance: timedelta) -> list[tuple[datetime, bool]]:
    """Instants a query keeping ``reading`` keeps (True) and leaves out (False): inside, just within each end and in
    the middle; outside, just past each end, a period past it and a year away (a month written without its year).
    "Just" is a share of the stated period, so that 365 days read for a year, or a day's last hours left out by
    ``BETWEEN '2100-03-01' AND '2100-03-31'``, still read the same; instants after the data's "now" are not asked."""
    start, end = reading
    if start is not None and end is not None and end - start <= timedelta(minutes=1):  # an instant: asked as such
        return [(start, True), (start - timedelta(minutes=1), False), (end, False)]
    last = min(end, now) if end is not None else now
    first = start if start is not None else last - timedelta(days=3650)
    length = max(last - first, timedelta(minutes=2))
    edge = min(max(timedelta(minutes=30), tolerance * 0.05), length / 4)
    away = min(max(length / 2, 2 * edge), timedelta(days=3650))
    middle = first + length / 2
    out = [(first + edge, True), (middle, True), (last - edge, True)]
    if start is not None:
        out += [(start - edge, False), (start - away, False)]
    if end is not None and end < now:
        out += [(t, False) for t in (end + edge, end + away) if t < now]
    if start is not None and end is not None and length < timedelta(days=300):
        out += [(t, False) for t in (_add(middle, "year", -1), _add(middle, "year", 1)) if t < now]
    return out


# A time that recurs, named without its year: a month ("in December"), a day of the week, a season, a part of the day.
# Which one of them the question means is open, but that it keeps to some time is not (general English).
_RECURRING = re.compile(r"\b(?:in|during|throughout|for|of) (?:the month of |the )?(?:january|february|march|april|may|june|july|"
                        r"august|september|october|november|december)\b(?! \d)|\bon (?:a )?(?:mondays?|tuesdays?|wednesdays?|"
                        r"thursdays?|fridays?|saturdays?|sundays?|weekends?)\b|\b(?:in|during) (?:the )?(?:winter|spring|summer|"
                        r"autumn)\b|\b(?:at night|overnight|on the night shift|on weekends)\b", re.IGNORECASE)


def check_stated_window(ctx: SqlContext) -> CheckResult:
    """The period the question states ("in the past 30 days", "during March 2100", "before 2100") is the one the
    query keeps on its time column, however either writes it. A query that keeps another period is an error,
    repaired by writing the question's period (its first reading) as bounds on the same column."""
    if ctx.tree is None:
        return NOTHING
    now = ctx.db.profile.now
    wanted = stated_window(ctx.question, now)
    if wanted is None:
        recurring = _RECURRING.search(ctx.question)
        if recurring and reads_no_time(ctx) and not _names_a_visit(ctx):
            return found(Finding("missing_time_window", "warning", f"The question asks about a time of year, week or day "
                                 f"('{recurring.group(0).strip()}'); the query keeps records of any time."))
        return NOTHING
    theirs = stated_time_filter(ctx.question)
    if theirs is not None and any(hit[0].kind == theirs.kind for hit in sql_time_filters(ctx.sql)):
        return NOTHING  # both sides written the EHRSQL way, of one kind: check_time_window compares them
    window = sql_window(ctx)
    if window is None and reads_no_time(ctx) and not _names_a_visit(ctx):
        return found(Finding("missing_time_window", "warning", f"The question asks about a period ('{wanted.phrase}'); the "
                             "query keeps records of any time."))
    if not isinstance(window, SqlWindow):
        return NOTHING  # a period a probe cannot read
    # On the machine's clock only dates are read (relative periods need the database's own "now"), and they are not
    # cut at today: MIMIC's shifted dates lie past it.
    moment = datetime.fromisoformat(now) if now else _NO_END
    if any(start is not None and start >= moment for start, _ in wanted.readings):
        return NOTHING  # a period after the records' "now": a question about the future, not a window to compare
    try:
        plans = [_probes(r, moment, wanted.tolerance) for r in wanted.readings]
    except (ValueError, OverflowError):  # a probe before year 1: a period no record can be in
        return NOTHING
    instants = list(dict.fromkeys(t for plan in plans for t, _ in plan))
    kept = _kept(ctx, window, instants)
    if kept is None:
        return NOTHING
    answer = dict(zip(instants, kept, strict=True))
    if any(all(answer[t] == want for t, want in plan) for plan in plans):
        return NOTHING
    written = " AND ".join(p.sql(dialect=ctx.dialect) for p in window.predicates)
    message = f"The query keeps another period ({written}) than the one the question states ('{wanted.phrase}')."
    if not window.one_scope:
        return found(Finding("wrong_time_window", "error", message))
    bounds = _bounds(ctx, window, wanted, moment)
    return found(Finding("wrong_time_window", "error", message, ctx.span_of(window.predicates[0].sql(dialect=ctx.dialect)),
                         bounds.sql(dialect=ctx.dialect)), edits=[TreeEdit(partial(_put, bounds), target=window.predicates[0]),
                                 *(TreeEdit(drop_conjunct, target=p) for p in window.predicates[1:])])


def _bounds(ctx: SqlContext, window: SqlWindow, wanted: StatedWindow, now: datetime) -> exp.Expression:
    """The question's period as conditions on the column the query filters (named as the query names it): the
    EHRSQL-style filter where that reader has one and the database writes SQLite, else bounds of its first reading."""
    target = next(window.predicates[0].find_all(exp.Column)).copy()
    if wanted.ehrsql is not None and ctx.dialect == "sqlite" and ctx.db.profile.now == NOW:  # EHRSQL's filters write its now
        parsed = cast(exp.Expression, sqlglot.parse_one(wanted.ehrsql.render(target.sql(dialect="sqlite")), read="sqlite"))
        return exp.Paren(this=parsed) if isinstance(parsed, exp.And) else parsed
    parts: list[exp.Expression] = []
    start, end = wanted.readings[0]
    if start is not None:
        parts.append(exp.GTE(this=target.copy(), expression=_literal(ctx, window.column, start)))
    if end is not None and end <= now:
        parts.append(exp.LT(this=target.copy(), expression=_literal(ctx, window.column, end)))
    if not parts:
        return exp.true()  # the period reaches past both ends of the records: nothing to keep out
    return exp.Paren(this=exp.and_(*parts)) if len(parts) > 1 else parts[0]


def _put(bounds: exp.Expression, node: exp.Expression) -> None:
    node.replace(bounds.copy())


