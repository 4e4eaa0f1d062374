"""Benchmark: retrieval in any language, judged by history: recall@5 on a real repository.

Each task is a real commit's message; the truth is the source files it changed (tests,
docs and generated files left out). For each commit, the repository is checked out at
its parent (nothing from the change or later is indexed), indexed as `selfforge map`
does, and the files are chosen for the message exactly as `selfforge map --task` does.
Prints recall@5 (share of the truth files among the five chosen, averaged over tasks),
hit@1 and MRR, and the same for BM25 alone: the method of bench/retrieval.py, with
commit messages where that bench has change notes.

Run:   python bench/retrieval_history.py --repo CLONE --suffix .go [--limit 40]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path, PurePosixPath

from retrieval import _score
from selfforge.repo.git import git
from selfforge.repo.testpaths import is_test_path

MIN_WORDS = 5


def tasks(repo: Path, suffixes: tuple[str, ...], limit: int) -> list[dict[str, object]]:
    """Recent non-merge commits that change 1-3 source files of the language."""
    out = git("log", "--no-merges", "--format=\x1e%H %P%n%s%n%b\x1f", "--name-only", cwd=repo)
    found = []
    for block in out.split("\x1e")[1:]:
        head_and_message, _, files_part = block.partition("\x1f")
        head, _, message = head_and_message.partition("\n")
        shas = head.split()
        if len(shas) != 2:
            continue
        files = files_part.split()
        source = [
            f
            for f in files
            if PurePosixPath(f).suffix in suffixes and not is_test_path(f) and "vendor/" not in f
        ]
        text = " ".join(message.split())
        if not 1 <= len(source) <= 3 or len(text.split()) < MIN_WORDS:
            continue
        found.append({"commit": shas[0], "parent": shas[1], "task": text, "truth": source})
        if len(found) >= limit:
            break
    return found


def evaluate(repo: Path, items: list[dict[str, object]]) -> None:
    from selfforge.context.build import choose
    from selfforge.context.graph import load_graph
    from selfforge.context.index import open_index
    from selfforge.context.mentions import find_mentions
    from selfforge.context.repomap import rank_files
    from selfforge.context.retrieval import bm25_scores, rank_for_task
    from selfforge.context.thirdparty import third_party

    with tempfile.TemporaryDirectory(prefix="selfforge-retrieval-") as tmp:
        root = Path(tmp) / "tree"
        git("worktree", "add", "-q", "--detach", str(root), str(items[0]["parent"]), cwd=repo)
        index = open_index(Path(tmp) / "state")
        full, bm25, kept = [], [], 0
        try:
            for item in items:
                git("checkout", "-q", "--detach", "-f", str(item["parent"]), cwd=root)
                truth = {p for p in item["truth"] if (root / p).is_file()}  # type: ignore[union-attr]
                if not truth:
                    continue  # files the commit added: nothing to find at the parent
                kept += 1
                index.update(root)
                graph = load_graph(index)
                text = str(item["task"])
                mentions = find_mentions(text, graph.paths, graph.definers)
                prior = rank_files(graph, mentions)
                ranked = rank_for_task(index, graph, text, mentions, prior, third_party(root), {})
                full.append(_score(choose(ranked), truth))
                scores = bm25_scores(index, text)
                bm25.append(_score(sorted(scores, key=lambda p: -scores[p]), truth))
        finally:
            git("worktree", "remove", "--force", str(root), cwd=repo, check=False)
    print(f"{kept} tasks (commit messages; truth: the source files each changed)")
    for name, rows in (("selfforge", full), ("bm25 only", bm25)):
        recall, hit1, mrr = (sum(r[i] for r in rows) / len(rows) for i in range(3))
        print(f"{name:10} recall@5 {recall:.3f}   hit@1 {hit1:.3f}   MRR {mrr:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--suffix", action="append", required=True, help="e.g. .go (repeat)")
    parser.add_argument("--limit", type=int, default=40)
    args = parser.parse_args()
    items = tasks(args.repo, tuple(args.suffix), args.limit)
    files = subprocess.run(["git", "ls-files"], cwd=args.repo, capture_output=True, text=True)
    count = sum(1 for f in files.stdout.split() if PurePosixPath(f).suffix in args.suffix)
    print(f"repository: {args.repo.name} ({count} {'/'.join(args.suffix)} files at HEAD)")
    evaluate(args.repo, items)


if __name__ == "__main__":
    main()
