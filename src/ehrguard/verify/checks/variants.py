"""A drug looked for by one exact name while the records also hold it under longer names.

Pharmacy records name one drug many ways: 'aspirin' and 'aspirin ec', 'furosemide' and 'furosemide 40 mg tab'. A
question that names the drug ("how many aspirin orders") asks about all of them; ``drug = 'aspirin'`` counts only the
orders written with the bare name. ``missing_variants`` (a warning that keeps the answer from being verified, no
repair: whether a formulation or a flush belongs to what was asked is the asker's to say) speaks only when:

- the column names drugs (its name says drug or medication: the schema's own words);
- the question names the literal, and does not say what a longer name adds;
- the records hold longer names that contain the literal as whole words and add only a strength, a dose form, a
  route, a salt or a diluent (``FORMULATION``; 'heparin flush' or 'heparin (iabp)' may be another use, and is left);
- and the answer changes when the query also looks for them (the query run again with those names added).
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found, negated, quoted_names
from ehrguard.verify.checks.concepts import said_stems, supported, word_stem
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import literal_comparisons
from ehrguard.verify.verdict import Finding

# A column that names drugs, by the schema's own words (MIMIC-IV prescriptions.drug, eICU medication.drugname).
DRUG_COLUMN = re.compile(r"drug|medication|^med_?name$", re.IGNORECASE)
# Longer names looked at per literal (the query is run once more with all of them).
MAX_VARIANTS = 50
# What a longer name may add and still name the same drug: its strength, dose form, release, route, salt or diluent
# (general pharmacy vocabulary and its usual abbreviations). Anything else ('heparin flush', 'heparin (iabp)',
# 'insulin human regular') may be another product or use, and is left to the asker.
FORMULATION = frozenset((
    "mg", "mcg", "g", "gm", "gram", "grams", "kg", "ml", "l", "meq", "mmol", "unit", "units", "iu", "mg/ml", "mcg/ml",
    "units/ml", "meq/ml", "%", "x", "per",
    "tab", "tabs", "tablet", "tablets", "cap", "caps", "capsule", "capsules", "inj", "injection", "ij", "soln", "solution",
    "susp", "suspension", "syrup", "elixir", "liquid", "oral", "po", "iv", "im", "sc", "subq", "sq", "ivpb", "pb", "premix",
    "premixed", "bag", "vial", "amp", "ampule", "syringe", "pfs", "patch", "cream", "ointment", "oint", "gel", "drops",
    "ophth", "otic", "nasal", "spray", "inhaler", "neb", "nebulizer", "nebulized", "chewable", "chew", "odt", "ec", "dr", "er",
    "xr", "sr", "cr", "la", "xl", "ir", "extended", "release", "delayed", "immediate", "enteric", "coated", "buffered", "film",
    "disintegrating", "sublingual", "sl", "pr", "rectal", "supp", "suppository", "topical", "transdermal", "powder",
    "granules", "packet", "concentrate", "in", "ns", "d5w", "nacl", "hcl", "hydrochloride", "sodium", "sulfate", "tartrate",
    "succinate", "citrate", "maleate", "besylate", "mesylate", "acetate", "phosphate", "bromide", "adult", "pediatric",
    "low", "dose", "strength", "generic", "brand", "ud", "unit-dose",
))
_DOSE = re.compile(r"^[\d.,/]+(?:mg|mcg|g|ml|l|meq|units?|%)?(?:/[\d.]*(?:ml|l|hr|h))?$")


def same_drug(variant: str, literal: str) -> bool:
    """Does ``variant`` add to ``literal`` only a strength, form, route, salt or diluent ('aspirin ec', 'furosemide 40 mg
    tab', 'aspirin (buffered)')?"""
    own = set(re.findall(r"[a-z0-9.%/-]+", literal.lower()))
    extra = [w for w in re.findall(r"[a-z0-9.%/]+", variant.lower().replace("-", " ")) if w not in own]
    return bool(extra) and all(w in FORMULATION or _DOSE.match(w) for w in extra)


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


def _answer(ctx: SqlContext, tree: exp.Expression) -> tuple[tuple[object, ...], ...] | None:
    try:
        rows = ctx.db.db.execute(tree.sql(dialect=ctx.dialect), timeout_s=5, max_rows=10_000).rows
    except DatabaseError:
        return None
    return tuple(sorted((tuple(r) for r in rows), key=repr))


def check_missing_variants(ctx: SqlContext) -> CheckResult:
    """``drug = 'aspirin'`` for a question about aspirin, while the records also hold 'aspirin ec' and counting it
    changes the answer."""
    if ctx.tree is None or isinstance(ctx.execution, DatabaseError):
        return NOTHING
    tables, _ = aliases(ctx.tree)
    said = said_stems(ctx.question)
    findings: list[Finding] = []
    for table, column, lit in literal_comparisons(ctx.tree, tables, (exp.EQ,)):
        table = owner_table(ctx, table, column, tables)
        if not table or not DRUG_COLUMN.search(column) or negated(lit.parent) or not supported(lit.this, ctx.question):
            continue
        own = set(re.findall(r"[a-z0-9]+", lit.this.lower()))
        longer = [v for v in _variants(ctx, table, column, lit.this) if v.lower() != lit.this.lower() and same_drug(v, lit.this)
                  and not any(word_stem(w) in said for w in set(re.findall(r"[a-z]+", v.lower())) - own)]
        if not longer:
            continue
        widened = ctx.tree.copy()
        target = next((n for n in widened.find_all(exp.Literal) if n.is_string and n.this == lit.this
                       and isinstance(n.parent, exp.EQ) and isinstance(n.parent.this, exp.Column)
                       and n.parent.this.name.lower() == column), None)
        if target is None:
            continue
        comparison = target.parent
        comparison.replace(exp.In(this=comparison.this.copy(),
                                  expressions=[exp.Literal.string(v) for v in (lit.this, *longer)]))
        before, after = _answer(ctx, ctx.tree), _answer(ctx, widened)
        if before is None or after is None or before == after:
            continue
        shown = ", ".join(f"'{v}'" for v in longer[:3]) + (f" and {len(longer) - 3} more" if len(longer) > 3 else "")
        findings.append(Finding("missing_variants", "warning",
                                f"The query matches '{lit.this}' exactly ({table}.{column}); the records also hold it as "
                                f"{shown}, and the answer changes when they are counted.",
                                ctx.span_of(f"'{lit.this}'")))
    return found(*findings)
