"""ClinSQL generation with the scripted provider on the real DuckDB MIMIC-IV demo: refine from errors, the round cap."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ehrguard.clinsql.generate import generate, last_sql_block
from ehrguard.db import build_database, open_database
from ehrguard.llm import LLM, scripted

_ids = itertools.count()


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("EHRGUARD_LLM_CACHE", "off")


@pytest.fixture(scope="module")
def raw_db(shared_data: Path, tmp_path_factory):
    path = tmp_path_factory.mktemp("raw") / "mimic_iv_raw.duckdb"
    build_database("mimic_iv_raw", source=shared_data / "mimic-iv-demo-2.2", out=path)
    return open_database(path)


def fenced(sql: str) -> str:
    return f"Reasoning first.\n```sql\nSELECT 0\n```\nFinal:\n```sql\n{sql}\n```"


def run(raw_db, replies, **kw):
    name = f"gen{next(_ids)}"
    provider = scripted(name).enqueue(*replies)
    return generate("How many female patients are there?", raw_db, LLM(f"scripted/{name}"), **kw), provider


def test_the_last_fenced_block_counts():
    assert last_sql_block(fenced("SELECT 1")) == "SELECT 1"
    assert last_sql_block("no code here") is None


def test_an_execution_error_is_fed_back_and_refined(raw_db):
    bad = "SELECT COUNT(*) FROM mimiciv_hosp.patient WHERE gender = 'F'"
    good = "SELECT COUNT(*) FROM mimiciv_hosp.patients WHERE gender = 'F'"
    gen, p = run(raw_db, [fenced(bad), fenced(good)])
    assert gen.succeeded and gen.final_sql == good and len(gen.attempts) == 2
    assert gen.attempts[0].error and "patient" in gen.attempts[0].error and gen.result.rows[0][0] > 0
    assert "smallest change" in p.history[1][-1]["content"] and gen.attempts[0].error in p.history[1][-1]["content"]
    assert "mimiciv_hosp.patients(" in p.history[0][0]["content"]  # the schema is in the prompt


def test_rounds_are_capped_and_every_attempt_is_kept(raw_db):
    gen, p = run(raw_db, [fenced("SELECT nope"), "I cannot.", fenced("SELECT alsonope")], refine=2)
    assert not gen.succeeded and len(gen.attempts) == 3 and len(p.history) == 3
    assert gen.attempts[1].error == "the reply holds no ```sql block"
    gen, p = run(raw_db, [fenced("SELECT nope")], refine=0)
    assert len(gen.attempts) == 1 and len(p.history) == 1


def test_bigquery_answers_are_transpiled_to_run_here(raw_db):
    gen, _ = run(raw_db, [fenced("SELECT COUNT(*) FROM `physionet-data.mimiciv_3_1_hosp.patients` WHERE gender = 'F'")], dialect="bigquery")
    assert gen.succeeded and "physionet-data" in gen.final_sql  # kept as written for a BigQuery backend
