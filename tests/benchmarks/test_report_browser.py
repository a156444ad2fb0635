"""A SCARE report as people read it: report.html in headless chromium, and the confusion figure's labels."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ehrguard.benchmarks.report import confusion_figure, pyplot, write_scare_report
from ehrguard.benchmarks.rundir import RunDir
from ehrguard.benchmarks.scare import load_scare
from ehrguard.benchmarks.scare_run import run_scare, score_records
from ehrguard.verify.methods import get_method

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


@pytest.fixture(scope="module")
def report(mimic_iv_db: Path, shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    dbs = tmp_path_factory.mktemp("dbs")
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    data = shared_data / "scare" / "mimic_iv_dev.json"
    items = load_scare(data)
    sample = [it for cat in ("ambiguous", "answerable_correct", "answerable_incorrect", "unanswerable")
              for it in [i for i in items if i.sampled_category == cat][:15]]
    out = tmp_path_factory.mktemp("run")
    run_scare(sample, get_method("preserve_all"), db_dir=dbs, out=out, data_files=[data])
    records = RunDir(out).records()
    metrics = score_records(records)
    write_scare_report(out, metrics, RunDir(out).config(), records)
    return out, metrics


def test_the_confusion_figure_labels_do_not_overlap(report):
    _, metrics = report
    fig = confusion_figure(pyplot(), metrics)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        boxes = [label.get_window_extent(renderer) for label in labels]
        assert len(boxes) >= 4
        for a, b in zip(boxes, boxes[1:], strict=False):
            assert not a.overlaps(b), "two tick labels of the confusion matrix overlap"


@pytest.mark.browser
def test_the_html_report_renders_in_a_browser(report):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    out, _ = report
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.goto((out / "report.html").as_uri())
        # every figure decoded, at a size
        sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width])")
        assert len(sizes) == 5 and all(done and natural > 100 and shown > 100 for done, natural, shown in sizes), sizes
        # nothing makes the page wider than the window: wide tables scroll inside their own box
        assert page.evaluate("document.documentElement.scrollWidth") <= 1000
        right = page.eval_on_selector_all("table, img, p, li", "els => Math.max(...els.map(e => e.getBoundingClientRect().right))")
        assert right <= 1000
        headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
        assert "Correction rate by error type (SCARE Table 4)" in headings and "What the figures mean" in headings
        assert page.locator("li strong").count() >= 6  # the metric definitions, bold names rendered
        assert "**" not in page.inner_text("body") and "<" not in page.inner_text("h1")
        page.screenshot(path=str(ARTIFACTS / "scare-report.png"), full_page=True)
        browser.close()
