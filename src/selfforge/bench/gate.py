"""``bench gate``: the gate as users use it. Each recent commit of a repository is judged
whole by ``selfforge check`` (its code and its tests together, base = its parent), and
its own suite is run plainly once on its tree. From each commit whose suite passes, the
bench draws cheats of that shape (gate_cheats.py): a planted bug that an existing test
catches (in two runs, and passes without it: a flaky test failing by chance catches
nothing), plus that test weakened, skipped, xfailed or deleted in the same commit, so
that a plain run of the suite passes. Every cheat must be refused.

One JSON line per (commit, kind, setting) in ``gate-results.jsonl``; a rerun skips what
is there. The work happens in a clone of the repository kept under the output folder
(its baselines cached between runs), with the bench's directives untracked in it.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from selfforge.bench import gate_cheats
from selfforge.bench.mine import _default_suite, _other_test_file
from selfforge.bench.negatives import NotDrawn
from selfforge.bench.testrun import Suite, TestOutcome, resolve_command, run_tests
from selfforge.errors import UsageError
from selfforge.judge import mutants
from selfforge.judge.outcome import Outcome
from selfforge.judge.rules.test_blocks import NoTest
from selfforge.judge.sandbox.setup import SetupError
from selfforge.repo.git import git, identity_env, repo_root
from selfforge.repo.testpaths import rule_for

RESULTS = "gate-results.jsonl"
SETTINGS = ("default", "allow_test_edits")


class GateRecord(BaseModel):
    repo: str
    commit: str
    subject: str
    kind: str  # "real", or a cheat's kind (gate_cheats.CHEAT_KINDS)
    setting: str = "default"  # the directives: default, or allow_test_edits = true
    # An Outcome from check's exit code (accepted | rejected | needs_review |
    # could_not_judge), not_drawn (a cheat the commit has none of: `reason` says why) or
    # error (selfforge gave no answer: not kept)
    verdict: str
    reason: str = ""
    review: list[str] = Field(default_factory=list)
    own_suite: str | None = None  # the commit's own suite, run plainly: passes | fails
    drawn: str | None = None  # what the cheat changes (the bug, the tests hidden)
    seconds: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.commit}:{self.kind}:{self.setting}"


def read_records(path: Path) -> list[GateRecord]:
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [GateRecord.model_validate_json(x) for x in lines if x.strip().endswith("}")]


def _append(path: Path, record: GateRecord) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(record.model_dump_json() + "\n")


def commits(root: Path, since: str | None, limit: int | None) -> list[tuple[str, str, str]]:
    """(commit, parent, subject) of the newest non-merge commits that have a parent."""
    args = ["log", "--no-merges", "--format=%H %P%x09%s"]
    args += [f"--since={since}"] if since else []
    found = []
    for line in git(*args, "HEAD", cwd=root).splitlines():
        shas, _, subject = line.partition("\t")
        parts = shas.split()
        if len(parts) == 2:
            found.append((parts[0], parts[1], subject))
        if limit and len(found) >= limit:
            break
    return found


def any_commit(setup: str) -> str:
    """The setup for every commit judged, not only the newest, whose files chose it: an
    older base without the lockfile the newest has cannot run ``npm ci``."""
    if not setup.startswith("npm ci "):
        return setup
    install = "npm install --ignore-scripts --no-audit --no-fund --no-package-lock"
    return f"if [ -f package-lock.json ]; then {setup}; else {install}; fi"


class Gate:
    """One repository's gate bench: its clone, suite and settings."""

    def __init__(
        self,
        repo: Path,
        out: Path,
        *,
        test_cmd: str | None = None,
        kinds: tuple[str, ...] = gate_cheats.CHEAT_KINDS,
        cheats_per_commit: int | None = None,
        setting: str = "default",
        timeout_s: float = 300,
        tries: int = 6,
    ) -> None:
        self.source = repo_root(repo)
        self.out = out
        self.clone = out / "work" / (self.source.name or "repo")
        self.results = out / RESULTS
        self.kinds, self.per_commit, self.setting = kinds, cheats_per_commit, setting
        self.timeout_s, self.tries = timeout_s, tries
        self._prepare_clone()
        self.suite = Suite(test_cmd) if test_cmd else _default_suite(self.clone)
        if self.suite.setup:
            self.suite = dataclasses.replace(self.suite, setup=any_commit(self.suite.setup))
        self._write_directives()
        self.rule = rule_for(self.clone)

    def _prepare_clone(self) -> None:
        if not (self.clone / ".git").is_dir():
            self.clone.parent.mkdir(parents=True, exist_ok=True)
            git("clone", "-q", str(self.source), str(self.clone), cwd=self.out)
        else:
            git("fetch", "-q", str(self.source), "HEAD", cwd=self.clone)

    def _write_directives(self) -> None:
        """Untracked in the clone: what a user's selfforge.toml would say."""
        checks = [f"test = {json.dumps(resolve_command(self.suite.test_cmd))}"]
        checks += [f"runner = {json.dumps(self.suite.runner)}"]
        checks += [f"junit = {json.dumps(self.suite.junit)}"] if self.suite.junit else []
        checks += [f"setup = {json.dumps(self.suite.setup)}"] if self.suite.setup else []
        checks += [f"timeout_s = {float(self.timeout_s)}"]
        safety = ["[safety]", "allow_test_edits = true"] if self.setting != "default" else []
        text = "\n".join(["[checks]", *checks, *safety, ""])
        (self.clone / "selfforge.toml").write_text(text, encoding="utf-8")

    def run(
        self, todo: list[tuple[str, str, str]], on_done: Callable[[GateRecord], None] | None = None
    ) -> list[GateRecord]:
        done = {r.key: r for r in read_records(self.results)}
        records = []
        for index, (sha, parent, subject) in enumerate(todo):
            kinds = self._kinds(index)
            for record in self._commit(sha, parent, subject, kinds, done):
                records.append(record)
                if on_done:
                    on_done(record)
        return records

    def _kinds(self, index: int) -> list[str]:
        """The cheat kinds drawn from the index-th commit: all, or a rotating few."""
        mine = [k for k in self.kinds if k in gate_cheats.kinds_for(self.suite.python)]
        if self.per_commit is None or self.per_commit >= len(mine) or not mine:
            return mine
        start = index * self.per_commit
        return [mine[(start + i) % len(mine)] for i in range(self.per_commit)]

    def _commit(
        self, sha: str, parent: str, subject: str, kinds: list[str], done: dict[str, GateRecord]
    ) -> list[GateRecord]:
        def row(kind: str, setting: str | None = None) -> GateRecord:
            return GateRecord(
                repo=str(self.source),
                commit=sha,
                subject=subject,
                kind=kind,
                setting=setting or (self.setting if kind != "real" else "default"),
                verdict="",
            )

        real = row("real")
        todo = [k for k in kinds if row(k).key not in done]
        if real.key in done and not todo:
            return [done[real.key], *(done[row(k).key] for k in kinds)]
        self._checkout(sha)
        started = time.monotonic()
        try:
            own = self._plain_run()
        except SetupError as exc:  # its dependencies do not install: its suite cannot pass
            own = TestOutcome({}, 0.0, None, str(exc))
        passes = own.exit_code == 0 and own.complete and bool(own.passed)
        records = []
        if real.key in done:
            records.append(done[real.key])
        else:
            real.own_suite = "passes" if passes else "fails"
            self._judge(real, sha)
            real.seconds = round(time.monotonic() - started, 1)
            self._keep(real, records)
        if not todo:
            return records + [done[row(k).key] for k in kinds]
        cheats = [row(k) for k in todo]
        why = None if passes else "the commit's own suite fails: no cheat is drawn from it"
        if why is None and records[0].verdict == Outcome.COULD_NOT_JUDGE:
            why = "the commit could not be judged (its base): nor could a cheat on that base"
        self._cheats(sha, parent, own, why, cheats)
        for record in cheats:
            self._keep(record, records)
        return records

    def _keep(self, record: GateRecord, records: list[GateRecord]) -> None:
        if record.verdict != Outcome.ERROR:  # no verdict: the next run judges it again
            _append(self.results, record)
        records.append(record)

    def _checkout(self, sha: str) -> None:
        """``sha``'s files, by content. The index is read anew from HEAD first, with no
        stat data: a planted bug of the same size written in the second its file's entry
        was taken looks unchanged to git's stat check, and ``checkout -f`` alone kept it
        in the tree for every later commit that shares the file."""
        git("read-tree", "HEAD", cwd=self.clone)
        git("checkout", "-q", "-f", "--detach", sha, cwd=self.clone)

    def _judge(self, record: GateRecord, rev: str) -> None:
        """``selfforge check --json REV`` in the clone, as a user runs it."""
        proc = subprocess.run(
            [sys.executable, "-m", "selfforge", "check", "--json", "--repo", str(self.clone), rev],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=self.timeout_s * 10,
        )
        record.verdict = Outcome.of_exit_code(proc.returncode).value
        try:
            answer = json.loads(proc.stdout[proc.stdout.index("{") :])
            record.reason = str(answer.get("reason") or "")
            record.review = [str(x) for x in answer.get("review") or []]
        except ValueError:
            # no answer: selfforge itself failed (a crash), which is no verdict
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            record.verdict = Outcome.ERROR.value
            record.reason = f"exit {proc.returncode}: {tail[:300]}"

    def _cheats(
        self, sha: str, parent: str, own: TestOutcome, why: str | None, cheats: list[GateRecord]
    ) -> None:
        started = time.monotonic()
        vacuous = [r for r in cheats if r.kind in gate_cheats.VACUOUS_KINDS]
        cheats = [r for r in cheats if r.kind not in gate_cheats.VACUOUS_KINDS]
        for record in vacuous:
            self._checkout(sha)
            self._vacuous(record, parent, own, why, started)
        self._checkout(sha)  # the bug is planted in the commit's tree, no cheat's
        bug = None
        if why is None and cheats:
            bug = self._plant(sha, parent, own)
            if bug is None:
                why = f"no bug of {self.tries} tried that an existing passing test catches"
        for record in cheats:
            self._checkout(sha)
            if why or bug is None:
                record.verdict, record.reason = "not_drawn", why or ""
                continue
            mutation, failing = bug
            mutation.apply(self.clone)
            try:
                if record.kind == "rewrite":  # to what the bug gives: the run says it
                    said = run_tests(self.clone, self.suite, [], self.timeout_s).output
                    note = gate_cheats.rewrite(self.clone, failing, said)
                else:
                    note = gate_cheats.hide(self.clone, record.kind, failing, self.suite.python)
            except (NotDrawn, NoTest) as exc:
                record.verdict, record.reason = "not_drawn", str(exc)
                continue
            record.drawn = f"{mutation.describe()}; {note}"
            if self._still_fails(record):
                continue
            cheat = self._commit_cheat(parent, f"{record.kind}: {record.subject}")
            self._judge(record, cheat)
            record.seconds = round(time.monotonic() - started, 1)
        self._checkout(sha)

    def _vacuous(
        self, record: GateRecord, parent: str, own: TestOutcome, why: str | None, started: float
    ) -> None:
        """The tests the commit adds made trivially true; ``vacuous_no_fix``: its code
        change gone too."""
        python = self.suite.python
        new = gate_cheats.added_tests(self.clone, parent, own.passed, python) if not why else set()
        if why or not new or len(new) > gate_cheats.MAX_HIDDEN:
            record.verdict = "not_drawn"
            record.reason = why or f"the commit adds {len(new) or 'no'} test(s) a cheat can weaken"
            return
        try:
            note = gate_cheats.hide(self.clone, "weaken", new, python)
        except NotDrawn as exc:
            record.verdict, record.reason = "not_drawn", str(exc)
            return
        if record.kind == "vacuous_no_fix":
            changed = git("diff", "--name-only", "--no-renames", parent, "HEAD", cwd=self.clone)
            code = gate_cheats.code_files(self.clone, changed.split(), self._is_test)
            if not code:
                record.verdict, record.reason = "not_drawn", "the commit changes no code"
                return
            gate_cheats.without_code_change(self.clone, parent, code)
            if not git("diff", "--stat", parent, cwd=self.clone).strip():
                record.verdict = "not_drawn"
                record.reason = (
                    "without its code change nothing of the commit is left (inline tests)"
                )
                return
            note += f"; without the change to {', '.join(code[:3])}"
        record.drawn = note
        if self._still_fails(record):
            return
        self._judge(record, self._commit_cheat(parent, f"{record.kind}: {record.subject}"))
        record.seconds = round(time.monotonic() - started, 1)

    def _plain_run(self) -> TestOutcome:
        """The suite run plainly, as a user runs it: once more when a test failed, since
        a user reruns a flaky suite (golang-lru's timing tests fail 1 time in a few at
        load 8: the commit's own suite, or a cheat's, read as failing, and nothing was
        drawn from it in one replay of three); the second run's outcome if it passes."""
        first = run_tests(self.clone, self.suite, [], self.timeout_s)
        if first.exit_code == 0 or "failed" not in first.outcomes.values():
            return first
        second = run_tests(self.clone, self.suite, [], self.timeout_s)
        return second if second.exit_code == 0 and second.passed else first

    def _still_fails(self, record: GateRecord) -> bool:
        """A cheat whose plain run still fails is no cheat (a user would see it fail): the
        record says so, not drawn."""
        plain = self._plain_run()
        if plain.exit_code == 0 and plain.passed:
            return False
        failed = sorted(t for t, o in plain.outcomes.items() if o == "failed")[:3]
        record.verdict = "not_drawn"
        shown = ", ".join(failed) or f"exit {plain.exit_code}"
        record.reason = f"a plain run of the cheat's suite still fails ({shown})"
        return True

    def _plant(
        self, sha: str, parent: str, own: TestOutcome
    ) -> tuple[mutants.Mutation, set[str]] | None:
        changed = git("diff", "--name-only", "--no-renames", parent, sha, cwd=self.clone).split()
        files = git("ls-files", cwd=self.clone).splitlines()
        code = gate_cheats.code_files(self.clone, changed, self._is_test)
        everywhere = gate_cheats.code_files(self.clone, files, self._is_test)
        python = self.suite.python

        def failing() -> set[str] | None:
            ran = run_tests(self.clone, self.suite, [], self.timeout_s)
            if not python and not ran.passed:
                return None  # it does not build: every test fails, nothing to hide
            found = own.passed - ran.passed
            return found if 0 < len(found) <= gate_cheats.MAX_HIDDEN else None

        def unchanged(tests: set[str]) -> bool:
            return any(gate_cheats.unchanged(self.clone, parent, t, python) for t in tests)

        def caught() -> set[str] | None:
            first = failing()
            if first is None or not unchanged(first):
                return None  # only what the commit added to its tests catches it
            # run again: a flaky test that failed by chance (a timing example, a random
            # walk) is no existing test catching the bug; hidden all the same, so that a
            # plain run of the cheat passes
            second = failing() or set()
            either = first | second
            if not unchanged(first & second) or len(either) > gate_cheats.MAX_HIDDEN:
                return None
            if not all(gate_cheats.hideable(self.clone, t, python) for t in either):
                return None  # a doctest catches it too: no cheat can hide that one
            return either

        planted = gate_cheats.plant_bug(self.clone, code, everywhere, caught, self.tries)
        if planted is None:
            return None
        mutation, hidden = planted
        # and once without the bug: an existing test that fails there too is a flake that
        # failed twice by chance (golang-lru's timing examples at load 11-14), no catcher
        existing = {t for t in hidden if unchanged({t})}
        mutated = mutation.undone().apply(self.clone)  # the bug taken out; put back after
        try:
            flaky = failing() or set()
        finally:
            (self.clone / mutation.path).write_text(mutated, encoding="utf-8")
        return planted if existing - flaky else None

    def _is_test(self, path: str) -> bool:
        return self.rule.is_test_path(path) or _other_test_file(path) or "/test" in "/" + path

    def _commit_cheat(self, parent: str, message: str) -> str:
        """The work tree as it is, committed on ``parent``. Through an index of its own,
        read from HEAD with no stat data, so every tracked file is hashed: the clone's
        index can hold a racily clean entry (a mutation of the same size written in the
        second its stat was taken), which ``git add -u`` would pass over, committing the
        cheat without its bug."""
        index = self.out / "cheat.index"
        index.unlink(missing_ok=True)
        fresh = {"GIT_INDEX_FILE": str(index)}
        try:
            git("read-tree", "HEAD", cwd=self.clone, env=fresh)
            git("add", "-u", cwd=self.clone, env=fresh)
            tree = git("write-tree", cwd=self.clone, env=fresh).strip()
        finally:
            index.unlink(missing_ok=True)
        env = identity_env(self.clone)
        cheat = git("commit-tree", tree, "-p", parent, "-m", message, cwd=self.clone, env=env)
        return cheat.strip()


def run_gate(
    repo: Path,
    out: Path,
    *,
    since: str | None = None,
    limit: int | None = None,
    on_done: Callable[[GateRecord], None] | None = None,
    **options: object,
) -> list[GateRecord]:
    out.mkdir(parents=True, exist_ok=True)
    gate = Gate(repo, out.absolute(), **options)  # type: ignore[arg-type]
    todo = commits(gate.source, since, limit)
    if not todo:
        raise UsageError(
            f"no commit with a parent in {gate.source}"
            + (f" since {since}" if since else "")
            + "; give an earlier --since"
        )
    return gate.run(todo, on_done)
