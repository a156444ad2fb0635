"""The SQL checks, one module per family, run in a fixed order like sqlglot's optimizer rules.

Each check is a plain function ``(SqlContext) -> CheckResult`` (findings, and the edits that
would answer them); :data:`CHECKS` is the order they run in, and a check marked ``stops``
ends the run when it finds anything. :func:`run_checks` runs them; :func:`repair` applies the
proposed edits to a copy of the parse tree. Checks never raise on bad SQL: a query that does
not parse is itself a finding.

Families: :mod:`.syntax` (a query at all, read-only, parses), :mod:`.schema_refs` (tables and
columns exist), :mod:`.execution` (runs, returns something), :mod:`.conventions` (the
database's "now", counting people), :mod:`.values` (literals and patient ids exist), :mod:`.alignment` (the
question's order, aggregate, window, still-admitted and death are the SQL's), :mod:`.concepts` (the values the
question names are the ones the SQL looks for), :mod:`.stated` (the question's numbers, groups, route and age bound
are in the SQL; a one-patient query reads no one else's records), :mod:`.windows` (the period the question
states is the one the query keeps, in any wording), :mod:`.keys` (ids are used as the entity they identify),
:mod:`.contrasts` (the side of a clinical contrast the question asks about), :mod:`.columns` (the field returned is
the one asked for), :mod:`.ties` (one end of an order taken from records that tie for it), :mod:`.ordinals` (the
place in an order the question states: "the second most recent"), :mod:`.superlatives` (the end of a named measure:
"the longest stay", "the oldest patient"), :mod:`.variants` (a drug matched by one exact name while the records hold
it with a strength or form), :mod:`.anchors` (a period counted from the start of the visit the question names),
:mod:`.negation` ("never had X" is not "had something else"), :mod:`.presence` (a field said to be recorded is tested
for a value), :mod:`.repair`. These modules and :mod:`.base`
(what every check shares) are internal; the names below are the API (``from ehrguard.verify.checks import run_checks``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ehrguard.verify.checks.alignment import (
    check_aggregate,
    check_death,
    check_direction,
    check_item_filter,
    check_limit,
    check_one_asked,
    check_repeated_names,
    check_still_admitted,
    check_text_numbers,
    check_time_window,
    check_visit_order,
)
from ehrguard.verify.checks.anchors import check_anchor
from ehrguard.verify.checks.arithmetic import check_integer_division, check_percentage
from ehrguard.verify.checks.averages import check_average_over_patients, check_rows_bounded_in_having
from ehrguard.verify.checks.base import Check, Checked, CheckResult, Edit, SqlContext, TextEdit, TreeEdit, summary
from ehrguard.verify.checks.bounds import check_bounds, check_ranges
from ehrguard.verify.checks.casts import check_comma_cut
from ehrguard.verify.checks.choices import check_offered_choices
from ehrguard.verify.checks.columns import (
    check_first_last,
    check_grouped_by,
    check_name_returned,
    check_returned_column,
    check_returned_id,
)
from ehrguard.verify.checks.concepts import check_stated_values, check_substitution, check_unasked_filter, check_unhappened_events
from ehrguard.verify.checks.contrasts import check_contrasts
from ehrguard.verify.checks.conventions import (
    check_count_distinct,
    check_count_kinds,
    check_count_of_values,
    check_counted_visit,
    check_counts_people,
    check_counts_visits,
    check_grouped_entity,
    check_now,
    check_ranked_by_people,
    check_threshold_counts_rows,
    check_visit_table,
)
from ehrguard.verify.checks.dates import check_dates
from ehrguard.verify.checks.execution import check_executes, check_result
from ehrguard.verify.checks.fanout import check_counted_join, check_fanout
from ehrguard.verify.checks.grounding import check_grounding
from ehrguard.verify.checks.idioms import check_idioms
from ehrguard.verify.checks.keys import (
    check_coarse_joins,
    check_code_names,
    check_codes,
    check_excluded_item,
    check_id_kinds,
    check_join_keys,
    check_key_kind,
    check_referenced_table,
    check_row_keys,
)
from ehrguard.verify.checks.kinds import check_kind
from ehrguard.verify.checks.negation import check_row_negation, check_visit_anti_join
from ehrguard.verify.checks.ordinals import check_stated_place
from ehrguard.verify.checks.presence import check_presence
from ehrguard.verify.checks.references import check_unnamed_reference
from ehrguard.verify.checks.repair import repair
from ehrguard.verify.checks.scalars import check_scalar_subqueries
from ehrguard.verify.checks.schema_refs import check_schema
from ehrguard.verify.checks.scope import check_unasked_ended, check_unstated_visit, check_visit_scope, check_widened_scope
from ehrguard.verify.checks.specimens import check_specimen
from ehrguard.verify.checks.stated import (
    check_icu_scope,
    check_stated_exclusion,
    check_stated_groups,
    check_stated_numbers,
    check_unscoped_reads,
)
from ehrguard.verify.checks.superlatives import check_superlatives
from ehrguard.verify.checks.syntax import check_abstained, check_parses, check_read_only
from ehrguard.verify.checks.ties import check_tied_end
from ehrguard.verify.checks.units import check_bmi_unit, check_duration_column, check_duration_unit, check_measure_unit, check_span_unit
from ehrguard.verify.checks.values import check_empty_text, check_patient_ids, check_patterns, check_unknowns_left_out, check_values
from ehrguard.verify.checks.variants import check_missing_variants
from ehrguard.verify.checks.windows import check_stated_window
from ehrguard.verify.verdict import Finding

if TYPE_CHECKING:
    from ehrguard.verify.methods import DatabaseContext

CHECKS: tuple[Check, ...] = (
    Check("abstained", check_abstained, stops=True),  # with no query there is nothing else to check
    Check("read_only", check_read_only, stops=True),  # never execute or inspect a statement that could write
    Check("parse", check_parses),
    Check("schema", check_schema),
    Check("execution", check_executes),
    Check("result", check_result),
    Check("now", check_now),
    Check("dates", check_dates),
    Check("idioms", check_idioms),
    Check("values", check_values),
    Check("empty_text", check_empty_text),
    Check("unknowns_left_out", check_unknowns_left_out),
    Check("patterns", check_patterns),
    Check("patient_ids", check_patient_ids),
    Check("id_kinds", check_id_kinds),
    Check("join_keys", check_join_keys),
    Check("row_keys", check_row_keys),
    Check("referenced_table", check_referenced_table),
    Check("key_kind", check_key_kind),
    Check("codes", check_codes),
    Check("scalar_subqueries", check_scalar_subqueries),
    Check("code_names", check_code_names),
    Check("excluded_item", check_excluded_item),
    Check("specimen", check_specimen),
    Check("coarse_joins", check_coarse_joins),
    Check("fanout", check_fanout),
    Check("counted_join", check_counted_join),
    Check("widened_scope", check_widened_scope),
    Check("visit_scope", check_visit_scope),
    Check("unstated_visit", check_unstated_visit),
    Check("unasked_ended", check_unasked_ended),
    Check("count_distinct", check_count_distinct),
    Check("count_kinds", check_count_kinds),
    Check("counts_people", check_counts_people),
    Check("ranked_by_people", check_ranked_by_people),
    Check("counts_visits", check_counts_visits),
    Check("counted_visit", check_counted_visit),
    Check("count_of_values", check_count_of_values),
    Check("threshold_counts_rows", check_threshold_counts_rows),
    Check("visit_table", check_visit_table),
    Check("grouped_entity", check_grouped_entity),
    Check("direction", check_direction),
    Check("superlatives", check_superlatives),
    Check("visit_order", check_visit_order),
    Check("aggregate", check_aggregate),
    Check("average_over_patients", check_average_over_patients),
    Check("rows_bounded_in_having", check_rows_bounded_in_having),
    Check("text_numbers", check_text_numbers),
    Check("comma_cut", check_comma_cut),
    Check("integer_division", check_integer_division),
    Check("percentage", check_percentage),
    Check("duration_unit", check_duration_unit),
    Check("span_unit", check_span_unit),
    Check("duration_column", check_duration_column),
    Check("measure_unit", check_measure_unit),
    Check("bmi_unit", check_bmi_unit),
    Check("still_admitted", check_still_admitted),
    Check("death", check_death),
    Check("time_window", check_time_window),
    Check("stated_window", check_stated_window),
    Check("anchor", check_anchor),
    Check("limit", check_limit),
    Check("one_asked", check_one_asked),
    Check("repeated_names", check_repeated_names),
    Check("bounds", check_bounds),
    Check("ranges", check_ranges),
    Check("tied_end", check_tied_end),
    Check("stated_place", check_stated_place),
    Check("item_filter", check_item_filter),
    Check("substitution", check_substitution),
    Check("missing_variants", check_missing_variants),
    Check("row_negation", check_row_negation),
    Check("visit_anti_join", check_visit_anti_join),
    Check("presence", check_presence),
    Check("kind", check_kind),
    Check("stated_values", check_stated_values),
    Check("unasked_filter", check_unasked_filter),
    Check("unhappened_events", check_unhappened_events),
    Check("stated_numbers", check_stated_numbers),
    Check("stated_groups", check_stated_groups),
    Check("unscoped_reads", check_unscoped_reads),
    Check("icu_scope", check_icu_scope),
    Check("stated_exclusion", check_stated_exclusion),
    Check("contrasts", check_contrasts),
    Check("returned_column", check_returned_column),
    Check("returned_id", check_returned_id),
    Check("offered_choices", check_offered_choices),
    Check("unnamed_reference", check_unnamed_reference),
    Check("first_or_last", check_first_last),
    Check("grouped_by", check_grouped_by),
    Check("name_returned", check_name_returned),
    Check("grounding", check_grounding),
)


# Seconds the checks of one candidate may take in all (a verification answers in well under a second; SQL of
# thousands of conditions takes longer, and a server must not spend minutes of CPU on one request). Past it the
# remaining checks are skipped and the answer is not verified.
CHECK_BUDGET_S = 10.0


def run_checks(question: str, sql: str, db: DatabaseContext, checks: tuple[Check, ...] = CHECKS) -> Checked:
    """Run the checks in order on one candidate; the findings and proposed edits, with the shared context. Past
    CHECK_BUDGET_S the rest are skipped, with a ``not_checked`` finding (which keeps the answer from being verified)."""
    checked = Checked(SqlContext(question, sql, db))
    start = time.monotonic()
    for n, check in enumerate(checks):
        if time.monotonic() - start > CHECK_BUDGET_S:
            checked.findings.append(Finding("not_checked", "warning", f"The query is too large to check in time: {len(checks) - n} of "
                                            f"{len(checks)} checks did not run. Its answer is not verified."))
            break
        try:
            result = check.run(checked.ctx)
        except Exception as exc:  # noqa: BLE001 - a bug in one check must not take the verdict down; it is reported
            result = CheckResult((Finding("check_failed", "warning", f"The {check.name} check could not run ({type(exc).__name__}); "
                                          "its finding, if any, is missing."),))
        checked.findings.extend(result.findings)
        checked.edits.extend(result.edits)
        if check.stops and result.findings:
            break
    return checked


__all__ = ["CHECKS", "Check", "CheckResult", "Checked", "Edit", "SqlContext", "TextEdit", "TreeEdit", "repair", "run_checks", "summary"]
