"""``bench mine``: find commits whose changed tests fail on the parent's code and pass on
their own, and record each as an instance with FAIL_TO_PASS and PASS_TO_PASS test ids.

Commits are read newest first (``git rev-list --no-merges``); the instances keep that
order and the first ``limit`` that qualify are kept, whatever the number of workers.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from selfforge.bench.mine_report import Skip, Skips, collection_failed, early_stop, error_line
from selfforge.bench.records import Instance, node_of
from selfforge.bench.rust_split import split_doc_examples, split_inline, split_test_declarations
from selfforge.bench.testrun import Suite, TestOutcome, run_tests
from selfforge.errors import GitError, UsageError
from selfforge.judge import mutants
from selfforge.judge.runners.node import JS_SUFFIXES
from selfforge.judge.runners.results import DOCTESTS, realign
from selfforge.judge.sandbox.setup import SetupError, key
from selfforge.repo.git import git, repo_root
from selfforge.repo.testpaths import is_rust_test_module, rule_for

CODE_SUFFIXES = {".py", ".pyi", ".go", ".rs", ".js", ".mjs", ".cjs", ".ts", ".mts", ".jsx", ".tsx"}
DEFAULT_TEST_CMD = "python -m pytest"
# Build manifests of the other languages: a commit that changes one (a Cargo feature, a
# Go requirement, package.json's test settings) ran its tests with it, which the gold, its
# code files only, cannot carry; Python's (pyproject.toml, setup.cfg) stay as before.
BUILD_MANIFESTS = (
    "Cargo.toml", "Cargo.lock", "go.mod", "go.sum", "go.work", "go.work.sum", "package.json",
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
)  # fmt: skip


@dataclass(frozen=True)
class Candidate:
    commit: str
    parent: str
    test_files: tuple[str, ...]
    code_files: tuple[str, ...]
    test_modules: tuple[str, ...]  # the test files pytest collects tests from
    # Rust sources whose changes may carry inline tests (a `#[cfg(test)] mod`): split
    # per file into the tests (committed first) and the code (the gold change).
    inline: tuple[str, ...] = ()


def candidates(repo: Path, since: str | None = None) -> list[Candidate]:
    """Non-merge commits, newest first, that change a test module and Python code."""
    args = ["-c", "core.quotePath=false", "log", "--no-merges", "--no-renames"]
    args += ["--format=@@%H %P", "--name-only"]
    if since:
        args.append(f"--since={since}")
    out = git(*args, "HEAD", cwd=repo)
    rule = rule_for(repo)  # the one test-path rule, from the project's pytest settings
    found = []
    for block in out.split("@@")[1:]:
        lines = [x for x in block.splitlines() if x.strip()]
        shas = lines[0].split()
        if len(shas) != 2:  # a root commit has no parent to replay from
            continue
        files = lines[1:]
        tests = tuple(f for f in files if rule.is_test_path(f))
        code = tuple(
            f for f in files if f not in tests and PurePosixPath(f).suffix in CODE_SUFFIXES
        )
        modules = tuple(f for f in tests if rule.is_test_file(f) or _other_test_file(f))
        inline = tuple(f for f in code if f.endswith(".rs"))
        if code and (modules or inline):
            found.append(Candidate(shas[0], shas[1], tests, code, modules, inline))
    return found


def _other_test_file(path: str) -> bool:
    """A test file of another language: ``x_test.go``, ``x.test.js``/``.spec.ts``, a
    Rust integration test (``tests/*.rs``) or test module in its own file (``src/tests.rs``)."""
    pure = PurePosixPath(path)
    if pure.suffix not in CODE_SUFFIXES or pure.suffix in (".py", ".pyi"):
        return False
    if pure.name.endswith("_test.go") or ".test." in pure.name or ".spec." in pure.name:
        return True
    if pure.suffix in JS_SUFFIXES and {"test", "tests", "__tests__"} & set(pure.parts[:-1]):
        return not pure.name.startswith(("_", ".")) and "fixture" not in path

    return pure.suffix == ".rs" and ("tests" in pure.parts[:-1] or is_rust_test_module(path))


def mine_one(
    repo: str,
    candidate: Candidate,
    test_cmd: str | None,
    timeout_s: float,
    mutations: int,
    scope: str = "module",
    setup: str | None = None,
) -> Instance | Skip:
    """Replay one candidate in a scratch clone; the instance, or why it does not hold."""
    scratch = Path(tempfile.mkdtemp(prefix="selfforge-mine-"))
    try:
        git("clone", "-q", "--shared", "--no-checkout", repo, str(scratch), cwd=scratch.parent)
        return _mine_in(scratch, repo, candidate, test_cmd, timeout_s, mutations, scope, setup)
    except GitError as exc:
        return Skip("git", exc.message)  # e.g. a commit whose files git cannot check out here
    except SetupError as exc:
        return Skip("setup", exc.message)  # its dependencies cannot be installed here
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _mine_in(
    root: Path,
    repo: str,
    c: Candidate,
    test_cmd: str | None,
    timeout_s: float,
    mutations: int,
    scope: str,
    setup: str | None = None,
) -> Instance | Skip:
    status = git("diff", "--name-status", "--no-renames", c.parent, c.commit, cwd=root)
    if any(
        line.startswith("D") and line.split("\t")[1] in c.code_files for line in status.splitlines()
    ):
        return Skip("deletes_code")  # the gold change is not an edit to propose
    changed = [line.split("\t")[-1] for line in status.splitlines() if "\t" in line]
    if manifest := next((f for f in changed if PurePosixPath(f).name in BUILD_MANIFESTS), None):
        return Skip("manifest", manifest)  # the commit's tests ran with it, the gold's would not
    modules = [m for m in c.test_modules if _exists(root, c.commit, m)]
    inline = _inline_tests(root, c)
    if not modules and not inline:
        return Skip("no_test_module")
    git("checkout", "-q", "--detach", c.parent, cwd=root)
    _apply(root, c.parent, c.commit, list(c.test_files))
    for path, text in inline.items():
        (root / path).write_text(text, encoding="utf-8")
    if inline:
        git("add", "--", *inline, cwd=root)
    tests_first = git("write-tree", cwd=root).strip()  # the base the replay starts from
    modules += list(inline)
    test_files = [*c.test_files, *inline]
    suite = Suite(test_cmd) if test_cmd else _default_suite(root)
    if setup is not None:
        suite = dataclasses.replace(suite, setup=setup or None)
    if suite.setup and _manifests(root, c.parent) != _manifests(root, c.commit):
        return Skip("dependencies")  # the gold would change them: judged apart, not mined
    state = _setup_state(repo)  # installs shared by every commit with the same manifests
    cmd = suite.test_cmd
    before = run_tests(root, suite, modules, timeout_s, state=state)
    if (broken := _code_does_not_build(root, suite, before)) is not None:
        return Skip("parent_collect", broken)  # no task for `run`: nothing runs on the base
    git("checkout", "-q", "-f", "--detach", c.commit, cwd=root)
    after = run_tests(root, suite, modules, timeout_s, state=state)
    # The same test by its stable identity: a parameter that embeds the time of the run
    # gives the base's run and the commit's different ids for the same test.
    alias = realign(list(before.outcomes), list(after.outcomes))
    passed_before = {alias.get(t, t) for t in before.passed}
    fail_to_pass = sorted(after.passed - passed_before)
    if not before.complete:  # a crash cut the run short: only what it reported counts
        fail_to_pass = [t for t in fail_to_pass if t in before.outcomes]
    pass_to_pass = sorted(after.passed & passed_before)
    if not fail_to_pass or after.exit_code is None:
        return _why_not(before, after)
    if _ships_failing_tests(before, after):
        return Skip("ships_failing")
    targets = modules
    if scope == "class":  # only the test classes holding a FAIL_TO_PASS test: faster runs
        targets = sorted({node_of(t, modules) for t in fail_to_pass})
        pass_to_pass = [t for t in pass_to_pass if node_of(t, modules) in targets]
    code_patch = git("diff", "-U5", tests_first, c.commit, "--", *c.code_files, cwd=root)
    if "\nBinary files " in code_patch or not code_patch.strip():
        return Skip("no_code_patch")
    listed = set(fail_to_pass) | set(pass_to_pass)

    def breaks_a_test() -> bool:
        ran = run_tests(root, suite, targets, timeout_s, state=state)
        # Elsewhere than Python a mutation that does not compile fails every test: a
        # planted bug must still build (some test passes) and break one of ours.
        return not ran.holds(listed) and (suite.python or bool(ran.passed))

    added = mutants.added_lines(
        git("diff", "-U0", tests_first, c.commit, "--", *c.code_files, cwd=root)
    )
    mutation = mutants.find_breaking(root, added, breaks_a_test, mutations) if mutations else None
    negative = git("diff", "-U5", tests_first, "--", *c.code_files, cwd=root) if mutation else None
    name = re.sub(r"\.git$", "", Path(repo.rstrip("/")).name) or "repo"
    return Instance(
        instance_id=f"{name}-{c.commit[:10]}",
        repo=repo,
        commit=c.commit,
        parent=c.parent,
        message=git("log", "-1", "--format=%B", c.commit, cwd=root).strip(),
        test_files=test_files,
        test_targets=targets,
        code_files=list(c.code_files),
        test_patch=git("diff", "--binary", c.parent, tests_first, "--", *test_files, cwd=root),
        code_patch=code_patch,
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        test_cmd=cmd,
        runner=suite.runner,
        junit=suite.junit,
        setup=suite.setup,
        test_time_s=round(after.duration_s, 3),
        negative_patch=negative,
        mutation=mutation.describe() if mutation else None,
    )


def _code_does_not_build(root: Path, suite: Suite, before: TestOutcome) -> str | None:
    """Why a crate's code (not only its tests, written first) does not compile in the
    tests-first state: a parent broken on its own (a merge error the commit repairs).
    Every replay would end in "nothing runs on the unmodified code", never a verdict."""
    from selfforge.judge.runners.results import WHOLE_SUITE, TestReport
    from selfforge.judge.unrunnable import nothing_builds

    if before.outcomes or not suite.test_cmd.lstrip().startswith("cargo"):
        return None
    if "could not compile" not in before.output:
        return None
    report = TestReport(collect_errors={WHOLE_SUITE: "could not compile"})
    return nothing_builds(report, before.output, root)


def _why_not(before: TestOutcome, after: TestOutcome) -> Skip:
    """Why no test failed on the parent and passed on the commit."""
    if before.exit_code is None or after.exit_code is None:
        return Skip("timeout")
    if collection_failed(before.outcomes, before.exit_code, before.output):
        return Skip("parent_collect", error_line(before.output))
    if collection_failed(after.outcomes, after.exit_code, after.output):
        return Skip("commit_collect", error_line(after.output))
    if any(o == "failed" for o in after.outcomes.values()):
        return Skip("fail_after", error_line(after.output))
    return Skip("pass_before")


def _ships_failing_tests(before: TestOutcome, after: TestOutcome) -> bool:
    """Does the commit leave tests failing that had no outcome on the base (their module,
    package or crate did not build)? No judge may land that: without a base outcome any
    failure there could be the change's, so the judge wants such a module to pass as a
    whole (doctests aside). The commit is broken here, not a task to replay."""
    return any(
        outcome == "failed" and test not in before.outcomes and not test.startswith(DOCTESTS)
        for test, outcome in after.outcomes.items()
    )


def _inline_tests(root: Path, c: Candidate) -> dict[str, str]:
    """Each Rust file of the commit whose inline tests or doc examples changed, in its
    tests-first state (the parent's code, the commit's tests)."""
    found = {}
    for path in c.inline:
        if not (_exists(root, c.parent, path) and _exists(root, c.commit, path)):
            continue
        parent = git("show", f"{c.parent}:{path}", cwd=root)
        commit = git("show", f"{c.commit}:{path}", cwd=root)
        first = split_doc_examples(split_inline(parent, commit) or parent, commit)
        first = split_test_declarations(first, commit)
        if first != parent:
            found[path] = first
    return found


def _exists(root: Path, commit: str, path: str) -> bool:
    return bool(git("ls-tree", "--name-only", commit, "--", path, cwd=root).strip())


def _apply(root: Path, parent: str, commit: str, files: list[str]) -> None:
    """Bring ``files`` to their state in ``commit`` (added, changed or deleted); no
    files, nothing (a bare ``--`` would take the whole commit)."""
    if not files:
        return
    patch = git("diff", "--binary", parent, commit, "--", *files, cwd=root)
    if patch:
        git("apply", "--index", "--whitespace=nowarn", "-", cwd=root, input_text=patch)


def _default_suite(root: Path) -> Suite:
    """pytest with the interpreter running the bench (a src layout needs src importable);
    another language's runner where the project is one (go.mod, Cargo.toml, package.json),
    with ``npm ci`` (or ``npm install`` without a lockfile) as the setup of a Node project
    that has dependencies: without install scripts, which would run a package's own code
    with the network (and often fetch more than the registry has)."""
    from selfforge.judge.runners import registry

    if not any(root.glob("*.py")) and (found := registry.init_found(root)) is not None:
        return Suite(found.test, found.runner, found.junit, _npm_setup(root))
    if (root / "src").is_dir():
        return Suite(f"PYTHONPATH=src {DEFAULT_TEST_CMD}")
    return Suite(DEFAULT_TEST_CMD)


def _npm_setup(root: Path) -> str | None:
    import json

    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(package, dict) or not (
        package.get("dependencies") or package.get("devDependencies")
    ):
        return None
    if (root / "package-lock.json").is_file():
        return "npm ci --ignore-scripts --no-audit --no-fund"
    return "npm install --ignore-scripts --no-audit --no-fund --no-package-lock"


def _manifests(root: Path, commit: str) -> str:
    return key(root, commit, "")


def _setup_state(repo: str) -> Path:
    import hashlib

    digest = hashlib.sha256(str(Path(repo).resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "selfforge-mine-setup" / digest


def mine(
    repo: Path,
    *,
    since: str | None = None,
    limit: int | None = None,
    workers: int = 1,
    test_cmd: str | None = None,
    timeout_s: float = 300,
    mutations: int = 8,
    scope: str = "module",
    setup: str | None = None,
    on_progress: Callable[[int, int, int], None] | None = None,
    skips: Skips | None = None,
    stop_after: int = 20,
) -> list[Instance]:
    """Instances in history order (newest first); ``on_progress(done, total, found)``;
    ``skips`` tallies why the other commits made none. When the first ``stop_after``
    commits all fail the same way, for a reason of this machine's (the tests do not
    collect, time out...), a UsageError says so and what to do (0: never)."""
    root = repo_root(repo)
    found_candidates = candidates(root, since)
    if not found_candidates:
        raise UsageError(
            f"no commit in {root} changes both Python code and a test module"
            + (f" since {since}" if since else "")
            + "; mine another repository or an earlier --since"
        )
    instances: list[Instance] = []
    skips = skips if skips is not None else Skips()
    skips.add(Skip("no_tests"), _commits(root, since) - len(found_candidates))
    first: list[Skip] = []
    total = len(found_candidates)
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        window: list[Future[Instance | Skip]] = []
        pending: Iterator[Candidate] = iter(found_candidates)
        done = 0
        while True:
            while len(window) < max(1, workers) * 2:
                nxt = next(pending, None)
                if nxt is None:
                    break
                window.append(
                    pool.submit(
                        mine_one, str(root), nxt, test_cmd, timeout_s, mutations, scope, setup
                    )
                )
            if not window:
                break
            instance = window.pop(0).result()  # in history order: the output is reproducible
            done += 1
            if isinstance(instance, Skip):
                skips.add(instance)
                first.append(instance)
                if not instances and done == stop_after:
                    try:
                        early_stop(first, stop_after)
                    except UsageError:
                        for future in window:  # not started yet: none will be
                            future.cancel()
                        raise
            else:
                instances.append(instance)
            if on_progress:
                on_progress(done, total, len(instances))
            if limit is not None and len(instances) >= limit:
                for future in window:
                    future.cancel()
                break
    return instances


def _commits(root: Path, since: str | None) -> int:
    """How many non-merge commits the history holds (those mining looked at)."""
    args = ["rev-list", "--count", "--no-merges", *([f"--since={since}"] if since else [])]
    return int(git(*args, "HEAD", cwd=root).strip() or 0)
