"""Reading, hashing and parsing changed files, in parallel when there are many.

Parsing is the whole cost of a cold index, and tree-sitter holds the GIL, so a large
batch is spread over worker processes; a warm update with a handful of changed files
stays in-process, where starting workers would cost more than it saves.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from selfforge.context.files import read_source
from selfforge.context.parsing import ParsedFile, parse_source, spec_for
from selfforge.context.words import expand_counts, search_words

PARALLEL_THRESHOLD = 150


@dataclass(frozen=True)
class ScanJob:
    root: str
    path: str
    old_hash: str | None  # a file whose bytes still hash to this is not parsed again


@dataclass
class Scanned:
    path: str
    digest: str | None  # None: unreadable, binary or too large
    parsed: ParsedFile | None  # None: unchanged content (or unreadable)
    search: tuple[str, str, str, str] = ("", "", "", "")


def scan(job: ScanJob) -> Scanned:
    src = read_source(Path(job.root) / job.path)
    if src is None:
        return Scanned(job.path, None, None)
    digest = hashlib.blake2b(src, digest_size=16).hexdigest()
    if digest == job.old_hash:
        return Scanned(job.path, digest, None)
    spec = spec_for(job.path)
    parsed = parse_source(job.path, src, spec) if spec else ParsedFile(lang="text")
    columns = search_columns(job.path, parsed)
    parsed.words = Counter()  # in the search columns now; not worth sending between processes
    return Scanned(job.path, digest, parsed, columns)


def scan_all(jobs: list[ScanJob]) -> Iterator[Scanned]:
    """Scan results in job order, yielded as they come so the caller can store them
    while workers are still parsing.

    Files the index knew are hashed here first: most still hash the same (a checkout
    rewrote them, or their time is too close to the last indexing to trust), and hashing
    a thousand is cheaper than starting the workers; only what needs parsing decides
    whether workers are started."""
    known: dict[int, Scanned] = {}
    fresh: list[ScanJob] = []
    for i, job in enumerate(jobs):
        if job.old_hash is not None:
            src = read_source(Path(job.root) / job.path)
            digest = hashlib.blake2b(src, digest_size=16).hexdigest() if src is not None else None
            if digest is None or digest == job.old_hash:
                known[i] = Scanned(job.path, digest, None)
                continue
        fresh.append(job)
    parsed = _parse_all(fresh)
    for i in range(len(jobs)):
        yield known[i] if i in known else next(parsed)
    yield from parsed  # nothing left: ends the workers' pool, if any, here


def _parse_all(jobs: list[ScanJob]) -> Iterator[Scanned]:
    workers = min(os.cpu_count() or 1, 4)
    if len(jobs) < PARALLEL_THRESHOLD or workers < 2:
        yield from (scan(job) for job in jobs)
        return
    # fork starts workers fastest and they inherit the loaded grammars.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method)) as pool:
        yield from pool.map(scan, jobs, chunksize=16)


def search_columns(path: str, pf: ParsedFile) -> tuple[str, str, str, str]:
    """The text BM25 sees for a file: path words, symbol names, docstrings, and the words
    of the whole file (identifiers, strings, comments), since a change note's words are
    as often in a message string or comment as in a name."""
    names = [d.name for d in pf.definitions]
    docs = [pf.doc, *(d.doc for d in pf.definitions)]
    return (
        " ".join(search_words(path)),
        " ".join(search_words(" ".join(names))),
        " ".join(d for d in docs if d),
        body_words(pf.words),
    )


def body_words(identifier_counts: Counter[str]) -> str:
    """Each distinct word once, plus once per doubling of its count: term frequency on a
    log scale, at a fraction of the size of the whole text."""
    counts = expand_counts(identifier_counts)
    # int.bit_length(n) is 1 + floor(log2(n)) for n >= 1.
    return "".join((word + " ") * min(n.bit_length(), 6) for word, n in counts.items())
