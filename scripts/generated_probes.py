"""Generated probes of the SQL checks: questions and candidate SQL written by this script from the demo databases'
own values, never from a benchmark's items. Each probe prints how many wrong candidates the checks stop (an error or
a blocking warning), how many of those a repair turns into the right answer, and how many right candidates they stop.

- ``names``: a question names a value of a name column (a lab test, a charted item, a drug) and the query looks for
  another value of that column sharing a word with it ('c-reactive protein' for "protein, total"); the name is said
  as the records write it and with its words rotated ("total protein"). Values drawn at random with ``--seed``.
- ``counts``: a question counts patients and the query counts admissions, unit stays or rows, in many shapes
  (COUNT(*), a subquery's rows, a CTE's rows, SUM(CASE ...)), beside the shapes that count patients rightly.
- ``durations``: how long a stay lasted in hours or days, with the difference written in the right unit, the wrong
  unit, or as the difference of two calendar fields (the hour of the day).
- ``ends``: when a drug was started or stopped, asked in several words, with the other end's time returned.
- ``joins``: a visit's total cost taken over a join to its diagnoses, which repeats each cost once per diagnosis.
- ``negations``: who never received a drug, answered by dropping the drug's rows (``<>``, ``NOT =``, ``NOT LIKE``) beside
  the set-level shapes (``NOT IN``, ``NOT EXISTS``, ``EXCEPT``); MIMIC-IV patients and eICU unit stays.
- ``variants``: a patient's orders of a drug counted by its bare name where the patient's orders also hold it under a
  longer name ('aspirin ec'), and where they do not.
- ``presence``: records whose field is (or is not) recorded, counted with and without testing the field.
- ``anchors``: a period of the ICU stay counted from the hospital admission, and the other way round.
- ``kinds``: a visit's charges of one kind (diagnoses, labs, drugs ...) asked in several wordings, some of which no word
  of the kind's name says ("laboratory tests", "drugs"), summed over every kind; and the same with the kind left out.
(``negations`` to ``anchors`` were written in session 30, ``kinds`` in session 31, after the checks they probe, from
the demo databases' values.)

Run: python scripts/generated_probes.py --db-dir DIR [--seed N] [--out report.md]
DIR holds mimic_iv.sqlite and eicu.sqlite as `ehrguard db build` makes them.
"""

from __future__ import annotations

import argparse
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ehrguard.db import open_database
from ehrguard.verify.checks import repair, run_checks
from ehrguard.verify.methods import DatabaseContext
from ehrguard.verify.offline.policy import BLOCKING_WARNINGS


@dataclass(frozen=True)
class Case:
    ctx: DatabaseContext
    group: str  # how the table of results groups it
    question: str
    sql: str
    right: str  # a right query for the question

    @property
    def correct(self) -> bool:
        """A right candidate: the right query itself, or a shape the group names right."""
        return self.sql == self.right or self.group.startswith("right") or " right: " in self.group


def _stops(ctx: DatabaseContext, question: str, sql: str) -> tuple[bool, str | None]:
    checked = run_checks(question, sql, ctx)
    stopped = any(f.severity == "error" or f.check in BLOCKING_WARNINGS for f in checked.findings)
    return stopped, repair(checked) if stopped else None


def _rows(ctx: DatabaseContext, sql: str) -> list[tuple[object, ...]]:
    return sorted(ctx.db.execute(sql).rows, key=repr)


_PLAIN = {"of", "the", "and", "in", "with", "to", "for", "a", "on", "by", "total", "other", "blood", "whole", "level", "count"}


