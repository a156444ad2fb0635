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

import re

from sqlglot import exp

from ehrguard.db.lexicon import normal_form
from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found, negated, stored_table
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with, literal_comparisons
from ehrguard.verify.offline.features import mask_values
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


def _stem(word: str) -> str:
    return word[:5] if len(word) > 5 else word


# Clinicians' usual short names and other names for what records name in full (general clinical usage, not read from any
# benchmark): a question saying the one names the other. Words on the left are whole words of the question.
CLINICAL_NAMES: dict[str, tuple[str, ...]] = {
    "fingerstick": ("bedside",), "finger stick": ("bedside",), "point of care": ("bedside",), "poc": ("bedside",),
    "ionized": ("free",), "ionised": ("free",), "bun": ("urea nitrogen",), "hgb": ("hemoglobin",), "hb": ("hemoglobin",),
    "hct": ("hematocrit",), "wbc": ("white blood cells",), "plt": ("platelet count",), "platelets": ("platelet count",),
    "k": ("potassium",), "k+": ("potassium",), "creat": ("creatinine",),
    "cr": ("creatinine",), "lactic acid": ("lactate",), "sats": ("o2 saturation",), "spo2": ("o2 saturation",),
    "hr": ("heart rate",), "rr": ("respiratory rate",), "temp": ("temperature",),
    "iv": ("intravenous",), "intravenous": ("iv",), "po": ("oral",), "oral": ("po",), "by mouth": ("po", "oral"),
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


def supported(literal: str, question: str) -> bool:
    """Does the question mention the literal: its words in order, or every content word of it (stems compared)?"""
    lit, q = _normal(literal.replace("%", " ")), _normal(question)
    if not lit or f" {lit} " in f" {q} ":
        return True
    short = re.findall(r"\(([a-z0-9]{2,8})\)", literal.lower())  # "medical intensive care unit (micu)": "MICU" names it
    if any(f" {s} " in f" {q} " for s in short):
        return True
    content = [w for w in lit.split() if w not in _PLAIN and not w.isdigit()]
    if not content:
        return True
    stems = {_stem(w) for w in q.split()}
    # a pattern's word may also be the start of a word ('%urin%' for "urine", "urinary")
    return all(_stem(w) in stems or ("%" in literal and any(word.startswith(w) for word in q.split())) for w in content)


def named_values(ctx: SqlContext, columns: list[tuple[str, str]], text: str) -> dict[tuple[str, str], list[str]]:
    """The values of each column the text names (its words in order, at word boundaries), longest first, none inside
    another one found; looked up in the database's value index, phrase by phrase."""
    words = _words(text)
    grams = {" ".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, min(len(words), i + MAX_WORDS) + 1)}
    keys = {g for g in grams if len(g) >= 3 and g not in _PLAIN and _HAS_LETTER.search(g)}
    try:
        found = ctx.db.values.find(columns, keys, by="normal")
    except DatabaseError:  # a column too slow or too large to read: it names nothing
        return {c: [] for c in columns}
    out = {}
    for column in columns:
        hits = found.get(column, {})
        spans: list[tuple[int, int, str]] = []
        for i in range(len(words)):
            for j in range(min(len(words), i + MAX_WORDS), i, -1):
                hit = hits.get(" ".join(words[i:j]))
                if hit is not None:
                    spans.append((i, j, hit))
                    break
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        kept: list[tuple[int, int, str]] = []
        for a, b, v in spans:
            if all(b <= x or y <= a for x, y, _ in kept):
                kept.append((a, b, v))
        out[column] = list(dict.fromkeys(v for _, _, v in sorted(kept)))
    return out


# An exclusion the question states in so many words ("heparin (not flushes)", "excluding elective admissions", "drugs
# other than aspirin", "non-elective"): general English markers of exception.
EXCLUSION = re.compile(r"\b(?:excluding|exclude|excludes|except(?: for)?|other than|apart from|aside from|but not|not counting|"
                       r"not including|leaving out|without counting)\b|\(\s*not\b|\bnon-", re.IGNORECASE)
_NOT_EXCLUDED = frozenset(("those", "these", "ones", "that", "which", "with", "from", "them", "their", "patients", "people",
                           "admissions", "stays", "cases", "visits", "records", "rows", "what", "were", "have", "been", "any"))


def excluded_words(question: str) -> set[str]:
    """The words of what the question leaves out: the content words (four letters or more) of the three words after
    each marker of exception, as stems ("flushes" -> "flush")."""
    out = set()
    for m in EXCLUSION.finditer(question):
        for word in re.findall(r"[a-z]+", question[m.end():].lower())[:3]:
            if len(word) >= 4 and word not in _NOT_EXCLUDED:
                out.add(_singular(word))
    return out


