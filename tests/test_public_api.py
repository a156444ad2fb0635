"""The public API: every package's ``__all__`` resolves, ``cli/`` and ``server/`` use nothing else, imports stay cheap."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import ehrguard

SRC = Path(ehrguard.__file__).parent
PACKAGES = sorted(".".join(("ehrguard", *p.parent.relative_to(SRC).parts)) for p in SRC.rglob("__init__.py"))
# What neither `import ehrguard` nor the command line may load before a command needs it.
HEAVY = ("matplotlib", "fastapi", "mcp", "llama_cpp", "onnxruntime", "google.cloud")


def is_public(module: str) -> bool:
    """A package (its ``__init__`` is its API) or a top-level module (``ehrguard.errors``, ``ehrguard.config``, ...)."""
    parts = module.split(".")[1:]
    return (SRC.joinpath(*parts) / "__init__.py").is_file() or (len(parts) == 1 and (SRC / f"{parts[0]}.py").is_file())


def is_submodule(package: str, name: str) -> bool:
    parts = package.split(".")[1:]
    return (SRC.joinpath(*parts, name) / "__init__.py").is_file() or SRC.joinpath(*parts, f"{name}.py").is_file()


def deep_imports(source: str, package: str) -> list[str]:
    """The imports in ``source``, a module of ``package``, of other packages' internal modules, as ``line: module``.

    ``from ehrguard.verify.methods import X`` and ``import ehrguard.verify.methods`` are deep, and so is
    ``from ehrguard.verify import methods`` (an internal module, not a name of ``__all__``), inside a function
    or ``if TYPE_CHECKING:`` too. Packages (``ehrguard.verify.offline``), top-level modules (``ehrguard.errors``)
    and the module's own package (``cli/`` importing ``ehrguard.cli.options``) are fine.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] + ("." + node.module if node.module else "") if node.level else node.module or ""
            targets = [(base, alias.name) for alias in node.names]
        else:
            continue
        for module, name in targets:
            if module != "ehrguard" and not module.startswith("ehrguard."):
                continue
            if module == package or module.startswith(package + "."):
                continue
            if not is_public(module):
                found.append(f"{node.lineno}: {module}")
            elif (name and is_submodule(module, name) and not is_public(f"{module}.{name}")
                  and name not in importlib.import_module(module).__all__):
                found.append(f"{node.lineno}: {module}.{name}")
    return list(dict.fromkeys(found))  # one entry per module, not per imported name


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_documents_itself_and_every_exported_name_resolves(package: str):
    module = importlib.import_module(package)
    assert module.__doc__ and module.__doc__.strip(), f"{package} has no docstring"
    exported = module.__all__
    assert len(exported) == len(set(exported)), f"{package}.__all__ repeats a name"
    for name in exported:
        try:
            value = getattr(module, name)  # a lazy name (PEP 562) is imported here
        except ModuleNotFoundError as exc:
            if exc.name and not exc.name.startswith("ehrguard"):
                pytest.skip(f"{package}.{name} needs {exc.name}, which is not installed")
            raise
        assert not isinstance(value, ModuleType), f"{package}.{name} is a module, not the name it should export"
        assert name in dir(module)


@pytest.mark.parametrize("package", PACKAGES)
def test_an_exported_name_that_is_also_a_submodule_is_bound_at_import(package: str):
    # PEP 562 cannot export such a name lazily: the first import of the submodule (from anywhere) rebinds
    # the package's attribute to the module, and `from package import name` then returns the module.
    module = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    for name in set(module.__all__) & submodules:
        assert name in vars(module) and not isinstance(vars(module)[name], ModuleType), f"{package}.{name}"


@pytest.mark.parametrize("path", sorted([*SRC.joinpath("cli").glob("*.py"), *SRC.joinpath("server").glob("*.py")]),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cli_and_server_import_other_packages_only_through_their_public_names(path: Path):
    assert deep_imports(path.read_text(), f"ehrguard.{path.parent.name}") == []


def test_the_deep_import_check_finds_what_it_should():
    source = """
from ehrguard.verify.methods import DatabaseContext
import ehrguard.db.engine
def command():
    from ehrguard.verify import api
    from ..benchmarks.report import jsonable
    from ehrguard.verify import DatabaseContext, checks, offline
    from ehrguard.cli.options import console
    from .options import db_option
    from ehrguard.errors import ConfigError
    import ehrguard.verify.offline
"""
    assert deep_imports(source, "ehrguard.cli") == ["2: ehrguard.verify.methods", "3: ehrguard.db.engine", "5: ehrguard.verify.api",
                                                    "6: ehrguard.benchmarks.report"]


@pytest.mark.parametrize("module", ["ehrguard", "ehrguard.cli"])
def test_importing_does_not_load_heavy_or_optional_dependencies(module: str):
    code = f"import json, sys, {module}; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []
