"""What the tests of single checks share: the findings of one query by check name, its rows, and the usual assertion
that a check faults the wrong query of a pair and leaves the right one alone."""

from __future__ import annotations

from ehrguard.verify.checks import repair, run_checks


def checks(ctx, question, sql):
    return {f.check: f for f in run_checks(question, sql, ctx).findings}


def repaired(ctx, question, sql):
    return repair(run_checks(question, sql, ctx))


def rows(ctx, sql):
    return sorted(ctx.db.execute(sql).rows)


def assert_error_on_wrong_only(ctx, check, question, wrong, right):
    """The check calls the wrong query an error, the two answer differently here, and the right one is left alone."""
    assert checks(ctx, question, wrong)[check].severity == "error"
    assert rows(ctx, wrong) != rows(ctx, right)
    assert check not in checks(ctx, question, right)
