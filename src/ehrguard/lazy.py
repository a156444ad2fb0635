"""Lazy exports for package ``__init__`` modules (PEP 562): a name listed in ``__all__`` whose module is heavy or
optional is imported on first use, so importing the package stays cheap.

Examples:
    In a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_exports(__name__, globals(), {"run_scare": ".scare_run"})
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast, overload


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


T = TypeVar("T")


# The locks of values being computed, by instance and name: held only while a first computation runs, so that objects
# carry no lock (they still pickle and copy as with functools) and instances never wait for one another.
_COMPUTING: dict[tuple[int, str], threading.Lock] = {}
_COMPUTING_GUARD = threading.Lock()


class cached_property(Generic[T]):  # noqa: N801 - named as the functools descriptor it replaces
    """``functools.cached_property`` without its class-wide lock: on Python 3.11 that one lock is held while any
    instance computes the value, so one verification running a slow query (``SqlContext.execution``) made every other
    request's verification wait for it. Here a first computation locks only its own instance and name: a value is
    still computed once per instance (a database's schema or value index is not built twice by two first requests),
    and instances never wait for each other."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached_property[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | cached_property[T]:
        if instance is None:
            return self
        cache = instance.__dict__
        if self.name in cache:
            return cast("T", cache[self.name])
        key = (id(instance), self.name)
        with _COMPUTING_GUARD:
            lock = _COMPUTING.setdefault(key, threading.Lock())
        try:
            with lock:
                if self.name not in cache:
                    cache[self.name] = self.func(instance)
                return cast("T", cache[self.name])
        finally:
            with _COMPUTING_GUARD:
                if _COMPUTING.get(key) is lock:
                    del _COMPUTING[key]
