"""The web app in a real headless browser (Debian chromium via Playwright) against a real server process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ehrguard.receipt import check_receipt
from tests.helpers import free_port, wait_until_serving

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


OTHERS_QUESTION = "A question someone else asked about patient 10000032"


@pytest.fixture(scope="module")
def server(mimic_iv_db: Path, shared_data: Path, tmp_path_factory):
    from ehrguard.audit import AuditLog

    audit_path = tmp_path_factory.mktemp("audit") / "audit.sqlite"
    log = AuditLog(audit_path)  # what others asked, and one of ours pasted 112 KB long, before the page opens
    log.record(caller="another-token", interface="api", db="mimic_iv", question=OTHERS_QUESTION, candidate_sql="SELECT 1",
               action="preserve")
    log.record(caller="local", interface="cli", db="mimic_iv", question="x" * 112_000, candidate_sql="SELECT 1", action="preserve")
    log.close()
    dbs = tmp_path_factory.mktemp("dbs")
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    port = free_port()
    env = {**os.environ, "EHRGUARD_DB_DIR": str(dbs), "EHRGUARD_AUDIT_PATH": str(audit_path),
           "EHRGUARD_DATA_DIR": str(shared_data), "EHRGUARD_TEMPLATE_BANK": "on",
           "EHRGUARD_RECEIPT_KEY": "webapp-test-key"}
    log = tmp_path_factory.mktemp("log") / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ehrguard", "serve", "--port", str(port), "--no-auth"], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_until_serving(url + "/healthz", proc, log, timeout_s=60)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


CASES = [
    ("preserve", "What is the gender of patient 10004235?", "SELECT gender FROM patients WHERE subject_id = 10004235", "Answer"),
    ("correct", "What is the gender of patient 10004235?", "SELECT gendr FROM patient WHERE subject_id = 10004235", "Corrected"),
    ("ambiguous", "Labs?", "SELECT * FROM labevents LIMIT 5", "Needs clarification"),
    ("unanswerable", "Train a neural network to predict sepsis.", "SELECT 1", "Can't answer"),
]


@contextmanager
def opened(server: str, width: int, height: int) -> Iterator:
    """The web app's page in a fresh headless browser, its database list loaded."""
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(server + "/")
        page.wait_for_selector("#db option", state="attached")
        yield page
        browser.close()


def test_each_verdict_card(server):
    with opened(server, 1000, 900) as page:
        assert page.locator("#db").input_value() == "mimic_iv"
        assert not page.locator("#sql").is_visible()  # question-first: the SQL box is a mode of its own
        page.check("#ownsql")
        for action, question, sql, title in CASES:
            page.fill("#question", question)
            page.fill("#sql", sql)
            page.keyboard.press("Tab")
            page.click("#check")
            card = page.wait_for_selector(f".card[data-action='{action}']", timeout=15000)
            assert title in card.inner_text()
            if action in ("preserve", "correct"):
                assert card.get_attribute("data-status") == "verified"
                assert "probability that this answer is right" in page.locator(".card .confidence").inner_text()
            if action == "preserve":
                page.wait_for_selector(".card .answer-value")  # one value: shown as the answer, not as a table
                assert page.locator(".card .answer-value").inner_text().lower() in ("f", "m")
                # the decision's signed receipt downloads as a file that `ehrguard audit verify-receipt` accepts
                with page.expect_download() as download:
                    page.click("#receipt")
                receipt = json.loads(Path(download.value.path()).read_text())
                assert receipt["question"] == question and receipt["result"]["row_count"] == 1
                assert check_receipt(receipt, b"webapp-test-key").ok
            if action == "correct":
                inserted = " ".join(page.locator(".diff ins").all_inner_texts())
                assert "gender" in inserted and "patients" in inserted  # local repair or the template bank: both fix these two
                assert page.locator("mark.finding").count() >= 2  # the findings underline the SQL
            if action == "ambiguous":
                assert page.locator("#clarify").is_visible()
            page.screenshot(path=str(ARTIFACTS / f"webapp-{action}.png"), full_page=True)
        # A correction by a known form says which known question it read.
        page.fill("#question", "How many times was patient 10004235 prescribed heparin since 2 years ago?")
        page.fill("#sql",
                  "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10004235 AND drug = 'heparin' AND starttime >= '2100-12-01'")
        page.click("#check")
        page.wait_for_selector(".card[data-action='correct'] .known", timeout=15000)
        assert "[prescriptions.drug]" in page.locator(".known").inner_text()
        page.screenshot(path=str(ARTIFACTS / "webapp-correct-form.png"), full_page=True)
        # An answer the checks do not vouch for is never shown as one: amber, the reason first, the rows folded away.
        page.fill("#question", "What is the gender of patient 99999999?")
        page.fill("#sql", "SELECT gender FROM patients WHERE subject_id = 99999999")
        page.click("#check")
        card = page.wait_for_selector(".card[data-status='unverified']", timeout=15000)
        assert "Not verified" in card.inner_text() and "There is no patient 99999999" in page.locator(".card .reason").inner_text()
        page.wait_for_selector(".card details.unchecked", state="attached", timeout=15000)
        assert page.locator(".card details.unchecked").count() == 1 and not page.locator(".card details.unchecked table").is_visible()
        assert page.locator(".card.unverified").count() == 1
        page.screenshot(path=str(ARTIFACTS / "webapp-unverified.png"), full_page=True)
        page.wait_for_function("document.querySelectorAll('#history li').length >= 5")
        assert "unanswerable" in page.locator("#history").inner_text()
        # keyboard only: labels are tied to their fields
        assert page.locator("label[for='question']").count() == 1 and page.locator("label[for='sql']").count() == 1


