"""Database builders: one module per database, one registry, one entry point.

Every builder reads a public source folder, validates it (a missing or corrupt required
table is an error naming the file; a missing optional table is a loud warning listing
what the database will lack), and writes its output atomically.

The names below are the API; :func:`ehrguard.db.build_database` is the usual entry point. The
modules are internal: one per database (:mod:`.mimic_iv`, :mod:`.eicu`, :mod:`.mimicsql`,
:mod:`.mimic_iv_raw`, :mod:`.synthetic`, :mod:`.scaled`), imported only when that database is built, and what
they share (:mod:`.base`, :mod:`.sources`, :mod:`.writer`, :mod:`.timeshift`, :mod:`.meds`,
:mod:`.charlson`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.errors import ConfigError, DatasetError
from ehrguard.profiles import PROFILES
from ehrguard.registry import Registry


@dataclass(frozen=True)
class Builder:
    name: str
    description: str
    engine: str  # sqlglot dialect of the output
    suffix: str
    source_folder: str  # folder name of the source inside the data directory
    module: str
    entry: str = "build"  # the module's function that builds it
    profile: str = ""  # the profile of what it builds, when not its name (a scaled copy has the original's)

    def run(self, source: Path, out: Path, progress: Progress) -> BuildReport:
        import importlib

        build: Callable[[Path, Path, Progress], BuildReport] = getattr(importlib.import_module(self.module), self.entry)
        return build(source, out, progress)


def _from_profile(name: str, module: str) -> Builder:
    """The builder of a database with a profile: what it builds, in which dialect, from which source folder."""
    p = PROFILES[name]
    return Builder(name, p.description, p.dialect, Path(p.file_name).suffix, p.source_folder, module)


BUILDERS: Registry[Builder] = Registry("database")
for _builder in (
    _from_profile("mimic_iv", "ehrguard.db.builders.mimic_iv"),
    _from_profile("eicu", "ehrguard.db.builders.eicu"),
    _from_profile("mimicsql", "ehrguard.db.builders.mimicsql"),
    _from_profile("mimic_iv_raw", "ehrguard.db.builders.mimic_iv_raw"),
    Builder("synthetic", "A tiny seeded synthetic database in the mimic_iv schema (tests, offline demo)", "sqlite",
            ".sqlite", "", "ehrguard.db.builders.synthetic"),
    *(Builder(f"mimic_iv_raw_x{k}", f"SYNTHETIC: {k} seeded copies of each MIMIC-IV demo patient, mimic-code layout (DuckDB; "
              "for cost at size)", "duckdb", ".duckdb", PROFILES["mimic_iv_raw"].source_folder, "ehrguard.db.builders.scaled",
              f"build_x{k}", "mimic_iv_raw") for k in (10, 50)),
):
    BUILDERS.register(_builder.name, _builder, description=_builder.description)


def source_folders() -> dict[str, str]:
    """Database name -> the folder of its public source inside the data directory (those built from one)."""
    return {b.name: b.source_folder for b in BUILDERS.values() if b.source_folder}


def get_builder(name: str) -> Builder:
    """The builder of database ``name``.

    Raises:
        ConfigError: no such database (the message suggests the closest name).
    """
    return BUILDERS.get(name)


def _engine_of(path: Path) -> str | None:
    """``sqlite`` or ``duckdb`` from the file's first bytes; None for anything else."""
    with path.open("rb") as f:
        head = f.read(16)
    if head.startswith(b"SQLite format 3\x00"):
        return "sqlite"
    return "duckdb" if head[8:12] == b"DUCK" else None


