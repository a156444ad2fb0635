"""Synthetic MIMIC-IV at K times the demo: seeded copies of every patient, never the demo's own rows, and the cost
benchmark over SQLite and DuckDB (PostgreSQL: tests/db/test_postgres.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
from click.testing import CliRunner

from ehrguard.benchmarks.scale import run_scale
from ehrguard.cli import cli
from ehrguard.db.builders.scaled import ID_STRIDE, scale


def test_copies_keep_each_patients_shape_and_none_is_a_demo_row(mimic_iv_raw_db: Path, tmp_path: Path):
    # a copy of the session's build: another test's verifier may hold that file open in this process
    mimic_iv_raw_db = Path(shutil.copyfile(mimic_iv_raw_db, tmp_path / "demo.duckdb"))
    out = tmp_path / "x2.duckdb"
    report = scale(mimic_iv_raw_db, out, 2, seed=7)
    assert report.synthetic and report.tables["mimiciv_hosp.patients"] == 200
    assert report.tables["mimiciv_hosp.d_labitems"] > 0  # dictionaries once
    con = duckdb.connect(str(out), read_only=True)
    con.execute(f"ATTACH '{mimic_iv_raw_db}' AS demo (READ_ONLY)")
    one = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    assert one("SELECT count(*) FROM mimiciv_hosp.admissions")[0][0] == 2 * one("SELECT count(*) FROM demo.mimiciv_hosp.admissions")[0][0]
    assert one("SELECT count(*) FROM mimiciv_hosp.d_labitems") == one("SELECT count(*) FROM demo.mimiciv_hosp.d_labitems")
    # no demo id, and every copy's id maps back to a demo patient
    assert one("SELECT count(*) FROM mimiciv_hosp.patients "
               "WHERE subject_id IN (SELECT subject_id FROM demo.mimiciv_hosp.patients)") == [(0,)]
    assert one(f"SELECT count(*) FROM mimiciv_hosp.patients WHERE subject_id % {ID_STRIDE} NOT IN "
               "(SELECT subject_id FROM demo.mimiciv_hosp.patients)") == [(0,)]
    # a copy's stays keep their length (one shift per patient and copy) and its joins hold
    assert one(f"""SELECT count(*) FROM mimiciv_icu.icustays c JOIN demo.mimiciv_icu.icustays d
                   ON c.stay_id - (c.stay_id // {ID_STRIDE}) * {ID_STRIDE} = d.stay_id
                   WHERE c.outtime - c.intime <> d.outtime - d.intime""") == [(0,)]
    assert one("SELECT count(*) FROM mimiciv_icu.icustays i LEFT JOIN mimiciv_hosp.admissions a USING (hadm_id) "
               "WHERE a.hadm_id IS NULL") == [(0,)]
    # times moved, measures jittered within 5%, and the notice says what it is
    shifted = one(f"""SELECT count(*), count(*) FILTER (WHERE c.admittime <> d.admittime) FROM mimiciv_hosp.admissions c
                      JOIN demo.mimiciv_hosp.admissions d ON c.hadm_id % {ID_STRIDE} = d.hadm_id""")[0]
    assert shifted[1] > 0.9 * shifted[0]
    ratio = one(f"""SELECT min(c.valuenum / d.valuenum), max(c.valuenum / d.valuenum) FROM mimiciv_hosp.labevents c
                    JOIN demo.mimiciv_hosp.labevents d ON c.labevent_id % {ID_STRIDE} = d.labevent_id WHERE d.valuenum > 0""")[0]
    assert 0.949 <= ratio[0] <= ratio[1] <= 1.051
    assert one("SELECT notice FROM main.synthetic_notice")[0][0].startswith("SYNTHETIC: 2 seeded copies")
    con.close()
    again = tmp_path / "again.duckdb"
    scale(mimic_iv_raw_db, again, 2, seed=7)
    a, b = (duckdb.connect(str(p), read_only=True) for p in (out, again))
    q = "SELECT subject_id, anchor_age, dod FROM mimiciv_hosp.patients ORDER BY subject_id"
    assert a.execute(q).fetchall() == b.execute(q).fetchall()  # seeded


def test_bench_scale_measures_each_engine_at_each_scale(shared_data: Path, tmp_path: Path):
    report = run_scale(tmp_path / "work", shared_data / "mimic-iv-demo-2.2", shared_data / "clinsql" / "validation",
                       factors=(1, 2), patients=2, clinsql=6, timeout_s=30)
    assert [f["factor"] for f in report["factors"]] == [1, 2] and report["factors"][1]["synthetic"]
    for f in report["factors"]:
        assert set(f["engines"]) == {"duckdb", "sqlite"}
        duck, lite = f["engines"]["duckdb"], f["engines"]["sqlite"]
        assert duck["ehrsql"]["ran"] == duck["ehrsql"]["queries"] == 2 * 5 + 3 and lite["ehrsql"]["ran"] == 13
        assert duck["clinsql"]["ran"] == 6 and duck["size_mib"] > 0 and duck["peak_rss_mib"] > 0
    x1, x2 = (f["engines"]["duckdb"]["size_mib"] for f in report["factors"])
    assert x2 > x1
    v = report["value_index"]
    assert sum(v["distinct_values"].values()) >= 100_000 and v["lookup_p50_ms"] > 0 and v["lexicon_build_s"] > 0


def test_bench_scale_cli_writes_its_report(shared_data: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(shared_data))
    r = CliRunner().invoke(cli, ["bench", "scale", "--work", str(tmp_path / "w"), "--factor", "1", "--patients", "1",
                                 "--clinsql", "2", "--out", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "out" / "report.json").read_text())["factors"][0]["factor"] == 1
    assert "| x1 | duckdb |" in (tmp_path / "out" / "report.md").read_text()
