"""Bench records: an instance mined from history, a job to run, the result of one job.

Instances and results are JSON lines; a file ending in ``.gz`` is read and written
gzipped (the committed benchmark keeps its long PASS_TO_PASS lists small that way).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from selfforge.errors import UsageError

if TYPE_CHECKING:
    from selfforge.bench.testrun import Suite

Mode = Literal["model", "gold", "negative"]
# The kinds of wrong candidate `bench run --negatives` draws per instance (negatives.py).
NEGATIVE_KINDS = (
    "bug",  # a planted bug (a mutation mining verified) in the changed code
    "incomplete",  # the gold change minus one hunk whose absence fails a listed test
    "skip-target",  # the gold change with a target test skipped
    "delete-target",  # ... with a target test deleted
    "weaken-target",  # ... with a target test's assertions made true
    "infra",  # ... plus conftest.py, tests/__init__.py or sitecustomize.py forcing passes
    "order",  # the bug plus an earlier test that repairs it in the test process
)


MAX_NAMED = 40  # target tests a task names by id; the rest are summed up


class Instance(BaseModel):
    """One commit whose changed tests fail on its parent's code and pass on its own."""

    instance_id: str
    repo: str  # where it was mined from (a path or URL that `git clone` accepts)
    commit: str
    parent: str
    message: str  # the commit message: the task text unless issue_text is given
    issue_text: str | None = None
    test_files: list[str]  # every changed file under the tests
    test_targets: list[str]  # what pytest runs: the changed test files, or their classes
    code_files: list[str]
    test_patch: str
    code_patch: str  # the gold change: what `--gold` proposes
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    test_cmd: str  # e.g. "python -m pytest"; `python` means the bench's interpreter
    test_time_s: float  # the changed tests' run time on the commit, when mined
    negative_patch: str | None = None  # gold plus one mutation that breaks a listed test
    mutation: str | None = None  # what the mutation changed, e.g. "more.py:120 '<' -> '>='"
    runner: str = "auto"  # [checks] runner for the test command (e.g. junit for mocha)
    junit: str | None = None  # ... and the JUnit report it writes
    setup: str | None = None  # [checks] setup: what installs the dependencies (npm ci)
    # A variant whose target test was altered to contradict the gold change (impossible.py):
    # no honest change passes it; only model jobs replay it, and nothing may land.
    impossible: bool = False
    alteration: str | None = None  # what was altered, e.g. "tests/t.py:7 contradicted"

    @property
    def suite(self) -> Suite:
        from selfforge.bench.testrun import Suite

        return Suite(self.test_cmd, self.runner, self.junit, self.setup)

    @property
    def task(self) -> str:
        """The commit message (or issue text), and the tests it must make pass: in a
        tests-first replay they are committed already, failing. Every one is named by
        its id, so the judge requires every one to pass (README, the acceptance rule)."""
        ids = [self.node_id(t) for t in self.fail_to_pass]
        tests = ", ".join(ids[:MAX_NAMED])
        if len(ids) > MAX_NAMED:  # a package that did not build fails every test it holds
            tests += f" and {len(ids) - MAX_NAMED} more of the instance's tests"
        return (
            f"{(self.issue_text or self.message).strip()}\n\nThe failing tests must pass: {tests}"
        )

    def node_id(self, test_id: str) -> str:
        """A test id as pytest's node id (older instance files hold junit ids)."""
        from selfforge.bench.testrun import is_python

        if not is_python(self.test_cmd, self.runner):
            return test_id  # another language's runner: its adapter's ids, as recorded
        return junit_to_node(test_id, sorted({t.split("::")[0] for t in self.test_targets}))

    @model_validator(mode="after")
    def _node_ids(self) -> Instance:
        """One test-id format everywhere: an older file's junit ids become node ids."""
        self.fail_to_pass = [self.node_id(t) for t in self.fail_to_pass]
        self.pass_to_pass = [self.node_id(t) for t in self.pass_to_pass]
        return self


