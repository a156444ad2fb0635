"""Local repair: apply the edits the checks proposed to a copy of the parse tree, then to the text."""

from __future__ import annotations

from sqlglot import exp

from ehrguard.verify.checks.base import Checked, TextEdit, TreeEdit


def _copy_with_map(tree: exp.Expression) -> tuple[exp.Expression, dict[int, exp.Expression]]:
    """A deep copy of ``tree`` and, for every node of ``tree`` (by id), its counterpart in the copy."""
    copy = tree.copy()
    originals: list[exp.Expression] = list(tree.walk())  # type: ignore[arg-type]
    copies: list[exp.Expression] = list(copy.walk())  # type: ignore[arg-type]
    if len(originals) != len(copies):  # copy() keeps the structure; anything else is a sqlglot change to notice
        raise AssertionError("sqlglot copy() changed the tree's shape")
    return copy, {id(a): b for a, b in zip(originals, copies, strict=True)}


def repair(checked: Checked) -> str | None:
    """Apply every proposed edit; the repaired SQL, or None when there is nothing to change.

    Tree edits go to a copy of the parse tree, in the order the checks proposed them, then text
    edits to the SQL it renders. The caller decides whether to keep the result (it must execute
    and pass the checks).
    """
    if not checked.edits:
        return None
    ctx = checked.ctx
    sql = ctx.sql
    tree_edits = [e for e in checked.edits if isinstance(e, TreeEdit)]
    if tree_edits and ctx.tree is not None:
        copy, counterpart = _copy_with_map(ctx.tree)
        targets = [copy if e.target is None else counterpart[id(e.target)] for e in tree_edits]
        for edit, node in zip(tree_edits, targets, strict=True):
            edit.apply(node)
        sql = copy.sql(dialect=ctx.dialect)  # in the database's own dialect (PostgreSQL's too, not SQLite's)
    for text_edit in checked.edits:
        if isinstance(text_edit, TextEdit):
            sql = text_edit.apply(sql)
    return sql if sql != ctx.sql else None
