"""One end of an order taken from records that tie for it, on the real MIMIC-IV demo database."""

from __future__ import annotations

from ehrguard.verify.checks import run_checks
from ehrguard.verify.offline.policy import blocking, plain_reason

# Patient 10007058's most prescribed drugs: heparin and 5% dextrose, four prescriptions each; patient 10000032's:
# furosemide, five, before three drugs with four.
MOST = "SELECT drug FROM prescriptions WHERE subject_id = {} GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 1"
# Patient 10019385 had two PTT results charted at 2100-03-08 06:30:00, with different values.
LAST_PTT = ("SELECT valuenum FROM labevents WHERE subject_id = 10019385 AND itemid IN (SELECT itemid FROM d_labitems "
            "WHERE label = 'ptt') AND charttime <= '2100-03-08 06:30:00' ORDER BY charttime DESC LIMIT 1")


def tied(ctx, question, sql):
    return [f for f in run_checks(question, sql, ctx).findings if f.check == "tied_end"]


def test_a_top_count_two_drugs_share_is_one_of_two_answers(ctx):
    tie = ctx.db.execute("SELECT drug, COUNT(*) FROM prescriptions WHERE subject_id = 10007058 GROUP BY drug "
                         "ORDER BY COUNT(*) DESC LIMIT 2").rows
    assert tie[0][1] == tie[1][1] and tie[0][0] != tie[1][0]  # the data's tie the check must see
    [finding] = tied(ctx, "Which drug was prescribed most often to patient 10007058?", MOST.format(10007058))
    assert finding.severity == "warning" and blocking([finding]) == [finding]
    assert "(4)" in finding.message and "heparin" in finding.message and "5% dextrose" in finding.message
    assert plain_reason(finding).startswith("Several records share the first place of the query's order (4)")
    # a clear first place is no tie
    assert tied(ctx, "Which drug was prescribed most often to patient 10000032?", MOST.format(10000032)) == []


def test_two_results_charted_at_the_same_minute_are_a_tie_and_an_ordinal_or_alias_key_is_read(ctx):
    [finding] = tied(ctx, "What was the last PTT of patient 10019385 by March 8, 2100?", LAST_PTT)
    assert "2100-03-08 06:30:00" in finding.message
    by_alias = LAST_PTT.replace("SELECT valuenum", "SELECT valuenum, charttime AS t").replace("ORDER BY charttime", "ORDER BY t")
    assert len(tied(ctx, "When and what was the last PTT of patient 10019385 by March 8, 2100?", by_alias)) == 1
    by_position = MOST.format(10007058).replace("SELECT drug", "SELECT drug, COUNT(*)").replace("COUNT(*) DESC", "2 DESC")
    assert len(tied(ctx, "Which drug was prescribed most often to patient 10007058, and how often?", by_position)) == 1


def test_what_is_no_tie_is_left_alone(ctx):
    question = "What was the last PTT of patient 10019385 by March 8, 2100?"
    # both tied rows selected (no LIMIT), several asked (LIMIT 2), DISTINCT, the same answer twice: nothing to say
    for sql in (LAST_PTT.replace(" LIMIT 1", ""), LAST_PTT.replace("LIMIT 1", "LIMIT 2"),
                LAST_PTT.replace("SELECT valuenum", "SELECT DISTINCT valuenum"),
                LAST_PTT.replace("SELECT valuenum", "SELECT subject_id")):
        assert tied(ctx, question, sql) == [], sql