def _singular(word: str) -> str:
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
        if supported(lit.this, question):
            # named, but maybe only inside a longer name the question says ("bedside glucose" asked, 'glucose' queried)
            instead = [] if "%" in lit.this else _inside_longer_name(ctx, table, column, lit.this, plain, everything)
        else:
            named = named_values(ctx, [(table, column)], question)[(table, column)]
            excluded = excluded_words(mask_values(ctx.question, ctx.sql))  # "excluding elective ones": named to be left out
            instead = [v for v in named if not supported(v, everything) and _normal(v) not in _normal(lit.this)
                       and not {_singular(w) for w in re.findall(r"[a-z]+", v.lower())} & excluded]
        if not instead:
            continue
        alternatives = " or ".join(f"'{v}'" for v in instead[:3])
        findings.append(Finding("wrong_value", "error",
                                f"The query looks for '{lit.this}' ({table}.{column}); the question names {alternatives}.",
                                ctx.span_of(f"'{lit.this}'"), f"'{instead[0]}'" if len(instead) == 1 else None))
        if len(instead) == 1 and "%" not in lit.this:
            edits.append(TreeEdit(_replace_with(instead[0]), target=lit))
    return found(*findings, edits=edits)


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
    asked = {_stem(w) for w in _words(question)}
    if any(_stem(w) in asked for w in words) or supported(value, question) and words:
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


def _inside_longer_name(ctx: SqlContext, table: str, column: str, literal: str, question: str, everything: str) -> list[str]:
    """The column's values the question names that hold every word of the literal's (but the plain ones) and say more,
    when the question names the literal only inside one of them: 'bedside glucose' asked and 'glucose' queried, 'free
    calcium' (ionized) asked and 'calcium, total' queried. The query took another name of the same thing's family."""
    named = named_values(ctx, [(table, column)], question)[(table, column)]
    lit = _normal(literal)
    if lit in {_normal(v) for v in named}:
        return []  # the literal is named on its own too
    words = {w for w in lit.split() if w not in _PLAIN}
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
    """The labels of the items the SQL names by number (``itemid = 220045``), read from the dictionary tables."""
    assert ctx.tree is not None
    ids = sorted({lit.this for node in ctx.tree.find_all(exp.EQ, exp.In) if isinstance(node.this, exp.Column)
                  and node.this.name.lower() == "itemid"
                  for lit in ([node.expression] if isinstance(node, exp.EQ) else node.expressions)
                  if isinstance(lit, exp.Literal) and not lit.is_string and lit.this.isdigit()})
    if not ids:
        return []
    labels = []
    for table in ctx.db.schema.tables:
        if table.column("itemid") is not None and table.column("label") is not None:
            try:
                rows = ctx.db.db.execute(f"SELECT label FROM {table.name} WHERE itemid IN ({', '.join(ids)})", timeout_s=5).rows
            except DatabaseError:
                continue
            labels += [str(r[0]) for r in rows if r[0] is not None]
    return labels


def _identifiers(ctx: SqlContext) -> set[str]:
    """The schema's table and column names as words ("admission_type" -> "admission type")."""

    def build() -> set[str]:
        names = {t.name for t in ctx.db.schema.tables} | {c.name for t in ctx.db.schema.tables for c in t.columns}
        return {_normal(n.replace("_", " ")) for n in names}

    return ctx.db.derived(("identifiers",), build)


def check_stated_values(ctx: SqlContext) -> CheckResult:
    """A drug, test or diagnosis the question names must be something the SQL looks for."""
    if ctx.tree is None:
        return NOTHING
    literals = [lit.this for lit in ctx.tree.find_all(exp.Literal)
                if lit.is_string and any(w not in _PLAIN and not w.isdigit() for w in _words(lit.this))]
    literals += _item_labels(ctx)
    in_sql = " ".join(literals)
    findings = []
    identifiers = _identifiers(ctx)
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
            if {_normal(value), _normal(value) + "s", _normal(value).removesuffix("s")} & identifiers:
                continue  # "gender", "admission type", "transfer": the name of a field or a table, which the query reads
            if supported(value, in_sql) or any(supported(lit, value) for lit in literals):
                continue
            findings.append(Finding("missing_value_filter", "warning",
                                    f"The question names '{value}' ({table}.{column}); the query never looks for it."))
    return found(*findings[:3])
