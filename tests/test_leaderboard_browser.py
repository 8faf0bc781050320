"""The built site in a real headless Chromium (Debian's package, driven by Playwright): rows,
sorting, plots, and a hostile model name that must render as text and never run.

Skipped where /usr/bin/chromium is missing, unless MATBENCH_REQUIRE_BROWSER=1 (set by .ci/run),
which turns a missing browser into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from matbench.leaderboard.downloads import csv_cell
from matbench.leaderboard.reported import load_reported
from matbench.leaderboard.site import build_site
from tests.leaderboard_fixtures import HOSTILE, STORE, copy_run, fixture_runs

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("MATBENCH_REQUIRE_BROWSER") == "1"
if not Path(CHROMIUM).exists() and not REQUIRED:
    pytest.skip("no chromium here (apt-get install chromium); CI requires it", allow_module_level=True)

# Flags for a sandboxed root user on a closed network (see the machine notes): no background traffic.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lb")
    runs = root / "runs"
    for path in fixture_runs():
        copy_run(path, runs / path.parent.relative_to(STORE))  # <collection>/<model>/<stem>
    discovery = next(p for p in fixture_runs() if p.name == "discovery_probe_compact.json")
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
    models = {json.loads(p.read_text())["config"]["model"]["model"] for p in fixture_runs()}
    assert (
        page.locator("#overview tbody tr.measured").count() == len(models) + 1
    )  # the offline models + the hostile one
    assert page.locator("#overview tbody tr.reported").count() == n_reported
    assert page.locator("#runs tbody tr").count() == len(fixture_runs()) + 1


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


# Each table's rows as the browser has them: the row's class, and per cell its text (without the
# "reported" badge), data-sort and link.
_TABLE_JS = """id => {
  const table = document.getElementById(id);
  const header = Array.from(table.tHead.rows[0].cells, th => th.textContent);
  const rows = Array.from(table.tBodies[0].rows, tr => ({kind: tr.className, hidden: tr.hidden, cells: Array.from(tr.cells, td => {
    const copy = td.cloneNode(true);
    copy.querySelectorAll(".badge").forEach(b => b.remove());
    const a = td.querySelector("a");
    return {text: copy.textContent.trimEnd(), sort: td.getAttribute("data-sort"), href: a ? a.getAttribute("href") : null};
  })}));
  return {header, rows};
}"""


def _check_download(page, site, table_id, may_be_empty=False):
    """The CSV and JSON linked above `table_id` hold its rows: row kind, each cell's text, its
    sort key as the value column (str of the unrounded number: the attribute is Python's str of
    it) and its link."""
    import pandas as pd

    table = page.evaluate(_TABLE_JS, table_id)
    links = page.locator(f"#{table_id}-download a")
    assert links.all_inner_texts() == ["CSV", "JSON"]
    csv_path, json_path = (site / links.nth(k).get_attribute("href") for k in range(2))
    records = json.loads(json_path.read_text())
    frame = pd.read_csv(csv_path, dtype=str, keep_default_na=False)  # every cell as the text written
    assert len(records) == len(frame) == len(table["rows"]) > (-1 if may_be_empty else 0)
    assert not records or list(frame.columns) == list(records[0])
    for record, line, row in zip(records, frame.to_dict(orient="records"), table["rows"]):
        assert record["row"] == line["row"] == row["kind"]
        for name, cell in zip(table["header"], row["cells"]):
            assert record[name] == cell["text"] and line[name] == csv_cell(cell["text"]), (table_id, name)
            if f"{name} value" in record:
                value = record[f"{name} value"]
                assert (None if value is None else str(value)) == cell["sort"], (table_id, name)
                assert line[f"{name} value"] == (cell["sort"] or ""), (table_id, name)
            else:  # no value column: the text is all the cell has
                assert cell["sort"] in (None, cell["text"]), (table_id, name)
            if f"{name} link" in record:
                assert record[f"{name} link"] == cell["href"] and line[f"{name} link"] == (cell["href"] or "")
            else:
                assert cell["href"] is None, (table_id, name)
    return len(records)


def test_each_download_has_the_rows_of_its_table(page, site):
    page.goto((site / "index.html").as_uri())
    assert _check_download(page, site, "overview") == page.locator("#overview tbody tr").count()
    assert _check_download(page, site, "runs") == len(fixture_runs()) + 1
    others = sorted(site.glob("suite-*.html")) + sorted(site.glob("model-*.html"))
    table_ids = {"suite": "suite-table", "model": "runs"}
    shown = 0
    for other in others:  # a suite without fixture runs or paper figures has an empty table
        page.goto(other.as_uri())
        shown += _check_download(page, site, table_ids[other.name.split("-")[0]], may_be_empty=True) > 0
    suites = {_config(p)["suite"] for p in fixture_runs()}
    assert shown >= len(list(site.glob("model-*.html"))) + len(suites)  # every run's pages have rows
    page.goto((site / "index.html").as_uri())


def _shown(page, table_id):
    return page.locator(f"#{table_id} tbody tr:not([hidden])")


def _config(path: Path) -> dict:
    return json.loads(path.read_text())["config"]


def test_filtering_by_one_model_leaves_only_its_rows(page, site):
    page.goto((site / "index.html").as_uri())
    counts = Counter(_config(p)["model"]["model"] for p in fixture_runs())
    model = counts.most_common()[-1][0]  # the model with the fewest runs
    total = len(fixture_runs()) + 1
    assert page.locator("#runs-filter-model option").all_inner_texts() == [
        "all",
        *sorted({*counts, HOSTILE}, key=str.lower),
    ]
    page.select_option("#runs-filter-model", label=model)
    shown = _shown(page, "runs")
    assert shown.count() == counts[model] < total
    assert set(page.locator("#runs tbody tr:not([hidden]) td:nth-child(1)").all_inner_texts()) == {model}
    assert page.locator("#runs tbody tr").count() == total  # hidden rows stay in the DOM
    assert page.locator("#runs-shown").inner_text() == f"{counts[model]} of {total} rows shown"
    page.select_option("#overview-filter-model", label=model)
    reported = sum(name == model for name, _ in load_reported().rows())
    assert _shown(page, "overview").count() == 1 + reported
    page.select_option("#runs-filter-model", value="")
    assert _shown(page, "runs").count() == total


def test_the_search_box_keeps_rows_with_every_word(page, site):
    page.goto((site / "index.html").as_uri())
    runs = fixture_runs()
    yarn = [p for p in runs if p.stem.endswith("_yarn4")]  # the variant cell reads "yarn ×4"
    model = _config(yarn[0])["model"]["model"]
    page.fill("#runs-search", "YaRN")
    assert _shown(page, "runs").count() == len(yarn) > 0
    page.fill("#runs-search", f"yarn  {model.upper()}")  # words in any case, any spacing: all must match
    expected = sum(_config(p)["model"]["model"] == model for p in yarn)
    assert _shown(page, "runs").count() == expected < len(yarn)
    page.fill("#runs-search", "no-such-text-anywhere")
    assert _shown(page, "runs").count() == 0
    page.fill("#runs-search", "")
    assert _shown(page, "runs").count() == len(runs) + 1


def test_a_filter_and_a_sort_combine(page, site):
    page.goto((site / "index.html").as_uri())
    runs = fixture_runs()
    discovery = sum(_config(p)["suite"] == "discovery" for p in runs) + 1  # + the hostile copy
    page.select_option("#runs-filter-suite", label="discovery")
    assert _shown(page, "runs").count() == discovery
    header = page.locator("#runs thead th", has_text="readout").first
    header.click()
    readouts = page.locator("#runs tbody tr:not([hidden]) td:nth-child(4)").all_inner_texts()
    assert len(readouts) == discovery and readouts == sorted(readouts, key=str.lower)
    assert set(page.locator("#runs tbody tr:not([hidden]) td:nth-child(3)").all_inner_texts()) == {"discovery"}
    page.select_option("#runs-filter-suite", value="")  # the rows hidden during the sort were sorted too
    every = page.locator("#runs tbody tr td:nth-child(4)").all_inner_texts()
    assert len(every) == len(runs) + 1 and every == sorted(every, key=str.lower)
    assert sorted(set(every)) != sorted(set(readouts)) or len(every) > len(readouts)
    page.goto((site / "index.html").as_uri())


def test_the_rows_shown_download_as_csv_in_their_order(page, site):
    import csv
    import io

    page.goto((site / "index.html").as_uri())
    discovery = sum(_config(p)["suite"] == "discovery" for p in fixture_runs()) + 1  # + the hostile copy
    page.select_option("#runs-filter-suite", label="discovery")
    page.locator("#runs thead th", has_text="readout").first.click()
    with page.expect_download() as info:
        page.click("#runs-download ~ form [data-export]")
    download = info.value
    assert download.suggested_filename == "runs-shown.csv"
    rows = list(csv.reader(io.StringIO(Path(download.path()).read_text())))
    header = page.locator("#runs thead th").all_inner_texts()
    shown = page.evaluate("""() => Array.from(document.querySelectorAll('#runs tbody tr:not([hidden])'))
        .map(r => Array.from(r.cells).map(c => c.textContent.trim()))""")
    assert rows[0] == [h.strip() for h in header] and len(shown) == discovery
    assert rows[1:] == [[csv_cell(c) for c in r] for r in shown]  # the in-browser CSV escapes as the site's
    assert [r[2] for r in rows[1:]] == ["discovery"] * discovery
    readouts = [r[3] for r in rows[1:]]
    assert readouts == sorted(readouts, key=str.lower)  # the view's sort order, not the page's
    # quoted as data (its quotes escaped), read back intact, behind the apostrophe that keeps a
    # spreadsheet from running it as a formula
    assert "'" + HOSTILE in {r[0] for r in rows[1:]} and HOSTILE in {r[0] for r in shown}
