"""The things the question names are the things the SQL looks for, read against the database's own values.

Two directions of one principle, both grounded in the data rather than in word lists:

- **substitution**: the SQL compares a column with a value the question does not mention, while the question
  names another value of that same column ("heart rate" asked, ``label = 'respiratory rate'`` queried);
- **a dropped constraint**: the question names a value of one of the database's name columns (a drug, a lab test,
  a diagnosis) and the SQL never looks for it.

A value "is named" when its words appear in the question at word boundaries; the name columns are the profile's
value columns with many distinct values (categorical columns such as gender hold plain words and are left out).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from sqlglot import exp

from ehrguard.db.lexicon import normal_form
from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found, negated, quoted_list, stored_table
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _letters, _replace_with, literal_comparisons
from ehrguard.verify.offline.features import mask_values
from ehrguard.verify.offline.lexicon import CLOSED_CLASS_AFTER_RELATIVE
from ehrguard.verify.verdict import Finding

# A column with at least this many distinct values holds names (drugs, tests, diagnoses), not categories.
NAME_COLUMN_MIN_VALUES = 50
# Longest value, in words, looked for in a question.
MAX_WORDS = 12
# Words too common to stand for a value on their own.
_PLAIN = frozenset((
    "a", "an", "the", "of", "for", "to", "in", "on", "at", "by", "with", "and", "or", "not", "no", "other", "unknown",
    "is", "was", "be", "patient", "patients", "time", "date", "day", "value", "values", "total", "count", "number",
    "type", "name", "level", "rate", "test", "result", "all", "any", "none", "yes", "last", "first", "left", "right",
))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


_normal = normal_form
_HAS_LETTER = re.compile(r"[a-z]")


def word_stem(word: str) -> str:
    return word[:5] if len(word) > 5 else word


# Clinicians' usual short names and other names for what records name in full (general clinical usage, not read from any
# benchmark): a question saying the one names the other. Words on the left are whole words of the question.
CLINICAL_NAMES: dict[str, tuple[str, ...]] = {
    "fingerstick": ("bedside",), "finger stick": ("bedside",), "point of care": ("bedside",), "poc": ("bedside",),
    "ionized": ("free",), "ionised": ("free",), "bun": ("urea nitrogen",), "hgb": ("hemoglobin",), "hb": ("hemoglobin",),
    "hct": ("hematocrit",), "wbc": ("white blood cells",), "plt": ("platelet count",), "platelets": ("platelet count",),
    "k": ("potassium",), "k+": ("potassium",), "creat": ("creatinine",),
    "cr": ("creatinine",), "lactic acid": ("lactate",), "sats": ("o2 saturation",), "spo2": ("o2 saturation",),
    "oxygen saturation": ("o2 saturation",),
    "hr": ("heart rate",), "rr": ("respiratory rate",), "temp": ("temperature",),
    "iv": ("intravenous",), "intravenous": ("iv",), "intravenously": ("iv", "intravenous"),
    "orally": ("po", "oral"), "subcutaneously": ("sc", "subcutaneous"), "intramuscularly": ("im", "intramuscular"),
    "po": ("oral",), "oral": ("po",), "by mouth": ("po", "oral"),
    "sc": ("subcutaneous",), "subq": ("subcutaneous", "sc"), "subcut": ("subcutaneous", "sc"), "subcutaneous": ("sc", "subq"),
    "im": ("intramuscular",), "intramuscular": ("im",), "ng": ("nasogastric",), "nasogastric": ("ng",),
    "pr": ("rectal",), "rectal": ("pr",), "sl": ("sublingual",), "sublingual": ("sl",), "inh": ("inhalation",),
    "died": ("expired",), "dead": ("expired",), "deceased": ("expired",), "death": ("expired",), "deaths": ("expired",),
    "alive": ("survived",), "survived": ("alive",), "passed away": ("expired",),
    "women": ("female",), "woman": ("female",), "men": ("male",), "man": ("male",), "females": ("female",), "males": ("male",),
    "emergency department": ("emergency room",), "ed": ("emergency room",), "er": ("emergency room",), "e.r.": ("emergency room",),
    "e.r": ("emergency room",),
    "emergency room": ("emergency department",),
    "neb": ("inhalation", "nebulized"),
}


def clinical_wording(question: str) -> str:
    """The question with each short or other name replaced, in one pass, by the records' first name for it ("k" ->
    potassium, "fingerstick glucose" -> "bedside glucose", "the ER" -> "the emergency room")."""
    return _CLINICAL_NAME.sub(lambda m: CLINICAL_NAMES[m.group(0)][0], question.lower())


_CLINICAL_NAME = re.compile("(?<![a-z0-9])(?:" + "|".join(re.escape(k) for k in sorted(CLINICAL_NAMES, key=len, reverse=True))
                            + ")(?![a-z0-9])")


# Adjectives of a condition and the condition's noun, by English derivational morphology (general clinical English):
# "diabetic patients" are patients with diabetes, "hypokalemic" ones have hypokalemia. Read only before a word for the
# people or visits described, so that a condition named with its adjective ("septic shock") stays as it is.
_CONDITION_ADJECTIVES = ((r"diabetic", "diabetes"), (r"septic", "sepsis"), (r"asthmatic", "asthma"), (r"epileptic", "epilepsy"),
                         (r"obese", "obesity"), (r"(\w+)emic", r"\1emia"), (r"(\w+)oxic", r"\1oxia"), (r"(\w+)tensive", r"\1tension"),
                         (r"(\w+)thermic", r"\1thermia"), (r"(\w+)otic", r"\1osis"))
_DESCRIBED = r"(?=\s+(?:patients?|pts|people|persons|individuals|subjects|adults|children|men|women|admissions?|stays?|cases))"
_CONDITION_ADJECTIVE = re.compile(r"\b(?:" + "|".join(f"(?:{a})" for a, _ in _CONDITION_ADJECTIVES) + r")\b" + _DESCRIBED)


def condition_nouns(question: str) -> str:
    """The question with each condition's adjective before the people it describes written as the condition's noun
    ("how many diabetic patients" -> "how many diabetes patients"), so that a named diagnosis is found either way."""
    def noun(m: re.Match[str]) -> str:
        for adjective, name in _CONDITION_ADJECTIVES:
            if re.fullmatch(adjective, m.group(0)):
                return re.sub(adjective, name, m.group(0))
        return m.group(0)

    return _CONDITION_ADJECTIVE.sub(noun, question.lower())


# A short name a value gives in parentheses: 'medical intensive care unit (micu)', '... (neuro sicu)', '(micu/sicu)'.
_IN_PARENTHESES = r"\(([a-z0-9][a-z0-9 /-]{1,15})\)"


def abbreviates(short: str, before: list[str]) -> bool:
    """Is ``short`` (the text of a parenthesis) an abbreviation of the words before it: each of its words one of them,
    or letters that are their initials in order ('micu': medical intensive care unit; 'neuro sicu'; not 'liquid')?"""
    initials = "".join(w[0] for w in before)

    def initials_of(token: str) -> bool:
        at = 0
        for letter in token:
            at = initials.find(letter, at) + 1
            if at == 0:
                return False
        return True

    return all(t in before or initials_of(t) for t in re.findall(r"[a-z0-9]+", short))


def without_abbreviation(literal: str) -> str:
    """The literal without the abbreviations it gives in parentheses of the words before them ('step-down unit (sdu)'
    -> 'step-down unit'); a parenthesis that says more ('acetaminophen (liquid)') stays."""
    text = literal.lower()
    for m in reversed(list(re.finditer(_IN_PARENTHESES, text))):
        if abbreviates(m.group(1), _words(text[:m.start()])):
            text = text[:m.start()] + " " + text[m.end():]
    return text


def supported(literal: str, question: str) -> bool:
    """Does the question mention the literal: its words in order, or every content word of it (stems compared)?"""
    lit, q = _normal(literal.replace("%", " ")), _normal(question)
    if not lit or f" {lit} " in f" {q} ":
        return True
    # "medical intensive care unit (micu)": "MICU" names it; "... (neuro sicu)": "neuro SICU"
    short = [_normal(s) for s in re.findall(_IN_PARENTHESES, literal.lower())]
    if any(s and f" {s} " in f" {q} " for s in short):
        return True
    # the abbreviation in parentheses names what stands before it a second time ("step-down unit (sdu)"): the words
    # before it are enough
    content = [w for w in _normal(without_abbreviation(literal).replace("%", " ")).split() if w not in _PLAIN and not w.isdigit()]
    if not content:
        return True
    stems = {word_stem(w) for w in q.split()}
    # a pattern's word may also be the start of a word ('%urin%' for "urine", "urinary")
    return all(word_stem(w) in stems or ("%" in literal and any(word.startswith(w) for word in q.split())) for w in content)


_GRAMMAR_WORDS = CLOSED_CLASS_AFTER_RELATIVE | frozenset(("and", "or", "than", "as", "per", "vs", "versus"))
# A name of two to this many words is also found with its words in another order: "total protein" names 'Protein,
# Total', "mean arterial blood pressure" 'Arterial Blood Pressure mean' (records write the head word first).
MAX_REORDERED_WORDS = 4


def _orders(words: list[str]) -> list[str]:
    """A span's words in every other order: the words of a compound name ("total protein"), one at least saying
    something (not plain, not a number), none a word of grammar (a preposition or an article ties words in its order:
    "admission type of" is not "type of admission")."""
    if not 2 <= len(words) <= MAX_REORDERED_WORDS or all(w in _PLAIN or w.isdigit() for w in words) \
            or any(w in _GRAMMAR_WORDS or len(w) < 2 for w in words):  # a letter alone: "patient's" leaves an "s"
        return []
    written = " ".join(words)
    return [o for o in dict.fromkeys(" ".join(p) for p in itertools.permutations(words)) if o != written]


def _says_every_word(text: str, value: str) -> bool:
    """Does the text hold every word of the value, plain ones too (stems compared)? The query's own names looked at
    this way: 'c-reactive protein' does not say 'protein, total'."""
    stems = {word_stem(w) for w in _words(text)}
    return all(word_stem(w) in stems for w in _words(value))


def named_values(ctx: SqlContext, columns: list[tuple[str, str]], text: str) -> dict[tuple[str, str], list[str]]:
    """The values of each column the text names (its words in order at word boundaries, or a short name's words in
    another order), longest first, none inside another one found; looked up in the database's value index, phrase by
    phrase."""
    words = _words(text)
    spans = {(i, j): " ".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, min(len(words), i + MAX_WORDS) + 1)}
    keys = {g for g in spans.values() if len(g) >= 3 and g not in _PLAIN and _HAS_LETTER.search(g)}
    reordered = {(i, j): _orders(words[i:j]) for i, j in spans if j - i <= MAX_REORDERED_WORDS}
    keys |= {o for orders in reordered.values() for o in orders}
    try:
        found = ctx.db.values.find(columns, keys, by="normal")
    except DatabaseError:  # a column too slow or too large to read: it names nothing
        return {c: [] for c in columns}
    out = {}
    for column in columns:
        hits = found.get(column, {})
        spans_found: list[tuple[int, int, str]] = []
        for i in range(len(words)):
            for j in range(min(len(words), i + MAX_WORDS), i, -1):
                hit = hits.get(spans[(i, j)])
                if hit is None:
                    hit = next((hits[o] for o in reordered.get((i, j), ()) if o in hits), None)
                if hit is not None:
                    spans_found.append((i, j, hit))
                    break
        spans_found.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        kept: list[tuple[int, int, str]] = []
        for a, b, v in spans_found:
            if all(b <= x or y <= a for x, y, _ in kept):
                kept.append((a, b, v))
        out[column] = list(dict.fromkeys(v for _, _, v in sorted(kept)))
    return out


# An exclusion the question states in so many words ("heparin (not flushes)", "excluding elective admissions", "drugs
# other than aspirin", "non-elective"): general English markers of exception.
EXCLUSION = re.compile(r"\b(?:excluding|exclude|excludes|except(?: for)?|other than|apart from|aside from|but not|not counting|"
                       r"not including|leaving out|without counting)\b|\(\s*(?:[\w ]{1,20},\s*)?not\b|\bnon-", re.IGNORECASE)
_NOT_EXCLUDED = frozenset(("those", "these", "ones", "that", "which", "with", "from", "them", "their", "patients", "people",
                           "admissions", "stays", "cases", "visits", "records", "rows", "what", "were", "have", "been", "any",
                           # and the short ones, for a reading of three-letter words ("(not the gas)")
                           "the", "and", "for", "one", "its", "his", "her", "all", "are", "was", "who"))


def excluded_words(question: str, shortest: int = 4) -> set[str]:
    """The words of what the question leaves out: the content words (``shortest`` letters or more) of the three words
    after each marker of exception, as stems ("flushes" -> "flush")."""
    out = set()
    for m in EXCLUSION.finditer(question):
        for word in re.findall(r"[a-z]+", question[m.end():].lower())[:3]:
            if len(word) >= shortest and word not in _NOT_EXCLUDED:
                out.add(singular(word))
    return out


def singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if re.search(r"(?:sh|ch|x|ss)es$", word):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def check_substitution(ctx: SqlContext) -> CheckResult:
    """The SQL looks for a value the question never mentions, in a column of which the question names another value."""
    if ctx.tree is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    compared = literal_comparisons(ctx.tree, tables)
    everything = " ".join(lit.this for _, _, lit in compared)
    findings: list[Finding] = []
    edits: list[Edit] = []
    plain = clinical_wording(ctx.question)
    question = ctx.question if plain == ctx.question.lower() else f"{ctx.question} ; {plain}"
    for table, column, lit in compared:
        table = owner_table(ctx, table, column, tables)
        if not table or column.endswith("id") or not _distinct_count(ctx, table, column):
            continue
        ruled_out = {singular(w) for w in _words(lit.this) if len(w) >= 4} & excluded_words(plain)  # "(lab, not fingerstick)"
        if supported(lit.this, question) and not ruled_out:
            # named, but maybe only inside a longer name the question says ("bedside glucose" asked, 'glucose' queried)
            instead = [] if "%" in lit.this else inside_longer_name(ctx, table, column, lit.this, plain, everything)
        else:
            named = named_values(ctx, [(table, column)], question)[(table, column)]
            excluded = excluded_words(mask_values(ctx.question, ctx.sql))  # "excluding elective ones": named to be left out
            instead = [v for v in named if not _says_every_word(everything, v) and _normal(v) not in _normal(lit.this)
                       and not {singular(w) for w in re.findall(r"[a-z]+", v.lower())} & excluded]
        partial = {v: _part_of_longer_name(ctx, table, column, v, lit.this) or ("part" if _partly_said(question, lit.this, v) else "")
                   for v in instead}
        instead = [v for v in instead if partial[v] != "read"]
        if not instead:
            if (ruled_out or not supported(lit.this, question)) and not _excluded(lit):
                narrower = _narrower(ctx, table, column, lit.this, {_normal(other.this) for _, _, other in compared}) \
                    if isinstance(lit.parent, exp.EQ) else []
                # one name looked for in the column, exactly (a pattern is a partial match on purpose; several names
                # answer a question of several things, whose other words are no sign)
                alone = "%" not in lit.this and \
                    sum(1 for t, c, _ in compared if (owner_table(ctx, t, c, tables), c) == (table, column)) == 1
                findings += narrower or (_partly_named(ctx, table, column, lit.this, everything) if alone else [])
            continue
        alternatives = " or ".join(f"'{v}'" for v in instead[:3])
        findings.append(Finding("wrong_value", "error",
                                f"The query looks for '{lit.this}' ({table}.{column}); the question names {alternatives}.",
                                ctx.span_of(f"'{lit.this}'"), f"'{instead[0]}'" if len(instead) == 1 and not partial[instead[0]] else None))
        if len(instead) == 1 and "%" not in lit.this and not partial[instead[0]]:
            edits.append(TreeEdit(_replace_with(instead[0]), target=lit))
    return found(*findings, edits=edits)


def _partly_said(question: str, literal: str, value: str) -> bool:
    """Does the question say a word of the literal (four letters or more, stems compared) that the named value does not
    hold? Then the literal may be the question's own reading of a name it says otherwise, and replacing it by the
    named value is no certain repair."""
    said = {word_stem(w) for w in _words(question) if len(w) >= 4 and w not in _PLAIN and w not in _BESIDE_A_NAME}
    own = {word_stem(w) for w in _words(value)}
    return any(word_stem(w) in said - own for w in _words(literal) if len(w) >= 4 and w not in _PLAIN)


def _part_of_longer_name(ctx: SqlContext, table: str, column: str, value: str, literal: str) -> str:
    """Is the one-word value the question names only a part of a longer name it says ("nursing home": 'home', "blood
    alcohol": 'blood', "flu swab": 'swab')? Then replacing the literal by it is no certain repair.

    "read": the literal says the same thing otherwise, so the value is no sign of a mistake: it writes the value in
    clinical shorthand ('p.o.' for "oral"), or it holds the word that qualifies the value in the question, as a stem,
    inside a word or as initials ('skilled nursing facility' for "nursing home", 'influenza a/b' for "flu swab", 'lr'
    for "lactated ringers"). "part": the value is only a part of a longer name, no repair: a qualifying word before it
    that the column's values use elsewhere, or a word after a specimen ("blood alcohol": the test is the alcohol).
    "": the value stands on its own. A word after any other value is the generic noun it qualifies ("rehab facility",
    "hospice care", "medication charges"): the value is still the word that tells the records apart. A specimen
    before a test ("serum potassium") names where it was drawn, not another test."""
    words = _words(value)
    question = _words(ctx.question)
    if len(words) != 1:
        return ""
    lit_words = _words(literal)
    shorthand = clinical_wording(value)
    if shorthand != value.lower() and _letters(shorthand) == _letters(literal):
        return "read"
    at = next((i for i, w in enumerate(question) if w == words[0]), None)
    if at is None:
        return ""
    after = question[at + 1] if at + 1 < len(question) else ""
    before = question[at - 1] if at > 0 else ""

    def says_something(word: str) -> bool:
        return bool(word) and not word.isdigit() and len(word) > 1 and word not in _BESIDE_A_NAME and word not in _PLAIN \
            and word not in _GRAMMAR_WORDS

    def in_literal(word: str) -> bool:  # "nursing" in 'skilled nursing facility', "flu" in 'influenza a/b'
        return word_stem(word) in {word_stem(w) for w in lit_words} or (len(word) >= 3 and any(word in w for w in lit_words))

    if says_something(before) and not _other_specimen(before, ""):
        if in_literal(before) or before[0] + words[0][0] in lit_words:  # initials: 'lr'
            return "read"
        if _column_says(ctx, table, column, before):
            return "part"
    return "part" if says_something(after) and _is_specimen(words[0]) else ""


def _is_specimen(word: str) -> bool:
    from ehrguard.verify.checks.specimens import SPECIMENS  # here: specimens reads keys, which reads this module

    return any(s.pattern.search(word) for s in SPECIMENS)


def _column_says(ctx: SqlContext, table: str, column: str, word: str) -> bool:
    """Does some value of the column hold this word (stems compared)?"""
    try:
        values = ctx.db.values.values(table, column)
    except DatabaseError:
        return False
    stem = word_stem(word)
    return any(stem in {word_stem(w) for w in _words(v)} for v in values)


# Words that may stand beside a name without being part of it (English grammar's closed classes, and the verbs and
# nouns a question puts around a drug or a test: "was heparin given", "the last potassium value").
_BESIDE_A_NAME = CLOSED_CLASS_AFTER_RELATIVE | frozenset((
    "and", "or", "than", "what", "which", "when", "how", "many", "much", "often", "times", "number", "any", "ever",
    "patient", "patients", "stay", "admission", "value", "values", "level", "levels", "result", "results", "test", "tests",
    "lab", "labs", "laboratory",
    "reading", "readings", "measurement", "measurements", "dose", "doses", "order", "orders", "prescription", "prescriptions",
    "prescribed", "administered", "received", "receive", "ordered", "measured", "drawn", "checked", "recorded", "get",
    "last", "first", "latest", "earliest", "highest", "lowest", "average", "mean", "maximum", "minimum", "total",
))


def said_stems(question: str) -> set[str]:
    """The stems of the question's words, and of the clinical names it says in other words ("lasix": furosemide)."""
    return {word_stem(w) for w in _words(f"{question} {clinical_wording(question)}")}


def _narrower(ctx: SqlContext, table: str, column: str, literal: str, looked_for: set[str]) -> list[Finding]:
    """The question names a value on its own ("was acetaminophen given"), and the query looks only for a longer value
    that holds it and says more the question does not ('acetaminophen-caff-butalbital', 'amylase, ascites'): another
    item, or a part of the one asked. A warning that keeps the answer from being verified, not a repair: people also
    name a narrower item by its first word, and the records may hold it under both names."""
    words = _words(ctx.question)
    lit_words = set(_words(literal))
    # what the question says, but what it rules out ("(lab, not fingerstick)": the bedside test is not said)
    said = said_stems(ctx.question) - {word_stem(w) for w in excluded_words(clinical_wording(ctx.question))}
    for value in named_values(ctx, [(table, column)], ctx.question)[(table, column)]:
        named = _words(value)
        if not named or not set(named) < lit_words or _normal(value) in looked_for:
            continue  # not inside the literal, or looked for as well
        at = next((i for i in range(len(words) - len(named) + 1) if words[i:i + len(named)] == named), None)
        if at is None:
            continue
        before = words[at - 1] if at > 0 else ""
        after = words[at + len(named)] if at + len(named) < len(words) else ""
        extra = [w for w in _words(literal) if w not in named]
        if any(word_stem(w) in said for w in extra if not w.isdigit()):
            continue  # the question says what the longer value adds ("given as a flush", "for hyperkalemia")
        # beside it only words of grammar, or a specimen the longer value does not say ("serum glucose" asked,
        # 'bedside glucose' queried)
        if all(w == "" or w in _BESIDE_A_NAME or w.isdigit() or _other_specimen(w, literal) for w in (before, after)):
            return [Finding("narrower_value", "warning",
                            f"The query looks only for '{literal}' ({table}.{column}); the question names '{value}', which "
                            f"the records also hold on its own, and does not say '{' '.join(extra)}'.",
                            ctx.span_of(f"'{literal}'"))]
    return []


def _other_specimen(word: str, literal: str) -> bool:
    """``word`` names where a sample came from ("serum", "urine"), and the value looked for does not say it."""
    from ehrguard.verify.checks.specimens import SPECIMENS  # here: specimens reads keys, which reads this module

    # (blood in general is no other specimen: a bedside glucose is a blood glucose)
    return any(s.name != "blood" and s.pattern.search(word) and not s.pattern.search(literal.lower()) for s in SPECIMENS)


def _values_by_word(ctx: SqlContext, table: str, column: str) -> dict[str, list[str]]:
    """The column's values under each of their words (normal forms), read once per open database."""

    def build() -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for value in ctx.db.values.values(table, column):
            for word in set(_normal(value).split()):
                out.setdefault(word, []).append(value)
        return out

    return ctx.db.derived(("values_by_word", table.lower(), column.lower()), build)


# Words of a drug's release form ("extended release", "sustained release"): they name how, not what.
_RELEASE_FORMS = frozenset(("release", "released", "extended", "sustained", "delayed", "immediate", "controlled", "modified",
                            "xl", "er", "sr", "cr", "dr", "ec", "xr"))


def _partly_named(ctx: SqlContext, table: str, column: str, literal: str, everything: str) -> list[Finding]:
    """The question names, in two or three words, a part of some of the column's values ("staph aureus": 'staph aureus
    coag +') that the query's own names do not hold, and the query looks for something the question never says: the
    query looks for another thing than the one asked. A warning that keeps the answer from being verified, no repair:
    which of the values holding the words was meant is not certain."""
    words = _words(ctx.question)
    said = f" {_normal(everything)} "
    said_stems_ = {word_stem(singular(w)) for w in _words(everything)}
    by_word = _values_by_word(ctx, table, column)
    for n in (3, 2):
        for i in range(len(words) - n + 1):
            gram = words[i:i + n]
            if any(w in _GRAMMAR_WORDS or w in _PLAIN or len(w) < 2 for w in gram) or all(w.isdigit() for w in gram):
                continue
            phrase = " ".join(gram)
            if f" {phrase} " in said or set(gram) & _RELEASE_FORMS or \
                    all(word_stem(singular(w)) in said_stems_ for w in _words(clinical_wording(phrase))):
                continue  # the query's own names say it (in any order or number, or in the records' words), or a form
            holding = [v for v in by_word.get(gram[0], ()) if f" {phrase} " in f" {_normal(v)} "]
            if holding:
                return [Finding("value_not_named", "warning",
                                f"The query looks for '{literal}' ({table}.{column}); the question names '{phrase}', which "
                                f"the records hold in {quoted_list(holding)}.", ctx.span_of(f"'{literal}'"))]
    return []


# A column of categories (routes, types, statuses) holds at most this many distinct values.
CATEGORY_MAX_VALUES = 200


def check_unasked_filter(ctx: SqlContext) -> CheckResult:
    """A condition keeps one category of a column (a route, a type, a status) the question never mentions, and the
    question names no category of that column at all: the answer is cut to a subgroup nobody asked about
    (``routeadmin = 'po'`` for "how many acetaminophen doses"). Read from the data: the column's distinct values, few
    enough to be categories, and the question's words (with clinicians' short names: "oral" is po)."""
    if not isinstance(ctx.tree, exp.Select):
        return NOTHING
    tables, _ = aliases(ctx.tree)
    question = f"{ctx.question} ; {clinical_wording(ctx.question)}"
    names = {(t.lower(), c.lower()) for t, c in name_columns(ctx)}
    for table, column, lit in literal_comparisons(ctx.tree, tables, (exp.EQ,)):
        select = lit.find_ancestor(exp.Select)
        if select is not ctx.tree or negated(lit, exp.Case, exp.If, exp.Or):
            continue  # only the outer query's own conditions, each one kept (not an alternative or a CASE)
        table = owner_table(ctx, table, column, tables)
        if not table or len(lit.this) < 2 or "%" in lit.this or column.endswith("id") or (table, column) in names:
            continue
        values = _categories(ctx, table, column)
        if not values or lit.this not in values or _mentions(question, lit.this) or ctx.db.schema.table(lit.this) is not None:
            continue  # a value that names a table (cost.event_type = 'prescriptions') is a kind of row: key_kind's question
        if any(_mentions(question, v) for v in values):
            continue  # the question names a category of this column: which one is the substitution check's question
        # Not repaired: dropping the condition was tried (session 25) and turned a right SCARE candidate wrong; a category
        # the question does not name may still be one it means.
        return found(Finding("unasked_filter", "warning", f"The query keeps only {table}.{column} = '{lit.this}'; the question "
                             "does not ask for that, so the other ones are left out.", ctx.span_of(f"'{lit.this}'")))
    return NOTHING


def _mentions(question: str, value: str) -> bool:
    """Does the question say anything of the value: one of its distinctive words (three letters or more, not plain),
    its abbreviation in brackets, or a genus written short ("E. coli" for 'escherichia coli')?"""
    words = [w for w in _words(value) if len(w) >= 3 and w not in _PLAIN and not w.isdigit()]
    asked = {word_stem(w) for w in _words(question)}
    if any(word_stem(w) in asked for w in words) or supported(value, question) and words:
        return True
    if _normal(value) and f" {_normal(value)} " in f" {_normal(question)} ":
        return True  # a short value said as it is ('iv', 'po')
    parts = value.lower().split()
    return len(parts) == 2 and bool(re.search(rf"\b{re.escape(parts[0][0])}\.\s*{re.escape(parts[1])}\b", question.lower()))


# What a question says happened to a patient ("given", "administered", "received"), and the records' words for an event
# that did not happen (general English negation and a medication record's usual statuses: 'Not Given', 'Held', 'Hold
# Dose', 'Refused', 'Omitted', 'Cancelled').
_HAPPENED = re.compile(r"\b(?:given|administered|received|receive|receiving|got|actually|infused)\b", re.IGNORECASE)
_DID_NOT_HAPPEN = re.compile(r"^\s*(?:not\s|hold\b|held\b|refused\b|omitted\b|missed\b|cancell?ed\b)", re.IGNORECASE)


# A column that says what became of an event (its status, the event's own text, the action taken), by its name: not a
# name column whose values may include a word of negation ('cancelled' among organisms: a culture with no result).
_STATUS_COLUMN = re.compile(r"status|event|action|state", re.IGNORECASE)


def check_unhappened_events(ctx: SqlContext) -> CheckResult:
    """The question asks what was given (administered, received) and the query reads a table whose category column
    also records events that did not happen ('Not Given', 'Hold Dose'), without a condition on that column: it counts
    them with the rest. Read from the data (the column's values); no repair: which statuses count as given ('Delayed
    Administered', 'Partial Administered') is the user's to say."""
    if not isinstance(ctx.tree, exp.Select) or not _HAPPENED.search(ctx.question):
        return NOTHING
    read = {c.name.lower() for c in ctx.tree.find_all(exp.Column)}
    for name in dict.fromkeys(t.name for t in ctx.tree.find_all(exp.Table)):
        info = ctx.db.schema.table(name)
        if info is None:
            continue
        for col in info.columns:
            if col.name.lower() in read or not re.search(r"char|text|string", col.type.lower()) or col.name.lower().endswith("id") \
                    or not _STATUS_COLUMN.search(col.name):
                continue
            unhappened = [v for v in _categories(ctx, info.qualified_name, col.name) if _DID_NOT_HAPPEN.match(v)]
            if unhappened:
                shown = ", ".join(f"'{v}'" for v in unhappened[:3])
                return found(Finding("unhappened_events", "warning", f"{name}.{col.name} also records events that did not happen "
                                     f"({shown}); the query never reads it, so it counts them with the ones given."))
    return NOTHING


def _categories(ctx: SqlContext, table: str, column: str) -> list[str]:
    """The column's distinct values when they are few enough to be categories (asked of the data once per open
    database); empty otherwise."""

    def read() -> list[str]:
        col, source = exp.column(column), stored_table(ctx, table)
        query = exp.select(col).distinct().from_(source).where(exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null())))
        try:
            rows = ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5, max_rows=CATEGORY_MAX_VALUES + 1).rows
        except DatabaseError:
            return []
        if len(rows) > CATEGORY_MAX_VALUES or not all(isinstance(r[0], str) for r in rows):
            return []
        return [r[0] for r in rows]

    return ctx.db.derived(("categories", table, column), read)


