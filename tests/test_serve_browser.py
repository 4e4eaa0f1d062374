"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright):
what a person sees, including a row that a live run adds without a reload."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from serve_helpers import DOCUMENT_MUL, SCRIPT_TAG, Server, journal_repo, run

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a real Chromium
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Screenshots go to a temporary directory, or where SELFFORGE_SCREENSHOTS says:
# `SELFFORGE_SCREENSHOTS=docs/screenshots pytest tests/test_serve_browser.py` refreshes the
# README's (writing them on every run would leave every checkout with modified files).
SCREENSHOTS_ENV = "SELFFORGE_SCREENSHOTS"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 60_000  # a generous bound for slow machines; no speed is asserted

if not Path(CHROMIUM).exists():
    pytest.skip(
        "Debian's chromium is not installed (apt-get install -y chromium; .ci/run does)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (dev extra)")
pytest.importorskip("starlette", reason="the dashboard needs the web extra (selfforge[web])")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return journal_repo(tmp_path_factory.mktemp("browser") / "repo")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.dialogs = []  # type: ignore[attr-defined]
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    context.close()


def test_the_timeline_lists_the_attempts(repo: Path, shots: Path, page) -> None:  # type: ignore[no-untyped-def]
    with Server(repo) as server:
        page.goto(server.url)
        rows = page.locator("#timeline tbody tr")
        assert rows.count() == 2
        assert rows.nth(0).get_attribute("id") == "attempt-2"  # newest first
        assert "accepted" in rows.nth(0).inner_text()
        assert "rejected" in rows.nth(1).inner_text()
        assert "test_sub" in rows.nth(1).inner_text()
        _screenshot(page, shots, "timeline")


def test_an_outcome_filter_keeps_only_matching_attempts(repo: Path, page) -> None:  # type: ignore[no-untyped-def]
    with Server(repo) as server:
        page.goto(server.url)
        page.select_option("#filter-outcome", "rejected")
        page.click("form.filters button[type=submit]")
        page.wait_for_url("**outcome=rejected**")
        assert page.locator("#timeline tbody tr").count() == 1
        assert page.locator("#attempt-1").is_visible()
        assert page.locator("#attempt-2").count() == 0
        assert page.locator("#filter-outcome").input_value() == "rejected"


def test_attempt_pages_show_diff_checks_votes_and_a_script_as_text(
    repo: Path, shots: Path, page
) -> None:  # type: ignore[no-untyped-def]
    with Server(repo) as server:
        page.goto(f"{server.base}/attempts/1")
        check = page.locator("#checks details.fail").first
        assert "test_sub" in check.inner_text()  # failing checks open with their output
        assert "✗ fail" in page.locator("#steps").inner_text()
        reply = page.locator("pre.response").first
        assert SCRIPT_TAG in reply.inner_text()  # shown as text …
        assert page.evaluate("window.pwned === undefined")  # … and never run
        assert page.dialogs == []
        page.goto(f"{server.base}/attempts/2")
        diff = page.locator("table.diff")
        assert "return a - b" in diff.locator("td.del").first.inner_text()
        assert "return a + b" in diff.locator("td.add").first.inner_text()
        assert diff.locator("td.add span").count() > 0  # highlighted
        assert "tests round 0: passed" in page.locator("#checks").inner_text()
        assert "approve" in page.locator("ul.votes").inner_text()
        _screenshot(page, shots, "attempt")
        page.goto(f"{server.base}/plots")
        assert page.locator("figure svg").count() == 4
        _screenshot(page, shots, "plots")
        page.goto(f"{server.base}/runs")
        assert "Fix add() so test_add passes" in page.locator("#runs").inner_text()


def test_a_live_run_adds_its_attempt_without_a_reload(repo: Path, tmp_path: Path, page) -> None:  # type: ignore[no-untyped-def]
    live_repo = tmp_path / "repo"
    shutil.copytree(repo, live_repo, symlinks=True)
    with Server(live_repo) as server:
        page.goto(server.url)
        assert page.locator("#timeline tbody tr").count() == 2
        page.evaluate("window.notReloaded = true")
        proc = run(live_repo, {"propose": [DOCUMENT_MUL]}, "--goal", "Document mul()")
        try:
            live = page.locator("#live")  # the running run and its stage, pushed too
            sync_api.expect(live).to_contain_text("run 2 running", timeout=WAIT_MS)
            page.wait_for_selector("#attempt-3", timeout=WAIT_MS)
            badge = page.locator("#attempt-3 .badge")
            sync_api.expect(badge).to_have_text("accepted", timeout=WAIT_MS)
        finally:
            output, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, output
        sync_api.expect(live).to_have_text("", timeout=WAIT_MS)  # the run is over
        assert page.evaluate("window.notReloaded === true")
        rows = page.locator("#timeline tbody tr")
        assert rows.count() == 3
        assert rows.nth(0).get_attribute("id") == "attempt-3"
        assert "Document mul()" in rows.nth(0).inner_text()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _screenshot(page, folder: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    assert (folder / f"{name}.png").stat().st_size > 10_000
