"""``ehrguard bench scale``: what size costs on SQLite, DuckDB and PostgreSQL, on synthetic MIMIC-IV at K times the demo.

For each factor (1 = the demo itself; 10 and 50 = :mod:`ehrguard.db.builders.scaled`, SYNTHETIC) the benchmark builds
the mimic-code layout in DuckDB, copies it into SQLite (one file per schema, attached under the schema's name, with
the same indexes PostgreSQL gets) and, given a server, into PostgreSQL (``db build --target``'s loader: COPY,
indexes, ANALYZE); it records each build's time and size, then runs on each engine:

* **EHRSQL-style** questions about one patient or one table (:data:`PATIENT_QUERIES`, :data:`TABLE_QUERIES`), in SQL
  all three engines read alike, for a seeded sample of patients;
* **ClinSQL gold** queries (a seeded sample of the validation split), transpiled from BigQuery into each dialect
  (sqlglot alone for SQLite, which lacks most of what they use: the share that runs is reported).

Latency is wall time around one query with its rows fetched, through each engine's own driver (engine cost: the
read-only guard's overhead is the same at every size and measured in docs/reliability.md). Each engine's queries run
in a fresh process, whose peak memory is reported (SQLite and DuckDB run in it; PostgreSQL's server is another
process: only its client is counted). The value-index part
builds the verifier's lexicon over columns with full-MIMIC value counts (tens of thousands of distinct labels and
drug names, seeded synthetic strings) and times lookups of misspelt values.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import resource
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from ehrguard.db.builders.postgres import INDEXED
from ehrguard.evaluation.stats import percentile

FACTORS = (1, 10, 50)
SCHEMAS = ("mimiciv_hosp", "mimiciv_icu", "mimiciv_derived")
PATIENT_QUERIES = {
    "admissions of a patient": "SELECT COUNT(DISTINCT hadm_id) FROM mimiciv_hosp.admissions WHERE subject_id = {pid}",
    "last heart rate": "SELECT valuenum FROM mimiciv_icu.chartevents WHERE subject_id = {pid} AND itemid = 220045 "
                       "ORDER BY charttime DESC LIMIT 1",
    "drugs prescribed": "SELECT DISTINCT drug FROM mimiciv_hosp.prescriptions WHERE subject_id = {pid}",
    "highest creatinine": "SELECT MAX(valuenum) FROM mimiciv_hosp.labevents WHERE subject_id = {pid} AND itemid = 50912",
    "mean heart rate per stay": "SELECT stay_id, AVG(valuenum) FROM mimiciv_icu.chartevents WHERE subject_id = {pid} "
                                "AND itemid = 220045 GROUP BY stay_id",
}
TABLE_QUERIES = {
    "patients with heart failure": "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.diagnoses_icd WHERE icd_code LIKE 'I50%'",
    "five most prescribed drugs": "SELECT drug, COUNT(*) AS n FROM mimiciv_hosp.prescriptions GROUP BY drug ORDER BY n DESC, drug "
                                  "LIMIT 5",
    "ICU stays over two days": "SELECT COUNT(*) FROM mimiciv_icu.icustays WHERE los > 2",
}


class Engine:
    """One engine holding one scale's data, queried through its own driver."""

    name = ""

    def run(self, sql: str, timeout_s: float) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class DuckDBEngine(Engine):
    name = "duckdb"

    def __init__(self, path: Path) -> None:
        import duckdb

        self.con = duckdb.connect(str(path), read_only=True)

    def run(self, sql: str, timeout_s: float) -> int:
        return len(self.con.execute(sql).fetchall())

    def close(self) -> None:
        self.con.close()