def inside_longer_name(ctx: SqlContext, table: str, column: str, literal: str, question: str, everything: str) -> list[str]:
    """The column's values the question names that hold every word of the literal's (but the plain ones) and say more,
    when the question names the literal only inside one of them: 'bedside glucose' asked and 'glucose' queried, 'free
    calcium' (ionized) asked and 'calcium, total' queried. The query took another name of the same thing's family."""
    named = named_values(ctx, [(table, column)], question)[(table, column)]
    lit = _normal(literal)
    if lit in {_normal(v) for v in named}:
        return []  # the literal is named on its own too
    words = {w for w in _normal(without_abbreviation(literal)).split() if w not in _PLAIN}
    return [v for v in named if _normal(v) != lit and words and words <= set(_normal(v).split()) and not supported(v, everything)]


def _distinct_count(ctx: SqlContext, table: str, column: str) -> int:
    """How many values the column holds; 0 for one too slow or too large to index (and it is not asked again)."""

    def build() -> int:
        try:
            return ctx.db.values.distinct_count(table, column)
        except DatabaseError:
            return 0

    return ctx.db.derived(("distinct_count", table, column), build)


def name_columns(ctx: SqlContext) -> list[tuple[str, str]]:
    """The profile's value columns that hold names (many distinct values) in this database."""

    def build() -> list[tuple[str, str]]:
        out = []
        for qualified in ctx.db.profile.value_columns:
            table, column = qualified.rsplit(".", 1)
            if ctx.db.schema.table(table) is not None and _distinct_count(ctx, table, column) >= NAME_COLUMN_MIN_VALUES:
                out.append((table, column))
        return out

    return ctx.db.derived(("name_columns",), build)


