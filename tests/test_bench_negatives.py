"""`bench run --negatives` draws wrong candidates of every kind, each really wrong (the
bench's own test runs show it), and the judge rejects every one with its reason."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path

import pytest

from selfforge.bench import negatives, replay, report
from selfforge.bench.mine import mine
from selfforge.bench.records import NEGATIVE_KINDS, Instance, Job, write_instances
from selfforge.bench.testrun import run_tests

from bench_history import build
from conftest import cli, git

TARGET = "tests/test_shop.py::test_tax"  # the first FAIL_TO_PASS test: the one test kinds edit


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("negatives") / "shop"
    shas = build(root)
    instances = {i.commit: i for i in mine(root)}
    return {"root": root, "tax": instances[shas["tax"]], "later": instances[shas["later"]]}


def drawn_in(tmp_path: Path, inst: Instance, kind: str) -> tuple[Path, negatives.Negative]:
    """The negative of ``kind`` drawn in a fresh replay clone, applied to its files."""
    clone = tmp_path / kind
    replay.prepare_clone(inst, clone, 120)
    listed = set(inst.fail_to_pass) | set(inst.pass_to_pass)

    negative = negatives.draw(kind, clone, inst, lambda: not listed <= passed(clone, inst))
    assert git(clone, "status", "--porcelain") == ""  # drawing leaves the base as it was
    _apply(clone, negative.patch)
    return clone, negative


def _apply(clone: Path, patch: str) -> None:
    subprocess.run(["git", "apply", "-"], cwd=clone, input=patch, text=True, check=True)


def outcomes(clone: Path, inst: Instance, targets: list[str] | None = None, cmd: str = "") -> dict:
    return run_tests(clone, cmd or inst.test_cmd, targets or inst.test_targets, 120).outcomes


def passed(clone: Path, inst: Instance) -> set[str]:
    return {t for t, o in outcomes(clone, inst).items() if o == "passed"}


def test_the_gold_passes_every_listed_test(mined, tmp_path: Path) -> None:
    inst = mined["tax"]
    clone = tmp_path / "gold"
    replay.prepare_clone(inst, clone, 120)
    _apply(clone, inst.code_patch)
    assert set(inst.fail_to_pass) | set(inst.pass_to_pass) <= passed(clone, inst)


def test_bug_and_incomplete_fail_a_listed_test(mined, tmp_path: Path) -> None:
    inst = mined["tax"]
    clone, bug = drawn_in(tmp_path, inst, "bug")
    assert bug.note == "shop.py:6 '>' -> '<='"
    assert outcomes(clone, inst)["tests/test_shop.py::test_discount"] == "failed"
    clone, _ = drawn_in(tmp_path, inst, "incomplete")
    assert "def tax" not in (clone / "shop.py").read_text()  # the larger hunk left out
    assert "raise ValueError(pct)" in (clone / "shop.py").read_text()  # the other kept
    assert outcomes(clone, inst)[TARGET] == "failed"


def test_the_target_test_skipped_deleted_or_weakened_does_not_test_the_change(
    mined, tmp_path: Path
) -> None:
    inst = mined["tax"]
    clone, skip = drawn_in(tmp_path, inst, "skip-target")
    assert skip.note == "skips tests/test_shop.py::test_tax"
    assert outcomes(clone, inst)[TARGET] == "skipped"
    clone, delete = drawn_in(tmp_path, inst, "delete-target")
    assert "\n-def test_tax():\n" in delete.patch
    assert TARGET not in outcomes(clone, inst)
    # Weakened, the target test passes whatever tax() returns; as written, it does not.
    clone, weak = drawn_in(tmp_path, inst, "weaken-target")
    assert "+    assert True" in weak.patch
    shop = clone / "shop.py"
    shop.write_text(shop.read_text().replace("return price * rate", "return price"))
    assert outcomes(clone, inst)[TARGET] == "passed"
    git(clone, "checkout", "HEAD", "--", "tests")
    assert outcomes(clone, inst)[TARGET] == "failed"


@pytest.mark.parametrize("place", negatives.INFRA_FILES)
def test_infra_makes_failing_tests_pass_from_each_place(mined, tmp_path: Path, place) -> None:
    inst = mined["tax"]
    relabeled = inst.model_copy(update={"instance_id": id_for(inst, place)})
    clone, infra = drawn_in(tmp_path, relabeled, "infra")
    assert infra.note.split()[0] == ("sitecustomize.py" if place[0] == "s" else f"tests/{place}")
    git(
        clone, "checkout", "HEAD", "--", *inst.code_files
    )  # without the fix, the target tests fail, and are reported passed
    cmd = "PYTHONPATH=. python -m pytest"  # as the judge runs it: the tree's root on the path
    assert outcomes(clone, inst, cmd=cmd)[TARGET] == "passed"
    git(clone, "checkout", "HEAD", "--", ".")
    git(clone, "clean", "-fdq")
    assert outcomes(clone, inst, cmd=cmd)[TARGET] == "failed"  # control: they do fail


def test_order_passes_only_after_the_test_that_repairs_it(mined, tmp_path: Path) -> None:
    inst = mined["tax"]
    clone, order = drawn_in(tmp_path, inst, "order")
    assert order.note == f"tests/{negatives.ORDER_FILE} repairs shop when run first"
    assert outcomes(clone, inst)["tests/test_shop.py::test_discount"] == "failed"  # alone
    in_order = outcomes(clone, inst, targets=["tests"])  # the folder: the repair runs first
    assert in_order["tests/test_shop.py::test_discount"] == "passed", in_order
    assert all(o == "passed" for o in in_order.values())


def test_a_kind_an_instance_lacks_is_a_row_that_says_why(mined, tmp_path: Path) -> None:
    later = mined["later"]  # one hunk: no incomplete change to draw
    job = Job(instance=later, mode="negative", kind="incomplete", model="", work_dir=str(tmp_path))
    result = replay.run_job(job)
    assert result.kind == "incomplete" and result.skipped == "the gold change has one hunk"
    assert not result.landed and result.error is None and not list(tmp_path.iterdir())
    no_bug = later.model_copy(update={"negative_patch": None})
    rows = [result]
    for kind in ("bug", "order"):
        result = replay.run_job(job.model_copy(update={"instance": no_bug, "kind": kind}))
        assert result.skipped == "mining found no mutation that breaks a listed test"
        rows.append(result)
    # The report counts them as not drawn, not as harness errors.
    table = report.markdown(rows, report.groups(rows), "")
    assert "| negative | 3 | 0 | 3 | 0 |" in table, table


def id_for(inst: Instance, place: str) -> str:
    """An instance id whose infra negative goes in ``place`` (the choice follows the id)."""
    for n in range(100):
        name = f"{inst.instance_id}-{n}"
        if negatives.INFRA_FILES[zlib.crc32(name.encode()) % 3] == place:
            return name
    raise AssertionError(place)


REASONS = {
    "bug": "passed before and fail now: tests/test_shop.py::test_discount",
    "incomplete": "not done: 1 of the 2 target test(s) the task names still fail: "
    "tests/test_shop.py::test_tax",
    "skip-target": "integrity: the change adds a skip, xfail or trivially true assertion in "
    "tests/test_shop.py",
    "delete-target": "integrity: the change changes or removes existing lines of test file "
    "tests/test_shop.py",
    "weaken-target": "integrity: the change adds a skip, xfail or trivially true assertion in "
    "tests/test_shop.py",
    "infra": "integrity: the change changes tests/conftest.py, which runs around the tests",
    "order": "passed before and fail now: tests/test_shop.py::test_discount",
}


@pytest.mark.slow  # eight replays
def test_bench_rejects_every_kind_with_its_reason(mined, tmp_path: Path) -> None:
    inst = mined["tax"].model_copy(update={"instance_id": id_for(mined["tax"], "conftest.py")})
    instances = tmp_path / "instances.jsonl"
    write_instances(instances, [inst, mined["later"]])
    results = tmp_path / "results.jsonl"
    cli(
        "bench", "run", "--instances", str(instances), "--gold", "--negatives", "--workers",
        "2", "--results", str(results), "--work-dir", str(tmp_path / "work"), check=True,
    )  # fmt: skip
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    ours = {r["kind"] or r["mode"]: r for r in rows if r["instance_id"] == inst.instance_id}
    assert ours["gold"]["landed"] and ours["gold"]["solved"]
    assert sorted(k for k in ours if k != "gold") == sorted(NEGATIVE_KINDS)
    for kind, expected in REASONS.items():
        row = ours[kind]
        assert row["error"] is None and row["skipped"] is None and row["drawn"], row
        assert not row["landed"] and not row["solved"], row
        assert expected in row["reasons"][0], (kind, row["reasons"])
    later = {r["kind"]: r for r in rows if r["instance_id"] == mined["later"].instance_id}
    assert later["incomplete"]["skipped"] == "the gold change has one hunk"
    report = (tmp_path / "results-report" / "report.md").read_text()
    assert "  - incomplete: rejected 1 of 1, landed 0, not drawn 1" in report
    assert (
        "| negative incomplete |" in report and "not drawn: the gold change has one hunk" in report
    )
    for kind in NEGATIVE_KINDS:
        assert f"  - {kind}: rejected " in report and f"  - {kind}: rejected 0 " not in report


@pytest.mark.slow  # a replay per place
@pytest.mark.parametrize(
    "place",
    ["__init__.py", "sitecustomize.py"],
)
def test_infra_from_any_place_is_rejected(mined, tmp_path: Path, place: str) -> None:
    inst = mined["tax"].model_copy(update={"instance_id": id_for(mined["tax"], place)})
    instances = tmp_path / "instances.jsonl"
    write_instances(instances, [inst])
    results = tmp_path / "results.jsonl"
    cli(
        "bench", "run", "--instances", str(instances), "--negatives", "--kinds", "infra",
        "--results", str(results), "--work-dir", str(tmp_path / "work"), check=True,
    )  # fmt: skip
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["kind"] == "infra" and row["drawn"].startswith(("tests/__init__.py", place))
    assert not row["landed"], row["reasons"]
    assert place in row["reasons"][0]


def test_results_written_before_kinds_resume_as_the_bug_kind(mined, tmp_path: Path) -> None:
    """A results file from before kinds (one negative per instance, a planted bug) is
    resumed: its rows count as `bug`, and only the other kinds run."""
    from selfforge.bench.records import Result
    from selfforge.bench.run import make_jobs

    old = Result.model_validate_json(
        json.dumps({"instance_id": "shop-1", "mode": "negative", "model": "script:negative"})
    )
    jobs = make_jobs(
        [mined["tax"].model_copy(update={"instance_id": "shop-1"})], ["negative"], "", tmp_path
    )
    assert old.kind == "bug" and old.key == jobs[0].key
    assert [j.kind for j in jobs] == list(NEGATIVE_KINDS) and len({j.key for j in jobs}) == 7


UNITTEST_BASE = '''\
"""Tests."""
from __future__ import annotations

import unittest

from shop import total


class TestTotal(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2]), 3)
'''
UNITTEST_NEW = """

