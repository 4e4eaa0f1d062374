"""What a first run does ahead of time, so that it waits less: the next attempt's
worktree handed over as it was made, the sandbox probe and the credential search started
while the run sets up (and done once however many ask), the gates' glob patterns and the
prompt templates compiled once. Each must leave the results exactly as before."""

from __future__ import annotations

import dataclasses
import fnmatch
import subprocess
import sys
import threading
import time
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selfforge.cli import resident
from selfforge.config import load_directives
from selfforge.context import build_context
from selfforge.journal.store import Journal
from selfforge.judge.rules import integrity_lang
from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.verdict import Observed
from selfforge.models import from_spec
from selfforge.repo import git as sf_git
from selfforge.repo.workspace import Workspace
from selfforge.roles import caller as roles
from selfforge.run.attempt import Attempt
from selfforge.run.baselines import prewarm_attempt
from selfforge.run.engine import Engine, make_engine
from selfforge.ui.reporters import SilentReporter

from conftest import CALC, TEST_CALC, directives, git, left_worktrees, make_repo


class GitCalls:
    """The git commands selfforge starts (the real ones run; each is also recorded)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, ...]] = []
        real = sf_git._run

        def recorded(args, cwd, input_text=None, env=None):  # type: ignore[no-untyped-def]
            self.calls.append(tuple(args))
            return real(args, cwd, input_text, env)

        monkeypatch.setattr(sf_git, "_run", recorded)


def test_a_prepared_worktree_is_handed_over_once_then_reset_as_usual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(CALC + "\n# two\n")
    git(repo, "commit", "-qam", "two")
    second = git(repo, "rev-parse", "HEAD").strip()
    ws = Workspace(repo)
    ws.prepare()
    tree = ws.prepare_worktree("attempt", first)
    calls = GitCalls(monkeypatch)

    # The attempt that follows gets the tree as it was made: no checkout, no clean.
    assert ws.create_worktree("attempt", first) == tree
    assert calls.calls == []
    assert "# two" not in (tree / "calc.py").read_text()

    # Only once: whatever used it since, the next request cleans it as always.
    (tree / "junk.txt").write_text("left by a check")
    (tree / "calc.py").write_text("broken")
    ws.create_worktree("attempt", first)
    assert not (tree / "junk.txt").exists()
    assert (tree / "calc.py").read_text() == CALC
    assert any("clean" in c for c in calls.calls)

    # Prepared at one commit and asked for at another: checked out at the one asked for.
    ws.prepare_worktree("attempt", first)
    assert ws.create_worktree("attempt", second) == tree
    assert "# two" in (tree / "calc.py").read_text()


def test_the_probe_and_the_credential_search_run_once_however_many_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A home with a toolchain folder holding a credential: the search must find it
    # whether the thread started ahead or the check itself got there first.
    home = tmp_path / "home"
    (home / ".tool" / "bin").mkdir(parents=True)
    (home / ".tool" / ".netrc").write_text("machine x password hunter2")
    monkeypatch.setenv("HOME", str(home))
    sandbox._probe.cache_clear()
    sandbox._credentials_in.cache_clear()
    roots = ((home / ".tool").resolve(),)

    sandbox.probe_ahead()
    results, threads = [], []
    for _ in range(4):
        t = threading.Thread(target=lambda: results.append(sandbox.credentials_in(roots)))
        threads.append(t)
        t.start()
    first = sandbox.probe()
    for t in threads:
        t.join()

    assert sandbox.probe() is first
    assert sandbox._probe.cache_info().misses == 1
    assert sandbox._credentials_in.cache_info().misses == 1
    assert all(found == ((home / ".tool" / ".netrc").resolve(),) for found in results)
    sandbox._credentials_in.cache_clear()


def _fnmatch_rule(path: str, patterns: tuple[str, ...]) -> bool:
    """The gate's rule as it was written, one fnmatch per pattern."""
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, f"*{p}") for p in patterns)


