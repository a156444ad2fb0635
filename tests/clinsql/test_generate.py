"""ClinSQL generation with the scripted provider on the real DuckDB MIMIC-IV demo: refine from errors, the round cap."""

from __future__ import annotations

import itertools
import json
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


def test_bench_clinsql_resumes_and_writes_the_published_layout(raw_db, shared_data, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ehrguard.cli import cli

    raw_path = tmp_path / "raw.duckdb"
    build_database("mimic_iv_raw", source=shared_data / "mimic-iv-demo-2.2", out=raw_path)
    good = fenced("SELECT gender, COUNT(*) AS n FROM mimiciv_hosp.patients GROUP BY gender ORDER BY gender")
    scripted("clinsql-bench").enqueue(fenced("SELECT nope"), good, good)
    args = ["bench", "clinsql", "--split", str(shared_data / "clinsql" / "validation"), "--db", str(raw_path),
            "--model", "scripted/clinsql-bench", "--out", str(tmp_path / "run"), "--limit", "2", "--hints", "gold", "--json"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["n"], out["executed"], out["refined"], out["errors"]) == (2, 2, 1, 0)
    task = min((tmp_path / "run" / "outputs").glob("*/*/*"))
    summary = json.loads((task / "execution_summary.json").read_text())
    assert len(summary["attempts"]) in (1, 2) and (task / f"sql_{task.name}.sql").exists()
    assert (task / f"result_{task.name}.csv").read_text().startswith("gender,n")
    r = CliRunner().invoke(cli, args)  # nothing left to do: no reply is needed
    assert r.exit_code == 0 and json.loads(r.stdout)["n"] == 2
    ok = CliRunner().invoke(cli, ["clinsql", "execcheck", "--split", str(shared_data / "clinsql" / "validation"), "--db", str(raw_path),
                                  "--sql-from", str(tmp_path / "run" / "outputs"), "--json"])
    assert json.loads(ok.stdout)["executed"] == 2  # the layout is the published one


def test_gold_hints_name_codes_and_columns(shared_data):
    from ehrguard.clinsql.bench import gold_hints
    from ehrguard.clinsql.data import load_split

    task = load_split(shared_data / "clinsql" / "validation")["Medication_Management/easy_level_queries/047"]
    assert "iqr_atorvastatin_duration_days" in gold_hints(task)