def _words(value: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", value.lower())


def names(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    specs = [
        ("mimic_iv", "lab test", "SELECT DISTINCT d_labitems.label FROM d_labitems JOIN labevents ON labevents.itemid = d_labitems.itemid",
         "SELECT subject_id FROM labevents WHERE itemid IN (SELECT itemid FROM d_labitems WHERE label = '{v}') LIMIT 1",
         "What was the last {x} value of patient {p}?",
         "SELECT valuenum FROM labevents WHERE subject_id = {p} AND itemid IN (SELECT itemid FROM d_labitems WHERE label = '{v}') "
         "ORDER BY charttime DESC LIMIT 1"),
        ("mimic_iv", "charted item", "SELECT DISTINCT d_items.label FROM d_items JOIN chartevents ON chartevents.itemid = d_items.itemid",
         "SELECT subject_id FROM chartevents WHERE itemid IN (SELECT itemid FROM d_items WHERE label = '{v}') LIMIT 1",
         "What was the last {x} of patient {p}?",
         "SELECT valuenum FROM chartevents WHERE stay_id IN (SELECT stay_id FROM icustays WHERE subject_id = {p}) AND itemid IN "
         "(SELECT itemid FROM d_items WHERE label = '{v}') ORDER BY charttime DESC LIMIT 1"),
        ("mimic_iv", "drug", "SELECT DISTINCT drug FROM prescriptions",
         "SELECT subject_id FROM prescriptions WHERE drug = '{v}' LIMIT 1",
         "How many times was {x} prescribed to patient {p}?",
         "SELECT COUNT(*) FROM prescriptions WHERE subject_id = {p} AND drug = '{v}'"),
        ("eicu", "lab test", "SELECT DISTINCT labname FROM lab",
         "SELECT patientunitstayid FROM lab WHERE labname = '{v}' LIMIT 1",
         "What was the last {x} value of stay {p}?",
         "SELECT labresult FROM lab WHERE patientunitstayid = {p} AND labname = '{v}' ORDER BY labresulttime DESC LIMIT 1"),
        ("eicu", "drug", "SELECT DISTINCT drugname FROM medication",
         "SELECT patientunitstayid FROM medication WHERE drugname = '{v}' LIMIT 1",
         "How many times was {x} given in stay {p}?",
         "SELECT COUNT(*) FROM medication WHERE patientunitstayid = {p} AND drugname = '{v}'"),
    ]
    for db_id, kind, values_sql, patient_sql, question, sql in specs:
        ctx = dbs[db_id]
        values = [r[0] for r in ctx.db.execute(values_sql).rows if r[0] and "'" not in r[0]]
        pairs = []
        for x in values:
            content = {w for w in _words(x) if w not in _PLAIN and not w.isdigit() and len(w) > 2}
            similar = [y for y in values if y.lower() != x.lower() and content & set(_words(y))]
            if similar:
                pairs.append((x, rng.choice(similar)))
        rng.shuffle(pairs)
        for x, y in pairs[:25]:
            patient = ctx.db.execute(patient_sql.format(v=x)).rows[0][0]
            said = {"as written": x}
            if len(_words(x)) >= 2:
                said["words rotated"] = " ".join(_words(x)[1:] + _words(x)[:1])
            for how, words in said.items():
                q = question.format(x=words, p=patient)
                right = sql.format(v=x, p=patient)
                group = f"{db_id} {kind}, said {how}"
                yield Case(ctx, group, q, right, right)
                yield Case(ctx, group, q, sql.format(v=y, p=patient), right)


def counts(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    mimic = [("How many patients had an emergency admission?", "admission_type = 'ew emer.'"),
             ("How many patients were admitted with medicare insurance?", "insurance = 'medicare'"),
             ("What is the number of people who were discharged home?", "discharge_location = 'home'")]
    for q, c in mimic:
        right = f"SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE {c}"
        shapes = {
            "right: COUNT(DISTINCT patient)": right,
            "right: patients IN (...)": f"SELECT COUNT(*) FROM patients WHERE subject_id IN (SELECT subject_id FROM admissions WHERE {c})",
            "right: a CTE of distinct patients": f"WITH t AS (SELECT DISTINCT subject_id FROM admissions WHERE {c}) SELECT COUNT(*) FROM t",
            "right: a subquery grouped by patient":
                f"SELECT COUNT(*) FROM (SELECT subject_id FROM admissions WHERE {c} GROUP BY subject_id) AS t",
            "COUNT(*)": f"SELECT COUNT(*) FROM admissions WHERE {c}",
            "COUNT(DISTINCT admission)": f"SELECT COUNT(DISTINCT hadm_id) FROM admissions WHERE {c}",
            "COUNT(patient) without DISTINCT": f"SELECT COUNT(subject_id) FROM admissions WHERE {c}",
            "a subquery's admissions": f"SELECT COUNT(*) FROM (SELECT hadm_id FROM admissions WHERE {c}) AS t",
            "a subquery's rows": f"SELECT COUNT(*) FROM (SELECT subject_id FROM admissions WHERE {c}) AS t",
            "a CTE's rows": f"WITH t AS (SELECT * FROM admissions WHERE {c}) SELECT COUNT(*) FROM t",
            "SUM(CASE ...)": f"SELECT SUM(CASE WHEN {c} THEN 1 ELSE 0 END) FROM admissions",
            "a join's rows": f"SELECT COUNT(*) FROM admissions JOIN patients ON patients.subject_id = admissions.subject_id "
                             f"WHERE admissions.{c}",
        }
        for shape, sql in shapes.items():
            yield Case(dbs["mimic_iv"], f"mimic_iv {shape}", q, sql, right)
    for q, c in [("How many patients were admitted from the emergency department?", "hospitaladmitsource = 'emergency department'"),
                 ("How many patients are female?", "gender = 'female'")]:
        right = f"SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE {c}"
        shapes = {
            "right: COUNT(DISTINCT patient)": right,
            "COUNT(*)": f"SELECT COUNT(*) FROM patient WHERE {c}",
            "COUNT(DISTINCT unit stay)": f"SELECT COUNT(DISTINCT patientunitstayid) FROM patient WHERE {c}",
            "a CTE's rows": f"WITH t AS (SELECT * FROM patient WHERE {c}) SELECT COUNT(*) FROM t",
            "SUM(CASE ...)": f"SELECT SUM(CASE WHEN {c} THEN 1 ELSE 0 END) FROM patient",
        }
        for shape, sql in shapes.items():
            yield Case(dbs["eicu"], f"eicu {shape}", q, sql, right)


def durations(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    ctx = dbs["mimic_iv"]
    patients = [r[0] for r in ctx.db.execute("SELECT DISTINCT subject_id FROM icustays ORDER BY subject_id").rows]
    for p in rng.sample(patients, 5):
        stay = f"FROM icustays WHERE subject_id = {p} ORDER BY intime ASC LIMIT 1"
        days = f"SELECT julianday(outtime) - julianday(intime) {stay}"
        hours = f"SELECT (julianday(outtime) - julianday(intime)) * 24 {stay}"
        asked_hours = f"How many hours did the first ICU stay of patient {p} last?"
        asked_days = asked_hours.replace("hours", "days")
        for group, q, sql, right in [
            ("right: hours", asked_hours, hours, hours), ("right: days", asked_days, days, days),
            ("days given for hours", asked_hours, days, hours), ("hours given for days", asked_days, hours, days),
            ("the hour of the day subtracted", asked_hours, f"SELECT strftime('%H', outtime) - strftime('%H', intime) {stay}", hours),
            ("the day of the month subtracted", asked_days, f"SELECT strftime('%d', outtime) - strftime('%d', intime) {stay}",
             f"SELECT julianday(date(outtime)) - julianday(date(intime)) {stay}"),  # calendar days, as the fields meant
        ]:
            yield Case(ctx, group, q, sql, right)


def ends(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    ctx = dbs["mimic_iv"]
    for p, drug in [(10000032, "furosemide"), (10002495, "heparin"), (10004235, "acetaminophen")]:
        rows = f"FROM prescriptions WHERE subject_id = {p} AND drug = '{drug}'"
        started = f"SELECT starttime {rows} ORDER BY starttime ASC LIMIT 1"
        stopped = f"SELECT stoptime {rows} ORDER BY stoptime DESC LIMIT 1"
        for words, right, wrong in [
            (f"When was {drug} first started for patient {p}?", started, f"SELECT stoptime {rows} ORDER BY stoptime ASC LIMIT 1"),
            (f"When was {drug} first initiated for patient {p}?", started, f"SELECT stoptime {rows} ORDER BY stoptime ASC LIMIT 1"),
            (f"When was {drug} last stopped for patient {p}?", stopped, f"SELECT starttime {rows} ORDER BY starttime DESC LIMIT 1"),
            (f"When was {drug} discontinued for patient {p} the last time?", stopped,
             f"SELECT starttime {rows} ORDER BY starttime DESC LIMIT 1"),
        ]:
            yield Case(ctx, "right", words, right, right)
            yield Case(ctx, "the other end returned", words, wrong, right)


def joins(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    ctx = dbs["mimic_iv"]
    visits = [r[0] for r in ctx.db.execute("SELECT d.hadm_id FROM diagnoses_icd d JOIN cost c ON c.hadm_id = d.hadm_id "
                                           "GROUP BY d.hadm_id HAVING COUNT(DISTINCT d.row_id) > 1 ORDER BY d.hadm_id").rows]
    for h in rng.sample(visits, min(5, len(visits))):
        q = f"What was the total cost of hospital admission {h}?"
        right = f"SELECT SUM(cost) FROM cost WHERE hadm_id = {h}"
        yield Case(ctx, "right: the visit's costs", q, right, right)
        yield Case(ctx, "right: joined to the visit", q, f"SELECT SUM(c.cost) FROM cost c JOIN admissions a ON c.hadm_id = a.hadm_id "
                   f"WHERE a.hadm_id = {h}", right)
        yield Case(ctx, "joined to the visit's diagnoses", q, f"SELECT SUM(c.cost) FROM cost c JOIN diagnoses_icd d "
                   f"ON c.hadm_id = d.hadm_id WHERE c.hadm_id = {h}", right)
        yield Case(ctx, "joined to the visit, then its diagnoses", q, f"SELECT SUM(cost) FROM cost JOIN admissions ON cost.hadm_id = "
                   f"admissions.hadm_id JOIN diagnoses_icd ON diagnoses_icd.hadm_id = admissions.hadm_id WHERE cost.hadm_id = {h}", right)


def negations(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    wordings = ["How many {who} never received {d}?", "How many {who} were not given {d}?",
                "Count the {who} without any {d} order.", "How many {who} did not get {d}?"]
    specs = [("mimic_iv", "patients", "prescriptions", "drug", "subject_id"),
             ("eicu", "ICU stays", "medication", "drugname", "patientunitstayid")]
    for db_id, who, table, column, key in specs:
        ctx = dbs[db_id]
        drugs = [r[0] for r in ctx.db.execute(f"SELECT {column} FROM {table} WHERE {column} NOT LIKE '%''%' GROUP BY {column} "
                                              f"HAVING COUNT(DISTINCT {key}) >= 3 ORDER BY {column}").rows]
        for d in rng.sample(drugs, 4):
            holders = f"SELECT {key} FROM {table} WHERE {column} = '{d}'"
            right = f"SELECT COUNT(DISTINCT {key}) FROM {table} WHERE {key} NOT IN ({holders})"
            q = rng.choice(wordings).format(who=who, d=d)
            for group, sql in [
                ("right: NOT IN", right),
                ("right: NOT EXISTS", f"SELECT COUNT(DISTINCT t.{key}) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM {table} u "
                                      f"WHERE u.{key} = t.{key} AND u.{column} = '{d}')"),
                ("right: EXCEPT", f"SELECT COUNT(*) FROM (SELECT {key} FROM {table} EXCEPT {holders})"),
                ("rows of other drugs (<>)", f"SELECT COUNT(DISTINCT {key}) FROM {table} WHERE {column} <> '{d}'"),
                ("rows of other drugs (NOT =)", f"SELECT COUNT(DISTINCT {key}) FROM {table} WHERE NOT {column} = '{d}'"),
                ("rows of other drugs (NOT LIKE)", f"SELECT COUNT(DISTINCT {key}) FROM {table} WHERE {column} NOT LIKE '%{d}%'"),
            ]:
                yield Case(ctx, f"{db_id} {group}", q, sql, right)


def variants(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    ctx = dbs["mimic_iv"]
    # a patient whose orders hold a drug both by its bare name and by a longer one
    pairs = ctx.db.execute("SELECT DISTINCT a.subject_id, a.drug FROM prescriptions a JOIN prescriptions b ON a.subject_id = b.subject_id "
                           "AND b.drug LIKE a.drug || ' %' WHERE a.drug NOT LIKE '%''%' ORDER BY 1, 2").rows
    only = ctx.db.execute("SELECT subject_id, drug FROM prescriptions a WHERE drug NOT LIKE '%''%' AND NOT EXISTS (SELECT 1 FROM "
                          "prescriptions b WHERE b.subject_id = a.subject_id AND b.drug LIKE a.drug || ' %') "
                          "GROUP BY subject_id, drug ORDER BY 1, 2").rows
    for p, d in rng.sample(pairs, min(10, len(pairs))):
        q = rng.choice(["How many {d} orders does patient {p} have?", "How many times was {d} prescribed to patient {p}?"]).format(d=d, p=p)
        right = f"SELECT COUNT(*) FROM prescriptions WHERE subject_id = {p} AND (drug = '{d}' OR drug LIKE '{d} %')"
        yield Case(ctx, "right: every name holding the drug", q, right, right)
        yield Case(ctx, "the bare name only, longer names held", q,
                   f"SELECT COUNT(*) FROM prescriptions WHERE subject_id = {p} AND drug = '{d}'", right)
    for p, d in rng.sample(only, 10):
        q = f"How many times was {d} prescribed to patient {p}?"
        right = f"SELECT COUNT(*) FROM prescriptions WHERE subject_id = {p} AND drug = '{d}'"
        yield Case(ctx, "right: the bare name, no longer name held for the patient", q, right, right)


def presence(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    fields = [("mimic_iv", "admissions", "admissions", "discharge_location", "discharge location"),
              ("mimic_iv", "admissions", "admissions", "language", "language"),
              ("mimic_iv", "admissions", "admissions", "marital_status", "marital status"),
              ("mimic_iv", "ICU stays", "icustays", "outtime", "ICU out time"),
              ("eicu", "unit stays", "patient", "admissionweight", "admission weight"),
              ("eicu", "unit stays", "patient", "dischargeweight", "discharge weight")]
    for db_id, what, table, column, words in fields:
        ctx = dbs[db_id]
        for filled, wording in [(True, "How many {w} have a recorded {f}?"), (True, "How many {w} have a documented {f}?"),
                                (False, "How many {w} have no recorded {f}?"), (False, "How many {w} without a documented {f}?")]:
            q = wording.format(w=what, f=words)
            right = f"SELECT COUNT(*) FROM {table} WHERE {column} IS {'NOT ' if filled else ''}NULL"
            yield Case(ctx, f"{db_id} right: IS [NOT] NULL", q, right, right)
            if filled:
                yield Case(ctx, f"{db_id} right: COUNT(field)", q, f"SELECT COUNT({column}) FROM {table}", right)
            yield Case(ctx, f"{db_id} every row counted", q, f"SELECT COUNT(*) FROM {table}", right)


def anchors(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    ctx = dbs["mimic_iv"]
    stays = ctx.db.execute("SELECT i.subject_id, i.stay_id, i.hadm_id FROM icustays i JOIN admissions a ON a.hadm_id = i.hadm_id "
                           "WHERE julianday(i.intime) - julianday(a.admittime) > 0.25 ORDER BY 1").rows
    for _, stay, hadm in rng.sample(stays, min(8, len(stays))):
        n = rng.choice([6, 12, 24])
        icu = (f"SELECT COUNT(*) FROM chartevents c JOIN icustays i ON c.stay_id = i.stay_id WHERE i.stay_id = {stay} "
               f"AND c.charttime <= datetime(i.intime, '+{n} hours')")
        hospital = (f"SELECT COUNT(*) FROM chartevents c JOIN admissions a ON c.hadm_id = a.hadm_id WHERE c.stay_id = {stay} "
                    f"AND c.charttime <= datetime(a.admittime, '+{n} hours')")
        q = rng.choice(["How many chart events were recorded in the first {n} hours of ICU stay {s}?",
                        "How many chart events were recorded within {n} hours of ICU admission for stay {s}?"]).format(n=n, s=stay)
        yield Case(ctx, "ICU period: right, from the unit's intime", q, icu, icu)
        yield Case(ctx, "ICU period counted from the hospital admission", q, hospital, icu)
        labs_hospital = (f"SELECT COUNT(*) FROM labevents l JOIN admissions a ON l.hadm_id = a.hadm_id WHERE l.hadm_id = {hadm} "
                         f"AND l.charttime <= datetime(a.admittime, '+{n} hours')")
        labs_icu = (f"SELECT COUNT(*) FROM labevents l JOIN icustays i ON l.hadm_id = i.hadm_id WHERE i.stay_id = {stay} "
                    f"AND l.charttime <= datetime(i.intime, '+{n} hours')")
        q = f"How many lab results were drawn in the first {n} hours of hospital admission {hadm}?"
        yield Case(ctx, "hospital period: right, from the admittime", q, labs_hospital, labs_hospital)
        yield Case(ctx, "hospital period counted from the ICU arrival", q, labs_icu, labs_hospital)


# How people name each kind of charge (general clinical English; some of them no word of the kind's table name says).
_KIND_WORDS = {"diagnoses_icd": ("diagnoses", "diagnosis codes"), "labevents": ("lab tests", "labs", "laboratory tests"),
               "procedures_icd": ("procedures",), "prescriptions": ("prescriptions", "medications", "drugs"),
               "diagnosis": ("diagnoses",), "lab": ("labs", "lab tests"), "treatment": ("treatments",),
               "medication": ("medications", "drugs")}


def kinds(dbs: dict[str, DatabaseContext], rng: random.Random) -> Iterator[Case]:
    for db_id, key, column, words in (("mimic_iv", "hadm_id", "event_type", "admission"),
                                      ("eicu", "patienthealthsystemstayid", "eventtype", "hospital stay")):
        ctx = dbs[db_id]
        visits = [r[0] for r in ctx.db.execute(f"SELECT {key} FROM cost GROUP BY {key} HAVING COUNT(DISTINCT {column}) > 1 "
                                               "ORDER BY 1").rows]
        for v in rng.sample(visits, min(6, len(visits))):
            total = f"SELECT SUM(cost) FROM cost WHERE {key} = {v}"
            kind = rng.choice(sorted(k for k in _KIND_WORDS if ctx.db.execute(
                f"SELECT 1 FROM cost WHERE {key} = {v} AND {column} = '{k}' LIMIT 1").rows))
            said = rng.choice(_KIND_WORDS[kind])
            right = f"{total} AND {column} = '{kind}'"
            q = rng.choice(["What was the total cost of {k} for {w} {v}?", "How much was charged for {k} during {w} {v}?",
                            "What did {k} cost in {w} {v}?"]).format(k=said, w=words, v=v)
            yield Case(ctx, f"{db_id} right: the kind kept", q, right, right)
            yield Case(ctx, f"{db_id} every kind summed", q, total, right)
            q = f"What was the total cost of {words} {v}?"
            yield Case(ctx, f"{db_id} right: no kind asked, every kind summed", q, total, total)
            q = f"What was the total cost of {words} {v}, excluding {said}?"
            other = f"{total} AND {column} <> '{kind}'"
            yield Case(ctx, f"{db_id} a kind left out, every kind summed", q, total, other)


PROBES: dict[str, Callable[[dict[str, DatabaseContext], random.Random], Iterator[Case]]] = {
    "names": names, "counts": counts, "durations": durations, "ends": ends, "joins": joins,
    "negations": negations, "variants": variants, "presence": presence, "anchors": anchors, "kinds": kinds}


def run(probe: str, dbs: dict[str, DatabaseContext], seed: int) -> list[str]:
    table: dict[str, Counter[str]] = {}
    for case in PROBES[probe](dbs, random.Random(seed)):
        tally = table.setdefault(case.group, Counter())
        is_right = case.correct
        if not is_right and _rows(case.ctx, case.sql) == _rows(case.ctx, case.right):
            continue  # the other query happens to answer alike here: not a wrong candidate
        stopped, fixed = _stops(case.ctx, case.question, case.sql)
        kind = "right" if is_right else "wrong"
        tally[kind] += 1
        tally[f"{kind} stopped"] += stopped
        if fixed is not None and not is_right:
            try:
                tally["repaired right"] += _rows(case.ctx, fixed) == _rows(case.ctx, case.right)
            except Exception:  # noqa: BLE001 - a repair that does not run is not a right one
                pass
    lines = [f"## {probe}", "", "| cases | wrong stopped | of them repaired right | right stopped |", "|---|---|---|---|"]
    for group, t in table.items():
        lines.append(f"| {group} | {t['wrong stopped']} / {t['wrong']} | {t['repaired right']} | {t['right stopped']} / {t['right']} |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-dir", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--probe", choices=sorted(PROBES), action="append")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    dbs = {db_id: DatabaseContext(open_database(args.db_dir / f"{db_id}.sqlite"), db_id, args.db_dir / f"{db_id}.sqlite")
           for db_id in ("mimic_iv", "eicu")}
    lines = [f"# Generated probes of the checks (seed {args.seed})", "",
             "Questions and candidate SQL written by `scripts/generated_probes.py` from the demo databases' own values "
             "(its docstring says how); a wrong candidate is *stopped* by an error or a blocking warning, and *repaired "
             "right* when the repair answers like the right query. docs/safety.md compares them with the checks before "
             "sessions 29 and 30.", "", f"    python scripts/generated_probes.py --db-dir DIR --seed {args.seed}", ""]
    for probe in args.probe or list(PROBES):
        lines += run(probe, dbs, args.seed)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