def name_columns_by_table(ctx: SqlContext) -> dict[str, list[str]]:
    """:func:`name_columns` grouped by table (its name in lower case)."""
    out: dict[str, list[str]] = {}
    for table, column in name_columns(ctx):
        out.setdefault(table.lower(), []).append(column)
    return out


def _item_labels(ctx: SqlContext) -> list[str]:
    """The labels of the items the SQL names by number, read from the dictionary tables: ``itemid = 220045``,
    ``itemid IN (...)``, and any other whole number of four digits or more once the query reads an itemid (a table of
    definitions in a CTE, ``SELECT 50813 AS itemid UNION ALL ...``, a CASE on it)."""
    assert ctx.tree is not None
    if not any(c.name.lower() == "itemid" for c in ctx.tree.find_all(exp.Column)) and \
            not any(a.alias.lower() == "itemid" for a in ctx.tree.find_all(exp.Alias)):
        return []
    ids = tuple(sorted({lit.this for lit in ctx.tree.find_all(exp.Literal)
                        if not lit.is_string and lit.this.isdigit() and len(lit.this) >= 4 and not _excluded(lit)}))[:_MAX_CODES * 4]
    if not ids:
        return []
    return [name for table in ctx.db.schema.tables if table.column("itemid") is not None and table.column("label") is not None
            for name in _names(ctx, table.name, "label", [exp.column("itemid").isin(*(exp.Literal.number(i) for i in ids))])]


