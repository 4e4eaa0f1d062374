"""The sandbox shows the home folder by allowlist (#33.7): a PATH entry under home is
shown by its exact folder (``~/.local/bin``), never the top folder that holds it
(``~/.local``, whose ``share/python_keyring`` is on no list of credential names). Real
runs through the CLI with HOME set to a temporary folder: a test that reads the keyring
gets nothing and its content is nowhere in the journal (``selfforge show``, the prompts),
while the tool in ``~/.local/bin`` still runs. Control: with --no-sandbox the same test
reads it. A Rust and a Go project judged the same way where the toolchains exist, and
doctor lists what of home is shown."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import uuid
from pathlib import Path

import pytest

from conftest import CALC, FIX_ADD, PYTEST, TEST_CALC, cli, directives, make_repo

SECRET = f"kr-canary-{uuid.uuid4().hex}"
KEYRING = ".local/share/python_keyring/keyring_pass.cfg"
TOOL_SAYS = "greeting-from-local-bin"

TEST_HOME = """import subprocess

KEYRING = {keyring!r}


def test_the_tool_in_local_bin_runs():
    out = subprocess.run(["sf-greet"], capture_output=True, text=True).stdout
    assert out.strip() == {says!r}


def test_the_keyring_is_out_of_reach():
    try:
        text = open(KEYRING).read()
    except OSError:
        text = ""
    assert not text, "read the keyring: " + text
"""


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    tool = home / ".local" / "bin" / "sf-greet"
    tool.parent.mkdir(parents=True)
    tool.write_text(f"#!/bin/sh\necho {TOOL_SAYS}\n")
    tool.chmod(0o755)
    keyring = home / KEYRING
    keyring.parent.mkdir(parents=True)
    keyring.write_text(f"[keyring_2.0]\npassword_reference = {SECRET}\n")
    return home


def _env(home: Path, *bins: Path) -> dict[str, str]:
    path = os.pathsep.join([*(str(b) for b in bins), str(home / ".local" / "bin")])
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": f"{path}{os.pathsep}{os.environ['PATH']}",
    }


def _journal(repo: Path) -> str:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = [
            *db.execute("SELECT output FROM checks"),
            *db.execute("SELECT summary FROM checks"),
            *db.execute("SELECT prompt FROM model_calls"),
            *db.execute("SELECT reason FROM attempts"),
        ]
    return "\n".join(str(r[0]) for r in rows)


def _failed(repo: Path) -> list[dict]:
    """The test runs' summaries that count a failed test."""
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = db.execute("SELECT summary FROM checks WHERE name LIKE 'tests%'").fetchall()
    summaries = [json.loads(r[0]) for r in rows]
    assert summaries, "no test run was journaled"
    return [s for s in summaries if s.get("failed")]


