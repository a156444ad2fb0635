"""One registry for every pluggable part found by name: database builders, verification methods, LLM providers.

Names are lowercase string ids. An entry is registered once: a second registration under the
same name raises instead of silently replacing the first (two plugins picking the same name is
a mistake to surface, not to resolve by import order). An entry may be a lazy
``"package.module:attr"`` reference, imported on its first :meth:`Registry.get`, so that listing
what exists never imports an optional dependency. An unknown name raises the error class the
registry was given, with the closest name ("Did you mean 'offline'?", as sqlglot's
``suggest_closest_match_and_fail``) and every name there is.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ehrguard.errors import ConfigError, EhrguardError

T = TypeVar("T")


@dataclass(frozen=True)
class _Lazy:
    module: str
    attr: str

    @classmethod
    def parse(cls, ref: str) -> _Lazy:
        module, sep, attr = ref.partition(":")
        if not (module and sep and attr):
            raise ConfigError(f"A lazy registry entry is 'package.module:attr'; got {ref!r}.")
        return cls(module, attr)

    def __str__(self) -> str:
        return f"{self.module}:{self.attr}"


class Registry(Generic[T]):
    """Named entries of one kind, each registered once, optionally imported on first use.

    Reads like a read-only mapping (``name in r``, ``r[name]``, iteration over the names, ``len``),
    except that :meth:`get` raises on an unknown name instead of returning a default.

    Args:
        kind: what an entry is, for messages ("database", "method", "provider").
        error: the exception an unknown name raises (default :class:`~ehrguard.errors.ConfigError`).
        sort: list names alphabetically (in :meth:`names`, :meth:`items`, :meth:`describe` and the
            unknown-name message) instead of in registration order.

    Examples:
        >>> methods: Registry[object] = Registry("method")
        >>> methods.register("offline", "ehrguard.verify.offline.verifier:OfflineVerifier", description="no LLM")
        >>> methods.names()
        ['offline']
        >>> methods.get("ofline")
        Traceback (most recent call last):
        ...
        ehrguard.errors.ConfigError: Unknown method 'ofline'. Did you mean 'offline'? Choose one of: offline.
    """

    def __init__(self, kind: str, *, error: type[EhrguardError] = ConfigError, sort: bool = False) -> None:
        self.kind = kind
        self.error = error
        self.sort = sort
        self._entries: dict[str, T | _Lazy] = {}
        self._descriptions: dict[str, str] = {}
        self._lock = threading.Lock()

    def register(self, name: str, entry: T | str, *, description: str = "") -> None:
        """Add ``entry`` under ``name``; a ``str`` entry is a lazy ``"package.module:attr"`` reference.

        Raises:
            ConfigError: ``name`` is already registered, or a lazy reference is malformed.
        """
        stored: T | _Lazy = _Lazy.parse(entry) if isinstance(entry, str) else entry
        with self._lock:
            if name in self._entries:
                raise ConfigError(f"{self.kind.capitalize()} {name!r} is already registered; "
                                  f"register yours under another name.")
            self._entries[name] = stored
            self._descriptions[name] = description

    def get(self, name: str) -> T:
        """The entry registered as ``name``, importing it the first time when it is lazy.

        The import runs outside the registry's lock (an imported module may register entries
        itself); concurrent first calls all return the one object the first of them stored.

        Raises:
            EhrguardError: (the registry's ``error`` class, ConfigError by default) no entry is
                registered as ``name``; ConfigError: a lazy entry's module or attribute does not exist.
        """
        with self._lock:
            if name not in self._entries:
                raise self._unknown(name)
            entry = self._entries[name]
        if not isinstance(entry, _Lazy):
            return entry
        resolved: T = _import(entry, f"{self.kind} {name!r}")
        with self._lock:
            current = self._entries[name]
            if isinstance(current, _Lazy):
                self._entries[name] = current = resolved
        return current

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        names = list(self._entries)
        return sorted(names) if self.sort else names

    def items(self) -> list[tuple[str, T]]:
        """Every (name, entry), lazy ones imported."""
        return [(name, self.get(name)) for name in self.names()]

    def values(self) -> list[T]:
        return [entry for _, entry in self.items()]

    def describe(self) -> dict[str, str]:
        """Name -> description, without importing lazy entries."""
        return {name: self._descriptions[name] for name in self.names()}

    def _unknown(self, name: str) -> EhrguardError:
        names = self.names()
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return self.error(f"Unknown {self.kind} {name!r}.{hint} Choose one of: {', '.join(names)}.")


def _import(ref: _Lazy, what: str) -> Any:
    try:
        module = importlib.import_module(ref.module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (ref.module == exc.name or ref.module.startswith(exc.name + ".")):
            raise  # a dependency of the module is missing: its own error says what to install
        raise ConfigError(f"The {what} is registered as {str(ref)!r}, but module {ref.module!r} does not exist.") from exc
    try:
        return getattr(module, ref.attr)
    except AttributeError:
        raise ConfigError(f"The {what} is registered as {str(ref)!r}, but {ref.module} has no {ref.attr!r}.") from None


__all__ = ["Registry"]