def _excluded(node: Any) -> bool:
    """A literal the query keeps out: under NOT, NOT LIKE, NOT IN or ``<>``."""
    return negated(node) or node.find_ancestor(exp.NEQ) is not None


def _names(ctx: SqlContext, table: str, column: str, conditions: list[exp.Expression]) -> list[str]:
    """The values of a dictionary's name column on the rows any of the conditions picks (none when it cannot be read)."""
    query = exp.select(exp.column(column)).from_(stored_table(ctx, table)).where(exp.or_(*conditions)).limit(500)
    try:
        rows = ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows
    except DatabaseError:
        return []
    return [str(r[0]) for r in rows if r[0] is not None]


# A dictionary of codes: a table with a code column and a column of their names (MIMIC's d_icd_diagnoses, d_icd_procedures).
_CODE_COLUMN = re.compile(r"(?:icd_?(?:9|10)?_?code|code)$", re.IGNORECASE)
_TITLE_COLUMN = re.compile(r"(?:long_title|title|description)$", re.IGNORECASE)
# At most this many codes or code prefixes are looked up.
_MAX_CODES = 50


def _code_titles(ctx: SqlContext) -> list[str]:
    """The names the database's code dictionaries give the codes the SQL looks for (``icd_code LIKE 'A41%'``,
    ``icd_code IN ('99591', ...)``): a question's condition the query looks for by code is looked for."""
    assert ctx.tree is not None
    exact, prefixes = set(), set()
    for node in ctx.tree.find_all(exp.EQ, exp.In, exp.Like, exp.ILike, exp.StartsWith):
        column, cut = node.this, False
        if isinstance(column, (exp.Substring, exp.Left)):  # SUBSTR(icd_code, 1, 3) = 'A41': a prefix
            column, cut = column.this, True
        if not (isinstance(column, exp.Column) and _CODE_COLUMN.search(column.name)):
            continue
        if _excluded(node):
            continue
        for lit in node.expressions if isinstance(node, exp.In) else [node.expression]:
            if not (isinstance(lit, exp.Literal) and lit.is_string):
                continue
            code = lit.this.replace(".", "")
            head = re.split(r"[%_]", code, maxsplit=1)[0] if isinstance(node, (exp.Like, exp.ILike)) else code
            if head == code and not cut and not isinstance(node, exp.StartsWith):
                exact.add(code)
            elif len(head) >= 2:
                prefixes.add(head)
    codes, heads = tuple(sorted(exact)[:_MAX_CODES]), tuple(sorted(prefixes)[:_MAX_CODES])
    if not codes and not heads:
        return []
    titles = []
    for table in ctx.db.schema.tables:  # the ICD dictionaries: a HCPCS or DRG code sharing a prefix names other things
        code = next((c.name for c in table.columns if _CODE_COLUMN.search(c.name)), None)
        title = next((c.name for c in table.columns if _TITLE_COLUMN.search(c.name)), None)
        if code is None or title is None or "icd" not in table.name.lower():
            continue
        where: list[exp.Expression] = [exp.column(code).isin(*(exp.Literal.string(c) for c in codes))] if codes else []
        where += [exp.column(code).like(exp.Literal.string(h + "%")) for h in heads]
        titles += _names(ctx, table.name, title, where)
    return titles


