"""Hand-made features of a question, each with a name so a verdict can say why."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ehrguard.verify.offline.lexicon import (
    CLOSED_CLASS_AFTER_RELATIVE,
    CRITERION_NOUNS,
    GROUP_MEMBERS,
    GROUP_NOUNS,
    INFEASIBLE_CUES,
    NOT_VAGUE,
    OUT_OF_SCOPE_CUES,
    PREPOSITION,
    RANGE_WORDS,
    RECORD_KINDS,
    REFERENCE_WORDS,
    SMALL_TALK_CUES,
    TERMS_OF_ART,
    TIME_NOUNS,
    UNRESOLVED_REFERENCES,
    VAGUE_WORDS,
)

_WORD = re.compile(r"[a-z0-9][a-z0-9'’\-\.]*")
# Patient ids of MIMIC (8 digits, or 4-6 in MIMIC-III) and eICU (003-10264).
PATIENT_ID = re.compile(r"\b(?:\d{3}-\d{3,7}|\d{4,9})\b")
_DEMONSTRATIVE = re.compile(r"\b(this|that|these|those)\s+([a-z]+)")
_PERSONAL = {"he", "she", "him", "his", "her", "hers", "they", "them", "their", "theirs"}
# Nouns of a visit (and the words that start one: "this ICU stay", "this hospital visit").
_VISIT_NOUNS = frozenset(("admission", "hospitalization", "hospitalisation", "stay", "visit", "encounter", "icu", "hospital", "unit",
                          "episode"))
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_UNRESOLVED = [re.compile(p) for p in UNRESOLVED_REFERENCES]
_TRAILING = re.compile(rf"\s+{PREPOSITION}$")


SQL_STRING_LITERAL = re.compile(r"'((?:[^']|'')*)'")
# Dates, numbers, strftime formats, and the unit names date functions take ('year' in DATE_TRUNC('year', ...)): SQL
# syntax, not values of the records (masking them would turn "a 76-year-old" into "a 76-X-old").
_NOT_A_NAME = re.compile(r"^(?:[\d\s:%/.\-]*|(?:year|month|week|day|hour|minute|second|quarter|epoch|dow|doy)s?)$")


def mask_values(question: str, sql: str | None) -> str:
    """Replace the values the SQL names (its string literals found in the question) by ``X``.

    A drug, lab test or diagnosis name can contain words that would otherwise look vague or
    referential ("sepsis - severe", "that" in a long title); the candidate SQL has already
    identified those names. Without SQL the question is returned unchanged.
    """
    if not sql:
        return question
    lowered = question.lower()
    names = {m.group(1).replace("''", "'").lower() for m in SQL_STRING_LITERAL.finditer(sql)}
    spans: list[tuple[int, int]] = []
    for name in sorted(names, key=lambda n: (-len(n), n)):  # ties by text: a set's order varies between processes
        if len(name) < 4 or _NOT_A_NAME.match(name):
            continue
        start = lowered.find(name)
        while start >= 0:
            if not any(a <= start < b for a, b in spans):
                spans.append((start, start + len(name)))
            start = lowered.find(name, start + len(name))
    for a, b in sorted(spans, reverse=True):
        question = question[:a] + "X" + question[b:]
    return question


def _lexicon_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first, so "more than usual" wins over "usual"; lookarounds keep whole words.
    alternatives = "|".join(re.escape(p) for p in sorted(set(phrases), key=len, reverse=True))
    return re.compile(r"(?<![a-z])(?:" + alternatives + r")(?![a-z])")


_PATTERNS = {name: _lexicon_pattern(words) for name, words in (
    ("vague", VAGUE_WORDS), ("out_of_scope", OUT_OF_SCOPE_CUES), ("small_talk", SMALL_TALK_CUES),
    ("infeasible", INFEASIBLE_CUES))}
_NOT_VAGUE = _lexicon_pattern(NOT_VAGUE)
_SUPERLATIVE = re.compile(r"(?<![a-z])(?:most|least) [a-z]+")  # "the most frequent": the end of a scale, not a vague degree


def _phrase_hits(text: str, lexicon: str) -> list[str]:
    return list(dict.fromkeys(m.group(0) for m in _PATTERNS[lexicon].finditer(text)))


# A gradable adjective with a measure phrase or a numeric standard states its degree (the measure phrase saturates the
# scale: "a 68-year-old man", "3 days long", "older than 65", "more than 2 times", "above 7.5"): not vague.
_NUMBER_WORD = r"(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred)"
_UNIT = (r"(?:years?|yrs?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|seconds?|times?|mg|g|kg|ml|l|mmol|mmhg|cm|mm|"
         r"units?|doses?|percent|%)")
_MEASURED = re.compile(
    rf"(?<![a-z]){_NUMBER_WORD}(?:\s*(?:-|to|and)\s*{_NUMBER_WORD})?(?:\s*-\s*|\s+)?{_UNIT}(?:\s*-\s*|\s+)(?:old|long|late|early)"
    r"(?![a-z])"
    rf"|(?<![a-z])(?:older|younger|longer|shorter|higher|lower|larger|smaller|greater|fewer|more|less|heavier|lighter|"
    rf"earlier|later|above|below|over|under)\s+(?:than\s+|or equal to\s+|than or equal to\s+)?{_NUMBER_WORD}(?![a-z])"
    # ... and the number first: "65 or older", "18 and under", "2 or more"
    rf"|(?<![a-z]){_NUMBER_WORD}(?:\s*{_UNIT})?\s+(?:or|and)\s+(?:older|younger|longer|shorter|higher|lower|larger|smaller|"
    r"greater|fewer|more|less|over|under|above|below|up|earlier|later)(?![a-z])")


# A word of degree whose threshold the question states a few words on: "low potassium below 3.5", "a high heart rate
# (> 100)", "elevated creatinine of more than 2".
_COMPARATOR = r"(?:below|above|over|under|exceeding|(?:less|greater|more|lower|higher|fewer) than|[<>≤≥]=?)"


def _number_bound(time_units: str) -> str:
    """A comparison and its number ("below 3.5", "> 100"), the number not one that counts ``time_units``."""
    return rf"{_COMPARATOR}\s*(?:or equal to\s+)?{_NUMBER_WORD}(?![a-z0-9])(?!\.\d)(?!\s*-?\s*{time_units}\b)"


_BOUNDED = re.compile(rf"(?<![a-z])[a-z]+(?=(?:[\s-]+[a-z]+){{0,3}}[\s(,:]*(?:of\s+)?"
                      rf"{_number_bound('(?:years?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?)')})")
# A word of degree the question defines in so many words: "critical hypotension, defined as a mean arterial pressure
# below 65", "high creatinine (above 2 mg/dL)", "abnormal potassium, i.e. outside 3.5 to 5.0", "low hemoglobin, using a
# cutoff of 7", "severe hypoxemia where the P/F ratio was under 100": a definitional phrase that states a bound (a
# comparison or a range with its number; a cut-off or threshold with its number), or a parenthesis that does, within
# three words of the word. Only the nearest such word is defined ("recent high lactate, defined as above 4" leaves
# "recent" open), and a clause about age, time, rows or ranks defines nothing ("high creatinine, i.e. patients older
# than 65", "(measured between 2 and 6 hours)"); nor does a number elsewhere ("high lactate in patients over 60").
_DEFINITION = r"(?:defined (?:as|by)|definition(?: of)?|i\.\s?e\.?|meaning|namely)"
_THRESHOLD = r"(?:(?:using|with|at|by|per) (?:an? |the )?)?(?:cut-?off|threshold)(?: of| being| is| was)?"
_BOUND = rf"(?:{_COMPARATOR}|at least|at most|no (?:more|less) than|outside(?: of)?(?: the range(?: of)?)?|between|from)"
_AMOUNT = rf"(?<![a-z0-9.]){_NUMBER_WORD}(?![a-z0-9])(?!\.\d)(?<!(?:19|20|21)\d\d)"  # a whole number, not a year
_RANGE = rf"{_AMOUNT}\s*(?:-|to)\s*{_AMOUNT}"


def _definition_clause(own_reference: str = "") -> re.Pattern[str]:
    """The definitional phrases above; ``own_reference``, where given, a bound by the measure's own reference range that
    a definitional phrase or a parenthesis may state instead of a number (the assessed reading, below)."""
    stated = rf"|{_DEFINITION},?\s+{own_reference}" if own_reference else ""
    inside = rf"|\s*{own_reference}" if own_reference else ""
    return re.compile(
        rf"(?:,\s*|\s+)(?:{_DEFINITION}[^.,;?()]{{0,50}}?(?:{_BOUND}\s*{_AMOUNT}|{_RANGE}){stated}|{_THRESHOLD}\s*{_AMOUNT}"
        rf"|where [^.,;?()]{{0,50}}?{_BOUND}\s*{_AMOUNT})"
        rf"|\s*\((?:[^()]{{0,40}}?{_BOUND}\s*{_AMOUNT}|\s*{_RANGE}{inside})[^()]*\)")


_DEFINITION_CLAUSE = _definition_clause()
# What a clause is about when it bounds something other than the measure: age, rows or ranks, a patient; and time.
_ABOUT_ANOTHER = r"ages?|aged|old|older|younger|rows?|results?|first|top|last|patients?|records?|admissions?|stays?|visits?"
_NOT_A_DEFINITION = re.compile(rf"\b(?:{_ABOUT_ANOTHER}|years?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|seconds?)\b")
_WORDS_BETWEEN = re.compile(r"(?:[\s-]*[a-z/]+){0,3}[\s-]*")

# How a question is read when it is assessed, ahead of the reading the shipped question models learnt from (their
# retraining test reproduces them from the same cues; the next retraining takes this one):
# - a bound given by the laboratory's reference range defines a word of degree as a number does, when it follows the
#   word's own measure ("abnormal creatinine (above the upper reference limit)", "high ALT, above the ULN", "low sodium,
#   defined as below the lower limit of normal"), not another measure's ("high lactate (creatinine above the ULN)");
# - a parenthesis may name the measure by an abbreviation before its bound ("a high heart rate (HR > 100 bpm)"), or a
#   condition by the measure that defines it ("hypotension (MAP < 65)");
# - a time bounds time after a number or a number word ("(over six hours)", "6 h"), not "(HR > 100 bpm)";
# - the words between a word of degree and its number are the measure's name: a preposition, a conjunction, a relative
#   word, a person or an age breaks the link ("high lactate in patients over 60": the number bounds the patients), as
#   does a comma ("high lactate, heart rate over 100": another measure's), except before the bound itself ("high
#   lactate, above 4"); a word of age keeps its own nouns ("elderly patients over 80").
_TIME_UNIT = r"(?:years?|yrs?|y|months?|weeks?|wks?|days?|d|hours?|hrs?|h|minutes?|mins?|seconds?|secs?|times)"
_REFERENCE_BOUND = (
    r"(?:(?:above|below|over|under|outside(?: of)?|exceeding|beyond|within|(?:less|greater|more|higher|lower) than)\s+"
    r"(?:(?:\d+(?:\.\d+)?\s*(?:x|times)|twice|two times|three times)\s+)?(?:the\s+)?(?:(?:upper|lower)\s+)?"
    r"(?:limits? of normal|(?:reference|normal)\s+(?:range|limit|interval)s?|(?:upper|lower)\s+(?:reference\s+)?limit"
    r"|\d+(?:st|nd|rd|th) percentile(?: upper reference limit| url)?|(?:uln|lln|url)\b)"
    r"|\b(?:uln|lln|url)\b)")
_REFERENCE_BOUND_PHRASE = re.compile(_REFERENCE_BOUND)
_NOT_BETWEEN = (r"(?:in|among|for|with|without|during|within|after|before|from|at|on|by|who|whose|that|which|where|when|"
                r"while|if|and|or|but|versus|vs|then|plus|than|excluding|including|except|requiring|receiving|given|"
                r"measured|patients?|people|persons?|those|subjects?|adults?|men|women|males?|females?|children|ages?|aged|"
                r"older|younger|years?)")
_AGE_DEGREE = r"(?:elderly|old|older|young|younger)"
_MEASURE_WORDS = rf"(?:[\s-]+(?!{_NOT_BETWEEN}(?![a-z0-9/']))[a-z][a-z0-9/']*){{0,3}}"
_BOUNDED_ASSESSED = re.compile(
    rf"(?<![a-z]){_AGE_DEGREE}(?=(?:[\s-]+[a-z]+){{0,3}}[\s(,:]*{_COMPARATOR}\s*{_NUMBER_WORD}(?![a-z0-9]))"
    rf"|(?<![a-z])[a-z]+(?={_MEASURE_WORDS}[\s(,:]*(?:of\s+)?(?:{_number_bound(_TIME_UNIT)}|{_REFERENCE_BOUND}))")
# a definition by the reference range: of the measure itself, with no other measure named before the bound
_DEFINITION_CLAUSE_ASSESSED = _definition_clause(
    rf"(?:(?:an? |the )?(?:values?|levels?|results?|concentrations?)\s+)?{_REFERENCE_BOUND}")
_NOT_A_DEFINITION_ASSESSED = re.compile(rf"\b(?:{_ABOUT_ANOTHER})\b|(?<![a-z0-9]){_NUMBER_WORD}\s*-?\s*{_TIME_UNIT}\b")


def _defined(masked: str, hits: list[re.Match[str]], assessing: bool = False) -> set[int]:
    """The starts of the vague words the question defines (see _DEFINITION_CLAUSE): each the nearest one before a
    definition that bounds the measure, with at most three words between."""
    out = set()
    clauses, not_definition = ((_DEFINITION_CLAUSE_ASSESSED, _NOT_A_DEFINITION_ASSESSED) if assessing
                               else (_DEFINITION_CLAUSE, _NOT_A_DEFINITION))
    for clause in clauses.finditer(masked):
        if not_definition.search(clause.group(0)):
            continue
        before = [h for h in hits if h.end() <= clause.start() and _WORDS_BETWEEN.fullmatch(masked[h.end():clause.start()])]
        if before:
            out.add(before[-1].start())
    return out


# Names of conditions and procedures with a word of degree in them ("severe sepsis", "low back pain"), derived from the
# ICD dictionaries by scripts/derive_condition_names.py: the word names, it does not grade.
# Read and compiled on first use, not at import (a pattern of several hundred names costs ~25 ms to build).
@functools.cache
def _condition_names() -> re.Pattern[str]:
    names = [line for line in (Path(__file__).parent / "data" / "condition_names.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    return re.compile(r"(?<![a-z])(?:" + "|".join(re.escape(n).replace(r"\ ", r"[\s-]+")
                                                for n in sorted(names, key=len, reverse=True)) + r")(?![a-z])")


_TERMS_OF_ART = re.compile(_lexicon_pattern(TERMS_OF_ART).pattern.replace(r"\ ", r"[\s-]+"), re.IGNORECASE)


def mask_terms_of_art(question: str) -> str:
    """``question`` with the clinical names that hold a word of degree ("critical care", "critically ill", "severe
    sepsis": TERMS_OF_ART and the ICD-derived condition names) replaced by ``X``, as mask_values replaces the names the
    query looks for: a model that learnt "critical" and "severe" as vague words reads the name, not the degree."""
    text = question.translate(_TYPOGRAPHIC)  # one character for one: the spans found are the question's
    lowered = text.lower()
    spans = [m.span() for m in _TERMS_OF_ART.finditer(lowered)] + [m.span() for m in _condition_names().finditer(lowered)]
    return _masked(question, spans)


def _masked(question: str, spans: list[tuple[int, int]]) -> str:
    """``question`` with each span replaced by ``X``; a span that overlaps an earlier one is left to it."""
    out, end = [], 0
    for a, b in sorted(spans):
        if a >= end:
            out += [question[end:a], "X"]
            end = b
    return "".join(out) + question[end:]


_RANGE_WORDS = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(w) for w in sorted(RANGE_WORDS, key=len, reverse=True))
                          + r")(?![\w-])", re.IGNORECASE)


def mask_range_words(question: str) -> str:
    """``question`` with the words a laboratory's reference range defines ("high", "abnormal": RANGE_WORDS) replaced by
    ``X``, outside compounds ("low-dose") and the fixed phrases that hold one ("normal saline", "high blood pressure")."""
    lowered = question.translate(_TYPOGRAPHIC).lower()
    kept = [m.span() for m in _NOT_VAGUE.finditer(lowered)]
    return _masked(question, [m.span() for m in _RANGE_WORDS.finditer(lowered) if not any(a <= m.start() < b for a, b in kept)])


def _vague_hits(text: str, assessing: bool = False) -> list[str]:
    """The vague expressions, outside the fixed phrases that contain such a word and state no vagueness ("how long"),
    the names of conditions ("severe sepsis"), and the words a measure phrase or a number gives a degree ("a
    68-year-old", "older than 65", "low potassium below 3.5")."""
    def blank(m: re.Match[str]) -> str:
        return "#" * len(m.group(0))

    text = _condition_names().sub(blank, text)
    hits = list(_PATTERNS["vague"].finditer(text))
    defined = _defined(text, hits, assessing)
    text = _blank_at(text, hits, defined)
    masked = (_BOUNDED_ASSESSED if assessing else _BOUNDED).sub(blank, text)
    if assessing:  # "the limit of normal", "the normal range": the laboratory's terms, not a degree
        masked = _REFERENCE_BOUND_PHRASE.sub(blank, masked)
    # a superlative before the fixed phrases: "at most recent admission" is the most recent one, not "at most"
    masked = _MEASURED.sub(blank, _NOT_VAGUE.sub(blank, _SUPERLATIVE.sub(blank, masked)))
    return _phrase_hits(masked, "vague")


def _blank_at(text: str, hits: list[re.Match[str]], starts: set[int]) -> str:
    """``text`` with the hits that start at ``starts`` blanked."""
    for h in sorted((h for h in hits if h.start() in starts), key=lambda h: -h.start()):
        text = text[:h.start()] + "#" * (h.end() - h.start()) + text[h.end():]
    return text


def _record_kinds_asked(text: str) -> list[str]:
    """The kinds of record the question asks for that EHR schemas often lack (HL7 FHIR's kinds; the grounding check
    then asks this database's schema)."""
    return [kind.name for kind in RECORD_KINDS if kind.feature and kind.cue.search(text)]


@dataclass(frozen=True)
class QuestionCues:
    """What the lexicons see in a question (kept in the verdict's details)."""

    words: int
    patient_id: bool
    vague: tuple[str, ...]
    references: tuple[str, ...]
    out_of_scope: tuple[str, ...]
    small_talk: tuple[str, ...]
    infeasible: tuple[str, ...]
    missing: tuple[str, ...]
    numbers: int
    # Not a model feature (the shipped models predate it): a rule the classifier's answer gives way to.
    unresolved: tuple[str, ...] = ()

    def vector(self) -> np.ndarray:
        return np.array(
            [
                min(self.words, 40) / 40, float(self.words <= 3), float(self.words <= 6), float(self.patient_id),
                min(len(self.vague), 3) / 3, min(len(self.references), 3) / 3, min(len(self.out_of_scope), 3) / 3,
                min(len(self.small_talk), 3) / 3, min(len(self.infeasible), 3) / 3, min(len(self.missing), 3) / 3,
                min(self.numbers, 4) / 4,
            ],
            dtype=np.float32,
        )


FEATURE_NAMES = ("length", "very_short", "short", "patient_id", "vague", "references", "out_of_scope", "small_talk",
                 "infeasible", "missing_attribute", "numbers")


def _unresolved(text: str) -> tuple[str, ...]:
    """The phrases that point back at nothing, without the preposition that ended them ("for this"). Only in the
    question's first clause: after a comma or semicolon, an earlier clause may name what they point at."""
    first = re.split(r"[,;]", text, maxsplit=1)[0]
    found = (_TRAILING.sub("", m.group(0).strip(" ?.!,")) for p in _UNRESOLVED for m in p.finditer(first))
    return tuple(dict.fromkeys(sorted(found, key=len, reverse=True)))


# Typographic dashes and quotes read as their ASCII forms ("an 87\u2011year\u2011old", "I\u2019m"), as people type them.
_TYPOGRAPHIC = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2212\u00ad"} | {c: "'" for c in "\u2018\u2019\u02bc"}
                             | {c: '"' for c in "\u201c\u201d"} | {"\u00a0": " ", "\u202f": " "})


_SPACES = re.compile(r"\s+")


def _relative(word: str, following: str) -> bool:
    """Is this "that" (or "this", "these", "those") not a demonstrative pointing at something, but the relative pronoun
    or conjunction of English grammar ("the stay that began", "the times that patients were seen", "shows that the
    dose ...")? A demonstrative determiner is followed by its noun; these are followed by a verb (an auxiliary, a
    modal, a past form in -ed), a determiner, a pronoun or a preposition. "that" is singular, so "that" before a
    plural or third-person form in -s is not "that + its noun" either ("that involves", "that patients")."""
    if following in CLOSED_CLASS_AFTER_RELATIVE or re.fullmatch(r"[a-z]{3,}ed", following):
        return True
    return word in ("that", "this") and bool(re.fullmatch(r"[a-z]{3,}[^isu]s", following))


# A threshold stated for a measurement: a comparison and its number ("above 4 mmol/L", "> 100"), not an age ("older
# than 65"), a count of things ("more than 2 admissions") nor a year or a span ("between 2100 and 2105").
_STATED_THRESHOLD = re.compile(r"(?<!older )(?<!younger )(?<!aged )(?:[<>]=?|\b(?:above|below|over|under|exceed\w*|"
                               r"(?:greater|more|less|fewer|higher|lower) than))\s*-?\d+(?:\.\d+)?(?!\s*[a-z]+s\b)(?!\d)")
# Where a clause ends: an antecedent stands in an earlier clause than the phrase that points back at it ("patients given
# heparin, and how many of these patients"); within one clause "patients in this cohort" places them in another group.
_CLAUSE_END = re.compile(r"[,;:.?!]|\band\b")
# Words before a noun that make it no antecedent: "other drugs", "all patients", "compared with ...".
_NOT_ANTECEDENT = frozenset(("other", "all", "any", "every", "each", "no", "besides", "except", "than", "compared", "versus",
                             "vs"))


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _points_back_within(determiner: str, noun: str, before: str) -> bool:
    """Does "this/these <noun>" point back at something the question itself has said before it (endophora)? In an
    earlier clause, the same noun in the same number ("patients given heparin, and how many of these patients", not
    "this patient" after "patients") or, for a noun that sums up a group, the people or visits the question described
    ("adults older than 65 admitted with sepsis, ... this cohort"), neither after "other", "all", "compared with"; or,
    for a noun that sums up a criterion, a threshold the question stated ("lactate above 4 mmol/L ... this threshold").
    Without such an antecedent it points outside the question, at nothing."""
    if noun in CRITERION_NOUNS and _STATED_THRESHOLD.search(before):
        return True
    ends = [m.start() for m in _CLAUSE_END.finditer(before)]
    if not ends:
        return False
    words = [w.rstrip(".'").removesuffix("'s") for w in _WORD.findall(before[:ends[-1]])]
    plural = determiner in ("these", "those")
    candidates = [w for i, w in enumerate(words) if i == 0 or words[i - 1] not in _NOT_ANTECEDENT]
    if noun in GROUP_NOUNS and any(w in GROUP_MEMBERS for w in candidates):
        return True
    return any(w == noun or (_singular(w) == _singular(noun) and (w != _singular(w)) == plural) for w in candidates)


def question_cues(question: str, *, assessing: bool = False) -> QuestionCues:
    """What the lexicons see in ``question``. ``assessing``: read as the verifier reads a question it assesses, ahead
    of the reading the shipped question models learnt from (see _REFERENCE_BOUND): also a demonstrative whose
    antecedent the question itself gives ("patients given heparin, and how many of these patients") is no reference."""
    text = _SPACES.sub(" ", question.translate(_TYPOGRAPHIC).lower()).strip()  # runs of blanks read as one (and cost no time)
    words = _WORD.findall(text)
    has_id = bool(PATIENT_ID.search(text))
    refs = []
    # a patient or visit named by an id (eICU's "002-34851", or five digits and more), not a year or an amount ("in 2100")
    named_someone = any("-" in m.group(0) or len(m.group(0)) >= 5 for m in PATIENT_ID.finditer(text))
    for m in _DEMONSTRATIVE.finditer(text):
        named = re.match(r"\s*(?:\d{3}-\d{3,7}|\d{4,9})\b", text[m.end():])  # "that patient 10004235 ..." names the patient
        # With a patient named, "this admission" / "this ICU stay" is that patient's present visit, anchored like "this year"
        present_visit = named_someone and m.group(1) == "this" and m.group(2) in _VISIT_NOUNS
        if m.group(2) not in TIME_NOUNS and not named and not present_visit and not _relative(m.group(1), m.group(2)) \
                and not (assessing and _points_back_within(m.group(1), m.group(2), text[:m.start()])):
            refs.append(f"{m.group(1)} {m.group(2)}")
    bare = set(REFERENCE_WORDS) - {"this", "that", "these", "those"}
    if has_id:
        bare -= _PERSONAL  # with a patient named, his/her/their refer to that patient
    refs += [w for w in words if w in bare]
    return QuestionCues(
        words=len(words),
        patient_id=has_id,
        vague=tuple(_vague_hits(text, assessing)),
        references=tuple(refs),
        out_of_scope=tuple(_phrase_hits(text, "out_of_scope")),
        small_talk=tuple(_phrase_hits(text, "small_talk")),
        infeasible=tuple(_phrase_hits(text, "infeasible")),
        missing=tuple(_record_kinds_asked(text)),
        numbers=len(_NUMBER.findall(text)),
        unresolved=_unresolved(text),
    )
