"""The bench's honesty figures: false fails and false passes with 95% intervals, every
rejected gold classified (selfforge, flaky, environment) by the bench's own reruns, and
the agreement of repeated runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfforge.bench.records import Instance, Result, append_result, read_instances, write_instances
from selfforge.bench.replay import classify, prepare_clone
from selfforge.bench.report import wilson
from test_bench import history  # noqa: F401  (the module-scoped mined history)

from conftest import cli, make_repo


def test_wilson_interval_matches_the_textbook_values() -> None:
    low, high = wilson(0, 25)
    assert low == 0.0 and high == pytest.approx(0.1332, abs=1e-4)  # 0 of 25: up to 13.3%
    low, high = wilson(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert wilson(0, 0) == (0.0, 1.0)  # nothing measured: nothing known


def row(instance: str, mode: str, landed: bool, **extra: object) -> Result:
    model = "script:gold" if mode == "gold" else "script:negative"
    return Result(instance_id=instance, mode=mode, model=model, landed=landed, **extra)  # type: ignore[arg-type]


def test_bench_report_prints_rates_with_intervals_causes_and_agreement(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    rows = [
        *(row(f"i{n}", "gold", True) for n in range(19)),
        row("i19", "gold", False, rejection="flaky", evidence="t::a: passed then failed"),
        *(row(f"i{n}", "negative", False, kind="bug") for n in range(20)),
        *(row(f"i{n}", "negative", False, kind="infra") for n in range(10)),
        row("i10", "negative", True, kind="infra"),
        row("i11", "negative", False, kind="order", skipped="no earlier test"),
        # the same jobs again: one gold now lands where it was rejected
        *(row(f"i{n}", "gold", True, repeat=1) for n in range(20)),
    ]
    for r in rows:
        append_result(results, r)
    proc = cli("bench", "report", str(results), "--out", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Instances: 20; runs per job: 2" in out
    # 1 of the 40 gold rows (two runs of 20) was rejected.
    assert "False fails (gold rejected): 1 of 40 (2.5%, 95% CI 0.4–12.9%)" in out
    assert "by cause: flaky 1" in out and "i19: flaky: t::a: passed then failed" in out
    assert "False passes (a negative landed): 1 of 31 (3.2%, 95% CI 0.6–16.2%)" in out
    assert "- bug: 0 of 20 (0.0%, 95% CI 0.0–16.1%)" in out
    assert "- infra: 1 of 11 (9.1%" in out
    assert "order" not in out  # not drawn: no verdict to count
    assert "Agreement over repeated runs: 19 of 20 jobs gave the same verdict every time" in out
    report = (tmp_path / "report" / "report.md").read_text()
    assert "False fails (gold rejected): 1 of 40" in report


@pytest.mark.slow  # four gold replays, each rejected one rerun by the bench
def test_every_rejected_gold_is_classified_with_its_evidence(history, tmp_path: Path) -> None:  # noqa: F811
    tax = read_instances(history["instances"])[1]
    assert tax.negative_patch
    # A gold whose code fails a listed test wherever it runs: the environment's (as far as
    # the bench can tell: the same failure outside the judge, every time).
    broken = tax.model_copy(update={"instance_id": "broken-gold", "code_patch": tax.negative_patch})
    # A gold the judge refuses for what it is, not for what it does: it adds a conftest.py
    # (test infrastructure) that changes nothing. Every listed test passes with it.
    conftest = (
        "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/conftest.py\n@@ -0,0 +1 @@\n+# shared fixtures go here\n"
    )
    refused = tax.model_copy(
        update={"instance_id": "refused-gold", "code_patch": tax.code_patch + conftest}
    )
    instances = tmp_path / "instances.jsonl"
    write_instances(instances, [broken, refused])
    results = tmp_path / "results.jsonl"
    proc = cli(
        "bench", "run", "--instances", str(instances), "--repo", str(history["root"]),
        "--gold", "--repeat", "2", "--workers", "2", "--results", str(results),
        "--work-dir", str(tmp_path / "work"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted((r["instance_id"], r["repeat"]) for r in rows) == [
        ("broken-gold", 0), ("broken-gold", 1), ("refused-gold", 0), ("refused-gold", 1),
    ]  # fmt: skip
    for r in rows:
        assert not r["landed"] and r["error"] is None
        if r["instance_id"] == "broken-gold":
            assert r["rejection"] == "environment"
            assert "fails 1 listed test(s) here in the bench's own runs too" in r["evidence"]
            assert "tests/test_shop.py::test_discount (failed)" in r["evidence"]
        else:
            assert r["rejection"] == "selfforge"
            assert "passes all 3 listed tests twice" in r["evidence"]
            assert "conftest.py" in " ".join(r["reasons"])
    out = proc.stdout
    assert "False fails (gold rejected): 4 of 4 (100.0%" in out
    assert "by cause: environment 2, selfforge 2" in out
    assert "Agreement over repeated runs: 2 of 2 jobs" in out


def one_commit_instance(
    source: Path,
    name: str,
    module: str,
    added: str,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
) -> Instance:
    """An instance at ``source``'s one commit, whose gold adds a line to app.py and whose
    tests are ``module``."""
    from conftest import git

    head = git(source, "rev-parse", "HEAD").strip()
    return Instance(
        instance_id=name,
        repo=str(source),
        commit=head,
        parent=head,
        message=f"Add {added!r} to app.py",
        test_files=[module],
        test_targets=[module],
        code_files=["app.py"],
        test_patch="",
        code_patch=(
            "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n"
            f" X = 1\n+{added}\n"
        ),
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        test_cmd="python -m pytest",
        test_time_s=0.1,
    )


FLAKY_TEST = """\
from pathlib import Path


