"""Local repair: apply the edits the checks proposed to a copy of the parse tree, then to the text."""

from __future__ import annotations

from sqlglot import exp

from ehrguard.verify.checks.base import Checked, TextEdit, TreeEdit, copy_with_map


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
        copy, counterpart = copy_with_map(ctx.tree)
        targets = [copy if e.target is None else counterpart[id(e.target)] for e in tree_edits]
        for edit, node in zip(tree_edits, targets, strict=True):
            edit.apply(node)
        # Only literals changed (a value's spelling, a code's dot): the user's text with those literals replaced, so
        # that the rest of the query stays as written (a construct sqlglot writes back otherwise cannot lose the repair);
        # else the edited tree, in the database's own dialect (PostgreSQL's too, not SQLite's).
        sql = _spliced(ctx.sql, ctx.tree, copy, ctx.dialect) or copy.sql(dialect=ctx.dialect)
    for text_edit in checked.edits:
        if isinstance(text_edit, TextEdit):
            sql = text_edit.apply(sql)
    return sql if sql != ctx.sql else None


def _spliced(sql: str, tree: exp.Expression, edited: exp.Expression, dialect: str) -> str | None:
    """``sql`` with the literals that differ between ``tree`` (its parse) and ``edited`` written in their place, when
    nothing else differs and the parser recorded where each such literal stands in the text; else None."""
    originals: list[exp.Expression] = list(tree.walk())  # type: ignore[arg-type]
    copies: list[exp.Expression] = list(edited.walk())  # type: ignore[arg-type]
    if len(originals) != len(copies):
        return None
    changes: list[tuple[int, int, str]] = []
    for a, b in zip(originals, copies, strict=True):
        if type(a) is not type(b):
            return None
        plain_a = {k: v for k, v in a.args.items() if not isinstance(v, (exp.Expression, list))}
        plain_b = {k: v for k, v in b.args.items() if not isinstance(v, (exp.Expression, list))}
        if not isinstance(a, exp.Literal):
            if plain_a != plain_b:
                return None
            continue
        if plain_a == plain_b:
            continue
        start, end = a.meta.get("start"), a.meta.get("end")
        if not isinstance(start, int) or not isinstance(end, int) or sql[start:end + 1] != a.sql(dialect=dialect):
            return None
        changes.append((start, end + 1, b.sql(dialect=dialect)))
    if not changes:
        return None
    for start, end, text in sorted(changes, reverse=True):
        sql = sql[:start] + text + sql[end:]
    return sql