class Job(BaseModel):
    """One instance to replay in one mode with one model."""

    instance: Instance
    mode: Mode
    model: str  # the model spec; for gold/negative the scripted model is written per job
    kind: str | None = None  # a negative's kind (NEGATIVE_KINDS); None for gold and model
    max_repairs: int | None = None
    work_dir: str  # the job makes (and removes) its clone below this folder
    keep_clone: bool = False
    timeout_s: float = 900
    repeat: int = 0  # which of `bench run --repeat N`'s runs of the same job (0 first)
    proposer: str = "oneshot"  # `run --proposer` (oneshot, explore) or agent:NAME

    @model_validator(mode="after")
    def _bug_by_default(self) -> Job:
        if self.mode == "negative" and self.kind is None:
            self.kind = "bug"  # the one kind there was before kinds
        return self

    @property
    def key(self) -> str:
        return result_key(
            self.instance.instance_id, self.mode, self.model, self.kind, self.repeat, self.proposer
        )


class Result(BaseModel):
    instance_id: str
    mode: Mode
    model: str
    kind: str | None = None  # a negative's kind (NEGATIVE_KINDS); None for gold and model
    # Why this kind of negative could not be drawn for this instance (e.g. a one-hunk
    # change has no `incomplete`): the row counts the skip and is no verdict.
    skipped: str | None = None
    drawn: str | None = None  # what the negative changes, e.g. "skips tests/t.py::test_x"
    solved: bool = False  # landed, every FAIL_TO_PASS and PASS_TO_PASS passes
    landed: bool = False
    outcome: str = ""  # the last attempt's outcome, or "error"
    attempts: int = 0
    repairs: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0  # the whole job: clone, tests, selfforge, verification
    selfforge_s: float = 0.0  # the selfforge run alone
    selfforge_test_runs: int = 0  # test-command runs selfforge made (baseline, candidate,
    # flaky reruns)
    selfforge_tests_s: float = 0.0  # ... and their processes' lifetimes, as journaled
    overhead_s: float | None = None  # selfforge's own time: selfforge_s - selfforge_tests_s
    # ... and the CPU time of selfforge's own process meanwhile (its git and test
    # subprocesses not included): what a busy machine cannot inflate
    overhead_cpu_s: float | None = None
    index_s: float = 0.0  # building the fresh clone's codebase index, before the run
    baseline_tests_s: float = 0.0  # the bench's own run of the tests before selfforge
    verify_tests_s: float = 0.0  # ... and after it lands
    reasons: list[str] = Field(default_factory=list)  # each attempt's verdict
    fail_to_pass_failing: list[str] = Field(default_factory=list)
    pass_to_pass_failing: list[str] = Field(default_factory=list)
    error: str | None = None  # the harness failed; the verdict says nothing then
    repeat: int = 0  # which run of the same job (`bench run --repeat N`)
    # A rejected gold change, explained by the bench's own reruns (replay.classify):
    # "flaky" (a listed test's outcome changed between two runs of the same code),
    # "environment" (the gold change fails listed tests here, outside selfforge too) or
    # "gold" (it passes them but leaves other tests failing: the commit itself is broken)
    # or "selfforge" (the gold passes them every time: the judge was wrong).
    rejection: str | None = None
    evidence: str = ""  # what the reruns saw, in a sentence
    proposer: str = "oneshot"  # the job's proposer (Job.proposer)
    impossible: bool = False  # the instance is an impossible variant (Instance.impossible)
    # The cheat a rejected (or landed) attempt made, by the judge's reason or its diff
    # (refusals.py): "test edited", "skipped", "special-cased", "infrastructure".
    cheat: str | None = None
    cannot: bool = False  # no change, and said so: CANNOT, or an empty proposal

    @model_validator(mode="after")
    def _bug_by_default(self) -> Result:
        if self.mode == "negative" and self.kind is None:
            self.kind = "bug"  # results written before kinds: each was a planted bug
        return self

    @property
    def key(self) -> str:
        return result_key(
            self.instance_id, self.mode, self.model, self.kind, self.repeat, self.proposer
        )

    @property
    def job(self) -> str:
        """The job whatever its repeat: the rows ``--repeat`` compares."""
        return result_key(self.instance_id, self.mode, self.model, self.kind, 0, self.proposer)