def test_sometimes():
    # passes on the first run in a place, fails on the second, passes on the third...
    seen = Path("runs.txt")
    count = int(seen.read_text()) + 1 if seen.exists() else 1
    seen.write_text(str(count))
    assert count % 2 == 1
"""


def test_a_listed_test_that_flips_between_runs_of_the_same_code_is_called_flaky(
    tmp_path: Path,
) -> None:
    source = make_repo(
        tmp_path / "src",
        {"app.py": "X = 1\n", "tests/test_app.py": FLAKY_TEST, ".gitignore": "runs.txt\n"},
    )
    inst = one_commit_instance(
        source,
        "flaky",
        "tests/test_app.py",
        "# X is one",
        [],
        ["tests/test_app.py::test_sometimes"],
    )
    clone = tmp_path / "clone"
    prepare_clone(inst, clone, 60)
    result = Result(instance_id="flaky", mode="gold", model="script:gold")
    # The base passed it (the bench's first run); its rerun is the clone's first run (1:
    # passes), then the gold's two runs (2: fails, 3: passes).
    classify(clone, inst, {"tests/test_app.py::test_sometimes": "passed"}, result, 60)
    assert result.rejection == "flaky"
    assert "tests/test_app.py::test_sometimes: failed then passed" in result.evidence
    assert (clone / "app.py").read_text() == "X = 1\n"  # the gold change was reverted


def test_a_gold_that_leaves_another_test_failing_is_the_commits_own_breakage(
    tmp_path: Path,
) -> None:
    """The commit adds a feature with a new test module, one of whose tests fails at
    the commit itself (mining lists only what passes). The judge wants a module that
    now imports to pass as a whole; the bench says why it refused: the gold's own."""
    tests = (
        "from app import NEW\n\n\ndef test_new():\n    assert NEW == 1\n\n\n"
        "def test_known():\n    assert NEW == 2\n"
    )
    source = make_repo(tmp_path / "src", {"app.py": "X = 1\n", "tests/test_new.py": tests})
    inst = one_commit_instance(
        source, "broken-commit", "tests/test_new.py", "NEW = 1", ["tests/test_new.py::test_new"], []
    )
    clone = tmp_path / "clone"
    prepare_clone(inst, clone, 60)
    result = Result(instance_id="broken-commit", mode="gold", model="script:gold")
    classify(clone, inst, {}, result, 60)
    assert result.rejection == "gold", result.evidence
    assert "leaves 1 other test(s) failing, twice: tests/test_new.py::test_known" in (
        result.evidence
    )


def test_a_parametrized_id_that_holds_double_colons_keeps_its_name(tmp_path: Path) -> None:
    """sqlparse's ids hold SQL casts (`x::text`): the junit id's class ends at the first
    `::`, or two tests collapse into one mangled id and the instance cannot reproduce."""
    from selfforge.bench.records import junit_to_node
    from selfforge.bench.testrun import _node_id

    junit = 'tests.test_regressions::test_issue[select x::text as "z" from foo]'
    node = 'tests/test_regressions.py::test_issue[select x::text as "z" from foo]'
    assert junit_to_node(junit, ["tests/test_regressions.py"]) == node
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_regressions.py").write_text("")
    assert _node_id(tmp_path, junit) == node