class SQLiteEngine(Engine):
    name = "sqlite"

    def __init__(self, folder: Path) -> None:
        self.con = sqlite3.connect(f"file:{folder / 'main.sqlite'}?mode=ro", uri=True)
        for schema in SCHEMAS:
            if (folder / f"{schema}.sqlite").is_file():
                self.con.execute(f"ATTACH 'file:{folder / schema}.sqlite?mode=ro' AS {schema}")

    def run(self, sql: str, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        self.con.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            return len(self.con.execute(sql).fetchall())
        finally:
            self.con.set_progress_handler(None, 0)

    def close(self) -> None:
        self.con.close()


class PostgresEngine(Engine):
    name = "postgres"

    def __init__(self, url: str) -> None:
        import psycopg

        self.con = psycopg.connect(url, autocommit=True)

    def run(self, sql: str, timeout_s: float) -> int:
        self.con.execute(f"SET statement_timeout = {int(timeout_s * 1000)}")
        return len(self.con.execute(sql).fetchall())

    def close(self) -> None:
        self.con.close()


def to_sqlite(duckdb_path: Path, folder: Path) -> Path:
    """Copy the mimic-code layout of ``duckdb_path`` into SQLite files, one per schema (``folder/mimiciv_hosp.sqlite``,
    ...), indexed on the join and filter columns; ``folder/main.sqlite`` is the file the others attach to."""
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    sqlite3.connect(folder / "main.sqlite").close()
    source = duckdb.connect(str(duckdb_path), read_only=True)
    try:
        tables = source.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE schema_name IN "
                                f"({', '.join(repr(s) for s in SCHEMAS)}) ORDER BY 1, 2").fetchall()
        for schema in sorted({s for s, _ in tables}):
            target = sqlite3.connect(folder / f"{schema}.sqlite")
            try:
                for _, table in [t for t in tables if t[0] == schema]:
                    columns = [c for c, in source.execute("SELECT column_name FROM duckdb_columns() WHERE schema_name = ? "
                                                          "AND table_name = ? ORDER BY column_index", [schema, table]).fetchall()]
                    quoted = ", ".join(f'"{c}"' for c in columns)
                    target.execute(f'CREATE TABLE "{table}" ({quoted})')
                    cursor = source.execute(f'SELECT * FROM {schema}."{table}"')
                    marks = ", ".join("?" * len(columns))
                    while rows := cursor.fetchmany(50_000):
                        target.executemany(f'INSERT INTO "{table}" VALUES ({marks})', [tuple(_plain(v) for v in r) for r in rows])
                    for column in [c for c in columns if c.lower() in INDEXED]:
                        target.execute(f'CREATE INDEX "{table}_{column}" ON "{table}" ("{column}")')
                target.commit()
                target.execute("ANALYZE")
            finally:
                target.close()
    finally:
        source.close()
    return folder