def _identifiers(ctx: SqlContext) -> set[str]:
    """The schema's table and column names as words ("admission_type" -> "admission type")."""

    def build() -> set[str]:
        names = {t.name for t in ctx.db.schema.tables} | {c.name for t in ctx.db.schema.tables for c in t.columns}
        return {_normal(n.replace("_", " ")) for n in names}

    return ctx.db.derived(("identifiers",), build)


# Conditions named for a measure out of its range (medical terminology: a prefix of degree and a root for the measure):
# "hypotension" is a low blood pressure, "hyperkalemia" a high potassium, "tachypnea" a fast breathing rate. A query that
# reads the measure looks for the condition by its values, not by its name.
_DEGREE_PREFIX = r"(?:hyper|hypo|tachy|brady|normo|a)?"
_MEASURE_ROOTS = (
    (r"tension|tensive", ("blood pressure", "arterial pressure", "arterial bp", "nbp", "abp", "systolic", "diastolic")),
    (r"kal(?:a)?emi[ac]", ("potassium",)), (r"natr(?:a)?emi[ac]", ("sodium",)), (r"glyc(?:a)?emi[ac]", ("glucose",)),
    (r"calc(?:a)?emi[ac]", ("calcium",)), (r"magnes(?:a)?emi[ac]", ("magnesium",)), (r"phosphat(?:a)?emi[ac]", ("phosph",)),
    (r"chlor(?:a)?emi[ac]", ("chloride",)), (r"pnea|pneic", ("respiratory rate", "resp rate")),
    (r"cardia|cardic", ("heart rate", "pulse")), (r"thermi[ac]", ("temperature",)), (r"fever|febrile", ("temperature",)),
    (r"(?:hyp)?ox(?:a)?emi[ac]|(?:hyp)?oxi[ac]", ("o2", "oxygen", "spo2", "pao2", "po2")), (r"capni[ac]", ("co2", "pco2")),
    (r"lactat?emi[ac]|lactic acidosis", ("lactate",)), (r"bilirubin(?:a)?emi[ac]", ("bilirubin",)),
    (r"albumin(?:a)?emi[ac]", ("albumin",)), (r"an(?:a)?emi[ac]", ("hemoglobin", "hematocrit")),
    (r"thrombocytopeni[ac]|thrombocytosis", ("platelet",)), (r"leukopeni[ac]|leukocytosis", ("white blood", "wbc")),
    (r"neutropeni[ac]", ("neutrophil",)), (r"azotemi[ac]|uremi[ac]", ("urea nitrogen", "bun", "creatinine")),
)
_MEASURED_CONDITION = [(re.compile(rf"{_DEGREE_PREFIX}(?:{root})"), measures) for root, measures in _MEASURE_ROOTS]
# Prefixes that make a word of another: a readmission is an admission again, a pre-admission one before it.
_WORD_PREFIX = re.compile(r"^(?:re|pre|post)-?(?=[a-z]{4})")


