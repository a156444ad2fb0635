"""The one Registry (builders, methods, providers): collisions, lazy entries, suggestions, thread safety."""

from __future__ import annotations

import sys
import threading
import uuid
from pathlib import Path

import pytest

from ehrguard.errors import ConfigError, DatasetError
from ehrguard.registry import Registry


@pytest.fixture
def lazy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A module that takes a while to import and logs each import of itself to a file."""
    name = f"registry_probe_{uuid.uuid4().hex}"
    log = tmp_path / "imports.log"
    (tmp_path / f"{name}.py").write_text(
        "import time\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write('imported\\n')\n"
        "time.sleep(0.05)\n"
        "ENTRY = object()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, log
    sys.modules.pop(name, None)


def test_a_name_registers_once() -> None:
    r: Registry[int] = Registry("database")
    r.register("mimic_iv", 1)
    with pytest.raises(ConfigError, match="Database 'mimic_iv' is already registered"):
        r.register("mimic_iv", 2)
    assert r.get("mimic_iv") == 1


def test_unknown_name_suggests_the_closest_and_lists_all() -> None:
    r: Registry[str] = Registry("method")
    for name in ("offline", "hybrid", "two_stage"):
        r.register(name, f"{__name__}:test_a_name_registers_once")
    with pytest.raises(ConfigError) as exc:
        r.get("ofline")
    assert str(exc.value) == "Unknown method 'ofline'. Did you mean 'offline'? Choose one of: offline, hybrid, two_stage."
    with pytest.raises(ConfigError) as exc:
        r.get("zzz")
    assert str(exc.value) == "Unknown method 'zzz'. Choose one of: offline, hybrid, two_stage."


def test_unknown_name_raises_the_registrys_error_class() -> None:
    r: Registry[int] = Registry("split", error=DatasetError)
    r.register("valid", 1)
    with pytest.raises(DatasetError, match="Unknown split 'vaild'. Did you mean 'valid'?"):
        r.get("vaild")
    with pytest.raises(DatasetError):
        r["vaild"]


def test_sorted_registry_lists_by_name() -> None:
    r: Registry[int] = Registry("method", sort=True)
    for i, name in enumerate(("b", "c", "a")):
        r.register(name, i, description=name.upper())
    assert r.names() == ["a", "b", "c"] == list(r)
    assert r.describe() == {"a": "A", "b": "B", "c": "C"}
    with pytest.raises(ConfigError, match="Choose one of: a, b, c."):
        r.get("d")


def test_reads_like_a_mapping() -> None:
    r: Registry[int] = Registry("database")
    r.register("mimic_iv", 1)
    r.register("eicu", 2)
    assert "eicu" in r and "x" not in r and len(r) == 2
    assert list(r) == ["mimic_iv", "eicu"] and sorted(r) == ["eicu", "mimic_iv"]
    assert r["eicu"] == 2 and r.values() == [1, 2] and r.items() == [("mimic_iv", 1), ("eicu", 2)]


def test_lazy_entry_is_imported_on_first_get_and_once(lazy_module: tuple[str, Path]) -> None:
    name, log = lazy_module
    r: Registry[object] = Registry("provider")
    r.register("probe", f"{name}:ENTRY", description="a probe")
    assert r.describe() == {"probe": "a probe"} and "probe" in r
    assert name not in sys.modules and not log.exists()
    first = r.get("probe")
    assert first is sys.modules[name].ENTRY
    assert r.get("probe") is first
    assert log.read_text().splitlines() == ["imported"]


def test_first_load_is_thread_safe(lazy_module: tuple[str, Path]) -> None:
    name, log = lazy_module
    r: Registry[object] = Registry("provider")
    r.register("probe", f"{name}:ENTRY")
    start = threading.Barrier(8)
    got: list[object] = []

    def load() -> None:
        start.wait()
        got.append(r.get("probe"))

    threads = [threading.Thread(target=load) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(g is got[0] for g in got)
    assert log.read_text().splitlines() == ["imported"]


def test_lazy_entry_that_cannot_be_imported(lazy_module: tuple[str, Path], tmp_path: Path) -> None:
    name, _ = lazy_module
    r: Registry[object] = Registry("provider")
    with pytest.raises(ConfigError, match="'package.module:attr'"):
        r.register("bad", "no_colon_here")
    r.register("gone", "ehrguard_no_such_module:thing")
    r.register("typo", f"{name}:ENTRYY")
    with pytest.raises(ConfigError, match="module 'ehrguard_no_such_module' does not exist"):
        r.get("gone")
    with pytest.raises(ConfigError, match="has no 'ENTRYY'"):
        r.get("typo")
    # A module whose own dependency is missing keeps its ImportError (it says what to install).
    (tmp_path / "needs_missing_dep.py").write_text("import ehrguard_missing_dependency\nX = 1\n")
    r.register("dep", "needs_missing_dep:X")
    with pytest.raises(ModuleNotFoundError, match="ehrguard_missing_dependency"):
        r.get("dep")
    sys.modules.pop("needs_missing_dep", None)


# The three registries that use it.


def test_builders_registry_keeps_its_message_and_order() -> None:
    from ehrguard.db.builders import BUILDERS, get_builder

    assert list(BUILDERS) == ["mimic_iv", "eicu", "mimicsql", "mimic_iv_raw", "synthetic", "mimic_iv_raw_x10", "mimic_iv_raw_x50"]
    assert [b.name for b in BUILDERS.values()] == list(BUILDERS) and BUILDERS["eicu"].engine == "sqlite"
    with pytest.raises(ConfigError) as exc:
        get_builder("mimic")
    assert str(exc.value) == ("Unknown database 'mimic'. Did you mean 'mimicsql'? "
                              "Choose one of: mimic_iv, eicu, mimicsql, mimic_iv_raw, synthetic, mimic_iv_raw_x10, mimic_iv_raw_x50.")


def test_unknown_method_is_a_config_error_with_a_suggestion() -> None:
    from ehrguard.verify.methods import available_methods, get_method

    with pytest.raises(ConfigError, match=r"Unknown method 'ofline'\. Did you mean 'offline'\? Choose one of: abstain_all, hybrid, "):
        get_method("ofline")
    assert list(available_methods()) == sorted(available_methods())


def test_method_names_register_once() -> None:
    from ehrguard.verify.methods import available_methods, register_method

    before = available_methods()  # loads the built-in methods
    with pytest.raises(ConfigError, match="Method 'offline' is already registered"):
        register_method("offline", "another offline")(lambda model=None, **o: None)
    assert available_methods() == before


@pytest.mark.parametrize(("name", "model", "options", "message"), [
    ("offline", None, {"bad": 1}, ("offline options are calibration, cascade, embeddings, forms, lexical_model, operating_point, "
                                   "question_model, templates; got bad.")),
    # The model is refused before the options are read (`bench scare --model` adds call_log).
    ("offline", "openai/x", {"call_log": "calls.jsonl"},
     "offline uses no LLM; drop --model (use --method hybrid for an LLM on the hard cases)."),
    ("hybrid", "scripted/x", {"b": 1, "a": 2},
     "hybrid options are call_log, clear_answerable, clear_refusal, max_tokens, operating_point; got a, b."),
    ("single_turn_veri_cls", None, {"x": 1}, "single_turn_veri_cls options are call_log, max_retries, max_tokens, rounds; got x."),
    ("two_stage", None, {}, "two_stage needs a model: --model provider/model (e.g. openai/gpt-4o-mini, local/smollm2)."),
])
def test_method_options_are_checked_by_the_registry(name: str, model: str | None, options: dict[str, object], message: str) -> None:
    from ehrguard.verify.methods import get_method

    with pytest.raises(ConfigError) as exc:
        get_method(name, model=model, **options)
    assert str(exc.value) == message


def test_providers_registry() -> None:
    from ehrguard.llm.client import PROVIDERS, make_provider, parse_model

    assert list(PROVIDERS) == ["openai", "local", "scripted"]
    assert make_provider("scripted/registry-test").name == "scripted"
    with pytest.raises(ConfigError, match=r"Unknown provider 'opena' in 'opena/x'; use one of openai, local, scripted\."):
        parse_model("opena/x")
