"""The judge-free result check on hand-built tables, and on the shared model outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.clinsql.resultcheck import agreement, compare_tables


def table(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_columns_match_by_name_then_position_and_numbers_within_tolerance(tmp_path):
    gold = table(tmp_path, "g.csv", "group,p75\nmale,10.0\nfemale,20.0\n")
    assert compare_tables(gold, table(tmp_path, "a.csv", "P75,Group\n19.9,female\n10.1,male\n")) == 1.0  # renamed/reordered, rows keyed
    assert compare_tables(gold, table(tmp_path, "b.csv", "sex,value\nmale,10.0\nfemale,25.0\n")) == 0.75  # by position; 25 is off
    assert compare_tables(gold, table(tmp_path, "c.csv", "group\nmale\nfemale\n")) == 0.5  # a missing column counts as wrong
    assert compare_tables(gold, tmp_path / "none.csv") == 0.0
    assert compare_tables(table(tmp_path, "n.csv", "x\n"), table(tmp_path, "m.csv", "y\n")) == 1.0  # both empty


def test_agreement_measures():
    a = agreement([(1.0, 1.0), (0.0, 0.0), (1.0, 0.0), (0.0, 0.2)])
    assert a["n"] == 4 and a["pass_agreement"] == 0.75 and a["mean_abs_diff"] == pytest.approx(0.3)
    assert agreement([])["n"] == 0


def test_on_the_shared_outputs(shared_data: Path):
    g = shared_data / "clinsql"
    r = CliRunner().invoke(cli, ["clinsql", "resultcheck", "--split", str(g / "validation"),
                                 "--outputs", str(g / "model_outputs" / "gemini-2.5-pro" / "validation"),
                                 "--published", str(g / "gradings" / "gemini-2.5-pro" / "validation_scoring_results.json"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["n"] >= 189 and 0 < out["mean_score"] < 1 and out["agreement"]["n"] == 189
