"""A question-template bank: answer a question the way a known, checked question of the same form is answered.

EHR question sets are written from templates ("When was the last time patient {id} was
prescribed {drug}?"). Given pairs of (question, gold SQL) we may learn from, each pair is
abstracted into a *skeleton*: the names the SQL uses, the patient id and the numbers become
slots in both the question and the SQL. A new question that fits a skeleton word for word
gets that skeleton's SQL with its own values filled in. The verifier uses the result as a
second opinion on the candidate, and as the correction when the candidate is wrong and the
filled SQL runs cleanly.

Banks come from public question sets: EHRSQL-2024 train and valid for MIMIC-IV
(``ehrsql-2024/mimic_iv/{train,valid}``) and the EHRSQL eICU questions (``ehrsql/eicu/valid.json``),
both CC BY 4.0; none of them is SCARE. They are compiled once (``ehrguard train banks``) into files
that ship with ehrguard (:mod:`ehrguard.verify.offline.artifacts`), so a user needs none of the
source files; without a compiled bank the sources under ``$EHRGUARD_DATA_DIR`` are used, if there.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from ehrguard.benchmarks.ehrsql import ehrsql_pairs
from ehrguard.config import setting, switch_setting
from ehrguard.evaluation.execution_match import normalize_gold
from ehrguard.lazy import cached_property
from ehrguard.profiles import PROFILES, get_profile
from ehrguard.runtime import runtime
from ehrguard.verify.offline.features import SQL_STRING_LITERAL

# Patient ids: eICU's 003-10264, MIMIC's 8 digits (a 4-digit number is a year or a count, not an id).
PATIENT_ID = re.compile(r"(?<![\w-])(\d{3}-\d{3,7}|\d{7,9})(?![\w-])")
NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b")
DIGITS = re.compile(r"(?<![\d])\d+(?![\d])")
WORD = re.compile(r"[a-z]+")
T = TypeVar("T")


@dataclass(frozen=True)
class Template:
    source: str  # the regular expression a question must match in full, as text (compiled on first use)
    sql: str  # str.format template; slots s0.. (names), p (patient id), n0.. (numbers)
    words: frozenset[str]

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled pattern: compiled when a question first reaches this skeleton (most never do), so a bank of
        thousands loads without compiling thousands of expressions."""
        return re.compile(self.source)

    def fill(self, match: re.Match[str]) -> str:
        values = {k: v.replace("'", "''") for k, v in match.groupdict().items()}
        for k, v in values.items():
            if k.startswith("w"):  # "four" in the question is 4 in the SQL
                values[k] = str(NUMBER_WORDS.index(v) + 1)
        return self.sql.format(**values)


# Ways of asking the same thing: both bank questions and new ones are rewritten to one form
# before skeletons are built or matched (general English paraphrases, not benchmark phrases).
_PARAPHRASES = [(re.compile(p), r) for p, r in (
    ((r"^(?:please )?(?:can|could|would) you (?:please )?(?:tell me|show me|let me know|provide me with|provide|find out|calculate|"
      r"count|list|get me|give me)\s+"), ""),
    (r"^(?:please )?(?:tell me|show me|let me know|find out|give me|get me|i want to know|i'd like to know)\s+", ""),
    ((r"^(?:what number of|what is the number of|what is the count of|what's the number of|count the number of|calculate the number of|"
      r"count the total number of|calculate the total number of|what is the total number of|what's the total number of|the number of|"
      r"number of|how many number of|the total number of)\b"), "how many"),
    (r"\bhospital encounter\b", "hospital visit"),
    (r"\bicu stay\b", "icu visit"),
    (r"\b(?:during|in) (the|their|this|that) (first|last|current) (hospital visit|icu visit)\b", r"on \1 \2 \3"),
    (r"\bmedications?\b", "drug"),
    (r"\bdrugs\b", "drug"),
    (r"\bwhat's\b", "what is"),
)]


def canonical(question: str) -> str:
    q = re.sub(r"\s+", " ", question.lower().strip()).rstrip("?.! ")
    for pattern, replacement in _PARAPHRASES:
        q = pattern.sub(replacement, q)
    return q.strip()


def _one_comparison(sql: str, name: str) -> bool:
    """The literal ``'name'`` is in the SQL once, or each time compared with one and the same column (a lab test's
    label in the query and in its subquery for the latest time): one value, refilled everywhere at once."""
    count = sql.count(f"'{name}'")
    if count <= 1:
        return count == 1
    compared = re.findall(r"([A-Za-z_]\w*\.[A-Za-z_]\w*)\s*(?:=|LIKE)\s*" + re.escape(f"'{name}'"), sql)
    return len(compared) == count and len(set(compared)) == 1


