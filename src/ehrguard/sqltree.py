"""Reading sqlglot's parse trees across its releases."""

from __future__ import annotations

from typing import Any


def clause(node: Any, name: str) -> Any:
    """A node's ``from`` or ``with`` clause (or None), under the name sqlglot gives it: ``from_`` / ``with_`` since
    sqlglot 28, ``from`` / ``with`` before."""
    return node.args.get(f"{name}_") or node.args.get(name)
