"""Known question forms, matched through paraphrase.

The template bank (:mod:`templates`) answers a question only when it fits a known question
word for word. Question sets are paraphrased, though: "What is the peak heart rate of patient
X today?" and "Tell me the highest heart rate patient X had today" are one form. This module
matches a new question to the known form it paraphrases:

1. **Values are found, not guessed.** Patient ids and numbers by pattern; names (a diagnosis,
   a drug, a lab test ...) by finding, in the question, values the database holds in the
   column a known form compares them with. The question is then *masked*: each value
   becomes a typed slot.
2. **Meaning words must agree.** Words that change what a query computes (first/last,
   minimum/maximum/average, this year/since, icu/hospital, ...) are folded to one spelling
   (``highest`` -> ``maximum``) and must be the same set in both questions. A form that
   differs in one of them is not a paraphrase, however similar it reads.
   Whether the question asks for a moment ("when ...") or a yes/no answer is part of its
   meaning, and a form whose SQL returns something else is not built.
3. **Time filters are slots too** (:mod:`.time_filters`). "since 2 years ago", "in 03/2100", "this month",
   "yesterday", "on 06/13/this year" are recognised in the question and in the SQL (the
   EHRSQL way of writing them) and refilled for the form's own time columns, so one known
   question covers every calendar filter.
4. **The rest decides the nearest.** Among forms whose slots the question can fill and
   whose meaning words agree, the most similar content words win (Jaccard). Names the
   question states must have a place in the form, and names the form states must be in the
   question.

The caller (``OfflineVerifier``) uses the best form's SQL as a correction only when it runs
cleanly with rows, an about-as-close second form answers the same, and the candidate
answers differently.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, cast

from ehrguard.evaluation.execution_match import normalize_gold
from ehrguard.verify.offline.templates import (
    DIGITS,
    NUMBER_WORDS,
    PATIENT_ID,
    WORD,
    bank_pairs,
    canonical,
    compiled_bank,
    distinct,
    loaded,
    skeleton,
)
from ehrguard.verify.offline.time_filters import TIME_SQL, TimeFilter, find_time_filter

_NUM_OR_SLOT = re.compile("<num>|" + DIGITS.pattern)
_COLUMN_BEFORE_SLOT = r"([A-Za-z_]\w*\.[A-Za-z_]\w*)\s*(?:=|LIKE)\s*'\{%s\}'"
# "insulin, heparin, or aspirin": one of a list of values, column IN ( '{s0}', '{s1}', '{s2}' )
_COLUMN_IN_LIST = r"([A-Za-z_]\w*\.[A-Za-z_]\w*)\s+IN\s*\((?:\s*'[^']*'\s*,)*\s*'\{%s\}'"

# Words that change what the query computes, each folded to one spelling. General English.
_MEANING = {
    "first": "first", "earliest": "first", "initial": "first", "initially": "first",
    "last": "last", "latest": "last", "final": "last", "previous": "last", "prior": "last",
    "second": "second", "third": "third",
    "current": "current", "currently": "current", "still": "current", "present": "current", "now": "current",
    "this": "this", "today": "today",
    "maximum": "maximum", "max": "maximum", "highest": "maximum", "greatest": "maximum", "largest": "maximum",
    "peak": "maximum", "top": "top",
    "minimum": "minimum", "min": "minimum", "lowest": "minimum", "smallest": "minimum",
    "average": "average", "mean": "average", "avg": "average",
    "total": "total", "sum": "total", "overall": "total", "cumulative": "total",
    "many": "many", "count": "many", "times": "times", "number": "many",
    "year": "year", "years": "year", "yearly": "yearly", "annual": "yearly", "annually": "yearly",
    "month": "month", "months": "month", "monthly": "monthly",
    "day": "day", "days": "day", "daily": "daily", "week": "week", "weeks": "week", "weekly": "weekly",
    "hour": "hour", "hours": "hour", "minute": "minute", "minutes": "minute",
    "ago": "ago", "since": "since", "after": "after", "before": "before", "within": "within", "same": "same",
    "until": "until", "till": "until", "later": "after", "following": "after", "followed": "after",
    "icu": "icu", "hospital": "hospital", "visit": "visit", "stay": "visit", "encounter": "visit",
    "male": "male", "female": "female", "men": "male", "women": "female",
    "greater": "greater", "higher": "greater", "more": "greater", "above": "greater", "exceed": "greater",
    "exceeds": "greater", "over": "greater", "larger": "greater",
    "less": "less", "lower": "less", "below": "less", "under": "less", "fewer": "less", "smaller": "less",
    "change": "change", "difference": "change", "differ": "change", "changed": "change",
    "percentile": "percentile", "rank": "rank",
    "frequent": "frequent", "frequently": "frequent", "common": "frequent", "commonly": "frequent", "often": "frequent",
    "intake": "intake", "input": "intake", "output": "output",
    "not": "not", "never": "not", "no": "not", "didn": "not", "without": "not",
    "died": "died", "dead": "died", "death": "died", "deceased": "died", "expired": "died",
    "discharged": "discharged", "discharge": "discharged", "admitted": "admitted", "admission": "admitted",
    "age": "age", "aged": "age", "old": "age",
    "ever": "ever", "any": "ever",
    # What is asked about (general EHR vocabulary): a form about specimens is no paraphrase of one about diagnoses.
    "specimen": "specimen", "specimens": "specimen", "culture": "microbiology", "cultures": "microbiology",
    "microbiology": "microbiology", "microbiological": "microbiology", "microbial": "microbiology",
    "diagnosis": "diagnosis", "diagnoses": "diagnosis", "diagnosed": "diagnosis",
    "drug": "drug", "prescribed": "drug", "prescription": "drug", "prescriptions": "drug", "medication": "drug",
    "medications": "drug", "medicine": "drug", "medicines": "drug", "meds": "drug",
    "procedure": "procedure", "procedures": "procedure", "treatment": "procedure", "treatments": "procedure",
    "underwent": "procedure", "undergone": "procedure", "surgery": "procedure", "surgeries": "procedure",
    "operation": "procedure", "operations": "procedure",
    "lab": "lab", "labs": "lab", "laboratory": "lab",
    "cost": "cost", "costs": "cost", "charge": "cost", "charges": "cost", "expense": "cost", "expenses": "cost",
    "allergy": "allergy", "allergies": "allergy", "allergic": "allergy", "organism": "organism", "organisms": "organism",
    "outputs": "output", "outputted": "output", "inputs": "intake", "intakes": "intake",
    "heart": "heart", "respiration": "respiration", "respiratory": "respiration", "sao2": "sao2", "saturation": "sao2",
    "spo2": "sao2", "temperature": "temperature", "systolic": "systolic", "diastolic": "diastolic",
    "weight": "weight", "height": "height",
    "insurance": "insurance", "marital": "marital", "married": "marital", "language": "language", "gender": "gender",
    "sex": "gender", "race": "race", "ethnicity": "race", "religion": "religion", "route": "route", "routes": "route",
    "dose": "dose", "dosage": "dose", "doses": "dose", "unit": "unit", "units": "unit", "ward": "ward", "careunit": "careunit",
    "patients": "people", "people": "people", "persons": "people",
    "location": "location", "source": "location", "type": "type",
    "long": "duration", "duration": "duration", "length": "duration", "passed": "elapsed", "elapsed": "elapsed",
}
# A yes/no question, also after a lead-in ("tell me, was ...", "can you check if ...").
_YES_NO = re.compile(r"^(?:(?:(?:can|could) you |please )?(?:tell me|check|confirm|verify|say)(?: if| whether)?,? |so,? |and,? )?"
                     r"(?:did|does|do|is|are|was|were|has|have|had|can|will)\b")
_ANSWER_TYPE = frozenset(("<yes/no>", "<when>"))  # what kind of answer: never taken from another paraphrase
_STOP = frozenset((
    "a", "an", "the", "of", "for", "to", "in", "on", "at", "by", "with", "and", "or", "is", "are", "was", "were",
    "be", "been", "do", "does", "did", "what", "which", "who", "whom", "whose", "when", "where", "how", "that",
    "this", "these", "those", "it", "its", "patient", "me", "tell", "show", "give", "please", "i", "you", "can",
    "could", "would", "there", "any", "all", "from", "as", "has", "have", "had", "get", "list",
))


_UNSLOTTED_NUMBER = re.compile(r"(?<![\w.{])(?!(?:0|1|24|60|100)\b)\d+(?![\w.}])")
# A yes/no query: its answer is whether any row matches.
YES_NO_SQL = re.compile(r"\s*select\s+count\s*\(\s*\*\s*\)\s*>\s*0\b", re.IGNORECASE)
_TIME_WORD = "timephrase"  # stands for the phrase in a question while slots are placed
_TIME_SLOTS = "abcdefghij"  # a form's time filters are the fields ta, tb, ... of its SQL


def _time_in_sql(sql: str, wanted: TimeFilter) -> tuple[str, tuple[str, ...]] | None:
    """The SQL with each occurrence of ``wanted`` replaced by a marker, and their columns; None when
    the SQL states the filter nowhere, or states another calendar filter too."""
    spans: list[tuple[int, int, str]] = []
    for pattern, make in TIME_SQL:
        for m in pattern.finditer(sql):
            if any(not (m.end() <= a or b <= m.start()) for a, b, _ in spans):
                continue
            if make(m) != wanted:
                return None
            spans.append((m.start(), m.end(), m["col"]))
    if not spans or len(spans) > len(_TIME_SLOTS):
        return None
    spans.sort()
    for letter, (a, b, _) in reversed(list(zip(_TIME_SLOTS, spans, strict=False))):
        sql = sql[:a] + f"__TIME{letter}__" + sql[b:]
    return sql, tuple(column for _, _, column in spans)


@dataclass(frozen=True)
class Slot:
    name: str  # the format field in the SQL: s0.., p, n0..
    kind: str  # "name", "pid", "number" or "time"
    column: str  # the column a name is compared with, or a time filter applies to; else ""


@dataclass(frozen=True)
class Form:
    masked: str  # the canonical question with each value replaced by its slot token
    sql: str  # str.format template over the slot names
    slots: tuple[Slot, ...]
    meaning: frozenset[str]
    words: frozenset[str]
    # The numbers of the question in order: None for a slot, the digits of a number the SQL does not take.
    number_pattern: tuple[str | None, ...]
    # Not a known question: a known one with one meaning word and its part of the SQL swapped (:class:`Swap`).
    derived: bool = False

    @property
    def readable(self) -> str:
        """The masked question for people: "how many times is [prescriptions.drug] [period] prescribed to [patient]"."""
        names = {"pid": "patient", "num": "number", "time": "period"}
        return re.sub(r"<([^>]+)>", lambda m: f"[{names.get(m[1], m[1])}]", self.masked)

    @property
    def needs(self) -> tuple[int, int, tuple[str, ...], bool]:
        """(patient ids, numbers, sorted name columns, a time filter) the question must supply."""
        return (sum(s.kind == "pid" for s in self.slots), sum(s.kind == "number" for s in self.slots),
                tuple(sorted(s.column for s in self.slots if s.kind == "name")), any(s.kind == "time" for s in self.slots))


def _token(slot: Slot) -> str:
    return {"pid": "<pid>", "number": "<num>", "time": "<time>"}.get(slot.kind, f"<{slot.column}>")


# "when ...", "the date of ...", and "what was the last time ..." (not "what was the drug ... for the last time").
_ASKS_TIME = re.compile(r"\bwhen\b|\bwhat time\b|\bthe time\b|\bdates?\b|\bwhat day\b|\btimestamp"
                        r"|\b(?:what|which)(?: was| is| were|'s) the (?:first|last|latest|earliest|most recent|initial|final) time\b")
_SELECT_LIST = re.compile(r"\s*select\s+(?:distinct\s+)?([^()]*?)\s+from\b", re.IGNORECASE)


def asks_time(question: str) -> bool:
    """Does the question ask for a moment ("when ...", "the date of ...")?"""
    return bool(_ASKS_TIME.search(question))


def selects_time(sql: str) -> bool:
    """Does the outer query return a time column?"""
    m = _SELECT_LIST.match(sql)
    return bool(m and re.search(r"\w*(?:time|date)\b", m.group(1), re.IGNORECASE))


_WHICH_VISIT = re.compile(r"\b(first|last|current|latest|earliest|previous|second)\s+(hospital|icu)\s+(?:visit|stay|encounter)s?\b")


def meaning_words(masked: str) -> frozenset[str]:
    """The meaning words of a masked question; "first ... on the last hospital visit" keeps which is which."""
    text = re.sub(r"<[^>]*>", " ", masked)
    words = {f"{_MEANING[m[1]]} {m[2]} visit" for m in _WHICH_VISIT.finditer(text)}
    text = _WHICH_VISIT.sub(" ", text)
    for w in WORD.findall(text):
        w = w if w in _MEANING or not w.endswith("s") else w[:-1]  # "weights" means what "weight" means
        if w in _MEANING:
            words.add(_MEANING[w])
    if "<time>" in masked:
        words.add("<time>")
    if _YES_NO.match(masked):
        words.add("<yes/no>")
    if asks_time(masked):
        words.add("<when>")
    return frozenset(words)


def content_words(masked: str) -> frozenset[str]:
    words = WORD.findall(re.sub(r"<[^>]*>", " ", masked))
    return frozenset(w[:-1] if len(w) > 4 and w.endswith("s") else w for w in words if w not in _STOP)


def _numbers_as_digits(text: str) -> str:
    return re.sub(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", lambda m: str(NUMBER_WORDS.index(m.group(1)) + 1), text)


_SLOT_FIELD = re.compile(r"\{[a-z]\w*\}")
_DECADE_SQL = re.compile(r"BETWEEN \{(n\d+)\} AND (\d+)\b", re.IGNORECASE)


def _decade_ends(template_sql: str, numbers: dict[str, str]) -> str:
    """"in their 30s" is ``BETWEEN {n0} AND 39``: the upper end of a decade is a field derived from its slot
    (``{n0_end}``, the slot's value + 9), so the form refills for any decade."""
    def end(m: re.Match[str]) -> str:
        value = numbers.get(m[1])
        if value is None or not value.isdigit() or int(m[2]) != int(value) + 9:
            return m[0]
        return m[0][: m.start(2) - m.start(0)] + "{" + m[1] + "_end}"

    return _DECADE_SQL.sub(end, template_sql)


_COMPARED_LITERAL = re.compile(r"([A-Za-z_]\w*\.[A-Za-z_]\w*)\s*(?:=|LIKE)\s*'((?:[^']|'')*)'")


_SMALL_NUMBER = re.compile(r"(?<![\w.])([1-9]|10)(?![\w.])")


def _as_words(text: str) -> str:
    """Small numbers spelt out, as value names write them ("closed fracture of four ribs")."""
    return _SMALL_NUMBER.sub(lambda m: NUMBER_WORDS[int(m[1]) - 1], text)


def _phrase_at(q: str, phrase: str) -> list[int]:
    return [m.start() for m in re.finditer(rf"(?<![\w]){re.escape(phrase)}(?![\w])", q)]


def _state_values(q: str, sql: str, aliases: dict[str, str]) -> str:
    """The question with each value its SQL compares and it states in other words written as the SQL writes it: a
    learned alias ("spo2" for 'o2 saturation pulseoxymetry') or the value with its numbers in digits ("closed fracture
    of 4 ribs"); only where that wording occurs once, so the value becomes a slot like any stated value."""
    literals = {lit.replace("''", "'").lower() for _, lit in _COMPARED_LITERAL.findall(sql)}
    by_literal: dict[str, list[str]] = defaultdict(list)
    for phrase, literal in aliases.items():
        by_literal[literal].append(phrase)
    for literal in sorted(literals, key=lambda v: (-len(v), v)):
        if not re.search(r"[a-z]", literal) or _phrase_at(q, literal):
            continue
        spoken = _numbers_as_digits(literal)
        for phrase in sorted(by_literal.get(literal, []) + ([spoken] if spoken != literal else []), key=lambda v: (-len(v), v)):
            spots = _phrase_at(q, phrase)
            if len(spots) == 1:
                q = q[: spots[0]] + literal + q[spots[0] + len(phrase):]
                break
    return q


# What a query computes (which event, which statistic, which period, a comparison): of two phrases used as often for
# a value, the one with fewer such words is its name ("top pressure", not "maximum top pressure").
_OPERATORS = frozenset((
    "first", "last", "second", "third", "current", "this", "today", "maximum", "top", "minimum", "average", "total",
    "many", "times", "year", "yearly", "month", "monthly", "day", "daily", "week", "weekly", "hour", "minute", "ago",
    "since", "after", "before", "within", "same", "until", "greater", "less", "change", "percentile", "rank", "not", "ever",
))


def _operators(phrase: str) -> int:
    return sum(_MEANING.get(w) in _OPERATORS for w in phrase.split())


def learn_aliases(pairs: Iterable[tuple[str, str]], columns: Collection[str], *, min_count: int = 3,
                  min_precision: float = 0.9, longest: int = 4) -> dict[str, str]:
    """Phrases questions use for a value their SQL compares a name column with, where they never state the value
    itself: "diastolic blood pressure" for the chart item 'arterial blood pressure diastolic', "spo2" for 'o2
    saturation pulseoxymetry'. Learned from the pairs alone: a phrase (1-``longest`` words, not starting or
    ending with a function word) is an alias of a value when at least ``min_count`` questions use it for that
    value and at least ``min_precision`` of the questions that use it compare that value; each value takes the
    phrases that cover most of its questions, greedily (on a tie, the one with fewer words that change what a query
    computes, then the longer). Only values of ``columns`` (those the forms slot) count."""
    uses: dict[str, set[int]] = defaultdict(set)  # phrase -> questions using it
    unstated: dict[str, set[int]] = defaultdict(set)  # value -> questions comparing it without stating it
    phrases_of: list[set[str]] = []
    wanted = {c.lower() for c in columns}
    for i, (question, sql) in enumerate(pairs):
        words = _numbers_as_digits(canonical(question)).split()
        grams = {" ".join(words[a:b]) for a in range(len(words)) for b in range(a + 1, min(len(words), a + longest) + 1)
                 if words[a] not in _STOP and words[b - 1] not in _STOP}
        grams = {g for g in grams if re.search(r"[a-z]{2}", g) and not PATIENT_ID.search(g)}
        phrases_of.append(grams)
        for g in grams:
            uses[g].add(i)
        q = " ".join(words)
        for column, literal in _COMPARED_LITERAL.findall(normalize_gold(sql)):
            value = literal.replace("''", "'").lower()
            if column.lower() in wanted and re.search(r"[a-z]", value) and not _phrase_at(q, _numbers_as_digits(value)):
                unstated[value].add(i)
    aliases: dict[str, str] = {}
    claimed: dict[str, int] = defaultdict(int)
    for value, questions in sorted(unstated.items()):
        left = set(questions)
        while True:
            scored = [(len(uses[g] & left), -_operators(g), len(g), g) for i in left for g in phrases_of[i]
                      if g != value and len(uses[g] & questions) / len(uses[g]) >= min_precision]
            if not scored:
                break
            count, _, _, best = max(scored)
            if count < min_count:
                break
            aliases[best] = value
            claimed[best] += 1
            left -= uses[best]
    return {p: v for p, v in aliases.items() if claimed[p] == 1}


def make_form(question: str, sql: str, aliases: dict[str, str] | None = None) -> Form | None:
    """The form of one (question, SQL) pair, or None when its values cannot be placed unambiguously. ``aliases``
    (:func:`learn_aliases`) are other words the questions use for a value."""
    sql = normalize_gold(sql)
    q = _state_values(_numbers_as_digits(canonical(question)), sql, aliases or {})
    time_columns: tuple[str, ...] = ()
    found_time = find_time_filter(q)
    if found_time is not None:
        marked = _time_in_sql(sql, found_time[0])
        if marked is not None:
            a, b = found_time[1]
            q, (sql, time_columns) = q[:a] + _TIME_WORD + q[b:], marked
    found = skeleton(q, sql, allow_empty=bool(time_columns))
    if found is None:
        return None
    q, template_sql, pieces = found
    slots: list[Slot] = []
    masked, pos = "", 0
    for a, b, name, _ in sorted(pieces):
        if name.startswith("s"):
            m = re.search(_COLUMN_BEFORE_SLOT % name, template_sql) or re.search(_COLUMN_IN_LIST % name, template_sql)
            if m is None:
                return None  # a name the SQL uses other than in a comparison: cannot be refilled safely
            slot = Slot(name, "name", m.group(1).lower())
        elif name == "p":
            slot = Slot(name, "pid", "")
        else:
            slot = Slot(name, "number", "")
        masked += q[pos:a] + " " + _token(slot) + " "
        slots.append(slot)
        pos = b
    for i, column in enumerate(time_columns):
        letter = _TIME_SLOTS[i]
        template_sql = template_sql.replace(f"__TIME{letter}__", "{t" + letter + "}")
        slots.append(Slot("t" + letter, "time", column))
    masked = re.sub(r"\s+", " ", (masked + q[pos:]).replace(_TIME_WORD, "<time>")).strip()
    if asks_time(masked) != selects_time(template_sql):
        return None  # the question asks for a time and the SQL returns none, or the other way round
    if YES_NO_SQL.match(template_sql) and not _YES_NO.match(masked):
        return None  # a yes/no query for a question not asked as one: its answer type is not the question's
    template_sql = _decade_ends(template_sql, {name: q[a:b] for a, b, name, _ in pieces if name.startswith("n")})
    if any(s.kind == "number" for s in slots) and _UNSLOTTED_NUMBER.search(re.sub(r"'[^']*'", "''", template_sql)):
        return None  # "in their 20s" -> BETWEEN {n} AND 29: a number derived from a slot cannot be refilled
    numbers = tuple(None if m.group(0) == "<num>" else m.group(0) for m in _NUM_OR_SLOT.finditer(masked))
    return Form(masked, template_sql, tuple(slots), meaning_words(masked), content_words(masked), numbers)


_SQL_TOKEN = re.compile(r"'[^']*'|\w+|[^\w\s]")
MIN_SWAP_SUPPORT = 3  # pairs of known queries that show a swap before it is used


@dataclass(frozen=True, order=True)
class Swap:
    """One meaning word for another, and what that changes in the SQL, as pairs of known queries show it: "first" ->
    "last" turns ``charttime ASC`` into ``charttime DESC``; "maximum" -> "minimum" turns ``SELECT MAX`` into
    ``SELECT MIN``. ``context`` is the SQL token before the one replaced."""

    before: str
    after: str
    context: str
    old: str
    new: str

    @property
    def pattern(self) -> re.Pattern[str]:
        start = r"\b" if re.match(r"\w", self.context) else ""
        end = r"\b" if re.search(r"\w$", self.old) else ""
        return re.compile(start + re.escape(self.context) + r"(\s*)" + re.escape(self.old) + end)

    def sql(self, sql: str) -> str | None:
        """``sql`` with the swap made at every place, or None when it has no such place."""
        swapped, n = self.pattern.subn(lambda m: self.context + m[1] + self.new, sql)
        return swapped if n else None

    def question(self, masked: str) -> str:
        """The masked question with the meaning word swapped ("the first time" -> "the last time")."""
        if self.before.endswith(" visit"):
            ordinal, place = self.before.split()[:2]
            target = self.after.split()[0]
            return _WHICH_VISIT.sub(lambda m: m[0].replace(m[1], target, 1)
                                    if _MEANING.get(m[1]) == ordinal and m[2] == place else m[0], masked)
        text = _WHICH_VISIT.sub(lambda m: m[0].replace(" ", "\0"), masked)  # keep a visit's ordinal as it is
        text = re.sub(r"[a-z]+", lambda m: self.after if _MEANING.get(m[0]) == self.before else m[0], text)
        return text.replace("\0", " ")


def learn_swaps(groups: Iterable[tuple[frozenset[str], str]], min_support: int = MIN_SWAP_SUPPORT) -> tuple[Swap, ...]:
    """The swaps that pairs of known queries show: two queries (``(core meaning words, SQL)`` of their groups) whose
    meaning words differ in one word each and whose SQL differs in one token, the same everywhere it differs, taken
    when at least ``min_support`` pairs show it."""
    by_length: dict[int, list[tuple[frozenset[str], list[str]]]] = defaultdict(list)
    for core, sql in groups:
        tokens = _SQL_TOKEN.findall(_SLOT_FIELD.sub("{}", sql))
        by_length[len(tokens)].append((core, tokens))
    support: dict[Swap, int] = defaultdict(int)
    for same in by_length.values():
        for i, (c1, t1) in enumerate(same):
            for c2, t2 in same[i + 1:]:
                a, b = c1 - c2, c2 - c1
                if len(a) != 1 or len(b) != 1:
                    continue
                diffs = {(t1[k - 1], t1[k], t2[k]) for k in range(1, len(t1)) if t1[k] != t2[k]}
                if len(diffs) != 1 or t1[0] != t2[0]:
                    continue
                (context, old, new), = diffs
                (before,), (after,) = a, b
                support[Swap(before, after, context, old, new)] += 1
                support[Swap(after, before, context, new, old)] += 1
    return tuple(sorted(s for s, n in support.items() if n >= min_support))


@dataclass(frozen=True)
class Reading:
    """A question read against one form: the filled SQL and how similar the two questions are."""

    sql: str
    similarity: float
    form: Form
    exact: bool = True  # the question's meaning words are the form's own (not only those of another paraphrase of its SQL)

    @property
    def derived(self) -> bool:
        """Read through a swap of one meaning word, not as a known question (:class:`Swap`)."""
        return self.form.derived


class _Lexicon:
    """The values of some name columns in one database, and which of them each form's question states."""

    def __init__(self, context: Any, columns: list[str]) -> None:
        self._values = context.values  # the database's value index (not the context: the index is keyed by it)
        self._columns = {tuple(c.split(".", 1)): c for c in columns}
        self._stated: dict[str, frozenset[str]] = {}
        self._spelt: dict[str, str] = {}

    def holders(self, phrases: Collection[str]) -> dict[str, set[str]]:
        """The columns holding each phrase as a value (compared in lower case); phrases no column holds are left out."""
        keys = {p for p in phrases if len(p) >= 2 and re.search(r"[a-z]", p) and p not in _STOP}
        found = self._values.find(list(self._columns), keys, by="lower")
        out: dict[str, set[str]] = defaultdict(set)
        for table_column, hits in found.items():
            for value in hits:
                out[value].add(self._columns[table_column])
        return out

    def stated(self, form: Form) -> frozenset[str]:
        """Values a form's question states in its fixed text ("anion gap"): a paraphrase must state them too."""
        found = self._stated.get(form.masked)
        if found is None:
            self.prepare([form])
            found = self._stated[form.masked]
        return found

    def prepare(self, forms: Iterable[Form]) -> None:
        """Find the stated values of the forms not seen yet, in one lookup for all of them."""
        texts = list(dict.fromkeys(f.masked for f in forms if f.masked not in self._stated))
        if not texts:
            return
        for text, found in self.occurrences(texts).items():
            self._stated[text] = frozenset(
                text[a:b] for spans in found.values() for a, b in spans
                if " " in text[a:b])  # names of several words; one-word ones are often plain words

    def occurrences(self, texts: list[str]) -> dict[str, dict[str, list[tuple[int, int]]]]:
        """Every value of a name column each text contains at word boundaries, by column: one lookup for all texts.
        A stretch with small numbers in digits is also looked up spelt out ("fracture of 4 ribs" is the value
        'fracture of four ribs'; :meth:`spelt` gives the value's own spelling)."""
        spans = {text: _spans(text) for text in texts}
        phrases = {text[a:b] for text, found in spans.items() for a, b in found}
        spelt = {p: w for p in phrases if _SMALL_NUMBER.search(p) and (w := _as_words(p)) != p}
        held = self.holders(phrases | set(spelt.values()))
        out: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for text, found in spans.items():
            by_column = out[text] = defaultdict(list)
            for a, b in found:
                phrase = text[a:b]
                columns = held.get(phrase, set())
                if phrase in spelt and spelt[phrase] in held:
                    self._spelt[phrase] = spelt[phrase]
                    columns = columns | held[spelt[phrase]]
                for column in columns:
                    by_column[column].append((a, b))
        return out

    def spelt(self, phrase: str) -> str:
        """The value as the database writes it: ``phrase`` itself, or with its numbers spelt out when only that is held."""
        return self._spelt.get(phrase, phrase)


class FormIndex:
    """Known forms of one database's question set, searchable through paraphrase."""

    def __init__(self, pairs: list[tuple[str, str]], *, forms: list[Form] | None = None,
                 aliases: dict[str, str] | None = None) -> None:
        """The index of ``pairs``, or of ready ``forms`` and ``aliases`` (read from a compiled artifact). From pairs,
        the aliases are learned from them (:func:`learn_aliases`, for the columns their forms slot)."""
        if forms is None:
            plain = distinct(pairs, make_form, lambda f: (f.masked, f.sql))
            aliases = learn_aliases(pairs, {s.column for f in plain for s in f.slots if s.kind == "name"})
            forms = distinct(pairs, lambda q, sql: make_form(q, sql, aliases), lambda f: (f.masked, f.sql))
        self.forms = forms
        self.aliases = dict(aliases or {})
        self._alias_pattern = (re.compile(r"(?<!\w)(?:" + "|".join(re.escape(a) for a in sorted(self.aliases, key=lambda a: (-len(a), a)))
                                          + r")(?!\w)") if self.aliases else None)
        # Forms by what the question must supply, then by their meaning words (which must be equal).
        # Forms by what the question must supply, then in groups of one SQL: the paraphrases of one query. A question
        # may be read as a group's form when its meaning words are among those the group's paraphrases use and
        # include those all of them use (what varies between paraphrases of one SQL does not change the query).
        by_sql: dict[tuple[Any, str], list[Form]] = defaultdict(list)
        for f in self.forms:
            by_sql[(f.needs, _SLOT_FIELD.sub("{}", f.sql))].append(f)
        self._groups: dict[tuple[int, int, tuple[str, ...], bool], list[tuple[frozenset[str], frozenset[str], list[Form]]]] = (
            defaultdict(list))
        for (needs, _), group in by_sql.items():
            core = frozenset.intersection(*(f.meaning for f in group))
            allowed = frozenset.union(*(f.meaning for f in group))
            self._groups[needs].append((core, allowed, group))
        self.swaps = learn_swaps((core, group[0].sql) for groups in self._groups.values() for core, _, group in groups)
        self._derive(by_sql)
        self.columns = sorted({s.column for f in self.forms for s in f.slots if s.kind == "name"})
        self._lexicons: weakref.WeakKeyDictionary[Any, _Lexicon] = weakref.WeakKeyDictionary()
        self._fixed: dict[Form, frozenset[str]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.forms)

    def _derive(self, by_sql: dict[tuple[Any, str], list[Form]]) -> None:
        """Add the queries no known question asks but a swap of one meaning word makes from one that does ("the last
        time" from "the first time"), each a group of derived forms, unless a known query is already that one or
        already reads those meaning words (the swap's query would compete with a known one for the same questions)."""
        known = set(by_sql)
        for needs, groups in list(self._groups.items()):
            for core, allowed, group in list(groups):
                for swap in self.swaps:
                    if swap.before not in core or swap.after in allowed:
                        continue
                    derived = []
                    for f in group:
                        sql = swap.sql(f.sql)
                        masked = swap.question(f.masked)
                        meaning = meaning_words(masked)
                        if sql is None or meaning != (f.meaning - {swap.before}) | {swap.after}:
                            continue
                        derived.append(Form(masked, sql, f.slots, meaning, content_words(masked), f.number_pattern, derived=True))
                    key = (needs, _SLOT_FIELD.sub("{}", derived[0].sql)) if derived else None
                    if key is None or key in known:
                        continue
                    if any(c <= f.meaning <= a for c, a, g in groups if not g[0].derived for f in derived):
                        continue  # a known query already reads these meaning words ("last ... than the second to last")
                    known.add(key)
                    self._groups[needs].append((frozenset.intersection(*(f.meaning for f in derived)),
                                                frozenset.union(*(f.meaning for f in derived)), derived))

    def _literals(self, form: Form) -> frozenset[str]:
        """The string literals the form's SQL keeps (no slot) that its question states at word boundaries."""
        found = self._fixed.get(form)
        if found is None:
            text = re.sub(r"<[^>]*>", " ", form.masked)
            found = self._fixed[form] = frozenset(
                v for v in (m.group(1).lower() for m in re.finditer(r"'([^'{}]+)'", form.sql))
                if re.search(r"[a-z]", v) and re.search(rf"(?<!\w){re.escape(v)}(?!\w)", text))
        return found

    def _lexicon(self, context: Any) -> _Lexicon:
        """The values of the forms' name columns in one database, built on first use."""
        with self._lock:
            lex = self._lexicons.get(context)
            if lex is None:
                lex = self._lexicons[context] = _Lexicon(context, self.columns)
            return lex

    def _state_aliases(self, q: str, occurrences: dict[str, list[tuple[int, int]]]) -> str:
        """The question with each learned alias written as the value it stands for ("spo2" as 'o2 saturation
        pulseoxymetry'), except inside a longer value the question states (``occurrences``: "weight" in "admission
        weight")."""
        if self._alias_pattern is None:
            return q
        held = [span for spans in occurrences.values() for span in spans]
        for m in reversed(list(self._alias_pattern.finditer(q))):
            if any(a <= m.start() and m.end() <= b and b - a > m.end() - m.start() for a, b in held):
                continue
            q = q[: m.start()] + self.aliases[m[0]] + q[m.end():]
        return q

    def read(self, question: str, context: Any, *, top: int = 3) -> list[Reading]:
        """The filled SQL of the ``top`` most similar forms this question can be a paraphrase of."""
        q = _numbers_as_digits(canonical(question))
        time = find_time_filter(q)
        if time is not None:
            a, b = time[1]
            q = q[:a] + _TIME_WORD + q[b:]
        lex = self._lexicon(context)
        occurrences = lex.occurrences([q])[q]
        stated = self._state_aliases(q, occurrences)
        if stated != q:  # an alias was written as its value: find the values again
            q, occurrences = stated, lex.occurrences([stated])[stated]
        pids = [(m.start(), m.end()) for m in PATIENT_ID.finditer(q)]
        readings = self._readings(q, time, lex, occurrences, pids)
        readings.sort(key=lambda r: -r.similarity)
        out: list[Reading] = []
        for r in readings:
            if all(r.sql != o.sql for o in out):
                out.append(r)
            if len(out) == top:
                break
        return out

    def _readings(self, q: str, time: Any, lex: _Lexicon, occurrences: dict[str, list[tuple[int, int]]],
                  pids: list[tuple[int, int]]) -> list[Reading]:
        """Every reading of the question (``q``, its values found) by a group of one query's paraphrases: its meaning
        words are among those the paraphrases use and include those all of them use."""
        readings: list[Reading] = []
        for needs, groups in self._groups.items():
            n_pid, n_num, columns, timed = needs
            if n_pid != len(pids) or n_pid > 1 or any(c not in occurrences for c in columns) or timed != (time is not None):
                continue
            for masked, values, spans in _placements(q, columns, occurrences, pids[:n_pid], spelt=lex.spelt):
                # Values the question names that this placement leaves in the text must be in the form's text too.
                left = {q[a:b] for found in occurrences.values() for a, b in found
                        if b - a >= 4 and all(b <= x or y <= a for x, y in spans)}
                numbers = [m.group(0) for m in DIGITS.finditer(masked)]
                if len(numbers) < n_num:
                    continue
                masked_num = DIGITS.sub("<num>", masked).replace(_TIME_WORD, "<time>")
                contexts = _number_contexts(masked_num)
                words = content_words(masked_num)
                meaning = meaning_words(masked_num)
                forms = [f for core, allowed, group in groups if core <= meaning <= allowed for f in group]
                lex.prepare(forms)
                for form in forms:
                    if len(form.number_pattern) != len(numbers) or not form.words or form.meaning & _ANSWER_TYPE != meaning & _ANSWER_TYPE:
                        continue
                    if any(not re.search(rf"(?<!\w){re.escape(v)}(?!\w)", q) for v in self._literals(form)):
                        continue  # a value the form's SQL fixes and its question states ("via the pr route") must be stated
                    if any(v not in form.masked for v in left) or any(v not in q for v in lex.stated(form)):
                        continue
                    sim = len(form.words & words) / len(form.words | words)
                    if sim < 0.3:
                        continue
                    filled = _fill(form, values, numbers, time[0] if time else None, contexts)
                    if filled is not None:
                        readings.append(Reading(filled, sim, form, form.meaning == meaning))
        return readings


def _spans(text: str) -> list[tuple[int, int]]:
    """The stretches of the text that start and end at word boundaries, up to 120 characters long."""
    starts = [m.start() for m in re.finditer(r"(?<![\w])\S", text)]
    ends = sorted(m.end() for m in re.finditer(r"\S(?![\w])", text))
    # a span followed by " - " is part of a longer hierarchical name the data does not hold
    return [(a, b) for a in starts for b in ends if a < b <= a + 120 and not text.startswith(" - ", b)]


def _placements(q: str, columns: tuple[str, ...], occurrences: dict[str, list[tuple[int, int]]],
                pids: list[tuple[int, int]], limit: int = 6,
                spelt: Callable[[str], str] | None = None) -> list[tuple[str, dict[str, list[str]], list[tuple[int, int]]]]:
    """Ways to place the names a form needs: non-overlapping occurrences, longer ones first, at most ``limit``."""
    options = [sorted(occurrences[c], key=lambda s: (-(s[1] - s[0]), s[0]))[:3] for c in columns]
    out: list[tuple[str, dict[str, list[str]], list[tuple[int, int]]]] = []

    def place(i: int, taken: list[tuple[int, int, str]]) -> None:
        if len(out) >= limit:
            return
        if i == len(columns):
            out.append((*_mask(q, taken, spelt), [(a, b) for a, b, _ in taken]))
            return
        for a, b in options[i]:
            if all(b <= x or y <= a for x, y, _ in taken):
                place(i + 1, taken + [(a, b, columns[i])])

    place(0, [(a, b, "pid") for a, b in pids])
    return out


def _mask(q: str, chosen: list[tuple[int, int, str]], spelt: Callable[[str], str] | None = None) -> tuple[str, dict[str, list[str]]]:
    values: dict[str, list[str]] = defaultdict(list)
    masked, pos = "", 0
    for a, b, column in sorted(chosen):
        masked += q[pos:a] + (" <pid> " if column == "pid" else f" <{column}> ")
        values[column].append(q[a:b] if spelt is None else spelt(q[a:b]))
        pos = b
    return re.sub(r"\s+", " ", masked + q[pos:]).strip(), values


def _number_contexts(masked: str) -> list[tuple[str, str]]:
    """The words just before and after each number of a masked question, in order ("top <num> ...", "aged <num> or")."""
    tokens = re.findall(r"<[^>]+>|[a-z]+", masked)
    out = []
    for i, t in enumerate(tokens):
        if t == "<num>":
            out.append((tokens[i - 1] if i else "", tokens[i + 1] if i + 1 < len(tokens) else ""))
    return out


def _slot_order(form: Form, rest: list[int], contexts: list[tuple[str, str]] | None) -> tuple[int, ...]:
    """Which of the question's free numbers (indexes into ``contexts``) fills each number slot of the form: the
    assignment whose neighbouring words agree most with the form's ("aged <num>" fills the age, "top <num>" the
    rank), the question's order on a tie."""
    from itertools import permutations

    if not contexts or len(rest) > 4:
        return tuple(rest)
    mine = [c for c, literal in zip(_number_contexts(form.masked), _form_numbers(form), strict=False) if literal is None]
    if len(mine) != len(rest):
        return tuple(rest)

    def agreement(order: tuple[int, ...]) -> int:
        return sum((contexts[i][0] == m[0]) + (contexts[i][1] == m[1]) for i, m in zip(order, mine, strict=True))

    return max(permutations(rest), key=lambda order: (agreement(order), [-i for i in order]))


def _form_numbers(form: Form) -> list[str | None]:
    """The form's numbers in question order as its masked text holds them: None for a slot (``<num>``), else the digits."""
    return [None if m.group(0) == "<num>" else m.group(0) for m in _NUM_OR_SLOT.finditer(form.masked)]


def _fill(form: Form, values: dict[str, list[str]], numbers: list[str], time: TimeFilter | None,
          contexts: list[tuple[str, str]] | None = None) -> str | None:
    """The form's SQL with the question's values; None when a number the form states literally is not in the question."""
    fields: dict[str, str] = {}
    used: dict[str, int] = defaultdict(int)
    # The numbers the form states itself ("top five") are matched by value, wherever the question puts them; the
    # others fill the form's number slots in the question's order ("aged 60 or above ... top five" is no 5-year-old).
    rest = list(range(len(numbers)))
    for literal in form.number_pattern:
        if literal is not None:
            at = next((i for i in rest if numbers[i] == literal), None)
            if at is None:
                return None
            rest.remove(at)
    if contexts is not None and len(contexts) != len(numbers):
        contexts = None
    for slot, i in zip((s for s in form.slots if s.kind == "number"), _slot_order(form, rest, contexts), strict=True):
        fields[slot.name] = numbers[i]
        fields[slot.name + "_end"] = str(int(numbers[i]) + 9) if numbers[i].isdigit() else numbers[i]
    for slot in form.slots:  # slots are in question order; values of one column too
        if slot.kind == "pid":
            fields[slot.name] = values["pid"][0]
        elif slot.kind == "number":
            continue
        elif slot.kind == "time":
            if time is None:
                return None
            fields[slot.name] = time.render(slot.column)
        else:
            fields[slot.name] = values[slot.column][used[slot.column]].replace("'", "''")
            used[slot.column] += 1
    try:
        return form.sql.format(**fields)
    except (KeyError, IndexError):
        return None


def load_forms(db_id: str, data_dir: str | None = None) -> FormIndex | None:
    """The form bank of a database, from the template bank's sources (EHRSQL-2024 for MIMIC-IV, EHRSQL
    for eICU; never SCARE) in the data directory. None when they are missing or ``EHRGUARD_TEMPLATE_BANK=off``.
    Built once per process and data directory."""
    return loaded("form_bank", _load_forms, db_id, data_dir)


def _load_forms(db_id: str, data_dir: str) -> FormIndex | None:
    compiled = compiled_bank(db_id)
    if compiled is not None:
        return cast(FormIndex, compiled.forms)
    pairs = bank_pairs(db_id, data_dir)  # no compiled bank: its sources, when the data directory has them
    return FormIndex(list(pairs)) if pairs else None


def stated_time_filter(question: str) -> TimeFilter | None:
    """The one calendar filter a question states, read as the forms read it; None for none or several."""
    hit = stated_time_phrase(question)
    return hit[0] if hit is not None else None


def stated_time_phrase(question: str) -> tuple[TimeFilter, str] | None:
    """The one calendar filter a question states and the words that state it (in the reader's canonical text)."""
    text = _numbers_as_digits(canonical(question))
    hit = find_time_filter(text)
    return (hit[0], text[hit[1][0]:hit[1][1]]) if hit is not None else None
