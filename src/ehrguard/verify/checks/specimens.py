"""The specimen a lab value was measured in: a lab item read by its code must be measured in what the question names.

Several MIMIC-IV lab items share one label: "glucose" is a blood gas item, two chemistry items and two urine items; the
EHRSQL builds keep only the label, so a query reading ``itemid = 50809`` for "serum glucose" runs, returns a number,
and answers from the blood gas analyser. What each item is measured in (its fluid, and its section of the lab) ships
with the package (``mimic_iv_lab_specimens.json``, derived from the MIMIC-IV lab dictionary by
``scripts/derive_lab_specimens.py``), and is used only where the database's own dictionary gives the code the same
label, so another database's codes are never read through it.

- ``wrong_specimen`` (error): the question names a specimen ("urine", "serum", "blood gas", "CSF", "pleural") and the
  item the query reads is measured in another one, while an item of the same label is measured in the one named;
  repaired to that item when one of them has rows.
- ``other_specimen`` (warning): the question names none, and the item is measured in something other than blood
  while an item of the same label is measured in blood (the reading a clinician means by "glucose"); repaired the
  same way.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found, negated
from ehrguard.verify.checks.keys import code_literal, holds_id, name_of, table_of
from ehrguard.verify.checks.lab_items import lab_items
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with, literal_comparisons
from ehrguard.verify.verdict import Finding


class Specimen:
    """A specimen as clinicians name it: the fluid it is, and (for blood) the part of the lab it goes to."""

    def __init__(self, name: str, pattern: str, fluids: tuple[str, ...], categories: tuple[str, ...] = (),
                 not_categories: tuple[str, ...] = ()) -> None:
        self.name = name
        self.pattern = re.compile(pattern, re.IGNORECASE)
        self.fluids, self.categories, self.not_categories = fluids, categories, not_categories

    def holds(self, fluid: str, category: str) -> bool:
        return (fluid in self.fluids and (not self.categories or category in self.categories)
                and category not in self.not_categories)


# General clinical vocabulary for where a sample came from (not read from any benchmark's questions).
SPECIMENS = (
    Specimen("urine", r"\b(?:urine|urinary|urinalysis|ua)\b", ("urine",)),
    Specimen("cerebrospinal fluid", r"\b(?:csf|cerebrospinal|spinal fluid|spinal tap|lumbar puncture)\b", ("cerebrospinal fluid",)),
    Specimen("pleural fluid", r"\bpleural\b", ("pleural",)),
    Specimen("ascites", r"\b(?:ascites|ascitic|peritoneal|paracentesis)\b", ("ascites",)),
    Specimen("joint fluid", r"\b(?:joint fluid|synovial|arthrocentesis)\b", ("joint fluid",)),
    Specimen("stool", r"\b(?:stool|fecal|faecal|feces|faeces)\b", ("stool",)),
    Specimen("bone marrow", r"\bbone marrow\b", ("bone marrow",)),
    Specimen("a blood gas", r"\b(?:blood gas(?:es)?|abg|vbg|arterial gas|venous gas|gas analy[sz]er)\b",
             ("blood", "fluid", "other body fluid"), ("blood gas",)),
    Specimen("serum", r"\b(?:serum|plasma|chem(?:istry)?|chem ?(?:7|10)|bmp|cmp|metabolic panel)\b", ("blood",),
             not_categories=("blood gas",)),
    Specimen("blood", r"\b(?:blood|venous|arterial)\b", ("blood",)),
)


# How far from the test's name a specimen word says what it was measured in ("serum glucose", "glucose in the urine").
NEAR_WORDS = 3


def named_specimens(question: str, label: str) -> list[Specimen] | None:
    """The specimens the question names next to the item's label, outside the label itself ("white blood cells in
    urine": urine, not blood; "glucose of a patient treated for a urinary tract infection": none). None when the
    question does not name the label at all (it says the test in other words, and where is not knowable)."""
    text = question.lower()
    mentions = list(re.finditer(rf"(?<![a-z0-9]){re.escape(label)}(?![a-z0-9])", text)) if label else []
    if not mentions:
        return None
    near = " ".join(" ".join(re.findall(r"[a-z0-9+]+", text[:m.start()])[-NEAR_WORDS:] + ["#"]
                             + re.findall(r"[a-z0-9+]+", text[m.end():])[:NEAR_WORDS]) for m in mentions)
    named = [s for s in SPECIMENS if s.pattern.search(near)]
    # "blood gas" names blood as well: the narrower name stands
    return [s for s in named if not (s.name == "blood" and any(o.name in ("a blood gas", "serum") for o in named))]


def check_specimen(ctx: SqlContext) -> CheckResult:
    """A lab item, read by its code, measured in another specimen than the question names (or than blood, when the
    question names none and the label has a blood item)."""
    if ctx.tree is None or ctx.db.schema.table("d_labitems") is None:
        return NOTHING
    tables = aliases(ctx.tree)[0]
    findings: list[Finding] = []
    edits: list[Edit] = []
    for node in ctx.tree.find_all(exp.EQ):
        col, lit = node.this, node.expression
        if not (isinstance(col, exp.Column) and col.name.lower() == "itemid" and isinstance(lit, exp.Literal)
                and not lit.is_string and lit.this.isdigit()):
            continue
        known = lab_items().get(lit.this)
        table = table_of(ctx, col, tables)
        if known is None or not table or not _same_label(ctx, lit.this, known[0]):
            continue
        label, fluid, category = known
        stated = named_specimens(ctx.question, label)
        if stated is None or any(s.holds(fluid, category) for s in stated) or (not stated and fluid == "blood"):
            continue
        wanted = stated or [s for s in SPECIMENS if s.name == "blood"]
        others = [code for code, (other, f, c) in lab_items().items()
                  if other == label and code != lit.this and any(s.holds(f, c) for s in wanted)]
        try:
            held = [code for code in others if _same_label(ctx, code, label) and holds_id(ctx, table, "itemid", code_literal(code))]
        except DatabaseError:
            continue
        if not held:
            continue
        meant = held[0] if len(held) == 1 else None
        where = f"{fluid}, {category}" if category != fluid else fluid
        if stated:
            findings.append(Finding("wrong_specimen", "error", f"The query reads {label} measured in {where} (lab item {lit.this}); "
                                    f"the question asks about {stated[0].name}.", ctx.span_of(lit.sql()), meant))
        else:
            findings.append(Finding("other_specimen", "warning", f"The query reads {label} measured in {where} (lab item {lit.this}); "
                                    "the question names no specimen, and it is measured in blood too.", ctx.span_of(lit.sql()), meant))
        if meant is not None:
            edits.append(TreeEdit(_replace_with(meant, string=False), target=lit))
    findings += _items_by_label(ctx, tables)
    return found(*findings, edits=edits)


def _items_by_label(ctx: SqlContext, tables: dict[str, str]) -> list[Finding]:
    """Lab items chosen by a pattern on their label (``itemid IN (SELECT itemid FROM d_labitems WHERE label LIKE
    '%sodium%')``), or by a label several items share outside the EHRSQL builds, whose values the query reads from
    ``labevents`` without showing which item each is, when the items its conditions keep are measured in several fluids
    with rows in the records and the question names none of them (or another one): blood and urine values are read as
    one."""
    assert ctx.tree is not None
    read = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
    shown = [e for e in ctx.tree.expressions] + list((ctx.tree.args.get("group") or exp.Group()).expressions) \
        if isinstance(ctx.tree, exp.Select) else []
    returned = {c.name.lower() for e in shown for c in e.find_all(exp.Column)}
    if "labevents" not in read or returned & {"label", "itemid", "fluid", "category"}:
        return []  # no values read, or each shown (or grouped) with its item or its fluid
    findings = []
    # A label named whole (``label = 'glucose'``) is the EHRSQL builds' own way of naming a test, whatever fluids its
    # items are measured in (their dictionary keeps no fluid, and their question banks' answers read it so); where the
    # dictionary says each item's fluid ('Glucose' in MIMIC-IV's own layout: blood, urine and other fluids) it keeps
    # several specimens as a pattern does.
    labels = ctx.db.schema.table("d_labitems")
    kinds = (exp.Like, exp.EQ) if labels is not None and labels.column("fluid") is not None else (exp.Like,)
    for table, column, lit in literal_comparisons(ctx.tree, tables, kinds):
        if owner_table(ctx, table, column, tables) != "d_labitems" or column != "label" or negated(lit):
            continue
        kept = _items_kept(ctx, lit)
        if kept is None:
            continue
        try:
            fluids = sorted({fluid for code, label in kept if (fluid := _fluid_of(str(code), str(label))) is not None
                             and holds_id(ctx, "labevents", "itemid", code_literal(str(code)))})
        except DatabaseError:
            continue
        if len(fluids) < 2:
            continue
        stated = named_specimens(ctx.question, lit.this.strip("%_ ").lower()) or []
        if stated and all(any(f in s.fluids for s in stated) for f in fluids):
            continue
        where = ", ".join(fluids[:-1]) + " and " + fluids[-1]
        asked = f"the question asks about {stated[0].name}" if stated else "the question names no specimen"
        how = "is like" if isinstance(lit.parent, exp.Like) else "is"
        findings.append(Finding("mixed_specimens", "warning", f"The query reads every lab item whose label {how} '{lit.this}', "
                                f"measured in {where}, as one test; {asked}.", ctx.span_of(f"'{lit.this}'")))
    return findings


def _items_kept(ctx: SqlContext, lit: exp.Literal) -> list[tuple[object, object]] | None:
    """(itemid, label) of the lab items the conditions of the SELECT holding the pattern keep (its NOT LIKEs too)."""
    select = lit.find_ancestor(exp.Select)
    if select is None:
        return None
    items = next((t for t in select.find_all(exp.Table) if t.name.lower() == "d_labitems" and t.find_ancestor(exp.Select) is select), None)
    if items is None:
        return None
    name = items.alias_or_name
    probe = select.copy()
    for key in ("group", "having", "order", "limit", "offset", "distinct"):
        probe.set(key, None)
    probe.set("expressions", [exp.column("itemid", table=name), exp.column("label", table=name)])
    try:
        return list(ctx.db.db.execute(f"SELECT DISTINCT * FROM ({probe.sql(dialect=ctx.dialect)}) AS kept", timeout_s=5).rows)
    except DatabaseError:
        return None


def _fluid_of(code: str, label: str) -> str | None:
    """What an item is measured in: the shipped dictionary's fluid where the database labels it the same, else the
    specimen its own label names ("sodium, urine"); None when neither says."""
    label = label.lower().strip()
    known = lab_items().get(code)
    if known is not None and known[0] == label:
        return known[1]
    return next((s.fluids[0] for s in SPECIMENS if s.pattern.search(label)), None)


def _same_label(ctx: SqlContext, code: str, label: str) -> bool:
    """The database's own lab dictionary gives the code this label (its codes are MIMIC-IV's)."""
    try:
        name = name_of(ctx, "d_labitems", "itemid", "label", code)
    except DatabaseError:
        return False
    return name is not None and name.lower().strip() == label