def skeleton(question: str, sql: str, *, allow_empty: bool = False) -> tuple[str, str, list[tuple[int, int, str, str]]] | None:
    """(canonical question, SQL template, slots) of one (question, SQL) pair, or None when none of its
    values can be placed unambiguously (unless ``allow_empty``). A slot is (start, end, name, group regex)
    in the question."""
    q = canonical(question)
    sql = normalize_gold(sql)
    template_sql = sql.replace("{", "{{").replace("}", "}}")
    pieces: list[tuple[int, int, str, str]] = []  # (start, end, slot name, group regex)

    def taken(a: int, b: int) -> bool:
        return any(a < y and x < b for x, y, _, _ in pieces)

    # Longest first, ties by text: a set's order varies between processes (string hashing), the slot names must not.
    names = sorted({m.group(1).replace("''", "'") for m in SQL_STRING_LITERAL.finditer(sql)}, key=lambda n: (-len(n), n))
    for i, name in enumerate(names):
        low = name.lower()
        # Once in the question, as a word or words of its own: "pr" (a route) is not the "pr" of "prescribed".
        spots = [m.start() for m in re.finditer(rf"(?<![\w]){re.escape(low)}(?![\w])", q)]
        if len(low) < 2 or not re.search(r"[a-z]", low) or len(spots) != 1:
            continue
        a = spots[0]
        if taken(a, a + len(low)) or not _one_comparison(template_sql, name):
            continue
        pieces.append((a, a + len(low), f"s{i}", r".+?"))
        template_sql = template_sql.replace(f"'{name}'", f"'{{s{i}}}'")
    for m in PATIENT_ID.finditer(q):
        if taken(m.start(), m.end()):
            continue
        count = len(re.findall(rf"(?<![\w-]){re.escape(m.group(1))}(?![\w-])", template_sql))
        if count >= 1 and "p" not in {p[2] for p in pieces}:
            pieces.append((m.start(), m.end(), "p", r"\d{3}-\d{3,7}|\d{7,9}"))
            template_sql = re.sub(rf"(?<![\w-]){re.escape(m.group(1))}(?![\w-])", "{p}", template_sql)
    runs = [m.group(0) for m in DIGITS.finditer(q)]
    for i, m in enumerate(DIGITS.finditer(q)):
        if taken(m.start(), m.end()) or runs.count(m.group(0)) != 1:
            continue
        hits = re.findall(rf"(?<!\d){m.group(0)}(?!\d)", template_sql)
        if len(hits) == 1:
            pieces.append((m.start(), m.end(), f"n{i}", r"\d+"))
            template_sql = re.sub(rf"(?<!\d){m.group(0)}(?!\d)", f"{{n{i}}}", template_sql)
    for i, m in enumerate(_NUMBER_WORD.finditer(q)):
        digits = str(NUMBER_WORDS.index(m.group(1)) + 1)
        if taken(m.start(), m.end()) or len(_NUMBER_WORD.findall(q)) != 1:
            continue
        hits = re.findall(rf"(?<![\d.'-]){digits}(?![\d.])", template_sql)
        if len(hits) == 1:
            pieces.append((m.start(), m.end(), f"w{i}", "|".join(NUMBER_WORDS)))
            template_sql = re.sub(rf"(?<![\d.'-]){digits}(?![\d.])", f"{{w{i}}}", template_sql)
    return (q, template_sql, pieces) if pieces or allow_empty else None


def abstract(question: str, sql: str) -> Template | None:
    """The skeleton of one (question, SQL) pair as a pattern, or None when its values cannot be placed unambiguously."""
    found = skeleton(question, sql)
    if found is None:
        return None
    q, template_sql, pieces = found
    pattern, pos, fixed = "", 0, []
    for a, b, name, group in sorted(pieces):
        pattern += _fixed(q[pos:a]) + f"(?P<{name}>{group})"
        fixed.append(q[pos:a])
        pos = b
    pattern += _fixed(q[pos:]) + r"[?.!\s]*"
    fixed.append(q[pos:])
    words = frozenset(w for part in fixed for w in WORD.findall(part))
    return Template(pattern, template_sql, words)


def _fixed(text: str) -> str:
    return r"\s+".join(re.escape(part) for part in text.split(" "))


K = TypeVar("K")


def distinct(pairs: list[tuple[str, str]], make: Callable[[str, str], T | None], key: Callable[[T], K]) -> list[T]:
    """``make(question, sql)`` of each pair, skipping None and any whose ``key`` came before (the first one kept)."""
    seen: dict[K, T] = {}
    for question, sql in pairs:
        made = make(question, sql)
        if made is not None:
            seen.setdefault(key(made), made)
    return list(seen.values())