def _python_run(tmp_path: Path, *extra: str) -> tuple[Path, str]:
    home = _home(tmp_path)
    test_home = TEST_HOME.format(keyring=str(home / KEYRING), says=TOOL_SAYS)
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "test_home.py": test_home}
    repo = make_repo(tmp_path / "repo", files, directives(PYTEST))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"propose": [FIX_ADD]}))
    env = _env(home)
    proc = cli("run", "--repo", str(repo), "--model", f"script:{script}", *extra, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shown = cli("show", "last", "--repo", str(repo), env=env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return repo, shown.stdout + _journal(repo)


def test_a_check_cannot_read_the_keyring_but_runs_the_tool_beside_it(tmp_path: Path) -> None:
    repo, recorded = _python_run(tmp_path)
    assert SECRET not in recorded
    assert _failed(repo) == []  # the tool ran, and the keyring test read nothing
    assert "accepted" in recorded


def test_control_without_the_sandbox_the_keyring_is_read(tmp_path: Path) -> None:
    repo, recorded = _python_run(tmp_path, "--no-sandbox")
    assert "read the keyring" in recorded and SECRET in recorded
    assert _failed(repo)


def test_doctor_lists_what_of_home_is_shown(tmp_path: Path) -> None:
    home = _home(tmp_path)
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    (repo / "selfforge.toml").write_text(directives("sf-greet && " + PYTEST))
    proc = cli("doctor", "--repo", str(repo), env=_env(home))
    line = next((ln for ln in proc.stdout.splitlines() if "home in the sandbox" in ln), "")
    assert "~/.local/bin" in line, proc.stdout
    assert "~/.local/share" not in line and "~/.local," not in line


def _tool(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_each_path_entry_is_shown_by_its_folder_or_its_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfforge.judge.sandbox import bwrap as sandbox
    from selfforge.judge.sandbox import policy

    home = _home(tmp_path).resolve()
    nvm = home / ".nvm" / "versions" / "node" / "v20.1.0"
    _tool(nvm / "bin" / "node")
    (home / ".nvm" / "nvm.sh").write_text("# nvm itself, not needed\n")
    pyenv = home / ".pyenv"
    _tool(pyenv / "libexec" / "pyenv")
    _tool(pyenv / "shims" / "python")
    (pyenv / "versions" / "3.12.1").mkdir(parents=True)
    pipx = home / ".local" / "share" / "pipx" / "venvs" / "black"
    (pipx / "pyvenv.cfg").parent.mkdir(parents=True)
    (pipx / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (home / ".local" / "bin" / "black").symlink_to(_tool(pipx / "bin" / "black"))
    entries = [nvm / "bin", pyenv / "shims", home / ".local" / "bin"]
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", os.pathsep.join([*map(str, entries), os.environ["PATH"]]))

    shown = set(sandbox.runtime_roots(policy._executables("black --check .")))
    inside = {p.relative_to(home).as_posix() for p in shown if home in p.parents}
    assert inside == {
        ".nvm/versions/node/v20.1.0",  # the installation, not nvm
        *(f".pyenv/{part}" for part in ("libexec", "shims", "versions")),  # what shims run
        ".local/bin",  # the folder, not ~/.local
        ".local/share/pipx/venvs/black",  # the venv the program there links into
    }


# --- Rust and Go: the runner's own needs, nothing else of home --------------------------

RUST_LIB = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n"
RUST_TESTS = """#[test]
fn adds() {{
    assert_eq!(adder::add(2, 3), 5);
}}

#[test]
fn home_is_out_of_reach() {{
    for path in [{keyring}, {notes}] {{
        let text = std::fs::read_to_string(path).unwrap_or_default();
        assert!(text.is_empty(), "read {{}}: {{}}", path, text);
    }}
}}
"""
RUST_FIX = "src/lib.rs\n<<<<<<< SEARCH\n    a - b\n=======\n    a + b\n>>>>>>> REPLACE\n"


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("cargo") is None or not (Path.home() / ".rustup" / "toolchains").is_dir(),
    reason="needs rustup's cargo",
)
def test_a_rust_check_gets_rustup_and_cargo_bin_but_not_the_rest_of_cargo_home(
    tmp_path: Path,
) -> None:
    real_rustup, real_cargo_bin = Path.home() / ".rustup", Path(shutil.which("cargo")).parent
    home = _home(tmp_path)
    # The user's toolchain, linked into the fake home; beside it, a file of the user's
    # that the whole ~/.cargo (shown before) would have carried.
    (home / ".rustup" / "update-hashes").mkdir(parents=True)  # as rustup leaves it
    (home / ".rustup" / "toolchains").symlink_to(real_rustup / "toolchains")
    shutil.copy(real_rustup / "settings.toml", home / ".rustup" / "settings.toml")
    (home / ".cargo").mkdir()
    (home / ".cargo" / "bin").symlink_to(real_cargo_bin)
    (home / ".cargo" / "notes.txt").write_text(f"deploy password {SECRET}\n")
    tests = RUST_TESTS.format(
        keyring=json.dumps(str(home / KEYRING)), notes=json.dumps(str(home / ".cargo/notes.txt"))
    )
    files = {
        "Cargo.toml": '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n',
        "src/lib.rs": RUST_LIB,
        "tests/it.rs": tests,
    }
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"propose": [RUST_FIX]}))
    env = _env(home, home / ".cargo" / "bin")
    proc = cli("run", "--repo", str(repo), "--model", f"script:{script}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recorded = cli("show", "last", "--repo", str(repo), env=env).stdout + _journal(repo)
    assert SECRET not in recorded
    assert _failed(repo) == [], recorded[-3000:]  # cargo built and ran, home stayed out
    assert "accepted" in recorded


GO_TEST = """package mathx

import (
	"os"
	"testing"
)

func TestAdd(t *testing.T) {{
	if Add(2, 3) != 5 {{
		t.Fatalf("Add(2, 3) = %d", Add(2, 3))
	}}
}}

func TestHomeIsOutOfReach(t *testing.T) {{
	if text, err := os.ReadFile({keyring}); err == nil {{
		t.Fatalf("read the keyring: %s", text)
	}}
}}
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
def test_a_go_check_runs_and_cannot_read_the_keyring(tmp_path: Path) -> None:
    home = _home(tmp_path)
    files = {
        "go.mod": "module example.com/mathx\n\ngo 1.19\n",
        "mathx.go": "package mathx\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
        "mathx_test.go": GO_TEST.format(keyring=json.dumps(str(home / KEYRING))),
    }
    repo = make_repo(tmp_path / "repo", files, directives("go test ./..."))
    fix = "mathx.go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"propose": [fix]}))
    env = _env(home)
    proc = cli("run", "--repo", str(repo), "--model", f"script:{script}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recorded = cli("show", "last", "--repo", str(repo), env=env).stdout + _journal(repo)
    assert SECRET not in recorded
    assert _failed(repo) == [], recorded[-3000:]
    assert "accepted" in recorded
