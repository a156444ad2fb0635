"""A drug looked for by one exact name while the records also hold it under longer names.

Pharmacy records name one drug many ways: 'aspirin' and 'aspirin ec', 'furosemide' and 'furosemide 40 mg tab'. A
question that names the drug ("how many aspirin orders") asks about all of them; ``drug = 'aspirin'`` counts only the
orders written with the bare name. ``missing_variants`` (a warning that keeps the answer from being verified, no
repair: whether a formulation or a flush belongs to what was asked is the asker's to say) speaks only when:

- the column names drugs (its name says drug or medication: the schema's own words), compared with one name
  (``=``, ``LOWER(col) =``, a one-name ``IN``);
- the question names the literal, does not say what a longer name adds, does not ask for the name as written
  ("exactly", "plain") and leaves nothing out ("not the enteric-coated forms");
- the records hold longer names that contain the literal as whole words and add only a strength, a dose form, a
  route, a salt or a diluent (``FORMULATION``; 'heparin flush' or 'heparin (iabp)' may be another use, and is left);
- and the answer changes when the query also looks for them (the query run again with those names added).
"""

from __future__ import annotations

import re
from typing import cast

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import (
    NOTHING,
    CheckResult,
    SqlContext,
    answers_differently,
    found,
    negated,
    quoted_list,
    quoted_names,
    rewritten,
)
from ehrguard.verify.checks.concepts import EXCLUSION, said_stems, supported, word_stem
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding

# A column that names drugs, by the schema's own words (MIMIC-IV prescriptions.drug, eICU medication.drugname).
DRUG_COLUMN = re.compile(r"drug|medication|^med_?name$", re.IGNORECASE)
# Longer names looked at per literal (the query is run once more with all of them).
MAX_VARIANTS = 50
# What a longer name may add and still name the same drug given the same way: its strength, an oral or injected dose
# form, release, salt or diluent (general pharmacy vocabulary and its usual abbreviations). Anything else ('heparin
# flush', 'heparin (iabp)', 'insulin human regular') may be another product or use, and so may a form put on the skin,
# in the nose, eye or ear, or inhaled ('lidocaine 5% patch' is not the antiarrhythmic): those are left to the asker.
FORMULATION = frozenset((
    "mg", "mcg", "g", "gm", "gram", "grams", "kg", "ml", "l", "meq", "mmol", "unit", "units", "iu", "mg/ml", "mcg/ml",
    "units/ml", "meq/ml", "%", "x", "per",
    "tab", "tabs", "tablet", "tablets", "cap", "caps", "capsule", "capsules", "inj", "injection", "ij", "soln", "solution",
    "susp", "suspension", "syrup", "elixir", "liquid", "oral", "po", "iv", "im", "sc", "subq", "sq", "ivpb", "pb", "premix",
    "premixed", "bag", "vial", "amp", "ampule", "syringe", "pfs", "chewable", "chew", "odt", "ec", "dr", "er", "xr", "sr",
    "cr", "la", "xl", "ir", "extended", "release", "delayed", "immediate", "enteric", "coated", "buffered", "film",
    "disintegrating", "sublingual", "sl", "powder", "granules", "packet", "concentrate", "in", "ns", "d5w", "nacl", "hcl",
    "hydrochloride", "sodium", "sulfate", "tartrate", "succinate", "citrate", "maleate", "besylate", "mesylate", "acetate",
    "phosphate", "bromide", "adult", "pediatric", "low", "dose", "strength", "generic", "brand", "ud", "unit-dose",
))
# Routes a question may state, each with the words of its dose forms: a longer name of another route is another product.
ROUTES = {
    "intravenous": ("iv", "ivpb", "pb", "inj", "injection", "ij", "premix", "premixed", "bag", "vial", "amp", "ampule", "syringe",
                    "pfs", "intravenous", "infusion", "drip", "push", "bolus"),
    "oral": ("po", "oral", "orally", "tab", "tabs", "tablet", "tablets", "cap", "caps", "capsule", "capsules", "liquid", "syrup",
             "susp", "suspension", "elixir", "chew", "chewable", "odt", "sl", "sublingual", "ec", "dr", "er", "xr", "sr", "cr",
             "la", "xl", "ir", "enteric", "mouth"),
}
# The question asks for the name as written, or leaves some forms out.
_AS_WRITTEN = re.compile(r"\b(?:exact(?:ly)?|plain|as written|literally|named)\b", re.IGNORECASE)
_DOSE = re.compile(r"^[\d.,/]+(?:mg|mcg|g|ml|l|meq|units?|%)?(?:/[\d.]*(?:ml|l|hr|h))?$")