def _tables_of(path: Path, engine: str) -> set[str] | None:
    """The table names (last part, lower case) of a SQLite or DuckDB file, read-only; None when it cannot be read."""
    if engine == "sqlite":
        import sqlite3

        try:
            conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
            try:
                return {r[0].lower() for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            finally:
                conn.close()
        except sqlite3.Error:
            return None
    if engine == "duckdb":
        import duckdb

        try:
            con = duckdb.connect(str(path), read_only=True)
            try:
                return {r[0].lower() for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            finally:
                con.close()
        except duckdb.Error:
            return None
    return None


def replaceable(out: Path, name: str) -> str | None:
    """Why ``out`` must not be replaced by a build of ``name`` (None: it does not exist, or it is a database this
    builder made: one of its engine holding the tables of the profile's patients, admissions and stays)."""
    if not out.exists():
        return None
    if not out.is_file():
        return f"{out} exists and is not a file"
    engine = _engine_of(out)
    tables = _tables_of(out, engine) if engine is not None else None
    if tables is None:
        return f"{out} exists and is not a database"
    builder = get_builder(name)
    if engine != builder.engine:
        return f"{out} is a {engine} database, and {name} builds {builder.engine}"
    profile = PROFILES.get(builder.profile or name) or PROFILES["mimic_iv"]  # the synthetic database has the mimic_iv schema
    # The entity tables and every table the profile's time columns name: more than one table, for every profile.
    wanted = {e.table.split(".")[-1].lower() for e in profile.entities} | {c.rsplit(".", 1)[0].split(".")[-1].lower()
                                                                           for c in profile.time_columns}
    if not wanted <= tables:
        return f"{out} exists and is a database ehrguard did not build as {name} (no {', '.join(sorted(wanted - tables))} table)"
    return None


def build_database(
    name: str,
    *,
    out: str | Path,
    source: str | Path | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> BuildReport:
    """Build database ``name`` from ``source`` into ``out``.

    Args:
        name: one of :data:`BUILDERS` (``mimic_iv``, ``eicu``, ``mimicsql``, ``mimic_iv_raw``, ``synthetic``).
        out: the output file; written atomically.
        source: the unpacked source folder (defaults to ``$EHRGUARD_DATA_DIR/<folder>``).
        progress: receives step messages and warnings.
        force: replace ``out`` even when it is not a database this builder made.

    Raises:
        ConfigError: ``out`` exists and is not a database this builder made (and ``force`` is not set).
        DatasetError: the source folder is missing.

    Examples:
        >>> build_database("mimic_iv", source="data/mimic-iv-demo-2.2", out="mimic_iv.sqlite")  # doctest: +SKIP
    """
    from ehrguard.config import data_dir

    builder = get_builder(name)
    refusal = None if force else replaceable(Path(out), name)
    if refusal is not None:
        raise ConfigError(f"{refusal}; refusing to replace it. Choose another --out, or pass --force to replace it.")
    progress = progress or Progress()
    if source is None and builder.source_folder:
        source = data_dir() / builder.source_folder
    src = Path(source) if source is not None else Path()
    if builder.source_folder and not src.is_dir():
        raise DatasetError(
            f"Source folder {src} does not exist. Pass --source PATH (the unpacked PhysioNet download), "
            f"set EHRGUARD_DATA_DIR, or fetch the open demo: ehrguard db build {name} --download"
        )
    started = time.perf_counter()
    report = builder.run(src, Path(out), progress)
    _write_lexicon(Path(out), name, progress)
    report.seconds = time.perf_counter() - started
    return report


def _write_lexicon(out: Path, name: str, progress: Progress) -> None:
    """The value lexicon of the database's name columns, beside it (``ehrguard.db.lexicon``)."""
    from ehrguard.db.engine import open_database
    from ehrguard.db.lexicon import build_lexicon
    from ehrguard.profiles import PROFILES

    profile = PROFILES.get(get_builder(name).profile or name)
    if profile is None or not profile.value_columns:
        return
    progress.step("writing the value lexicon")
    db = open_database(out, isolated=False)
    try:
        build_lexicon(db, [tuple(c.rsplit(".", 1)) for c in profile.value_columns])  # type: ignore[misc]
    finally:
        db.close()


__all__ = ["BUILDERS", "BuildReport", "Builder", "Progress", "build_database", "get_builder", "source_folders"]
