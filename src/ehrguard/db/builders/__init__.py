"""Database builders: one module per database, one registry, one entry point.

Every builder reads a public source folder, validates it (a missing or corrupt required
table is an error naming the file; a missing optional table is a loud warning listing
what the database will lack), and writes its output atomically.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.errors import ConfigError, DatasetError


@dataclass(frozen=True)
class Builder:
    name: str
    description: str
    engine: str  # sqlglot dialect of the output
    suffix: str
    source_folder: str  # folder name of the source inside the data directory
    module: str

    def run(self, source: Path, out: Path, progress: Progress) -> BuildReport:
        import importlib

        build: Callable[[Path, Path, Progress], BuildReport] = importlib.import_module(self.module).build
        return build(source, out, progress)


BUILDERS: dict[str, Builder] = {
    b.name: b
    for b in (
        Builder("mimic_iv", "EHRSQL-2024 / SCARE MIMIC-IV (SQLite) from the MIMIC-IV demo 2.2", "sqlite", ".sqlite",
                "mimic-iv-demo-2.2", "ehrguard.db.builders.mimic_iv"),
        Builder("eicu", "EHRSQL / SCARE eICU (SQLite) from the eICU demo 2.0.1", "sqlite", ".sqlite",
                "eicu-demo-2.0.1", "ehrguard.db.builders.eicu"),
        Builder("mimicsql", "MIMICSQL 5-table schema (SQLite) from the MIMIC-III demo 1.4", "sqlite", ".sqlite",
                "mimic-iii-demo-1.4", "ehrguard.db.builders.mimicsql"),
        Builder("mimic_iv_raw", "MIMIC-IV in its module layout (DuckDB: mimiciv_hosp, mimiciv_icu, mimiciv_derived)",
                "duckdb", ".duckdb", "mimic-iv-demo-2.2", "ehrguard.db.builders.mimic_iv_raw"),
        Builder("synthetic", "A tiny seeded synthetic database in the mimic_iv schema (tests, offline demo)", "sqlite",
                ".sqlite", "", "ehrguard.db.builders.synthetic"),
    )
}


def get_builder(name: str) -> Builder:
    try:
        return BUILDERS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, BUILDERS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"Unknown database {name!r}.{hint} Choose one of: {', '.join(BUILDERS)}.") from None


def build_database(
    name: str,
    *,
    out: str | Path,
    source: str | Path | None = None,
    progress: Progress | None = None,
) -> BuildReport:
    """Build database ``name`` from ``source`` into ``out``.

    Args:
        name: one of :data:`BUILDERS` (``mimic_iv``, ``eicu``, ``mimicsql``, ``mimic_iv_raw``, ``synthetic``).
        out: the output file; written atomically.
        source: the unpacked source folder (defaults to ``$EHRGUARD_DATA_DIR/<folder>``).
        progress: receives step messages and warnings.

    Examples:
        >>> build_database("mimic_iv", source="data/mimic-iv-demo-2.2", out="mimic_iv.sqlite")  # doctest: +SKIP
    """
    from ehrguard.config import data_dir

    builder = get_builder(name)
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
    report.seconds = time.perf_counter() - started
    return report


__all__ = ["BUILDERS", "BuildReport", "Builder", "Progress", "build_database", "get_builder"]