def _read_as_measure(value: str, measured: str) -> bool:
    """The value is a condition named for a measure out of its range, and the query reads that measure: an item it
    names (a lab test, a chart item; ``measured``, from :func:`_measured_items`), not any text ('Potassium Chloride' is a
    drug)."""
    name = value.lower()
    return any(pattern.fullmatch(name) and any(f" {m}" in measured for m in measures) for pattern, measures in _MEASURED_CONDITION)


def _measured_items(ctx: SqlContext, labels: list[str]) -> str:
    """The items the query reads, in normal form, each after a space: the labels of the item numbers it names, and the
    literals it compares with a label."""
    assert ctx.tree is not None
    compared = [lit.this for _, column, lit in literal_comparisons(ctx.tree, {}, (exp.EQ, exp.In, exp.Like, exp.ILike))
                if column == "label" and not _excluded(lit)]
    return " " + " ".join(_normal(m) for m in labels + compared)


def _names_a_field(value: str, identifiers: set[str], entities: set[str]) -> bool:
    """The value is the name of a table or a column of the schema ("gender", "admission type", "transfer"), or the
    name of one of the profile's visits or people with a prefix of repetition or time ("readmission"): what the query
    reads, not a value to look for. (Only an entity's name takes a prefix: "prealbumin" is a test, whatever column
    some derived table calls "albumin".)"""
    plain, bare = _normal(value), _WORD_PREFIX.sub("", _normal(value))
    return bool({plain, plain + "s", plain.removesuffix("s")} & identifiers
                or bare != plain and {bare, bare + "s", bare.removesuffix("s")} & entities)


