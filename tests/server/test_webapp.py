"""The web app in a real headless browser (Debian chromium via Playwright) against a real server process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


@pytest.fixture(scope="module")
def server(mimic_iv_db: Path, shared_data: Path, tmp_path_factory):
    dbs = tmp_path_factory.mktemp("dbs")
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    port = free_port()
    env = {**os.environ, "EHRGUARD_DB_DIR": str(dbs), "EHRGUARD_AUDIT_PATH": str(tmp_path_factory.mktemp("audit") / "audit.sqlite"),
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


def test_each_verdict_card(server):
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.goto(server + "/")
        page.wait_for_selector("#db option", state="attached")
        assert page.locator("#db").input_value() == "mimic_iv"
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
                page.wait_for_selector(".card table td")
                assert page.locator(".card table td").first.inner_text().lower() in ("f", "m")
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
        page.fill("#question", "How many patients are there?")
        page.fill("#sql", "")
        page.click("#check")
        assert "name a model" in page.wait_for_selector(".card[data-action='error']").inner_text()
        page.wait_for_function("document.querySelectorAll('#history li').length >= 5")
        assert "unanswerable" in page.locator("#history").inner_text()
        # keyboard only: labels are tied to their fields
        assert page.locator("label[for='question']").count() == 1 and page.locator("label[for='sql']").count() == 1
        browser.close()
