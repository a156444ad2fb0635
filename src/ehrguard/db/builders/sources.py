"""Reading the public source tables (CSV, CSV.gz) with clear errors that name the file."""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from ehrguard.errors import DatasetError

# The strings pandas reads as missing by default. The EHRSQL preprocessing read every
# source with pandas, so a value like "NA" or "null" is missing there and must be here too.
NA_STRINGS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)

Row = dict[str, str | None]


def find_table(source: Path, relative: str, *, required: bool = True) -> Path | None:
    """Locate ``relative`` (e.g. ``hosp/patients.csv``) as .csv or .csv.gz, any case.

    Raises:
        DatasetError: the table is required and missing.
    """
    stem = relative.removesuffix(".csv")
    candidates = [f"{stem}.csv", f"{stem}.csv.gz"]
    folder = (source / stem).parent
    name = Path(stem).name
    for candidate in candidates:
        path = source / candidate
        if path.is_file():
            return path
    if folder.is_dir():
        # PhysioNet capitalises differently across releases (MIMIC-III: PATIENTS.csv; eICU: vitalPeriodic).
        lowered = {p.name.lower(): p for p in folder.iterdir()}
        for suffix in (".csv", ".csv.gz"):
            hit = lowered.get((name + suffix).lower())
            if hit is not None:
                return hit
    if required:
        raise DatasetError(
            f"Missing source table {source / (stem + '.csv.gz')} (or .csv). "
            "Point --source at the unpacked PhysioNet download, or fetch the open demo with --download."
        )
    return None


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return path.open("r", encoding="utf-8", newline="")


def iter_rows(path: Path, columns: Sequence[str], *, lower: bool = True) -> Iterator[Row]:
    """Yield rows of ``columns`` from a CSV, lower-cased and stripped like the EHRSQL preprocessing.

    Column names match case-insensitively (the demos lower-case them, MIMIC-III does not).

    Raises:
        DatasetError: the file is unreadable, corrupt, or lacks a column.
    """
    try:
        with _open_text(path) as fh:
            reader = csv.reader(fh)
            try:
                header = next(reader)
            except StopIteration:
                raise DatasetError(f"{path} is empty; re-download it.") from None
            index = {h.strip().lower(): i for i, h in enumerate(header)}
            missing = [c for c in columns if c.lower() not in index]
            if missing:
                raise DatasetError(f"{path} lacks column(s) {', '.join(missing)}; is this the right file and release?")
            positions = [(c, index[c.lower()]) for c in columns]
            width = len(header)
            for line_no, record in enumerate(reader, start=2):
                if len(record) != width:
                    if not record:
                        continue
                    raise DatasetError(f"{path}: line {line_no} has {len(record)} fields, expected {width}; the file looks corrupt.")
                row: Row = {}
                for name, i in positions:
                    value = record[i]
                    if value in NA_STRINGS:
                        row[name] = None
                    else:
                        row[name] = value.strip().lower() if lower else value
                yield row
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(f"Cannot read {path}: {exc}. The file looks corrupt; re-download it.") from exc


def read_rows(source: Path, relative: str, columns: Sequence[str], *, lower: bool = True) -> list[Row]:
    """Read a required source table into a list of rows (see :func:`iter_rows`)."""
    path = find_table(source, relative)
    assert path is not None
    return list(iter_rows(path, columns, lower=lower))