def check_stated_values(ctx: SqlContext) -> CheckResult:
    """A drug, test or diagnosis the question names must be something the SQL looks for."""
    if ctx.tree is None:
        return NOTHING
    literals = [lit.this for lit in ctx.tree.find_all(exp.Literal)
                if lit.is_string and any(w not in _PLAIN and not w.isdigit() for w in _words(lit.this))]
    labels, titles = _item_labels(ctx), _code_titles(ctx)
    literals += labels
    in_sql = " ".join(literals)
    measured = _measured_items(ctx, labels)
    missing: dict[str, list[str]] = {}  # a value the query never looks for -> the columns that hold it
    identifiers = _identifiers(ctx)
    entities = {_normal(e.name) for e in ctx.profile.entities} | {
        _normal(e.table.replace("_", " ")) for e in ctx.profile.entities}
    columns = name_columns(ctx)
    nouns = condition_nouns(ctx.question)
    # a condition named by its adjective is looked for like its noun, unless the query reads diagnoses (by code, say)
    diagnoses = any(re.search(r"diagnos|problem|condition", t.name, re.IGNORECASE) for t in ctx.tree.find_all(exp.Table))
    named = named_values(ctx, columns, ctx.question if nouns == ctx.question.lower() or diagnoses else f"{ctx.question} ; {nouns}")
    for table, column in columns:
        for value in named[(table, column)]:
            words = [w for w in _words(value) if w not in _PLAIN]
            if not words or (len(words) == 1 and (len(words[0]) < 6 or re.search(r"(?:ed|ing|ly|ment|ness)$", words[0]))):
                continue  # a short or inflected single word ("referred") is as likely a plain word of the question as a name
            if _names_a_field(value, identifiers, entities):
                continue  # "gender", "admission type", "readmission": the name of a field or a table, which the query reads
            if supported(value, in_sql) or supported(clinical_wording(value), in_sql) \
                    or any(supported(lit, value) for lit in literals) or _read_as_measure(value, measured) \
                    or any(supported(value, title) for title in titles):  # a code's title names it, as a whole
                continue
            same = next((v for v in missing if v.lower() == value.lower()), value)  # 'Heparin' the test, 'heparin' the drug
            missing.setdefault(same, []).append(f"{table}.{column}")
    # one finding per value, naming every column that holds it (a drug is in the orders, the eMAR and a lab's name)
    return found(*(Finding("missing_value_filter", "warning",
                           f"The question names '{value}' ({', '.join(holding)}); the query never looks for it.")
                   for value, holding in list(missing.items())[:3]))
