"""No leakage of the future in bench: a replay's clone holds only the history up to the
instance's parent, a candidate's code cannot read the fix from git inside its check, and
no prompt of a replay carries the gold code (nor that of a later commit)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from selfforge.bench import replay
from selfforge.bench.mine import mine
from selfforge.bench.records import Instance, read_instances, write_instances
from selfforge.context.history import load_history

from bench_history import build
from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, git, make_repo

# A candidate that reads the fix from git: the gold commit by its sha, every commit
# `git log --all` lists, every commit object the store holds (reachable or not); the
# longest shop.py found replaces the module as it imports.
CHEAT = """

import subprocess as _sp


def _git(*args):
    return _sp.run(["git", *args], capture_output=True, text=True).stdout


_shas = ["{gold}", *_git("log", "--all", "--format=%H").split()]
for _line in _git("cat-file", "--batch-all-objects", "--batch-check").splitlines():
    if " commit " in _line:
        _shas.append(_line.split()[0])
_best = ""
for _sha in _shas:
    _text = _git("show", _sha + ":shop.py")
    if "batch-all-objects" not in _text:  # not this candidate's own commit
        _best = max(_best, _text, key=len)
if _best:
    exec(_best)
"""
TAIL = '    return f"{count} items"\n'


def cheat_reply(gold: str) -> str:
    code = CHEAT.replace("{gold}", gold)
    return f"shop.py\n<<<<<<< SEARCH\n{TAIL}=======\n{TAIL}{code}>>>>>>> REPLACE\n"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("leakage") / "shop"
    shas = build(root)
    instances = {i.commit: i for i in mine(root, mutations=0)}
    out = root.parent / "instances.jsonl"
    write_instances(out, instances.values())
    return {"root": root, **shas, "tax": instances[shas["tax"]], "file": out}


def objects(clone: Path) -> set[str]:
    out = git(clone, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return set(out.split())


def test_the_replay_clone_holds_only_the_past(mined, tmp_path: Path) -> None:
    inst: Instance = mined["tax"]
    clone = tmp_path / "replay"
    replay.prepare_clone(inst, clone, 60)
    seen = objects(clone)
    assert mined["base"] in seen  # the parent and its history are there
    assert mined["tax"].commit not in seen and mined["later"] not in seen
    assert git(clone, "tag").split() == ["v0.1"]  # the tags of past commits only
    assert git(clone, "remote").strip() == "" and git(clone, "branch").split() == ["*", "bench"]
    # Its checks never see the source repository, whose history holds the fix.
    assert (
        f"hidden = [{json.dumps(str(mined['root'].resolve()))}]"
        in (clone / "selfforge.toml").read_text()
    )
    subject = git(clone, "log", "-1", "--format=%s")
    assert inst.commit[:7] not in subject  # the tests-first commit names no future commit
    # The history signal the model's context ranks files with reads this past alone.
    subjects = [c.subject for c in load_history(clone).changes]
    assert subjects == [replay.TESTS_FIRST, "A shop: totals, discounts, a receipt line"]
    # Control: a clone of everything (as the bench made before) holds the fix.
    full = tmp_path / "full"
    git(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(mined["root"]), str(full))
    assert {inst.commit, mined["later"]} <= objects(full)
    assert "v0.3" in git(full, "tag").split()


def run_bench(mined, tmp_path: Path, *args: str) -> list[dict]:
    results = tmp_path / "results.jsonl"
    cli(
        "bench", "run", "--instances", str(mined["file"]), "--results", str(results),
        "--work-dir", str(tmp_path / "work"), "--workers", "2", *args, check=True,
    )  # fmt: skip
    return [json.loads(line) for line in results.read_text().splitlines()]


@pytest.mark.slow  # two replays and a run
def test_a_candidate_cannot_read_the_fix_from_git_in_its_check(mined, tmp_path: Path) -> None:
    spec = tmp_path / "cheat.json"
    spec.write_text(json.dumps({"propose": [cheat_reply(mined["tax"].commit)]}))
    rows = run_bench(
        mined, tmp_path, "--model", f"script:{spec}", "--only", "shop-" + mined["tax"].commit[:10]
    )
    (row,) = rows
    assert row["error"] is None and not row["landed"] and not row["solved"], row
    assert "tests/test_shop.py::test_tax" in row["reasons"][0]
    # Control: the same candidate in a clone with the whole history reads the fix, lands,
    # and its tests pass.
    inst: Instance = mined["tax"]
    full = tmp_path / "full"
    git(tmp_path, "clone", "-q", str(mined["root"]), str(full))
    git(full, "checkout", "-q", "-B", "work", inst.parent)
    subprocess.run(
        ["git", "apply", "--index", "-"], cwd=full, input=inst.test_patch, text=True, check=True
    )
    (full / "selfforge.toml").write_text(replay.directives(inst, 60))
    git(full, "add", "selfforge.toml")
    git(full, "commit", "-q", "-m", "the tests first")
    cli("run", "--repo", str(full), "--model", f"script:{spec}", check=True)
    assert "batch-all-objects" in (full / "shop.py").read_text()  # it landed
    log = json.loads(cli("log", "--repo", str(full), "--json", check=True).stdout)
    assert log[-1]["outcome"] == "accepted", log[-1]


def gold_lines(root: Path, inst: Instance) -> list[str]:
    """The gold change's added lines that nothing a replay starts from contains (its
    files at the parent, the tests, the task): none of them may reach a prompt."""
    names = git(root, "ls-tree", "-r", "--name-only", inst.parent).split()
    start = "".join(git(root, "show", f"{inst.parent}:{n}") for n in names)
    start += inst.test_patch + inst.task
    added = [x[1:].strip() for x in inst.code_patch.splitlines() if x.startswith("+")]
    return [x for x in added if len(x) >= 8 and not x.startswith("++") and x not in start]


def prompts(work: Path, inst: Instance, mode: str) -> list[tuple[str, str]]:
    (journal,) = work.glob(f"{inst.instance_id}-{mode}-*/repo/.selfforge/journal.db")
    with sqlite3.connect(journal) as conn:
        return conn.execute("SELECT role, prompt FROM model_calls ORDER BY id").fetchall()


@pytest.mark.slow  # four replays
def test_no_prompt_of_a_replay_holds_the_gold_or_a_later_change(mined, tmp_path: Path) -> None:
    spec = tmp_path / "cheat.json"
    reply = cheat_reply(mined["tax"].commit)
    spec.write_text(json.dumps({"propose": [reply, reply]}))
    rows = run_bench(mined, tmp_path, "--gold", "--model", f"script:{spec}", "--keep")
    assert len(rows) == 4 and all(r["error"] is None for r in rows), rows
    later, tax = read_instances(mined["file"])  # newest first
    secrets = {i.instance_id: gold_lines(mined["root"], i) for i in (later, tax)}
    assert "def tax(price, rate):" in secrets[tax.instance_id]
    assert "return round(value + 0.0000001, 2)" in secrets[later.instance_id]
    work = tmp_path / "work"
    for inst, future in ((later, []), (tax, secrets[later.instance_id])):
        own = secrets[inst.instance_id]
        model = prompts(work, inst, "model")
        gold = prompts(work, inst, "gold")
        assert {role for role, _ in model} >= {"propose", "critique", "reflect"}
        for role, prompt in model + [(r, p) for r, p in gold if r == "propose"]:
            assert not [x for x in own + future if x in prompt], (inst.instance_id, role)
        for role, prompt in gold:  # reviewers see the gold: it is the candidate
            assert not [x for x in future if x in prompt], (inst.instance_id, role)
    # Control: the grep finds the gold where it is shown, in the gold's review prompt.
    reviews = [p for r, p in prompts(work, tax, "gold") if r == "review"]
    assert reviews and all("def tax(price, rate):" in p for p in reviews)


@pytest.mark.parametrize("hidden", [True, False])
def test_a_folder_the_directives_hide_is_hidden_even_where_it_is_shown(
    tmp_path: Path, script, hidden: bool
) -> None:
    """What a replay's directives hide (the source repository, the other jobs' clones)
    stays hidden from checks, even where a toolchain or `readable` would show it.
    Control: shown and not hidden, the candidate reads it and lands."""
    future = tmp_path / "future"
    future.mkdir()
    (future / "fix.txt").write_text("the fix")
    places = f"readable = [{json.dumps(str(future))}]\n"
    places += f"hidden = [{json.dumps(str(future))}]\n" if hidden else ""
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(extra=f"[sandbox]\n{places}"),
    )
    reads = FIX_ADD.replace(
        "    return a + b", f"    return a + b if open({str(future / 'fix.txt')!r}).read() else 0"
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[reads]), check=True)
    (attempt,) = json.loads(cli("log", "--repo", str(repo), "--json", check=True).stdout)
    assert attempt["outcome"] == ("rejected" if hidden else "accepted"), attempt
    if hidden:
        assert "test_calc.py::test_add: failed (FileNotFoundError" in attempt["reason"]


def explore_bash(command: str) -> str:
    return f"Let me look.\n```bash\n{command}\n```\n"


@pytest.mark.slow  # one exploring replay
def test_an_exploring_proposer_in_a_replay_finds_nothing_after_the_base(
    mined, tmp_path: Path
) -> None:
    """Issue 35.2: inside the proposer sandbox of a bench replay, `git log --all`, `git
    show <gold>`, `git reflog` and `git stash list` find nothing after the base; outside,
    in the mined repository, each finds the future."""
    inst: Instance = mined["tax"]
    root: Path = mined["root"]
    gold, later = inst.commit, mined["later"]
    looks = [
        "git log --all --format=%H",
        f"git show {gold} --stat",
        f"git show {later} --stat",
        "git reflog; git stash list",
        "git cat-file --batch-all-objects --batch-check",
    ]
    # The control: outside, the same looks find the gold and the later commit.
    everything = git(root, "log", "--all", "--format=%H").split()
    assert {gold, later} <= set(everything)
    assert "tax" in git(root, "show", gold, "--stat")
    spec = tmp_path / "peek.json"
    spec.write_text(json.dumps({"propose": [*map(explore_bash, looks), "DONE"]}))
    rows = run_bench(
        mined, tmp_path, "--model", f"script:{spec}", "--proposer", "explore", "--keep",
        "--only", inst.instance_id,
    )  # fmt: skip
    (row,) = rows
    assert row["error"] is None and not row["landed"], row
    (journal,) = (tmp_path / "work").glob(f"{inst.instance_id}-model-*/repo/.selfforge/journal.db")
    with sqlite3.connect(journal) as conn:
        ran = {
            step: (code, out)
            for step, code, out in conn.execute(
                "SELECT step, exit_code, output FROM trajectory WHERE kind = 'bash'"
            )
        }
    assert len(ran) == len(looks), ran
    past = set(git(root, "log", "--format=%H", inst.parent).split())
    future = {gold, later} | (set(everything) - past)
    listed = ran[1][1].split("Output:\n", 1)[1].split()
    assert ran[1][0] == 0 and listed and not future & set(listed), listed
    assert ran[2][0] != 0 and f"bad object {gold}" in ran[2][1]
    assert ran[3][0] != 0 and f"bad object {later}" in ran[3][1]
    for _code, out in ran.values():  # a sha shows only where the command itself names it
        body = out.split("Output:\n", 1)[-1].replace(f"bad object {gold}", "")
        body = body.replace(f"bad object {later}", "")
        assert not any(sha in body for sha in future), out
        assert "def tax(price, rate)" not in body
