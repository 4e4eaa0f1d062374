"""Benchmark: retrieval on a real repository that vendors its dependencies. recall@5.

setuptools ships a dozen packages under ``setuptools/_vendor/`` and a copy of distutils
under ``setuptools/_distutils/``; a search over the whole tree finds their files for
tasks that are about setuptools' own code. Tasks are the subjects of setuptools' own
commits; truth is the Python files each commit changed, as they exist at the pinned
commit, leaving out tests and what the project itself excludes from its lint (ruff.toml:
``_vendor``, ``_distutils``, ``_validate_pyproject``) — commits touching only those are
upstream code merged in, not tasks about setuptools. A task is the size of one attempt:
commits changing more than three of the project's files are sweeps (a lint rule applied
everywhere), not tasks. The tree is indexed once, at the pinned commit; the history each
task sees is the log up to its own commit's parent, so no task sees itself or later work.
Prints recall@5, hit@1 and MRR as selfforge runs (vendored code ranked down, history on),
without the recency share of history, without history, and without either (as selfforge
ran before both). The tasks alternate into two halves: the history's weights were
chosen on the first ("dev"); the second ("held-out") played no part in choosing them.

Run:   git clone https://github.com/pypa/setuptools /tmp/setuptools
       .venv/bin/python bench/retrieval_vendored.py /tmp/setuptools
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from selfforge.repo.git import git as selfforge_git

PIN = "7d531288b7c8708d4cc186213da93eaf5d11833d"  # pypa/setuptools main, November 2026
TASKS = 200
MIN_WORDS = 4
MAX_FILES = 3
SKIP_PREFIXES = ("merge", "bump version", "finalize", "release", "revert", "update changelog")
NOT_OWN = ("setuptools/_vendor/", "setuptools/_distutils/", "setuptools/config/_validate")


def git(repo: Path, *args: str) -> str:
    return selfforge_git(*args, cwd=repo)


def make_tasks(repo: Path, pin: str, tree: Path) -> list[dict[str, object]]:
    from selfforge.context.retrieval import is_test_path

    log = git(repo, "log", "--no-merges", "--format=%x00%H%x01%s", "--name-only", pin)
    tasks: list[dict[str, object]] = []
    for record in log.split("\0")[1:]:
        head, _, names = record.partition("\n")
        sha, _, subject = head.partition("\x01")
        if len(subject.split()) < MIN_WORDS or subject.lower().startswith(SKIP_PREFIXES):
            continue
        truth = [
            n
            for n in names.split()
            if n.endswith(".py")
            and not n.startswith(NOT_OWN)
            and not is_test_path(n)
            and (tree / n).is_file()
        ]
        if 0 < len(truth) <= MAX_FILES:
            tasks.append({"sha": sha, "task": subject, "truth": truth})
        if len(tasks) == TASKS:
            break
    return tasks


ROWS = ("selfforge", "no recency", "no history", "as before")


def evaluate(repo: Path, root: Path, tasks: list[dict[str, object]]) -> None:
    from selfforge.context.build import choose
    from selfforge.context.graph import load_graph
    from selfforge.context.history import History, read_history
    from selfforge.context.index import open_index
    from selfforge.context.mentions import find_mentions
    from selfforge.context.repomap import rank_files
    from selfforge.context.retrieval import rank_for_task
    from selfforge.context.thirdparty import third_party

    index = open_index(root / ".selfforge")
    stats = index.update(root)
    graph = load_graph(index)
    vendored = third_party(root)
    shown = sum(1 for p in graph.paths if vendored(p))
    print(f"indexed {stats.files} files ({shown} not the project's own) in {stats.seconds:.1f}s")
    rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ROWS}
    cpu = {"history": 0.0, "ranking": 0.0}
    for task in tasks:
        text, truth = str(task["task"]), set(task["truth"])  # type: ignore[arg-type]
        started = _cpu()
        history = History(read_history(repo, f"{task['sha']}^"))  # the log before the task
        cpu["history"] += _cpu() - started
        started = _cpu()
        mentions = find_mentions(text, graph.paths, graph.definers)
        prior = rank_files(graph, mentions)
        ranked = rank_for_task(index, graph, text, mentions, prior, vendored, history.scores(text))
        cpu["ranking"] += _cpu() - started
        rows["selfforge"].append(_score(choose(ranked), truth))
        for name, predicate, scores in (
            ("no recency", vendored, history.scores(text, recent=False)),
            ("no history", vendored, None),
            ("as before", None, None),
        ):
            ranked = rank_for_task(index, graph, text, mentions, prior, predicate, scores)
            rows[name].append(_score(choose(ranked), truth))
    n = len(tasks)
    print(
        f"{n} tasks (commit subjects); CPU per task: ranking {cpu['ranking'] / n * 1000:.0f} ms,"
        f" building the history from git log {cpu['history'] / n * 1000:.0f} ms"
        " (once per HEAD in a run)"
    )
    print(f"{'':12} {'all':>28}   {'dev half':>28}   {'held-out half':>28}")
    for name, scores in rows.items():
        cells = [_summary(part) for part in (scores, scores[0::2], scores[1::2])]
        print(f"{name:12} " + "   ".join(cells))


def _cpu() -> float:
    """CPU seconds of this process and the git processes it waited for."""
    return sum(os.times()[:4])


def _summary(scores: list[tuple[float, float, float]]) -> str:
    recall, hit1, mrr = (sum(r[i] for r in scores) / len(scores) for i in range(3))
    return f"R@5 {recall:.3f} hit@1 {hit1:.3f} MRR {mrr:.3f}"


def _score(chosen: list[str], truth: set[str]) -> tuple[float, float, float]:
    top = chosen[:5]
    recall = len(truth & set(top)) / len(truth)
    first = next((i for i, p in enumerate(chosen) if p in truth), None)
    return recall, float(first == 0), 1.0 / (first + 1) if first is not None else 0.0


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    repo = Path(argv[0]).resolve()
    pin = argv[1] if len(argv) > 1 else PIN
    with tempfile.TemporaryDirectory(prefix="selfforge-bench-vendored-") as tmp:
        tree = Path(tmp) / "tree"
        git(repo, "worktree", "add", "-q", "--detach", str(tree), pin)
        try:
            tasks = make_tasks(repo, pin, tree)
            print(f"source: pypa/setuptools at {pin[:10]}")
            evaluate(repo, tree, tasks)
        finally:
            git(repo, "worktree", "remove", "--force", str(tree))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