class TemplateBank:
    """Skeletons of many (question, SQL) pairs, searchable by the words of a new question."""

    def __init__(self, pairs: list[tuple[str, str]], *, templates: list[Template] | None = None) -> None:
        """The bank of ``pairs``, or of ready ``templates`` (read from a compiled artifact)."""
        self.templates = templates if templates is not None else distinct(pairs, abstract, lambda t: (t.source, t.sql))
        # Each skeleton is filed under its rarest fixed word: a question it fits contains that word, so looking
        # up the question's words finds every skeleton that could fit, and few others.
        frequency: dict[str, int] = defaultdict(int)
        for t in self.templates:
            for w in t.words:
                frequency[w] += 1
        self._index: dict[str, list[int]] = defaultdict(list)
        self._wordless: list[int] = []
        for i, t in enumerate(self.templates):
            if t.words:
                self._index[min(t.words, key=lambda w: (frequency[w], w))].append(i)
            else:
                self._wordless.append(i)

    def __len__(self) -> int:
        return len(self.templates)

    def candidates(self, question: str) -> list[str]:
        """Distinct SQL of every skeleton the question fits exactly (usually zero or one)."""
        q = canonical(question)
        words = set(WORD.findall(q))
        ids = sorted({i for w in words for i in self._index.get(w, ())} | set(self._wordless))
        out: list[str] = []
        for i in ids:
            t = self.templates[i]
            if not t.words <= words:
                continue
            m = t.pattern.fullmatch(q)
            if m:
                sql = t.fill(m)
                if sql not in out:
                    out.append(sql)
        return out


def _mimic_iv_pairs(data_dir: Path) -> list[tuple[str, str]]:
    pairs = []
    for split in ("train", "valid"):
        d = data_dir / "ehrsql-2024" / "mimic_iv" / split
        if (d / "label.json").is_file():
            pairs += [(q, sql) for q, sql in ehrsql_pairs(d) if sql != "null"]
    return pairs


def _eicu_pairs(data_dir: Path) -> list[tuple[str, str]]:
    path = data_dir / "ehrsql" / "eicu" / "valid.json"
    if not path.is_file():
        return []
    return [(x["question"], x["query"]) for x in json.loads(path.read_text())
            if x.get("query") and x["query"] != "null" and not x.get("is_impossible")]


# The question banks, by the name a database profile gives (``DatabaseProfile.bank``).
BANK_LOADERS: dict[str, Callable[[Path], list[tuple[str, str]]]] = {"ehrsql-2024-mimic-iv": _mimic_iv_pairs, "ehrsql-eicu": _eicu_pairs}


def bank_source(db_id: str) -> Callable[[Path], list[tuple[str, str]]] | None:
    """The loader of the question bank a database's profile names, if it has one."""
    return BANK_LOADERS.get(get_profile(db_id).bank)


BANK_SOURCES = {db_id: BANK_LOADERS[p.bank] for db_id, p in PROFILES.items() if p.bank}  # by database, for callers that name one


BANK_NAMESPACES = ("bank_pairs", "template_bank", "form_bank", "compiled_bank")  # what the runtime holds of the banks


def loaded(namespace: str, build: Callable[[str, str], T | None], db_id: str, data_dir: str | None) -> T | None:
    """``build(db_id, data_dir)`` once per runtime, database and data directory (concurrent first requests
    build it once); None when ``EHRGUARD_TEMPLATE_BANK=off``."""
    if not switch_setting("template_bank"):
        return None
    folder = data_dir or setting("data_dir")
    return runtime().memo(namespace, (db_id, folder), lambda: build(db_id, folder))


def load_bank(db_id: str, data_dir: str | None = None) -> TemplateBank | None:
    """The bank for a database's conventions, or None when its source data is not available or
    ``EHRGUARD_TEMPLATE_BANK=off`` (built once per process and data directory)."""
    return loaded("template_bank", _load_bank, db_id, data_dir)


def reset_banks() -> None:
    """Forget the loaded banks and form banks (after the data directory changed)."""
    runtime().forget(*BANK_NAMESPACES)


def bank_pairs(db_id: str, data_dir: str) -> tuple[tuple[str, str], ...]:
    """The (question, gold SQL) pairs banks of a database are built from, read once for the template and the form bank."""
    def read() -> tuple[tuple[str, str], ...]:
        source = bank_source(db_id)
        return tuple(source(Path(data_dir))) if source else ()

    return runtime().memo("bank_pairs", (db_id, data_dir), read)


def compiled_bank(db_id: str) -> Any:
    """The shipped, compiled bank of a database's question set (``verify/offline/artifacts.py``), read once per
    process; None when the database has no question set or its file is missing (a warning says so)."""
    name = get_profile(db_id).bank
    if not name:
        return None
    from ehrguard.verify.offline.artifacts import load_compiled

    return runtime().memo("compiled_bank", name, lambda: load_compiled(name))


def _load_bank(db_id: str, data_dir: str) -> TemplateBank | None:
    compiled = compiled_bank(db_id)
    if compiled is not None:
        return cast(TemplateBank, compiled.templates)
    pairs = bank_pairs(db_id, data_dir)  # no compiled bank: its sources, when the data directory has them
    return TemplateBank(list(pairs)) if pairs else None
