"""The compiled question banks: shipped, checksummed, rebuilt byte for byte, the same knowledge as their sources, and
what the verifier uses without any source file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.runtime import runtime
from ehrguard.verify.offline import artifacts
from ehrguard.verify.offline.artifacts import BANKS_DIR, bank_status, build_banks, load_compiled


def test_the_shipped_banks_are_intact_and_named_in_run_identities():
    status = bank_status()
    assert set(status) == {"ehrsql-2024-mimic-iv", "ehrsql-eicu"} and all(s["state"] == "ok" for s in status.values())
    assert (BANKS_DIR / "ATTRIBUTION.md").read_text().count("CC BY 4.0") >= 2
    compiled = load_compiled("ehrsql-eicu")
    assert compiled is not None and len(compiled.templates) > 500 and len(compiled.forms) > 500


def test_rebuilding_reproduces_the_shipped_files_byte_for_byte(shared_data: Path, tmp_path: Path):
    manifest = build_banks(shared_data, tmp_path)
    for name, entry in manifest.items():
        assert (tmp_path / entry["file"]).read_bytes() == (BANKS_DIR / entry["file"]).read_bytes(), name
    assert (tmp_path / "manifest.json").read_text() == (BANKS_DIR / "manifest.json").read_text()


def test_a_compiled_bank_is_the_bank_its_sources_build(shared_data: Path):
    from ehrguard.verify.offline.forms import FormIndex
    from ehrguard.verify.offline.templates import BANK_LOADERS, TemplateBank

    pairs = BANK_LOADERS["ehrsql-eicu"](shared_data)
    compiled = load_compiled("ehrsql-eicu")
    assert compiled is not None
    built = TemplateBank(pairs)
    assert [(t.source, t.sql, t.words) for t in built.templates] == [(t.source, t.sql, t.words) for t in compiled.templates.templates]
    index = FormIndex(pairs)
    assert index.forms == compiled.forms.forms
    # the learned aliases ship with the forms; the swaps are learned again from them, the same as from the sources
    assert index.aliases == compiled.forms.aliases and index.aliases
    assert index.swaps == compiled.forms.swaps
    question = pairs[0][0]
    assert built.candidates(question) == compiled.templates.candidates(question)


def test_an_altered_or_missing_bank_is_said_once_and_doctor_names_the_fix(tmp_path: Path, monkeypatch, capsys):
    copy = tmp_path / "banks"
    shutil.copytree(BANKS_DIR, copy)
    (copy / "ehrsql-eicu.pkl.gz").write_bytes(b"not a bank")
    (copy / "ehrsql-2024-mimic-iv.pkl.gz").unlink()
    monkeypatch.setattr(artifacts, "_warned", set())
    assert load_compiled("ehrsql-eicu", copy) is None and load_compiled("ehrsql-eicu", copy) is None
    assert capsys.readouterr().err.count("does not match its checksum") == 1
    assert {n: s["state"] for n, s in bank_status(copy).items()} == {"ehrsql-eicu": "altered", "ehrsql-2024-mimic-iv": "missing"}
    monkeypatch.setattr(artifacts, "BANKS_DIR", copy)
    r = CliRunner().invoke(cli, ["doctor", "--json"])
    assert r.exit_code == 1
    report = json.loads(r.stdout)
    banks = [c for c in report["checks"] if c["name"].startswith("question bank")]
    assert not report["healthy"] and all(c["state"] == "missing" and "ehrguard train banks" in c["fix"] for c in banks)


def test_doctor_on_a_good_install(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(tmp_path / "none"))
    r = CliRunner().invoke(cli, ["doctor", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["healthy"] and by_name["MiniLM tokenizer"]["detail"] == "shipped copy"
    assert by_name["database folder"]["state"] == "missing" and "ehrguard db build mimic_iv" in by_name["database folder"]["fix"]
    r = CliRunner().invoke(cli, ["doctor"])
    assert r.exit_code == 0 and "healthy" in r.output


def test_the_verifier_corrects_the_same_without_any_source_file(shared_data: Path, mimic_iv_db: Path, tmp_path: Path, monkeypatch):
    """Known-question corrections come from the shipped banks: an empty data directory changes no verdict."""
    from ehrguard.benchmarks import load_scare
    from ehrguard.verify import database_context, verify

    wrong = [i for i in load_scare(shared_data / "scare" / "mimic_iv_dev.json") if not i.exec_acc and i.type in ("easy", "medium", "hard")]
    items = wrong[:12]
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")

    def verdicts(data_dir: Path) -> list[tuple[str, str | None, str]]:
        monkeypatch.setenv("EHRGUARD_DATA_DIR", str(data_dir))
        runtime().forget("template_bank", "form_bank", "bank_pairs", "compiled_bank")
        ctx = database_context(mimic_iv_db, "mimic_iv")
        out = []
        for item in items:
            v = verify(item.question, item.pred_sql, db=ctx)
            out.append((v.action, v.sql, v.status))
        return out

    empty = tmp_path / "empty"
    empty.mkdir()
    with_sources, without = verdicts(shared_data), verdicts(empty)
    assert with_sources == without
    assert sum(action == "correct" for action, _, _ in without) >= 3  # the banks do correct wrong candidates here
