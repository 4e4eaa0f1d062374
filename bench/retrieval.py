"""Benchmark: does retrieval choose the files a real change touched? recall@5.

Tasks come from ``bench/retrieval_tasks.json``: change notes from the HISTORY.txt of
docutils (a project nobody here wrote), each filed by its authors under the source
file(s) the change touched; see the JSON's ``source`` for how they were made. The bench
downloads the docutils sdist of the pinned version from PyPI, makes it a git
repository, indexes it and asks for the files of every task, exactly as
``selfforge map --task`` does. Prints recall@5 (share of the truth files among the
five chosen, averaged over tasks), hit@1 and MRR, and the same for BM25 alone.

Run:   .venv/bin/python bench/retrieval.py
Remake the task list from HISTORY.txt:   .venv/bin/python bench/retrieval.py --make-tasks
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from selfforge.repo.git import git

TASKS = Path(__file__).with_name("retrieval_tasks.json")
PACKAGE, VERSION = "docutils", "0.21.2"
RELEASES = ("0.21", "0.20", "0.19", "0.18b1", "0.18", "0.17", "0.16")
MIN_WORDS = 5


def fetch_source(workdir: Path) -> Path:
    """Download and unpack the sdist, and make it a git repository."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"{PACKAGE}=={VERSION}",
            "-d",
            str(workdir),
        ],
        check=True,
    )
    archive = next(workdir.glob(f"{PACKAGE}-{VERSION}.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(workdir, filter="data")
    root = workdir / f"{PACKAGE}-{VERSION}"
    env = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for args in (["init", "-q"], ["add", "-A"], [*env, "commit", "-qm", "sdist"]):
        git(*args, cwd=root)
    return root


# --- making the task list ---------------------------------------------------------------


def _plain(text: str) -> str:
    """reST markup out of a change note, so the task reads like a commit message."""
    text = re.sub(r"\(patch #\d+[^)]*\)", "", text)
    text = re.sub(r":\w+:`([^`]*)`", r"\1", text)
    text = re.sub(r"`+([^`]*)`+_?", r"\1", text)
    return " ".join(text.split())


def _notes(item: list[str]) -> list[str]:
    """First paragraph of every "- " note under one file heading."""
    notes: list[str] = []
    current: list[str] | None = None
    for line in item:
        if line.startswith("  - "):
            current = [line[4:]]
            notes.append(current)  # type: ignore[arg-type]
        elif current is not None and line.startswith("    ") and line.strip():
            current.append(line.strip())
        else:
            current = None
    return [_plain(" ".join(n)) for n in notes]  # type: ignore[arg-type]


def parse_history(text: str, tree: Path) -> list[dict[str, object]]:
    tasks: list[dict[str, object]] = []
    for release, body in re.findall(
        r"^Release (\S+) \([^)]*\)\n=+\n(.*?)(?=^Release |\Z)", text, flags=re.M | re.S
    ):
        if release not in RELEASES:
            continue
        for block in re.split(r"^\* ", body, flags=re.M)[1:]:
            lines = block.splitlines()
            heading_end = next((i for i, line in enumerate(lines) if not line.strip()), 1)
            heading = " ".join(lines[:heading_end])
            files = [f.strip() for f in heading.split(",") if f.strip()]
            if not files or not all(f.endswith(".py") and (tree / f).is_file() for f in files):
                continue
            for note in _notes(lines[heading_end:]):
                if len(note.split()) >= MIN_WORDS:
                    tasks.append({"release": release, "task": note, "truth": files})
    for number, task in enumerate(tasks, 1):
        task["id"] = number
    return tasks


def make_tasks() -> None:
    with tempfile.TemporaryDirectory(prefix="selfforge-bench-retrieval-") as tmp:
        root = fetch_source(Path(tmp))
        tasks = parse_history((root / "HISTORY.txt").read_text(encoding="utf-8"), root)
    document = {
        "source": {
            "project": f"{PACKAGE} {VERSION} (sdist from PyPI)",
            "how": (
                "Each task is the first paragraph of one change note in the project's "
                "HISTORY.txt, for releases " + ", ".join(RELEASES) + ". Docutils developers "
                "file every note, in the commit that makes the change, under the heading of "
                "the source file(s) it changed; truth is that heading. Only headings that are "
                "Python files present in the pinned sdist are used; reST markup is stripped. "
                "Test files a change also touched are not listed in HISTORY.txt, so truth "
                "holds the source files only."
            ),
            "made_by": "bench/retrieval.py --make-tasks",
        },
        "tasks": tasks,
    }
    TASKS.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(tasks)} tasks to {TASKS}")


# --- running ----------------------------------------------------------------------------


def evaluate(root: Path, tasks: list[dict[str, object]]) -> None:
    from selfforge.context.build import choose
    from selfforge.context.graph import load_graph
    from selfforge.context.history import load_history
    from selfforge.context.index import open_index
    from selfforge.context.mentions import find_mentions
    from selfforge.context.repomap import rank_files
    from selfforge.context.retrieval import bm25_scores, rank_for_task
    from selfforge.context.thirdparty import third_party

    index = open_index(root / ".selfforge")
    stats = index.update(root)
    graph = load_graph(index)
    print(f"indexed {stats.files} files ({stats.definitions} definitions) in {stats.seconds:.2f}s")
    started = time.perf_counter()
    full, bm25 = [], []
    for task in tasks:
        text, truth = str(task["task"]), set(task["truth"])  # type: ignore[arg-type]
        mentions = find_mentions(text, graph.paths, graph.definers)
        prior = rank_files(graph, mentions)
        history = load_history(root).scores(text)  # one commit: the sdist, as a whole
        ranked = rank_for_task(index, graph, text, mentions, prior, third_party(root), history)
        full.append(_score(choose(ranked), truth))
        scores = bm25_scores(index, text)
        bm25.append(_score(sorted(scores, key=lambda p: -scores[p]), truth))
    per_task = (time.perf_counter() - started) / len(tasks)
    print(f"{len(tasks)} tasks, {per_task * 1000:.0f} ms per task")
    for name, rows in (("selfforge", full), ("bm25 only", bm25)):
        recall, hit1, mrr = (sum(r[i] for r in rows) / len(rows) for i in range(3))
        print(f"{name:10} recall@5 {recall:.3f}   hit@1 {hit1:.3f}   MRR {mrr:.3f}")


def _score(chosen: list[str], truth: set[str]) -> tuple[float, float, float]:
    top = chosen[:5]
    recall = len(truth & set(top)) / len(truth)
    first = next((i for i, p in enumerate(chosen) if p in truth), None)
    return recall, float(first == 0), 1.0 / (first + 1) if first is not None else 0.0


def main() -> None:
    document = json.loads(TASKS.read_text())
    with tempfile.TemporaryDirectory(prefix="selfforge-bench-retrieval-") as tmp:
        root = fetch_source(Path(tmp))
        print(f"source: {document['source']['project']}")
        evaluate(root, document["tasks"])


if __name__ == "__main__":
    if "--make-tasks" in sys.argv:
        make_tasks()
    else:
        main()
