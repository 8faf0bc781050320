"""The built site in a real headless Chromium (Debian's package, driven by Playwright): rows,
sorting, plots, and a hostile model name that must render as text and never run.

Skipped where /usr/bin/chromium is missing, unless MATBENCH_REQUIRE_BROWSER=1 (set by .ci/run),
which turns a missing browser into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from matbench.leaderboard.reported import load_reported
from matbench.leaderboard.site import build_site
from tests.leaderboard_fixtures import HOSTILE, committed_runs, copy_run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("MATBENCH_REQUIRE_BROWSER") == "1"
if not Path(CHROMIUM).exists() and not REQUIRED:
    pytest.skip("no chromium here (apt-get install chromium); CI requires it", allow_module_level=True)

# Flags for a sandboxed root user on a closed network (see the machine notes): no background traffic.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lb")
    runs = root / "runs"
    for path in committed_runs():
        copy_run(path, runs / path.parent.name)
    discovery = next(p for p in committed_runs() if p.name == "discovery_probe_compact.json")
    copy_run(discovery, runs / "hostile", model=HOSTILE)
    return build_site([runs], root / "site").out


@pytest.fixture(scope="module")
def page(site):
    if not REQUIRED:
        pytest.importorskip("playwright.sync_api")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto((site / "index.html").as_uri())
        page.dialogs = dialogs
        yield page
        browser.close()


def test_overview_has_a_row_per_model_and_runs_a_row_per_results_file(page):
    n_reported = sum(model is not None for model, _ in load_reported().rows())
    models = {json.loads(p.read_text())["config"]["model"]["model"] for p in committed_runs()}
    assert page.locator("#overview tbody tr.measured").count() == len(models) + 1  # the offline models + the hostile one
    assert page.locator("#overview tbody tr.reported").count() == n_reported
    assert page.locator("#runs tbody tr").count() == len(committed_runs()) + 1


def test_a_header_click_sorts_and_a_second_reverses(page):
    # The runs table lists runs by model, then suite: sorting by suite interleaves the models.
    header = page.locator("#runs thead th", has_text="suite").first
    cells = page.locator("#runs tbody tr td:nth-child(3)")
    original = cells.all_inner_texts()
    header.click()
    ascending = cells.all_inner_texts()
    assert ascending == sorted(original, key=str.lower) and ascending != original
    header.click()
    assert cells.all_inner_texts() == sorted(original, key=str.lower, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"


def test_plots_are_drawn(page):
    figures = page.locator("figure[id^=plot-]")
    ids = [figures.nth(k).get_attribute("id") for k in range(figures.count())]
    assert "plot-trigger" in ids and page.locator("#plot-trigger svg.plot").count() == 2  # the two heat maps
    assert page.locator("svg.plot").count() == page.locator("figure svg.plot").count() >= len(ids)
    for figure in ids:
        box = page.locator(f"#{figure} svg").first.bounding_box()
        assert box["width"] > 200 and box["height"] >= 100


def test_a_hostile_model_name_renders_as_text_and_never_runs(page):
    assert page.evaluate("window.__pwned") is None and page.dialogs == []
    assert page.locator("#overview", has_text="<script>window.__pwned = 1</script>").count() == 1
    assert page.locator("#overview img").count() == 0


def test_pages_work_from_file_urls_with_local_evidence(page, site):
    page.locator("#overview tbody tr.measured a").first.click()
    assert page.url.startswith("file://") and "/model-" in page.url
    assert page.locator("h1").inner_text().startswith("Model:")
    href = page.locator("#runs a", has_text="items").first.get_attribute("href")
    assert (site / href).is_file()
    page.goto((site / "index.html").as_uri())