SEGMENTS = st.sampled_from(
    ["src", "a", "testdata", "__snapshots__", ".cargo", "web", "jest.config.js", "x.snap",
     "Cargo.toml", "go.sum", "build.rs", "config", "config.toml", "vite.config.ts", ".mocharc.yml",
     "rust-toolchain", "karma.conf.js", "yarn.lock", "lib.rs", "README.md", "snap", ".nycrc"]
)  # fmt: skip


@given(st.lists(SEGMENTS, min_size=1, max_size=4))
def test_the_compiled_gate_patterns_match_exactly_what_fnmatch_matched(parts: list[str]) -> None:
    path = "/".join(parts)
    for patterns in (integrity_lang.TEST_CONFIG, integrity_lang.MANIFESTS):
        assert integrity_lang._matches(path, patterns) == _fnmatch_rule(path, patterns), path


def test_a_resident_compiles_every_prompt_template_before_any_command() -> None:
    roles._env().cache.clear()  # type: ignore[union-attr]
    resident.warm()
    names = roles.template_names()
    assert {"propose", "review", "plan", "critique"} <= set(names)
    cached = {key[1] for key in roles._env().cache}  # type: ignore[union-attr]
    assert cached == {f"{name}.j2" for name in names}


def _engine(tmp_path: Path) -> tuple[str, Workspace, Journal, Engine]:
    """A run's engine on a small repository (a scripted model with no replies): its HEAD,
    workspace, open journal and engine."""
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    base = git(repo, "rev-parse", "HEAD").strip()
    ws = Workspace(repo)
    journal = Journal(ws.state / "journal.db")
    run_id = journal.start_run(
        pid=1, base_branch="main", base_commit=base, model="script", goals=[], land_mode="merge"
    )
    spec = tmp_path / "script.json"
    spec.write_text("{}")
    engine = make_engine(
        ws, load_directives(repo), journal, from_spec(f"script:{spec}"), SilentReporter(), run_id
    )
    return base, ws, journal, engine


def test_a_known_task_s_context_is_built_while_the_baseline_runs_and_used_only_if_it_fits(
    tmp_path: Path,
) -> None:
    base, ws, journal, engine = _engine(tmp_path)
    task, lessons = "Fix add in calc.py", ["check the sign"]
    engine.lessons_for = lambda _task: list(lessons)

    prewarm_attempt(engine, base, task=task, lessons=lessons)
    assert engine.ready_context is not None
    ready = engine.ready_context[1]
    # What the attempt would have built itself, on the same tree:
    fresh = build_context(
        ws.worktrees / "attempt", task, state_dir=ws.state,
        token_budget=engine.context_window // 2, lessons=lessons,
    )  # fmt: skip
    same = dataclasses.replace(fresh, index_stats=ready.index_stats)  # parsed vs unchanged
    assert ready == same and "calc.py" in ready.chosen

    attempt = Attempt(engine, 1, task, base, Observed())
    attempt.open()
    assert attempt.context() is ready
    assert engine.ready_context is None  # once

    # Another task, or lessons that changed meanwhile: built afresh, not the one made ahead.
    prewarm_attempt(engine, base, task=task, lessons=lessons)
    assert engine.ready_context is not None
    made = engine.ready_context[1]
    other = Attempt(engine, 2, "Document calc.py", base, Observed())
    other.open()
    assert other.context() is not made
    prewarm_attempt(engine, base, task=task, lessons=lessons)
    assert engine.ready_context is not None
    made = engine.ready_context[1]
    lessons.append("a new lesson")
    again = Attempt(engine, 3, task, base, Observed())
    again.open()
    bundle = again.context()
    assert bundle is not made and "a new lesson" in bundle.lessons
    journal.close()


