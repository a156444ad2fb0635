"""Shared fixtures: the real demo data from ../shared/data, built databases, a synthetic one."""

from __future__ import annotations

import os
import sqlite3
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


def pytest_configure(config: pytest.Config) -> None:
    # Tests never write into the user's cache: the audit log and the LLM response cache go to a temp dir.
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="ehrguard-tests-"))
    os.environ.setdefault("EHRGUARD_AUDIT_PATH", str(scratch / "audit.sqlite"))
    os.environ.setdefault("EHRGUARD_LLM_CACHE_PATH", str(scratch / "llm_cache.sqlite"))
    # The template bank depends on what the data dir holds; tests opt in to it explicitly (tests/verify/test_templates.py).
    os.environ.setdefault("EHRGUARD_TEMPLATE_BANK", "off")


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


@pytest.fixture(scope="session")
def mimic_iv_db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mimic_iv") / "mimic_iv.sqlite"
    build_database("mimic_iv", source=shared_data / "mimic-iv-demo-2.2", out=out, progress=Progress())
    return out
