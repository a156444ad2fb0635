"""Lazy exports for package ``__init__`` modules (PEP 562): a name listed in ``__all__`` whose module is heavy or
optional is imported on first use, so importing the package stays cheap.

Examples:
    In a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_exports(__name__, globals(), {"run_scare": ".scare_run"})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, namespace: dict[str, Any], lazy: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``lazy`` maps an exported name to the (relative) module
    defining it; the name is bound in ``namespace`` on first use, so later lookups do not come back here."""

    def __getattr__(name: str) -> Any:
        if name not in lazy:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(lazy[name], package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *lazy})

    return __getattr__, __dir__


def by_module(modules: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """``{module: (name, ...)}`` turned into ``{name: module}``."""
    return {name: module for module, names in modules.items() for name in names}


__all__ = ["by_module", "lazy_exports"]