def test_a_run_prepares_its_first_attempt_from_the_start_and_a_failure_there_is_harmless(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfforge.context.history import load_history
    from selfforge.run.baselines import Ahead

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    base = git(repo, "rev-parse", "HEAD").strip()
    ws = Workspace(repo)
    ws.prepare()
    task, lessons = "Fix add in calc.py", ["check the sign"]

    ahead = Ahead(ws, base, 32_000, task, lessons)
    ready = ahead.result()
    ahead.close()  # after result(): nothing left to wait for
    assert ready is not None and ready[0][:2] == (base, task)
    tree = ws.worktrees / "attempt"
    fresh = build_context(tree, task, state_dir=ws.state, token_budget=16_000, lessons=lessons)
    assert ready[1] == dataclasses.replace(fresh, index_stats=ready[1].index_stats)
    # The history was read from the repository for that commit: the attempt's worktree
    # finds it without running git log again.
    calls = GitCalls(monkeypatch)
    assert load_history(tree) is load_history(repo, base)
    assert not any("log" in call for call in calls.calls)
    # ... and the worktree is handed over as made.
    calls.calls.clear()
    assert ws.create_worktree("attempt", base) == tree and calls.calls == []

    # Whatever goes wrong ahead is the attempt's to do again, never the run's error.
    broken = Ahead(ws, "0" * 40, 32_000, task, lessons)
    assert broken.result() is None
    broken.close()


@pytest.mark.parametrize("after_s", [0.0, 0.005, 0.02, 0.1])
def test_a_closed_ahead_never_leaves_a_worktree_behind(tmp_path: Path, after_s: float) -> None:
    """Whenever the run ends (an error, Ctrl-C), closing what it prepared ahead and
    removing the worktrees leaves at most the attempt's, whole (the slot a run keeps for
    the next): no worktree is made, half or whole, once it is closed."""

    from selfforge.run.baselines import Ahead

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    base = git(repo, "rev-parse", "HEAD").strip()
    ws = Workspace(repo)
    ws.prepare()
    ahead = Ahead(ws, base, 32_000, "Fix add in calc.py", [])
    time.sleep(after_s)
    ahead.close()
    ws.remove_worktrees()
    left = left_worktrees(repo)
    time.sleep(0.2)  # whatever the thread still does after close
    assert left_worktrees(repo) == left
    names, listed = left
    assert names in ([], ["attempt"]) and listed == len(names)  # git knows what is there


def test_the_baseline_s_worktree_and_the_attempt_s_are_made_one_at_a_time(tmp_path: Path) -> None:
    """`git worktree add` reads every other worktree's admin folder and fails on one
    being made ("failed to read .git/worktrees/attempt/commondir"): the attempt's, made
    ahead in a thread, and the baseline's never overlap. The race is narrow (CI hit it
    under load before the lock; an idle machine seldom does): raced many times here."""
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    base = git(repo, "rev-parse", "HEAD").strip()
    ws = Workspace(repo)
    ws.prepare()
    errors: list[BaseException] = []

    def make(slot: str, start: threading.Barrier) -> None:
        start.wait()
        try:
            ws.create_worktree(slot, base)
        except BaseException as exc:  # the race's failure, reported below
            errors.append(exc)

    for _ in range(60):
        start = threading.Barrier(2)
        other = threading.Thread(target=make, args=("attempt", start))
        other.start()
        make("baseline", start)
        other.join()
        assert not errors, errors
        for slot in ("attempt", "baseline"):
            assert (ws.worktrees / slot / "calc.py").read_text() == CALC
        ws.remove_worktrees()


def test_the_next_commit_s_history_is_made_from_its_parent_s_kept_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a landing the next run's HEAD has one parent, whose history the last run kept:
    one `git log -n1` instead of a walk of up to 5000 commits, and the same history."""
    from selfforge.context import history as hist

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    state = tmp_path / "state"
    git(repo, "commit", "-q", "--allow-empty", "-m", "an empty commit counts toward the limit")
    first = git(repo, "rev-parse", "HEAD").strip()
    hist._CACHE.clear()
    hist.load_history(repo, first, state)
    (repo / "calc.py").write_text(CALC + "\n# fix the sign of subtraction\n")
    git(repo, "commit", "-qam", "Fix the sign of subtraction")
    second = git(repo, "rev-parse", "HEAD").strip()

    hist._CACHE.clear()  # a new process: only the disk remembers
    calls = GitCalls(monkeypatch)
    made = hist.load_history(repo, second, state)
    assert not any(f"-n{hist.HISTORY_COMMITS}" in call for call in calls.calls), calls.calls
    assert made.changes == hist.read_history(repo, second)
    assert made.changes[0] == hist.Change("Fix the sign of subtraction", ("calc.py",))

    # A merge, or a history that cannot be read, is walked in full: the same answer.
    git(repo, "checkout", "-q", "-b", "side", first)
    (repo / "test_calc.py").write_text(TEST_CALC + "\n# side\n")
    git(repo, "commit", "-qam", "Side change")
    git(repo, "checkout", "-q", "-")
    git(repo, "merge", "-q", "--no-edit", "side")
    merge = git(repo, "rev-parse", "HEAD").strip()
    hist._CACHE.clear()
    calls.calls.clear()
    assert hist.load_history(repo, merge, state).changes == hist.read_history(repo, merge)
    assert any(f"-n{hist.HISTORY_COMMITS}" in call for call in calls.calls)
    (state / "history" / f"{merge}.json").write_text("{not json")
    hist._CACHE.clear()
    assert hist.load_history(repo, merge, state).changes == hist.read_history(repo, merge)


def test_a_commit_selfforge_makes_knows_its_tree_without_asking_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfforge.run.commit_message import restate

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(CALC + "\n# more\n")
    git(repo, "add", "calc.py")
    made = sf_git.commit_index(repo, base, "a change")
    again = restate(repo, made, "the same change, said better")
    calls = GitCalls(monkeypatch)
    trees = [sf_git.tree_of(repo, made), sf_git.tree_of(repo, again)]
    assert calls.calls == []
    truth = git(repo, "rev-parse", f"{made}^{{tree}}").strip()
    assert trees == [truth, truth] != [git(repo, "rev-parse", f"{base}^{{tree}}").strip()] * 2


def test_the_baseline_s_worktree_is_made_before_the_one_prepared_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run checks out two trees; the baseline's checks wait for theirs and nothing
    waits for the attempt's yet: the baseline's goes first (on a large tree each takes
    seconds). Once kept, the attempt's is reset without waiting for the baseline's."""
    from selfforge.run.baselines import Ahead, measure_baseline

    base, ws, journal, engine = _engine(tmp_path)
    calls = GitCalls(monkeypatch)

    def made() -> list[str]:
        return [Path(c[c.index("--detach") + 1]).name for c in calls.calls if "add" in c]

    ahead = Ahead(ws, base, 32_000)
    time.sleep(0.3)  # ample time to make the attempt's, were it not waiting
    assert made() == []
    observed = measure_baseline(engine, base, placed=ahead.placed)
    ahead.result()
    ahead.close()
    assert made() == ["baseline", "attempt"] and observed.tests is not None

    ws.remove_worktrees()  # kept: the next ones are reset, not added
    calls.calls.clear()
    cached = Ahead(ws, base, 32_000)
    # The baseline's worktree is there: the attempt's is reset at once, not after it.
    deadline = time.monotonic() + 10
    while not any("checkout" in c for c in calls.calls) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert any("checkout" in c for c in calls.calls)
    assert measure_baseline(engine, base, placed=cached.placed) == observed  # from the cache
    cached.result()
    cached.close()
    assert made() == [] and any("checkout" in c for c in calls.calls)
    journal.close()


def test_a_check_loads_no_template_engine() -> None:
    """jinja2 comes with the first prompt: a check's judge (no model role) renders none."""
    code = "import sys, selfforge.run.check; print('jinja2' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stdout + done.stderr
