"""selfforge bench on a small real history: mine, replay (gold, negatives, a scripted
model), resume after SIGKILL, budget, report, and the Ray backend against the pool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selfforge.bench.executors import PoolExecutor
from selfforge.bench.mine import mine
from selfforge.bench.records import Result, append_result, read_instances, write_instances
from selfforge.bench.run import make_jobs, run_bench

from conftest import cli, git, make_repo

SHOP = """\
def total(prices):
    return sum(prices)


def discount(price, pct):
    return price * (100 - pct) / 100
"""

TEST_SHOP = """\
from shop import discount, total


def test_total():
    assert total([1, 2, 3]) == 6


def test_discount():
    assert discount(200, 25) == 150
"""

# The commit also guards discount(): its mutation breaks a PASS_TO_PASS test.
SHOP_WITH_TAX = (
    SHOP.replace(
        "    return price *", "    if pct > 100:\n        raise ValueError(pct)\n    return price *"
    )
    + """

def tax(price, rate):
    return price * rate
"""
)

TEST_TAX = """

def test_tax():
    from shop import tax

    assert tax(100, 0.25) == 25.0
"""

CLAMP = """

def clamp(value, low, high):
    if value < low:
        return low
    return min(value, high)
"""

TEST_CLAMP = """

def test_clamp():
    from shop import clamp

    assert clamp(15, 0, 10) == 10
    assert clamp(-3, 0, 10) == 0
"""


def commit(root: Path, message: str, appends: dict[str, str]) -> str:
    for name, text in appends.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((path.read_text() if path.exists() else "") + text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Two real instances among commits that are not instances, and their mined file."""
    root = make_repo(
        tmp_path_factory.mktemp("hist") / "shop",
        {"shop.py": SHOP, "tests/test_shop.py": TEST_SHOP, "README.md": "shop\n"},
    )
    (root / "shop.py").write_text(SHOP_WITH_TAX)
    tax = commit(root, "Add tax(price, rate)", {"tests/test_shop.py": TEST_TAX})
    commit(root, "Docs: say what shop is", {"README.md": "A tiny shop.\n"})
    commit(root, "Comment total()", {"shop.py": "# totals are plain sums\n"})
    clamp = commit(
        root, "Add clamp(value, low, high)", {"shop.py": CLAMP, "tests/test_shop.py": TEST_CLAMP}
    )
    out = root.parent / "instances.jsonl"
    write_instances(out, mine(root, workers=2))
    return {"root": root, "tax": tax, "clamp": clamp, "instances": out}


def test_mine_finds_the_commits_whose_new_tests_fail_before_and_pass_after(history) -> None:
    instances = read_instances(history["instances"])
    assert [i.commit for i in instances] == [history["clamp"], history["tax"]]  # newest first
    tax = instances[1]
    assert tax.fail_to_pass == ["tests/test_shop.py::test_tax"]
    assert tax.pass_to_pass == [
        "tests/test_shop.py::test_discount",
        "tests/test_shop.py::test_total",
    ]
    assert tax.code_files == ["shop.py"] and tax.test_targets == ["tests/test_shop.py"]
    assert "+def tax(price, rate):" in tax.code_patch and "test_tax" in tax.test_patch
    assert tax.message == "Add tax(price, rate)"
    # The negative is the gold change plus one flip on a line the commit added, and it breaks
    # a listed test (mining verified it by running them).
    assert tax.negative_patch and tax.negative_patch != tax.code_patch
    assert tax.mutation and tax.mutation.startswith("shop.py:")


@pytest.mark.slow  # mines the history a second time
def test_mining_is_reproducible(history, tmp_path: Path) -> None:
    def pinned(instances: list) -> list[dict[str, object]]:
        return [i.model_dump(exclude={"test_time_s"}) for i in instances]

    again = mine(history["root"], workers=1)
    assert pinned(again) == pinned(read_instances(history["instances"]))
    assert [i.commit for i in mine(history["root"], limit=1)] == [history["clamp"]]


