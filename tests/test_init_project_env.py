"""`init` and `doctor` describe the user's project, not selfforge's (issue 34.4): tools
are found in the project's own environment, not selfforge's venv; untracked
environments are kept out of git; the test command written is one that ran; `doctor`
is ready for `check` without a model and fails on a suite that cannot collect; a venv
linked from elsewhere is seen by checks; the MCP server names itself and its attempts."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from conftest import CALC, PYTEST, TEST_CALC, cli, directives, git, make_repo

SELFFORGE_BIN = str(Path(sys.executable).parent)
# selfforge's venv first, as when it is activated; then only the system's folders
PATH_WITH_SELFFORGE = os.pathsep.join([SELFFORGE_BIN, "/usr/bin", "/bin"])


def _line(toml: str, key: str) -> str | None:
    found = [ln for ln in toml.splitlines() if ln.startswith(f"{key} = ")]
    return json.loads(found[0].split(" = ", 1)[1]) if found else None


def _init(repo: Path, env: dict[str, str] | None = None) -> tuple[str, str]:
    proc = cli("init", "--force", "--repo", str(repo), check=True, env=env)
    return proc.stdout, (repo / "selfforge.toml").read_text()


def _venv(where: Path) -> Path:
    """A real virtualenv that can import the test environment's packages (pytest)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    [packages] = where.glob("lib/python*/site-packages")
    (packages / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return packages


def test_a_tool_only_selfforge_s_venv_has_is_not_the_project_s(tmp_path: Path) -> None:
    assert (Path(SELFFORGE_BIN) / "ruff").exists()  # selfforge's own ruff is on this PATH
    repo = make_repo(
        tmp_path / "p",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, "ruff.toml": "line-length = 100\n"},
    )
    out, toml = _init(repo, env={"PATH": PATH_WITH_SELFFORGE})
    assert _line(toml, "lint") is None, toml
    assert "no lint tool installed for this project" in out


def test_a_tool_in_the_project_s_venv_is_written_with_its_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    _venv(repo / ".venv")
    (repo / ".venv" / "bin" / "ruff").symlink_to(Path(SELFFORGE_BIN) / "ruff")
    out, toml = _init(repo, env={"PATH": PATH_WITH_SELFFORGE})
    assert _line(toml, "lint") == ".venv/bin/ruff check --output-format concise ."
    assert _line(toml, "test") == ".venv/bin/python -m pytest -q"
    assert "ran here: 3 collected, 2 passed, 1 failed" in out