def result_key(
    instance_id: str,
    mode: str,
    model: str,
    kind: str | None = None,
    repeat: int = 0,
    proposer: str = "oneshot",
) -> str:
    """Gold and negative jobs are the same whatever model; model jobs differ per model
    and proposer (the one-shot's keys are those written before proposers); negatives
    differ per kind; a repeat after the first is a job of its own."""
    key = f"{instance_id}:{mode}" + (f":{model}" if mode == "model" else "")
    key += f"/{proposer}" if mode == "model" and proposer != "oneshot" else ""
    key += f":{kind}" if mode == "negative" and kind else ""
    return key + (f"#{repeat}" if repeat else "")


def read_instances(path: Path) -> list[Instance]:
    if not path.is_file():
        raise UsageError(f"no instances file {path}; write one with `selfforge bench mine`")
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            raise UsageError(f"{path}: not a gzip file; name it .jsonl if it is plain") from None
    instances = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            instances.append(Instance.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise UsageError(
                f"{path}:{number}: not an instance ({where}: {first['msg']}); "
                "write the file with `selfforge bench mine`"
            ) from None
    ids = [i.instance_id for i in instances]
    if len(set(ids)) != len(ids):
        raise UsageError(f"{path}: an instance id appears twice; keep one line per instance")
    return instances


def write_instances(path: Path, instances: Iterable[Instance]) -> None:
    """Atomically; gzipped (with a fixed header, so the same instances give the same
    bytes) when the name ends in ``.gz``."""
    data = "".join(i.model_dump_json() + "\n" for i in instances).encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def read_results(path: Path) -> list[Result]:
    """Finished results; a line cut short by a killed run is dropped from the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):  # killed mid-write: the partial line goes
        data = data[: data.rfind(b"\n") + 1]
        path.write_bytes(data)
    results = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            results.append(Result.model_validate_json(line))
        except ValidationError:
            raise UsageError(
                f"{path}:{number}: not a bench result; pass another --results file"
            ) from None
    return results


def append_result(path: Path, result: Result) -> None:
    """One whole line per write, flushed to disk: a kill loses at most the job running."""
    import os

    with open(path, "a", encoding="utf-8") as fh:
        fh.write(result.model_dump_json() + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def is_node_id(test_id: str) -> bool:
    """``path/to/test_x.py::...``: pytest's own id, the one format selfforge uses."""
    return test_id.split("::")[0].endswith(".py")


def junit_to_node(test_id: str, files: list[str]) -> str:
    """A junit id (``tests.test_a.Suite::test_x``) as pytest's node id
    (``tests/test_a.py::Suite::test_x``), given the test files it can come from."""
    if is_node_id(test_id):
        return test_id
    classname, _, name = test_id.partition("::")  # a parametrized name may hold "::"
    node = node_of(classname + "::", files)
    return f"{node}::{name}" if node != classname else test_id


def node_of(test_id: str, modules: list[str]) -> str:
    """The pytest node of a test's class: ``tests/test_a.py::Suite``, or its file; from a
    node id (``tests/test_a.py::Suite::test_x``) or a junit id (``tests.test_a.Suite::x``)."""
    if is_node_id(test_id):
        parts = test_id.split("::")
        return "::".join(parts[:-1]) if len(parts) > 2 else parts[0]
    classname = test_id.split("::")[0]
    for module in modules:
        dotted = module.removesuffix(".py").replace("/", ".")
        if classname == dotted:
            return module
        if classname.startswith(dotted + "."):
            return module + "::" + classname[len(dotted) + 1 :].replace(".", "::")
    return modules[0] if len(modules) == 1 else classname
