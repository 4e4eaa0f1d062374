"""How fast `selfforge serve` answers on a long history.

Builds a journal of 10,000 attempts (with model calls, checks, steps and diffs of
realistic size), serves it with the real app on localhost, and prints the latency of
the timeline page (median and p95 over N requests), filtered and deep pages, and the
other pages. Aim: the timeline in under 200 ms.

    python bench/serve_timeline.py [--attempts 10000] [--requests 50]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from selfforge.journal.store import Journal
from selfforge.judge.outcome import Outcome
from selfforge.web.app import create_app

# rejected twice: as often as the rest together
OUTCOMES = (Outcome.ACCEPTED, Outcome.REJECTED, Outcome.REJECTED, Outcome.NO_EDITS, Outcome.ERROR)
VERBS = ("Fix", "Add", "Refactor", "Document", "Remove", "Speed up")


def build(path: Path, attempts: int, calls_per_attempt: int) -> None:
    rng = random.Random(7)
    with Journal(path) as journal, journal.transaction() as conn:
        start = time.time() - attempts * 60
        runs = max(1, attempts // 500)
        conn.executemany(
            "INSERT INTO runs (id, started_at, ended_at, status, model, goals, stop_reason)"
            " VALUES (?, ?, ?, 'finished', 'gemini:gemini-2.5-flash', '[\"All tests pass\"]',"
            " 'reached the cycle limit')",
            [(r + 1, start + r * 30000, start + (r + 1) * 30000) for r in range(runs)],
        )
        prompt = "You are improving a repository.\n" + "context line\n" * 300  # ~4 KB
        diff = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,40 +1,40 @@\n"
        diff += "".join(f" line {i}\n-old {i}\n+new {i}\n" for i in range(40))
        attempt_rows, call_rows, check_rows, step_rows = [], [], [], []
        for i in range(1, attempts + 1):
            t = start + i * 60
            outcome = rng.choice(OUTCOMES)
            task = f"{rng.choice(VERBS)} module {i % 97}: task {i % 400}"
            attempt_rows.append(
                (
                    i,
                    i * runs // (attempts + 1) + 1,
                    i % 50 + 1,
                    task,
                    outcome,
                    f"{outcome}: reason {i}",
                    i % 3,
                    int(outcome == Outcome.ACCEPTED),
                    diff,
                    f"lesson {i}",
                    t,
                    t + 40,
                )
            )
            for c in range(calls_per_attempt):
                role = ("propose", "critique", "review", "reflect")[c % 4]
                call_rows.append(
                    (
                        attempt_rows[-1][1],
                        i,
                        role,
                        prompt,
                        "reply " * 100,
                        3000,
                        400,
                        0.0021,
                        2.5,
                        t + c,
                    )
                )
            check_rows.append(
                (i, "tests", "pytest -q", int(outcome != "rejected"), "x" * 1500, 6.0, t + 20)
            )
            for name in ("propose", "apply", "syntax", "tests", "review:correctness", "land"):
                step_rows.append((i, name, 1, "detail", 1.5, t + 30))
        conn.executemany(
            "INSERT INTO attempts (id, run_id, cycle, task, outcome, reason, repairs, landed,"
            " diff, lesson, started_at, ended_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            attempt_rows,
        )
        conn.executemany(
            "INSERT INTO model_calls (run_id, attempt_id, role, prompt, response, input_tokens,"
            " output_tokens, cost_usd, latency_s, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            call_rows,
        )
        conn.executemany(
            "INSERT INTO checks (attempt_id, round, name, command, passed, output, duration_s,"
            " created_at) VALUES (?, 0, ?, ?, ?, ?, ?, ?)",
            check_rows,
        )
        conn.executemany(
            "INSERT INTO steps (attempt_id, name, ok, detail, seconds, created_at)"
            " VALUES (?,?,?,?,?,?)",
            step_rows,
        )


def serve(path: Path) -> tuple[str, uvicorn.Server]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(create_app(path), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def measure(http: httpx.Client, url: str, requests: int) -> tuple[float, float]:
    http.get(url).raise_for_status()  # templates compiled, pages cached by SQLite
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        http.get(url).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=4, help="model calls per attempt")
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".selfforge" / "journal.db"
        started = time.perf_counter()
        build(path, args.attempts, args.calls)
        size = path.stat().st_size / 1e6
        print(
            f"journal: {args.attempts:,} attempts, {args.attempts * args.calls:,} model calls, "
            f"{size:.0f} MB, built in {time.perf_counter() - started:.1f}s"
        )
        base, server = serve(path)
        pages = {
            "timeline (newest 50)": "/",
            "timeline, outcome=rejected": "/?outcome=rejected",
            "timeline, task contains": "/?task=module+42",
            "timeline, page at attempt 5000": "/?before=5000",
            "one attempt": f"/attempts/{args.attempts // 2}",
            "runs": "/runs",
            "plots": "/plots",
            "backlog and lessons": "/backlog",
        }
        with httpx.Client(base_url=base, timeout=60) as http:
            for name, url in pages.items():
                median, p95 = measure(http, url, args.requests)
                print(f"  {name:32} median {median:7.1f} ms   p95 {p95:7.1f} ms")
        server.should_exit = True
    print("load average while measuring: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
