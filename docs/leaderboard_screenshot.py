"""Screenshot of the leaderboard's overview with its filters (docs/leaderboard-overview-filters.png).

    matbench leaderboard build --results results --out site
    python docs/leaderboard_screenshot.py site docs/leaderboard-overview-filters.png

Drives the system Chromium through Playwright (the test extras), chooses one suite in the
overview's suite filter so the picture shows a filter at work, and keeps the page down to the
overview table (the file stays well under 300 KB).
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

# The browser tests' flags: headless, no sandbox as root, no background traffic.
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


def main(site: Path, out: Path, suite: str = "harvest") -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 700})
        page.goto((site / "index.html").as_uri())
        page.select_option("#overview-filter-suite", label=suite)
        box = page.locator("#overview").bounding_box()
        page.screenshot(
            path=str(out), full_page=True, clip={"x": 0, "y": 0, "width": 1400, "height": box["y"] + box["height"] + 16}
        )
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