def test_question_first_examples_answers_schema_and_own_history(server):
    with opened(server, 1100, 950) as page:
        page.wait_for_selector("#examples .example", timeout=30000)
        # An example question, drawn from the known forms, answered with no model and no SQL from the user.
        example = page.locator("#examples .example").first
        text = example.inner_text()
        example.click()
        assert page.locator("#question").input_value() == text
        page.click("#check")
        card = page.wait_for_selector(".card[data-action='preserve'], .card[data-action='correct']", timeout=30000)
        assert "Read as the known question" in card.inner_text()
        assert page.locator(".card details.sql").count() == 1 and not page.locator(".card details.sql pre").is_visible()
        # A question of our own, its value shown large, the SQL folded under it.
        page.fill("#question", "What is the gender of patient 10004235?")
        page.click("#check")
        page.wait_for_selector(".card[data-status='verified'] .answer-value", timeout=30000)
        assert page.locator(".answer-value").inner_text().lower() in ("f", "m")
        assert "the gender of patient [patient]" in page.locator(".read-as").inner_text()
        page.click(".card details.sql summary")
        assert "patients.gender" in page.locator(".card details.sql pre").inner_text()
        page.screenshot(path=str(ARTIFACTS / "webapp-ask-answer.png"), full_page=True)
        # No known question fits: not answered, with the reason, never a guess.
        page.fill("#question", "What was the average length of stay, in days, of patient 10000032's hospital admissions?")
        page.click("#check")
        card = page.wait_for_selector(".card[data-action='not-read']", timeout=30000)
        assert "Not answered" in card.inner_text() and page.locator(".card table").count() == 0
        page.screenshot(path=str(ARTIFACTS / "webapp-ask-not-read.png"), full_page=True)
        # An ambiguous question asks back.
        page.fill("#question", "Which patients are very sick?")
        page.click("#check")
        assert "'very'" in page.wait_for_selector(".card[data-action='ambiguous']", timeout=30000).inner_text()
        # The schema browser: tables, their columns, and example values on opening one.
        page.click("#schema details[data-table='patients'] summary")
        gender = "#schema details[data-table='patients'] [data-col='gender'] .vals"
        page.wait_for_function(f"document.querySelector(\"{gender}\").textContent.length > 0")
        assert "e.g." in page.locator("#schema details[data-table='patients'] [data-col='gender'] .vals").inner_text()
        # History: only this caller's questions, a long one cut short; someone else's never shown.
        page.wait_for_function("document.querySelector('#history').innerText.includes('very sick')")
        history = page.locator("#history").inner_text()
        assert OTHERS_QUESTION not in history and "x" * 400 not in history
        assert "not answered" in history and "average length of stay" in history  # a question not answered is kept too
        # the page shows the last ten; further back, the 112 KB question comes cut to 300 characters
        older = page.request.get(server + "/v1/history?limit=50").json()["entries"]
        long = [e["question"] for e in older if e["question"].startswith("xxx")]
        assert long and len(long[0]) == 300 and all(e["question"] != OTHERS_QUESTION for e in older)
        page.screenshot(path=str(ARTIFACTS / "webapp-ask-schema.png"), full_page=True)