def same_drug(variant: str, literal: str, question: str = "") -> bool:
    """Does ``variant`` add to ``literal`` only a strength, an oral or injected form, a salt or a diluent ('aspirin ec',
    'furosemide 40 mg tab', 'aspirin (buffered)'), and no form of another route than one the question states?"""
    own = set(re.findall(r"[a-z0-9.%/-]+", literal.lower()))
    extra = [w for w in re.findall(r"[a-z0-9.%/]+", variant.lower().replace("-", " ")) if w not in own]
    if not extra or not all(w in FORMULATION or _DOSE.match(w) for w in extra):
        return False
    asked = set(re.findall(r"[a-z]+", question.lower()))
    stated = {route for route, words in ROUTES.items() if asked & set(words)}
    named = {route for route, words in ROUTES.items() if set(extra) & set(words)}
    return not (stated and named and not named <= stated)


def _variants(ctx: SqlContext, table: str, column: str, literal: str) -> list[str]:
    """The column's values that hold ``literal`` as whole words and say more ('aspirin ec' for 'aspirin'); read once
    per open database and literal."""
    source, name = quoted_names(ctx, table, column)
    lit = literal.lower().replace("'", "''").replace("%", "").replace("_", "")
    patterns = " OR ".join(f"LOWER({name}) LIKE '{p}'" for p in (f"{lit} %", f"% {lit}", f"% {lit} %", f"{lit},%", f"{lit} (%"))

    def read() -> list[str]:
        sql = f"SELECT DISTINCT {name} FROM {source} WHERE {patterns} LIMIT {MAX_VARIANTS}"
        try:
            return [str(r[0]) for r in ctx.db.db.execute(sql, timeout_s=5).rows if r[0] is not None]
        except DatabaseError:
            return []

    return ctx.db.derived(("variants", table.lower(), column.lower(), literal.lower()), read)


def _exact_names(tree: exp.Expression, tables: dict[str, str]) -> list[tuple[str, str, exp.Expression, str]]:
    """(table alias or name, column, the comparison, the name) for every exact comparison of a column with one name:
    ``col = 'x'``, ``'x' = col``, ``LOWER(col) = 'x'``, ``col IN ('x')``."""
    out: list[tuple[str, str, exp.Expression, str]] = []
    for found_node in tree.find_all(exp.EQ, exp.In):
        node = cast(exp.Expression, found_node)
        if isinstance(node, exp.In):
            sides, values = [node.this], node.expressions
            if len(values) != 1 or node.args.get("query") is not None:
                continue
        else:
            sides, values = [node.this, node.expression], [node.expression, node.this]
        for side, value in zip(sides, values, strict=False):
            column = side.this if isinstance(side, exp.Lower | exp.Upper) else side
            if isinstance(column, exp.Column) and isinstance(value, exp.Literal) and value.is_string:
                out.append((tables.get(column.table.lower(), column.table.lower()), column.name.lower(), node, str(value.this)))
    return out


def check_missing_variants(ctx: SqlContext) -> CheckResult:
    """``drug = 'aspirin'`` for a question about aspirin, while the records also hold 'aspirin ec' and counting it
    changes the answer."""
    if ctx.tree is None or isinstance(ctx.execution, DatabaseError) or _AS_WRITTEN.search(ctx.question) \
            or EXCLUSION.search(ctx.question):
        return NOTHING
    tables, _ = aliases(ctx.tree)
    said = said_stems(ctx.question)
    findings: list[Finding] = []
    for table, column, comparison, name in _exact_names(ctx.tree, tables):
        table = owner_table(ctx, table, column, tables)
        if not table or not DRUG_COLUMN.search(column) or negated(comparison) or not supported(name, ctx.question):
            continue
        own = set(re.findall(r"[a-z0-9]+", name.lower()))
        longer = [v for v in _variants(ctx, table, column, name) if v.lower() != name.lower() and same_drug(v, name, ctx.question)
                  and not any(word_stem(w) in said for w in set(re.findall(r"[a-z]+", v.lower())) - own)]
        if not longer:
            continue
        column_node = next(c for c in comparison.find_all(exp.Column) if c.name.lower() == column)
        widened = rewritten(ctx.tree, comparison, exp.In(this=exp.Lower(this=column_node.copy()),
                                                         expressions=[exp.Literal.string(v.lower()) for v in (name, *longer)]))
        if not answers_differently(ctx, widened):
            continue
        findings.append(Finding("missing_variants", "warning",
                                f"The query matches '{name}' exactly ({table}.{column}); the records also hold it as "
                                f"{quoted_list(longer)}, and the answer changes when they are counted.",
                                ctx.span_of(f"'{name}'")))
    return found(*findings)
