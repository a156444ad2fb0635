"""Shared fixtures: the real demo data from ../shared/data, built databases, a synthetic one."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ehrguard.db import Progress, build_database

ROOT = Path(__file__).resolve().parents[1]


def _shared_data() -> Path | None:
    candidates = [os.environ.get("EHRGUARD_TEST_DATA"), str(ROOT.parent / "shared" / "data")]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None


SHARED_DATA = _shared_data()

# Markers only select (`pytest -m "not slow"`); they never skip. Most are applied here, from what a test
# uses, so that a new test is marked without a decorator. A fixture counts when a test needs it
# directly or through another fixture (`ctx` -> `mimic_iv_db` -> `shared_data`). A fixture reached only
# through `request.getfixturevalue` is invisible at collection: mark such a test `demo_data` by hand,
# and `slow` follows (IMPLIED_MARKS).
FIXTURE_MARKS: dict[str, tuple[str, ...]] = {
    "shared_data": ("demo_data", "slow"),
    "mimic_iv_db": ("demo_data", "slow"),
    "eicu_db": ("demo_data", "slow"),
    "postgres_url": ("postgres", "demo_data", "slow"),
    "mimic_iv_raw_db": ("demo_data", "slow"),
}
MODULE_MARKS: dict[str, tuple[str, ...]] = {
    "server/test_webapp.py": ("browser", "subprocess", "slow"),
    "llm/test_local_llama.py": ("llama", "subprocess", "slow"),
    "server/test_mcp.py": ("subprocess",),
    "db/test_scaled.py": ("subprocess",),
}
IMPLIED_MARKS: dict[str, tuple[str, ...]] = {"demo_data": ("slow",), "browser": ("slow",)}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = ROOT / "tests"
    for item in items:
        has = {m.name for m in item.iter_markers()}
        marks = set(MODULE_MARKS.get(item.path.relative_to(tests).as_posix(), ())) if item.path.is_relative_to(tests) else set()
        for fixture in item.fixturenames:
            marks.update(FIXTURE_MARKS.get(fixture, ()))
        for name in has | marks:
            marks.update(IMPLIED_MARKS.get(name, ()))
        for name in sorted(marks - has):
            item.add_marker(name)


_SCRATCH = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    # Tests never write into the user's cache: the audit log and the LLM response cache go to a temp dir.
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="ehrguard-tests-"))
    config.stash[_SCRATCH] = scratch
    os.environ.setdefault("EHRGUARD_AUDIT_PATH", str(scratch / "audit.sqlite"))
    os.environ.setdefault("EHRGUARD_LLM_CACHE_PATH", str(scratch / "llm_cache.sqlite"))
    # ... and nothing else of the cache folder either: the folded MiniLM copy (verify/offline/onnx_fold.py), the default database folder.
    os.environ["XDG_CACHE_HOME"] = str(scratch / "cache")
    # The template bank depends on what the data dir holds; tests opt in to it explicitly (tests/verify/test_templates.py).
    os.environ.setdefault("EHRGUARD_TEMPLATE_BANK", "off")


def pytest_unconfigure(config: pytest.Config) -> None:
    # The scratch folder (audit log, LLM cache, the folded MiniLM copy: ~50 MB) goes with the run that made it.
    scratch = config.stash.get(_SCRATCH, None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str]:
    import duckdb
    import sqlglot

    return [
        f"sqlite {sqlite3.sqlite_version}, duckdb {duckdb.__version__}, sqlglot {sqlglot.__version__}",
        f"shared data: {SHARED_DATA or 'absent (data tests skipped)'}",
    ]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if SHARED_DATA is None:
        pytest.skip("../shared/data (the public demos) is not beside the checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def synthetic_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synthetic") / "synthetic.sqlite"
    build_database("synthetic", out=out)
    return out


def _demo_build(name: str, file_name: str, source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo database built once per session by the builder people use, in a folder of its own."""
    out = tmp_path_factory.mktemp(name) / file_name
    build_database(name, source=source, out=out, progress=Progress())
    return out


@pytest.fixture(scope="session")
def mimic_iv_db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _demo_build("mimic_iv", "mimic_iv.sqlite", shared_data / "mimic-iv-demo-2.2", tmp_path_factory)


@pytest.fixture(scope="session")
def eicu_db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _demo_build("eicu", "eicu.sqlite", shared_data / "eicu-demo-2.0.1", tmp_path_factory)


@pytest.fixture(scope="session")
def mimic_iv_raw_db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _demo_build("mimic_iv_raw", "mimic_iv_raw.duckdb", shared_data / "mimic-iv-demo-2.2", tmp_path_factory)


@pytest.fixture(scope="session")
def postgres_url(mimic_iv_raw_db: Path) -> Iterator[str]:
    """A real PostgreSQL server (a throwaway cluster, tests/pg_cluster.py) holding the MIMIC-IV demo in the mimic-code
    layout (mimiciv_hosp, mimiciv_icu, mimiciv_derived), loaded by the builder people use; skipped with the reason
    where no PostgreSQL server binaries or no psycopg are installed."""
    from tests.pg_cluster import Cluster, binaries

    if binaries() is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'ehrguard[postgres]')")
    import psycopg

    from ehrguard.db import load_into_postgres

    cluster = Cluster().start()
    try:
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE mimic")
        url = cluster.url_for("mimic")
        load_into_postgres(mimic_iv_raw_db, url)
        yield url
    finally:
        cluster.stop()