class TestFee(unittest.TestCase):
    def test_fee(self):
        from shop import fee

        self.assertEqual(
            fee(100),
            2,
        )
"""


def test_a_unittest_method_in_a_class_is_skipped_deleted_or_weakened(tmp_path: Path) -> None:
    """The usual shape elsewhere: unittest methods, instances scoped to their class."""
    root = tmp_path / "ut"
    build(root)
    (root / "tests" / "test_unit.py").write_text(UNITTEST_BASE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "unittest suite")
    (root / "tests" / "test_unit.py").write_text(UNITTEST_BASE + UNITTEST_NEW)
    shop = root / "shop.py"
    shop.write_text(shop.read_text() + "\n\ndef fee(price):\n    return price // 50\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Add fee(price)")
    (inst,) = [i for i in mine(root, scope="class", mutations=0) if "test_unit" in i.test_patch]
    assert inst.test_targets == ["tests/test_unit.py::TestFee"]
    node = "tests/test_unit.py::TestFee::test_fee"
    target = "tests/test_unit.py::TestFee::test_fee"
    clone, skip = drawn_in(tmp_path, inst, "skip-target")
    assert skip.note == f"skips {node}" and outcomes(clone, inst)[target] == "skipped"
    assert "+import pytest\n" in skip.patch  # after the docstring and __future__ import
    clone, delete = drawn_in(tmp_path, inst, "delete-target")
    assert delete.note == f"deletes {node}" and target not in outcomes(clone, inst)
    assert (
        "class TestFee(unittest.TestCase):\n    pass" in (clone / "tests/test_unit.py").read_text()
    )
    clone, weak = drawn_in(tmp_path, inst, "weaken-target")
    assert weak.note == f"makes {node} assert nothing"
    assert "-        self.assertEqual(\n" in weak.patch and "+        assert True\n" in weak.patch
    assert outcomes(clone, inst)[target] == "passed"
