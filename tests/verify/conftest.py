"""Fixtures the verifier's check tests share: the demo databases opened as verification contexts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ehrguard.db import open_database
from ehrguard.verify.methods import DatabaseContext


@pytest.fixture(scope="module")
def ctx(mimic_iv_db: Path) -> DatabaseContext:
    return DatabaseContext(open_database(mimic_iv_db), "mimic_iv", mimic_iv_db)


@pytest.fixture(scope="module")
def eicu_ctx(eicu_db: Path) -> DatabaseContext:
    return DatabaseContext(open_database(eicu_db), "eicu", eicu_db)
