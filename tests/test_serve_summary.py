"""The dashboard tells the truth at a glance (#25.6): an undone attempt is marked with its
reverting commit, the timeline has a summary of what it lists, a task given several times
is one row, and the Runs page reads at 1280 px and 390 px (real Chromium, slow tier)."""

from __future__ import annotations

import shutil
import urllib.request
from pathlib import Path

import pytest

from conftest import cli, git
from serve_helpers import Server, journal_repo, run

pytest.importorskip("starlette", reason="the dashboard needs the web extra (selfforge[web])")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run (a rejection, then a landing), the landing undone, and the same --task
    given twice more."""
    repo = journal_repo(tmp_path_factory.mktemp("summary") / "repo")
    cli("undo", "--repo", str(repo), check=True)
    for _ in range(2):
        proc = run(repo, {"propose": [""]}, "--task", "Document mul()")
        proc.communicate()
    return repo


def _get(server: Server, path: str) -> str:
    sep = "&" if "?" in server.url else "?"
    token = server.url.split("?", 1)[1] if "?" in server.url else ""
    with urllib.request.urlopen(f"{server.base}{path}{sep if token else ''}{token}") as page:
        return page.read().decode()


def test_an_undone_attempt_is_marked_with_its_reverting_commit(repo: Path) -> None:
    revert = git(repo, "rev-parse", "HEAD").strip()
    with Server(repo) as server:
        timeline = _get(server, "/")
        runs = _get(server, "/runs")
    row = timeline.split('id="attempt-2"', 1)[1].split("</tr>", 1)[0]
    assert f"undone by {revert[:10]}" in row and ">landed<" not in row
    assert '<td class="num">1</td>' in runs.split("<tbody>", 1)[1]  # the undone column


def test_the_timeline_has_a_summary_of_what_it_lists(repo: Path) -> None:
    with Server(repo) as server:
        page = _get(server, "/")
    summary = page.split('id="summary"', 1)[1].split("</p>", 1)[0]
    assert "<b>1</b> accepted" in summary and "<b>1</b> rejected" in summary
    assert "<b>50%</b> acceptance" in summary and "1 undone" in summary
    assert "tokens" in summary and "spent" in summary


def test_a_task_given_several_times_is_one_row(repo: Path) -> None:
    with Server(repo) as server:
        page = _get(server, "/backlog")
    rows = page.split('id="tasks"', 1)[1].split("</table>", 1)[0]
    assert rows.count("Document mul()") == 1 and "×2" in rows


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.slow  # a real Chromium
@pytest.mark.parametrize("width", [1280, 390])
def test_the_runs_page_reads_at_desktop_and_phone_widths(
    repo: Path, width: int, tmp_path: Path
) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with Server(repo) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(
            server.url.replace("/?", "/runs?") if "?" in server.url else f"{server.base}/runs"
        )
        page.screenshot(path=str(tmp_path / f"runs-{width}.png"), full_page=True)
        page_width = page.evaluate("document.documentElement.scrollWidth")
        broken = page.evaluate(
            """() => [...document.querySelectorAll('#runs td')].filter(td => {
                 const s = getComputedStyle(td);
                 return s.wordBreak === 'break-all' || s.overflowWrap === 'anywhere';
               }).length"""
        )
        browser.close()
    assert page_width <= width, f"the page scrolls sideways at {width} px ({page_width} px)"
    assert broken == 0  # no cell may break a word mid-word
    assert (tmp_path / f"runs-{width}.png").stat().st_size > 5_000
