"""What the check tests share: the checks a question and SQL raise, and a mistake shown found and repaired."""

from __future__ import annotations

from ehrguard.verify.checks import repair, run_checks


def checks_of(ctx, question, sql):
    return {f.check for f in run_checks(question, sql, ctx).findings}


def checks(ctx, question, sql):
    """The findings of one query, by check name."""
    return {f.check: f for f in run_checks(question, sql, ctx).findings}


def repaired(ctx, question, sql):
    return repair(run_checks(question, sql, ctx))


def rows(ctx, sql):
    return sorted(ctx.db.execute(sql).rows)


def found_and_repaired(ctx, question, wrong, right, check):
    """``check`` finds its mistake in ``wrong`` (which answers differently from ``right``), repairs it to answer like
    ``right``, and stays silent on ``right``."""
    assert rows(ctx, wrong) != rows(ctx, right)
    checked = run_checks(question, wrong, ctx)
    assert any(f.check == check and f.suggestion for f in checked.findings), checked.findings
    fixed = repair(checked)
    assert fixed is not None and rows(ctx, fixed) == rows(ctx, right)
    assert check not in checks_of(ctx, question, right)


def found_not_repaired(ctx, question, wrong, right, check):
    """``check`` finds its mistake in ``wrong`` and stays silent on ``right`` (no repair asked for)."""
    assert check in checks_of(ctx, question, wrong)
    assert check not in checks_of(ctx, question, right)


def assert_error_on_wrong_only(ctx, check, question, wrong, right):
    """The check calls the wrong query an error, the two answer differently here, and the right one is left alone."""
    assert checks(ctx, question, wrong)[check].severity == "error"
    assert rows(ctx, wrong) != rows(ctx, right)
    assert check not in checks(ctx, question, right)