def _plain(value: Any) -> Any:
    """A value SQLite stores: times as ISO text (as the other engines print them), decimals as floats."""
    if value is None or isinstance(value, (int, float, str, bytes)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat(sep=" ") if hasattr(value, "hour") else value.isoformat()
    return float(value) if hasattr(value, "as_integer_ratio") else str(value)


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


def postgres_size(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as con:
        row = con.execute("SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
                          "ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = ANY(%s)", [list(SCHEMAS)]).fetchone()
    return int(row[0]) if row else 0


def patient_sample(duckdb_path: Path, n: int, seed: int) -> list[int]:
    import duckdb

    con = duckdb.connect(str(duckdb_path), read_only=True)
    try:
        ids = sorted(r[0] for r in con.execute("SELECT subject_id FROM mimiciv_hosp.patients").fetchall())
    finally:
        con.close()
    return random.Random(seed).sample(ids, min(n, len(ids)))


def clinsql_sample(split_dir: Path, n: int, seed: int) -> dict[str, str]:
    from ehrguard.clinsql.execcheck import queries

    gold = {k: v for k, v in queries(split_dir).items() if v}
    keys = random.Random(seed).sample(sorted(gold), min(n, len(gold)))
    return {k: gold[k] for k in sorted(keys)}


def _sqlite_sql(bigquery: str) -> str:
    import sqlglot

    from ehrguard.clinsql.transpile import local_tables

    tree = sqlglot.parse_one(bigquery, read="bigquery")
    return local_tables(tree).sql(dialect="sqlite")  # type: ignore[arg-type]


def time_queries(engine: Engine, queries: Iterable[tuple[str, str]], timeout_s: float) -> list[dict[str, Any]]:
    """Run each (label, SQL) once: its seconds and row count, or its error."""
    out = []
    for label, sql in queries:
        start = time.perf_counter()
        try:
            rows = engine.run(sql, timeout_s)
            out.append({"query": label, "seconds": time.perf_counter() - start, "rows": rows})
        except Exception as exc:  # noqa: BLE001 - each engine's driver raises its own errors; the run records them
            out.append({"query": label, "seconds": time.perf_counter() - start, "error": str(exc).splitlines()[0][:160]})
    return out


def latency(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = sorted(r["seconds"] * 1000 for r in rows if "error" not in r)
    return {"queries": len(rows), "ran": len(ok), "p50_ms": round(percentile(ok, 0.5), 2) if ok else None,
            "p95_ms": round(percentile(ok, 0.95), 2) if ok else None, "total_s": round(sum(ok) / 1000, 2)}


def _peak_mib() -> float:
    """This process's peak resident memory. VmHWM, which a new program starts afresh (``ru_maxrss`` keeps the peak of
    the process that forked it: a spawned worker would report its parent's)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _open(kind: str, target: str) -> Engine:
    if kind == "postgres":
        return PostgresEngine(target)
    return DuckDBEngine(Path(target)) if kind == "duckdb" else SQLiteEngine(Path(target))


def _measure(kind: str, target: str, ehrsql: list[tuple[str, str]], clinsql: list[tuple[str, str]],
             timeout_s: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
    """Run in a fresh process (its peak memory is the engine's alone): the timings of both query sets, and that peak."""
    engine = _open(kind, target)
    try:
        return time_queries(engine, ehrsql, timeout_s), time_queries(engine, clinsql, timeout_s), _peak_mib()
    finally:
        engine.close()


def value_index_cost(folder: Path, counts: dict[str, int], lookups: int = 200, seed: int = 0) -> dict[str, Any]:
    """Build the lexicon over columns of ``counts`` distinct seeded synthetic values (full-MIMIC sizes: ~4,000 d_items
    labels, ~1,600 lab labels, ~9,000 drug names, ~110,000 ICD titles), then time the lookups of misspelt ones."""
    from ehrguard.db import SQLiteDatabase, ValueIndex, build_lexicon

    rng = random.Random(seed)
    syllables = ("ab", "ac", "al", "am", "an", "ar", "at", "ba", "ce", "ci", "co", "da", "de", "di", "do", "el", "en", "er", "fa",
                 "fe", "ga", "hy", "in", "ka", "la", "le", "li", "lo", "ma", "me", "mi", "mo", "na", "ne", "ni", "no", "ol",
                 "on", "or", "pa", "pe", "pi", "pro", "ra", "re", "ri", "ro", "sa", "se", "si", "so", "ta", "te", "ti", "to",
                 "tri", "ul", "um", "va", "ve", "vi", "xa", "ze", "zo")
    path = folder / "values.sqlite"
    con = sqlite3.connect(path)
    values: dict[str, list[str]] = {}
    for table, n in counts.items():
        seen: set[str] = set()
        while len(seen) < n:
            words = [("".join(rng.choice(syllables) for _ in range(rng.randint(2, 5)))) for _ in range(rng.randint(1, 4))]
            seen.add(" ".join(words))
        values[table] = sorted(seen)
        con.execute(f"CREATE TABLE {table} (label TEXT)")
        con.executemany(f"INSERT INTO {table} VALUES (?)", [(v,) for v in values[table]])
    con.commit()
    con.close()
    db = SQLiteDatabase(path, isolated=False)
    try:
        start = time.perf_counter()
        build_lexicon(db, [(t, "label") for t in counts])
        build_s = time.perf_counter() - start
        index = ValueIndex(db, lexicon_columns=[(t, "label") for t in counts])
        times = []
        for i in range(lookups):
            table = list(counts)[i % len(counts)]
            word = rng.choice(values[table])
            j = rng.randrange(len(word))
            typo = word[:j] + word[j + 1:] if len(word) > 3 else word + "x"  # one letter dropped
            start = time.perf_counter()
            index.lookup(table, "label", typo, k=3)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        lexicon = path.with_name(path.name + ".lexicon")
        return {"distinct_values": dict(counts), "lexicon_build_s": round(build_s, 2),
                "lexicon_mib": round(lexicon.stat().st_size / 2**20, 1) if lexicon.is_file() else None,
                "lookup_p50_ms": round(percentile(times, 0.5), 2), "lookup_p95_ms": round(percentile(times, 0.95), 2),
                "max_lookup_ms": round(times[-1], 2)}
    finally:
        db.close()


def run_scale(work: Path, source: Path, split_dir: Path, *, factors: Iterable[int] = FACTORS, postgres_url: str | None = None,
              patients: int = 5, clinsql: int = 40, timeout_s: float = 60.0, seed: int = 0,
              progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The whole measurement (module docstring); ``work`` holds the builds (tens of GiB free for x50)."""
    from ehrguard.clinsql.transpile import to_duckdb, to_postgres
    from ehrguard.db.builders.base import Progress
    from ehrguard.db.builders.mimic_iv_raw import build as build_raw
    from ehrguard.db.builders.postgres import load_into_postgres
    from ehrguard.db.builders.scaled import scale

    work.mkdir(parents=True, exist_ok=True)
    quiet = Progress()
    demo = work / "mimic_iv_raw.duckdb"
    start = time.perf_counter()
    if not demo.is_file():
        build_raw(source, demo, quiet)
    demo_build_s = round(time.perf_counter() - start, 1)
    gold = clinsql_sample(split_dir, clinsql, seed)
    results: list[dict[str, Any]] = []
    for factor in factors:
        entry: dict[str, Any] = {"factor": factor, "synthetic": factor > 1, "engines": {}}
        progress(f"x{factor}: building")
        path = demo if factor == 1 else work / f"mimic_iv_raw_x{factor}.duckdb"
        start = time.perf_counter()
        if factor > 1 and not path.is_file():
            scale(demo, path, factor, progress=None)
        entry["duckdb_build_s"] = round(time.perf_counter() - start, 1) if factor > 1 else demo_build_s
        pids = patient_sample(path, patients, seed)
        ehrsql = [(f"{label} ({pid})", sql.format(pid=pid)) for pid in pids for label, sql in PATIENT_QUERIES.items()]
        ehrsql += list(TABLE_QUERIES.items())
        builds: dict[str, tuple[str, float, int, Callable[[str], str]]] = {}
        builds["duckdb"] = (str(path), entry["duckdb_build_s"], size_of(path), to_duckdb)
        folder = work / f"sqlite_x{factor}"
        start = time.perf_counter()
        if not (folder / "mimiciv_hosp.sqlite").is_file():
            with tempfile.TemporaryDirectory(dir=work) as scratch:
                to_sqlite(path, Path(scratch) / "db")
                (Path(scratch) / "db").rename(folder)
        builds["sqlite"] = (str(folder), round(time.perf_counter() - start, 1), size_of(folder), _sqlite_sql)
        if postgres_url:
            progress(f"x{factor}: loading PostgreSQL")
            start = time.perf_counter()
            load_into_postgres(path, postgres_url)
            builds["postgres"] = (postgres_url, round(time.perf_counter() - start, 1),
                                  postgres_size(postgres_url), to_postgres)
        for name, (target, build_s, size, transpile) in builds.items():
            progress(f"x{factor}: {name}")
            clinsql_queries = []
            for key, bq in gold.items():
                try:
                    clinsql_queries.append((key, transpile(bq)))
                except Exception:  # noqa: BLE001 - no translation into this dialect: counted as not run
                    clinsql_queries.append((key, "SELECT no_translation_into_this_dialect()"))
            with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
                ehr_rows, clin_rows, peak = pool.submit(_measure, name, target, ehrsql, clinsql_queries, timeout_s).result()
            entry["engines"][name] = {"build_s": build_s, "size_mib": round(size / 2**20, 1), "ehrsql": latency(ehr_rows),
                                      "clinsql": latency(clin_rows), "peak_rss_mib": round(peak, 1),
                                      "errors": sorted({r["error"] for r in ehr_rows + clin_rows if "error" in r})[:5]}
        results.append(entry)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        progress("value index")
        values = value_index_cost(Path(scratch), {"d_items": 4_000, "d_labitems": 1_600, "prescriptions": 9_000,
                                                  "d_icd_diagnoses": 110_000}, seed=seed)
    return {"factors": results, "value_index": values, "patients": patients, "clinsql_queries": len(gold), "seed": seed,
            "timeout_s": timeout_s}


def render_scale(report: dict[str, Any]) -> str:
    lines = ["# Cost at size: SQLite, DuckDB, PostgreSQL (x1 = the MIMIC-IV demo; x10, x50 SYNTHETIC copies)", "",
             f"{report['patients']} patients x {len(PATIENT_QUERIES)} patient questions + {len(TABLE_QUERIES)} table questions "
             f"(EHRSQL-style); {report['clinsql_queries']} ClinSQL gold queries (seeded sample); timeout "
             f"{report['timeout_s']:g} s.", "",
             "| scale | engine | build s | size MiB | EHRSQL-style p50 / p95 ms | ClinSQL ran | ClinSQL p50 / p95 ms | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|"]
    for f in report["factors"]:
        for name, e in f["engines"].items():
            ehr, clin = e["ehrsql"], e["clinsql"]
            lines.append(f"| x{f['factor']} | {name} | {e['build_s']} | {e['size_mib']} | {ehr['p50_ms']} / {ehr['p95_ms']} | "
                         f"{clin['ran']} / {clin['queries']} | {clin['p50_ms']} / {clin['p95_ms']} | {e['peak_rss_mib']} |")
    v = report["value_index"]
    lines += ["", f"Value index over {sum(v['distinct_values'].values()):,} distinct values "
              f"({', '.join(f'{k} {n:,}' for k, n in v['distinct_values'].items())}): lexicon built in {v['lexicon_build_s']} s "
              f"({v['lexicon_mib']} MiB); lookup of a misspelt value p50 {v['lookup_p50_ms']} ms, p95 {v['lookup_p95_ms']} ms."]
    return "\n".join(lines) + "\n"


def write_scale_report(out: Path, report: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "report.md").write_text(render_scale(report))
    return out / "report.md"
