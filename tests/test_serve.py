"""`selfforge serve` over real HTTP on localhost: read-only, escaped, guarded."""

from __future__ import annotations

import hashlib
import socket
import sqlite3
from pathlib import Path

import httpx
import pytest

from conftest import cli, make_repo
from serve_helpers import SCRIPT_TAG, Server, journal_repo

pytest.importorskip("starlette", reason="the dashboard needs the web extra (selfforge[web])")

PAGES = ("/", "/attempts/1", "/attempts/2", "/runs", "/plots", "/backlog", "/?outcome=rejected")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return journal_repo(tmp_path_factory.mktemp("serve") / "repo")


def _journal_digest(repo: Path) -> str:
    digest = hashlib.sha256()
    # The data is the db and its WAL; a reader may create an empty WAL and the -shm index.
    for path in sorted((repo / ".selfforge").glob("journal.db*")):
        if path.name.endswith("-shm") or path.stat().st_size == 0:
            continue
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def test_every_page_answers_and_nothing_is_written(repo: Path) -> None:
    before = _journal_digest(repo)
    with Server(repo) as server, httpx.Client(base_url=server.base) as http:
        for page in PAGES:
            response = http.get(page)
            assert response.status_code == 200, page
            assert "script-src 'self'" in response.headers["content-security-policy"]
        for page in PAGES:  # there are no write routes
            assert http.post(page).status_code == 405, page
        assert http.get("/attempts/999").status_code == 404
    assert _journal_digest(repo) == before


def test_model_text_is_escaped(repo: Path) -> None:
    with Server(repo) as server:
        html = httpx.get(f"{server.base}/attempts/1").text
    assert SCRIPT_TAG not in html
    assert "&lt;script&gt;window.pwned = true;" in html
    assert html.count("<script") == 1  # only the page's own /static/app.js


def test_timeline_filters_by_outcome_task_and_run(repo: Path) -> None:
    with Server(repo) as server, httpx.Client(base_url=server.base) as http:
        rejected = http.get("/", params={"outcome": "rejected"}).text
        accepted = http.get("/", params={"outcome": "accepted", "run": "1"}).text
        nothing = http.get("/", params={"task": "no such task"}).text
    assert 'id="attempt-1"' in rejected and 'id="attempt-2"' not in rejected
    assert 'id="attempt-2"' in accepted and 'id="attempt-1"' not in accepted
    assert "No attempts match." in nothing


def test_the_run_journals_its_steps_for_the_attempt_page(repo: Path) -> None:
    with Server(repo) as server:
        html = httpx.get(f"{server.base}/attempts/1").text
    steps = html.split('id="steps"', 1)[1].split("</table>", 1)[0]
    assert "✗ fail" in steps and ">tests<" in steps  # the test gate's verdict
    assert "2 passed, 1 failed" in steps


def test_loopback_refuses_other_host_names(repo: Path) -> None:
    """A page on another site must not read the journal through DNS rebinding."""
    with Server(repo) as server:
        response = httpx.get(server.base + "/", headers={"host": "attacker.example"})
    assert response.status_code == 421


def test_a_token_guards_every_request_and_becomes_a_cookie(repo: Path) -> None:
    with Server(repo, "--token", "s3cret") as server:
        assert server.url.endswith("?token=s3cret")
        assert httpx.get(server.base + "/").status_code == 401
        assert httpx.get(server.base + "/", params={"token": "wrong"}).status_code == 401
        with httpx.Client(base_url=server.base) as http:
            assert http.get("/", params={"token": "s3cret"}).status_code == 200
            assert http.get("/attempts/1").status_code == 200  # the cookie carries it


def test_another_host_gets_a_generated_token(repo: Path) -> None:
    with Server(repo, "--host", "0.0.0.0") as server:
        token = server.url.split("?token=", 1)[1]
        assert len(token) >= 20
        local = server.base.replace("0.0.0.0", "127.0.0.1")
        assert httpx.get(local + "/").status_code == 401
        assert httpx.get(local + "/", params={"token": token}).status_code == 200
    assert "reachable from other machines" in server.proc.stdout.read()


def test_without_a_journal_it_says_what_to_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fresh", {"a.py": "x = 1\n"})
    proc = cli("serve", "--repo", str(repo), "--port", "0")
    assert proc.returncode == 1
    assert "no journal" in proc.stderr and "selfforge run" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_journal_from_a_newer_selfforge_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "newer", {"a.py": "x = 1\n"})
    (repo / ".selfforge").mkdir()
    conn = sqlite3.connect(repo / ".selfforge" / "journal.db")
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    proc = cli("serve", "--repo", str(repo), "--port", "0")
    assert proc.returncode == 1
    assert "newer selfforge" in proc.stderr and "upgrade" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_port_in_use_is_a_usage_error(repo: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        proc = cli("serve", "--repo", str(repo), "--port", port)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr and "--port" in proc.stderr


def test_the_attempt_page_renders_an_explorer_s_trajectory_escaped(tmp_path: Path, script) -> None:
    """Issue 35.4: every step of an exploring proposer — the command, what it printed,
    tokens and time — on the attempt's page; what the model and the command wrote is
    escaped like any model text."""
    from conftest import CALC, FIX_ADD, TEST_CALC, directives

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    look = f"```bash\necho '{SCRIPT_TAG}'; grep -n 'def add' calc.py\n```\n"
    spec = script(propose=[look, FIX_ADD, "DONE"])
    cli("run", "--repo", str(repo), "--model", spec, "--proposer", "explore", check=True)
    with Server(repo) as server:
        html = httpx.get(f"{server.base}/attempts/1").text
    table = html.split('id="trajectory"', 1)[1].split("</table>", 1)[0]
    assert "grep -n" in table and "def add(a, b):" in table  # the command, its output
    assert ">bash<" in table and ">edit<" in table and ">done<" in table
    assert SCRIPT_TAG not in html and "&lt;script&gt;" in table