@pytest.mark.slow  # replays every instance twice
def test_gold_lands_negatives_are_rejected_and_the_report_says_so(history, tmp_path) -> None:
    results = tmp_path / "results.jsonl"
    proc = cli(
        "bench", "run", "--instances", str(history["instances"]), "--gold", "--negatives",
        "--kinds", "bug", "--workers", "2", "--results", str(results),
        "--work-dir", str(tmp_path / "work"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {(r["instance_id"][-10:], r["mode"]): r for r in map(json.loads, results.open())}
    assert len(rows) == 4 and all(r["error"] is None for r in rows.values())
    tax, clamp = history["tax"][:10], history["clamp"][:10]
    for commit in (tax, clamp):
        gold = rows[commit, "gold"]
        assert gold["landed"] and gold["solved"], gold
        assert gold["selfforge_test_runs"] >= 2 and gold["overhead_s"] is not None
    # tax's negative breaks a test that passed before: the judge must reject it.
    negative = rows[tax, "negative"]
    assert not negative["landed"] and not negative["solved"]
    assert "test_discount" in " ".join(negative["reasons"])
    # clamp's breaks only its new test (failing before and after): whatever the judge
    # decides, the bench grades it by running the tests, and the report counts it.
    negative = rows[clamp, "negative"]
    assert not negative["solved"]
    if negative["landed"]:
        assert negative["fail_to_pass_failing"] == ["tests/test_shop.py::test_clamp"]
    rejected = 2 - sum(rows[c, "negative"]["landed"] for c in (tax, clamp))
    report = tmp_path / "results-report" / "report.md"
    text = report.read_text()
    assert "Gold changes landed: 2 of 2 (100%); false rejections: 0" in text
    assert f"Negatives rejected: {rejected} of 2 ({50 * rejected}%)" in text
    for plot in ("solve_rate.svg", "cost_per_solved.svg", "time.svg"):
        assert (report.parent / plot).read_text().startswith("<svg")
    assert not list((tmp_path / "work").iterdir())  # each job removed its clone
    # The source repository is untouched: the replays ran in clones.
    assert git(history["root"], "status", "--porcelain") == ""


@pytest.mark.slow  # a whole bench run
def test_a_scripted_model_solves_an_instance_from_its_commit_message(
    history, tmp_path: Path
) -> None:
    fix = "shop.py\n<<<<<<< SEARCH\n# totals are plain sums\n=======\n# totals are plain sums\n"
    fix += CLAMP.strip("\n") + "\n>>>>>>> REPLACE\n"
    spec = tmp_path / "model.json"
    spec.write_text(json.dumps({"propose": [{"content": fix, "usage": {"input_tokens": 900}}]}))
    results = tmp_path / "results.jsonl"
    cli(
        "bench", "run", "--instances", str(history["instances"]), "--model", f"script:{spec}",
        "--only", read_instances(history["instances"])[0].instance_id, "--results", str(results),
        "--workers", "1", check=True, env={"SELFFORGE_TREES": str(tmp_path / "trees")},
    )  # fmt: skip
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["mode"] == "model" and row["solved"] and row["attempts"] == 1
    assert row["tokens"] >= 900
    # the clone's worktrees, kept outside it (selfforge.repo.trees), went with it
    assert list((tmp_path / "trees").iterdir()) == []


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_bench(history, results: Path, work: Path) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "selfforge", "bench", "run", "--gold", "--workers", "1"]
    args += ["--instances", str(history["instances"]), "--results", str(results)]
    args += ["--work-dir", str(work)]
    # As from a terminal: Ctrl-C's default action, even when the suite itself was started
    # in the background (a shell's background jobs ignore SIGINT, and children inherit it).
    proc = subprocess.Popen(args, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_default_sigint)  # fmt: skip
    while proc.poll() is None and not (results.exists() and results.read_text().count("\n")):
        time.sleep(0.1)
    return proc


@pytest.mark.slow  # two bench runs each, one of them killed
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_a_run_stopped_mid_way_resumes_without_redoing_finished_jobs(
    history, tmp_path: Path, how: signal.Signals
) -> None:
    results = tmp_path / "results.jsonl"
    proc = start_bench(history, results, tmp_path / "work")
    # SIGKILL: the run and its workers die at once; SIGINT: Ctrl-C at a terminal.
    os.killpg(proc.pid, how)
    _, err = proc.communicate()
    first = results.read_text().splitlines()
    # A job was judged before the signal; the next may have been judged too, or cut off
    # (Ctrl-C reaches its clone as well) with a harness error that does not count as done.
    assert first and json.loads(first[0])["error"] is None
    if how == signal.SIGINT:
        assert proc.returncode == 130 and b"finished jobs are kept" in err, err.decode()[-3000:]
    cli("bench", "run", "--gold", "--workers", "1", "--instances", str(history["instances"]),
        "--results", str(results), "--work-dir", str(tmp_path / "work"), check=True)  # fmt: skip
    lines = results.read_text().splitlines()
    assert lines[: len(first)] == first  # kept as they were
    rows = [json.loads(x) for x in lines]
    judged_before = {r["instance_id"] for r in rows[: len(first)] if r["error"] is None}
    redone = {r["instance_id"] for r in rows[len(first) :]}
    assert not judged_before & redone  # a judged job is never run again
    judged = [r["instance_id"] for r in rows if r["error"] is None]
    assert sorted(judged) == sorted(i.instance_id for i in read_instances(history["instances"]))


def test_the_budget_stops_new_jobs_and_a_higher_one_continues(history, tmp_path) -> None:
    instances = read_instances(history["instances"])
    jobs = make_jobs(instances, ["gold"], "", tmp_path / "work")
    results = tmp_path / "results.jsonl"
    spent = Result(instance_id=instances[0].instance_id, mode="gold", model="script:gold",
                   cost_usd=0.75, landed=True, solved=True)  # fmt: skip
    append_result(results, spent)
    outcome = run_bench(jobs, results, PoolExecutor(1), workers=1, budget_usd=0.5)
    assert outcome.new == 0 and "budget of $0.50 is spent" in outcome.stop_reason
    outcome = run_bench(jobs, results, PoolExecutor(1), workers=1, budget_usd=1.0)
    assert outcome.new == 1 and [r.instance_id for r in outcome.results] == [
        i.instance_id for i in instances
    ]


def test_a_job_that_ended_in_a_harness_error_runs_again_on_resume(history, tmp_path) -> None:
    instances = read_instances(history["instances"])
    jobs = make_jobs(instances, ["gold"], "", tmp_path / "work")
    results = tmp_path / "results.jsonl"
    cut = Result(instance_id=instances[0].instance_id, mode="gold", model="script:gold",
                 error="git clone: interrupted")  # fmt: skip
    append_result(results, cut)
    outcome = run_bench(jobs[:1], results, PoolExecutor(1), workers=1)
    assert outcome.new == 1  # run again, not taken as finished
    assert [(r.error, r.solved) for r in outcome.results] == [(None, True)]


def test_jobs_that_end_in_errors_make_bench_run_exit_1(history, tmp_path) -> None:
    [first, *_] = read_instances(history["instances"])
    gone = first.model_copy(update={"repo": str(tmp_path / "no-such-repo")})
    instances = tmp_path / "instances.jsonl"
    write_instances(instances, [gone])
    proc = cli(
        "bench", "run", "--instances", str(instances), "--gold",
        "--results", str(tmp_path / "results.jsonl"), "--work-dir", str(tmp_path / "work"),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 job(s) ended in errors, not verdicts" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_input_is_one_line_naming_the_fix(tmp_path: Path, history) -> None:
    missing = cli("bench", "run", "--instances", str(tmp_path / "none.jsonl"), "--gold")
    assert missing.returncode == 2 and "bench mine" in missing.stderr
    assert "Traceback" not in missing.stderr
    nothing = cli("bench", "run", "--instances", str(history["instances"]))
    assert nothing.returncode == 2 and "--gold" in nothing.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"instance_id": "x"}\n')
    bad = cli("bench", "run", "--instances", str(broken), "--gold")
    assert bad.returncode == 2 and f"{broken}:1" in bad.stderr


@pytest.mark.slow  # starts a local Ray instance
def test_the_ray_backend_gives_the_same_results_as_the_process_pool(history, tmp_path) -> None:
    pytest.importorskip("ray")
    from selfforge.bench.executors import RayExecutor

    instances = read_instances(history["instances"])
    # One kind of negative: the backends are compared, not the kinds (test_bench_negatives).
    jobs = make_jobs(instances, ["gold", "negative"], "", tmp_path / "work", kinds=("bug",))

    def verdicts(results: list[Result]) -> list[tuple[object, ...]]:
        return [
            (r.instance_id, r.mode, r.landed, r.solved, r.outcome, r.error,
             r.fail_to_pass_failing, r.pass_to_pass_failing)
            for r in results
        ]  # fmt: skip

    pool = run_bench(jobs, tmp_path / "pool.jsonl", PoolExecutor(2), workers=2)
    ray = run_bench(jobs, tmp_path / "ray.jsonl", RayExecutor(2), workers=2)
    assert verdicts(ray.results) == verdicts(pool.results)
    assert all(r.error is None for r in ray.results) and len(ray.results) == 4
    assert all(r.landed and r.solved for r in ray.results if r.mode == "gold")


def test_mutations_change_one_thing_on_added_lines_only(tmp_path: Path) -> None:
    from selfforge.judge.mutants import candidates

    (tmp_path / "m.py").write_text(
        "def f(x):\n"
        "    if not x:\n"
        "        return [x, 1]  # kept out\n"
        "    return (\n"
        "        x)\n"
        "    return x < 2\n"
    )
    found = [(m.line, m.old, m.new) for m in candidates(tmp_path, {"m.py": {2, 3, 4, 5}})]
    # comparisons would come first; line 6 was not added by the commit
    assert found == [(2, "not ", ""), (3, " [x, 1]  # kept out", " None"), (3, "1", "0")]


def test_gzipped_instances_round_trip_to_the_same_bytes(history, tmp_path: Path) -> None:
    instances = read_instances(history["instances"])
    first, second = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    write_instances(first, instances)
    write_instances(second, read_instances(first))
    assert first.read_bytes() == second.read_bytes() and first.read_bytes()[:2] == b"\x1f\x8b"
    assert read_instances(second) == instances


def test_one_test_id_format_even_for_an_older_instances_file(history) -> None:
    """Instances written before node ids (junit's dotted ids) read back as node ids: the
    bench's records, the judge's reasons and the journal name a test the same way."""
    [first, *_] = read_instances(history["instances"])
    data = first.model_dump()
    data["fail_to_pass"] = [
        t.replace("tests/test_shop.py", "tests.test_shop") for t in data["fail_to_pass"]
    ]
    older = type(first).model_validate(data)
    assert older.fail_to_pass == first.fail_to_pass
    assert all(t.startswith("tests/test_shop.py::") for t in older.fail_to_pass)