def test_untracked_environments_are_excluded_and_not_uncommitted(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    _venv(repo / ".venv")
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    out, _ = _init(repo)
    assert "/.venv" in out and "/node_modules" in out
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert "/.venv" in exclude and "/node_modules" in exclude
    assert not (repo / ".gitignore").exists()  # the user's file is theirs
    git(repo, "add", "selfforge.toml")
    git(repo, "commit", "-qm", "directives")
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    assert "uncommitted change" not in proc.stdout, proc.stdout
    assert "warn environments" not in proc.stdout, proc.stdout
    assert proc.returncode == 0, proc.stdout


def test_doctor_names_an_environment_not_excluded_apart(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    _venv(repo / ".venv")
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    assert "uncommitted change" not in proc.stdout, proc.stdout
    assert "warn environments: .venv untracked and not ignored" in proc.stdout
    assert "/.venv" in proc.stdout and proc.returncode == 0


GO_FILES = {
    "go.mod": "module example.com/m\n\ngo 1.19\n",
    "m.go": "package m\n\nfunc Add(a, b int) int { return a + b }\n",
    "m_test.go": 'package m\n\nimport "testing"\n\n'
    "func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal()\n\t}\n}\n",
    # fetches a tool first: the sandbox has no network
    "Makefile": "test:\n\tcurl -sf https://proxy.golang.org/ >/dev/null && go test ./...\n",
}


@pytest.mark.skipif(not os.path.exists("/usr/bin/go"), reason="needs go at /usr/bin/go")
def test_a_make_test_that_cannot_run_gives_way_to_go_test(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "g", GO_FILES)
    out, toml = _init(repo)
    assert _line(toml, "test") == "go test ./...", out
    assert "not used:   make test" in out and "ran here: 1 collected, 1 passed" in out
    [why] = [ln for ln in out.splitlines() if "not used:" in ln]  # what it said, the fix
    assert "without per-test results" in why and "fix: set [checks] test to a command" in why


TOX = (
    "[tox]\nenvlist = py\n[testenv]\ndeps = pytest\ncommands =\n"
    "    pytest --doctest-modules {site-packages}/calc {tox_root}/tests\n"
)


def test_tox_s_paths_are_kept(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "p",
        {
            "calc.py": CALC,
            "tests/test_calc.py": TEST_CALC,
            "tests/conftest.py": "import sys, pathlib\n"
            "sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))\n",
            "docs/conf.py": "import sphinx_theme_nobody_has  # noqa\n",
            "tox.ini": TOX,
        },
    )
    _venv(repo / ".venv")
    out, toml = _init(repo)
    assert _line(toml, "test") == ".venv/bin/python -m pytest -q --doctest-modules tests", out


def test_doctor_without_a_model_is_ready_for_check(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    empty = tmp_path / "nothing"  # no keys file, no key in the environment, no Ollama
    keys = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    env = {**keys, "SELFFORGE_CONFIG_DIR": str(empty), "OLLAMA_HOST": "http://127.0.0.1:9"}
    proc = cli("doctor", "--repo", str(repo), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warn model (for run): none configured" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("ready for check")


def test_doctor_fails_on_a_suite_that_cannot_collect(tmp_path: Path, script) -> None:
    files = {
        "calc.py": CALC,
        "test_calc.py": TEST_CALC,
        "test_broken.py": "import module_nobody_installed\n\n\ndef test_x():\n    pass\n",
    }
    repo = make_repo(tmp_path / "p", files, directives())
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    assert proc.returncode == 1, proc.stdout
    assert "FAIL test check: 1 test module(s) cannot be collected" in proc.stdout
    assert "test_broken.py" in proc.stdout


def test_a_venv_linked_from_outside_the_checkout_is_seen_by_checks(tmp_path: Path, script) -> None:
    outside = tmp_path / "elsewhere" / "venv"
    packages = _venv(outside)
    (packages / "onlyhere.py").write_text("ANSWER = 42\n")
    test = "from onlyhere import ANSWER\n\n\ndef test_answer():\n    assert ANSWER == 42\n"
    repo = make_repo(
        tmp_path / "p",
        {"test_answer.py": test, ".gitignore": ".venv\n"},
        directives(".venv/bin/python -m pytest -q"),
    )
    (repo / ".venv").symlink_to(outside)
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    assert "ok   test check: `.venv/bin/python -m pytest -q`: 1 collected, 1 passed" in (
        proc.stdout
    ), proc.stdout
    (repo / "extra.py").write_text("X = 1\n")
    git(repo, "add", "extra.py")
    git(repo, "commit", "-qm", "extra")
    proc = cli("check", "--repo", str(repo), "HEAD")
    # judged with the linked venv's Python: accepted, or needs review where that Python
    # has coverage.py to see that no test runs extra.py
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    assert proc.returncode == 0 or "no test runs the changed code: extra.py" in proc.stdout


def test_a_check_with_another_path_says_which_tool_is_missing(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "p",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(lint="ruff check ."),
    )
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b", 1))
    git(repo, "commit", "-qam", "fix add")
    proc = cli("check", "--repo", str(repo), "HEAD", env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "ruff: not found on the PATH of this process (PATH=/usr/bin:/bin)" in said, said
    assert "set [checks] lint to its full path" in said and "Traceback" not in said


mcp = pytest.importorskip("mcp")


async def _mcp_session(repo: Path) -> dict[str, object]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "selfforge", "mcp", "--repo", str(repo)],
        env={**os.environ},
    )  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        await session.call_tool("check", {"change": "HEAD"})
        listed = await session.list_resources()
        first = await session.read_resource(listed.resources[0].uri)
    return {"version": init.serverInfo.version, "name": init.serverInfo.name,
            "resources": listed.resources, "first": first}  # fmt: skip


def test_a_test_command_that_starts_with_a_command_substitution_runs(tmp_path: Path) -> None:
    # gobwas/glob's GOPATH command (bench/perf_glob.toml) starts `d=$(mktemp -d) && ...`:
    # its words split as `d=$(mktemp`, `-d)`, and `-d)` was taken for a missing program
    test = f"d=$(mktemp -d) && test -d $d && {PYTEST}"
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(test))
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b", 1))
    git(repo, "commit", "-qam", "fix add")
    proc = cli("check", "--repo", str(repo), "HEAD")
    said = proc.stdout + proc.stderr
    assert "not found on the PATH" not in said, said
    assert proc.returncode == 0, said


def test_the_mcp_server_names_itself_and_lists_its_attempts(tmp_path: Path) -> None:
    from importlib.metadata import version

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b", 1))
    git(repo, "commit", "-qam", "fix add")
    seen = anyio.run(_mcp_session, repo)
    assert seen["name"] == "selfforge" and seen["version"] == version("selfforge")
    [resource] = seen["resources"]
    assert str(resource.uri) == "attempt://1" and "accepted" in (resource.description or "")
    record = json.loads(seen["first"].contents[0].text)
    assert record["outcome"] == "accepted" and "calc.py" in record["diff"]
