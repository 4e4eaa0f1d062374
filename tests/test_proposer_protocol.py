"""A proposer is one class with ``propose`` and one ``register`` line (ARCHITECTURE.md's
recipe, issue 40.3): a tiny one, registered here as a new module would register it,
is chosen by name, its change is judged, repaired on the judge's feedback and landed;
a name the registry does not hold is refused with the names it does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from selfforge.propose import registry
from selfforge.propose.protocol import Proposal, ProposerContext
from selfforge.propose.worktree import change

from conftest import CALC, TEST_CALC, cli, directives, git, log_json, make_repo


class Tiny:
    """Edits calc.py itself, with no model: first add() fixed and sub() broken, then,
    told why that was rejected, sub() put back."""

    feedback: ClassVar[list[str]] = []  # what each round was told

    def __init__(self, ctx: ProposerContext) -> None:
        self.ctx = ctx

    def propose(self, feedback: str, round: int) -> Proposal:
        Tiny.feedback.append(feedback)
        calc = self.ctx.tree / "calc.py"
        text = calc.read_text()
        if round == 0:
            text = text.replace("return a - b", "return a + b")  # add() and sub()
        else:
            text = text.replace(
                "def sub(a, b):\n    return a + b", "def sub(a, b):\n    return a - b"
            )
        calc.write_text(text)
        return Proposal(change(self.ctx.tree, self.ctx.base))


@pytest.fixture
def tiny() -> Iterator[registry.Entry]:
    Tiny.feedback = []
    yield registry.register(registry.Entry("tiny", Tiny, "the tiny proposer"))
    del registry.PROPOSERS["tiny"]


def test_a_registered_proposer_is_judged_repaired_and_landed(
    tmp_path: Path, script, tiny: registry.Entry
) -> None:
    repo = make_repo(
        tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(max_repairs=1)
    )
    proc = cli("run", "--repo", str(repo), "--model", script(), "--proposer", "tiny")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["repairs"] == 1, attempt
    assert Tiny.feedback[0] == "" and "test_sub" in Tiny.feedback[1]  # the judge's reason
    landed = git(repo, "show", "HEAD:calc.py")
    assert "def add(a, b):\n    return a + b" in landed
    assert "def sub(a, b):\n    return a - b" in landed


def test_the_directives_name_a_registered_proposer_too(
    tmp_path: Path, script, tiny: registry.Entry
) -> None:
    toml = directives(max_repairs=1, extra='\n[model]\nproposer = "tiny"\n')
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, toml)
    proc = cli("run", "--repo", str(repo), "--model", script())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [a["outcome"] for a in log_json(repo)] == ["accepted"]


def test_an_unknown_proposer_is_refused_with_the_registered_names(
    tmp_path: Path, script, tiny: registry.Entry
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    proc = cli("run", "--repo", str(repo), "--model", script(), "--proposer", "nosuch")
    assert proc.returncode == 2
    assert "--proposer 'nosuch': use oneshot, explore or tiny" in proc.stderr

    toml = directives(extra='\n[model]\nproposer = "nosuch"\n')
    (repo / "selfforge.toml").write_text(toml)
    line = toml.splitlines().index('proposer = "nosuch"') + 1
    proc = cli("run", "--repo", str(repo), "--model", script())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        f"selfforge.toml:{line}: bad value for 'model.proposer': use oneshot, explore or tiny "
        "(got 'nosuch')"
    ) in proc.stderr

    from selfforge.cli.commands.bench import _proposers

    assert _proposers("tiny,agent:cmd:true,oneshot") == ("tiny", "agent:cmd:true", "oneshot")
    with pytest.raises(Exception, match="use oneshot, explore, agent:NAME or tiny"):
        _proposers("oneshot,nosuch")
