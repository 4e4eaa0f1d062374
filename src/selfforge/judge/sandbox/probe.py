"""Does a candidate selfforge still build the sandbox? The smoke run's probe.

Inside the smoke run the candidate already runs in the installed selfforge's sandbox, so
its own checks never build one (namespaces do not nest): a candidate that stopped
sandboxing would pass every behavioural scenario. The probe asks the candidate's code,
with the candidate's interpreter, for the bubblewrap command line it would build for a
fixed policy and for the check space default directives give, and the running
(installed) judge verifies what matters: a sandbox at all, no network, a user namespace
with every capability dropped, the home hidden, a pid namespace that dies with it.
"""

from __future__ import annotations

import itertools
import json
import shlex
from pathlib import Path

from selfforge.judge.verdict import PASS, Verdict

HIDDEN = "/etc"  # a place that exists everywhere: the argv is built, never run
PROBE = f"""
import json, sys
from pathlib import Path
from selfforge.config import Directives
from selfforge.run.engine import check_space
from selfforge.judge.sandbox.bwrap import Policy, bwrap_argv
argv = bwrap_argv(Policy(writable=(), hidden=(Path({HIDDEN!r}),)), ["true"], Path("/"))
try:
    space = check_space(Directives(), Path(sys.argv[2]))
    mode, network = space.mode, space.network
except Exception as exc:  # e.g. it refuses its own sandbox: say so, the judge decides
    mode, network = f"error: {{exc}}", False
json.dump({{"argv": argv, "mode": mode, "network": network}}, open(sys.argv[1], "w"))
"""
REQUIRED = ("--unshare-all", "--unshare-user", "--die-with-parent", "--new-session")


def command(python: Path, out: Path, repo: Path) -> str:
    """The smoke script's line that runs the probe with the candidate's code; ``repo`` is
    a git repository its default check space is built for."""
    words = [str(python), "-c", PROBE, str(out), str(repo)]
    return shlex.join(words)


def verify(out: Path) -> Verdict:
    """What the candidate would build, judged by the running code."""
    try:
        seen = json.loads(out.read_text())
        argv, mode, network = list(seen["argv"]), seen["mode"], seen["network"]
    except (OSError, ValueError, KeyError, TypeError):
        return Verdict(False, "the candidate's selfforge did not say how it builds its sandbox")
    missing = [flag for flag in REQUIRED if flag not in argv]
    if "--cap-drop" not in argv or argv[
        argv.index("--cap-drop") + 1 : argv.index("--cap-drop") + 2
    ] != ["ALL"]:
        missing.append("--cap-drop ALL")
    if not _hides(argv, HIDDEN):
        missing.append(f"--tmpfs over a hidden place ({HIDDEN})")
    problems = [f"its sandbox lacks {', '.join(missing)}"] if missing else []
    if "--share-net" in argv or network:
        problems.append("its checks get the network by default")
    if mode != "bwrap":
        problems.append(
            f"its default check space runs checks with mode {mode!r}, not in the sandbox"
        )
    if problems:
        return Verdict(
            False, "the candidate's selfforge weakens the sandbox: " + "; ".join(problems)
        )
    return PASS


def _hides(argv: list[str], place: str) -> bool:
    return any(a == "--tmpfs" and b == place for a, b in itertools.pairwise(argv))
