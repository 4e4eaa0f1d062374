"""The documentation lives in the repository and stays true: every link resolves inside
it, nothing points outside it, and the examples of the contracts are accepted by the code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from selfforge.config import parse_directives
from selfforge.models import from_spec
from selfforge.models.base import Request

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").rglob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
CONTRACTS = ["cli", "models", "scripted-model", "edit-formats", "directives", "state"]


def _blocks(page: str, language: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves_inside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "shared/DESIGN.md" not in text and "/work/" not in text
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            continue
        resolved = (page.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        assert resolved.exists(), f"{page.name}: {target} does not exist"


def test_the_readme_and_the_index_link_every_contract_and_guide() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for name in CONTRACTS:
        assert f"(docs/{name}.md)" in readme and f"({name}.md)" in index
    for guide in sorted((ROOT / "docs" / "guides").glob("*.md")):
        assert f"(docs/guides/{guide.name})" in readme
        assert f"(guides/{guide.name})" in index


def test_the_scripted_model_example_is_a_valid_script(tmp_path: Path) -> None:
    [example] = _blocks("scripted-model.md", "json")
    path = tmp_path / "script.json"
    path.write_text(example)
    model = from_spec(f"script:{path}")
    reply = model.complete(Request(role="review", messages=[], hints={}))
    assert reply.content == json.loads(example)["review"][0]


def test_the_directives_example_is_accepted(tmp_path: Path) -> None:
    [example] = _blocks("directives.md", "toml")
    directives = parse_directives(example, tmp_path / "selfforge.toml")
    assert directives.goals.items[0] == "All tests pass"
    assert directives.roles.enabled[1] == "propose"
    assert [m.name for m in directives.measures] == ["dedupe", "coverage"]


# Counts each tier's tests at collection, before the tier's -m deselects any (tryfirst).
_COUNT_TIERS = """
import json, sys
import pytest

class Tiers:
    counts = {"fast": 0, "slow": 0}

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        for item in items:
            marks = {mark.name for mark in item.iter_markers()}
            if "realmodel" not in marks:
                self.counts["slow" if "slow" in marks else "fast"] += 1

code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[Tiers()])
open(sys.argv[1], "w").write(json.dumps(Tiers.counts))
sys.exit(code)
"""
# Where the README states each tier's size as a fact of the code (the Development section).
# The suite's row under Performance is a measurement: its counts go with its times, taken
# in one CI run, and are refreshed with them.
_TIER_SIZES = {
    "fast": r"fast one \(about ([\d,]+) tests",
    "slow": r"`-m slow` runs the rest \(about ([\d,]+) tests",
}


def test_the_readme_states_each_tiers_size_within_ten_percent(tmp_path: Path) -> None:
    """The suite's size changes with the code: the README's counts are checked here, not
    trusted (its times are measurements, stated with the run they come from)."""
    out = tmp_path / "tiers.json"
    collected = subprocess.run(
        [sys.executable, "-c", _COUNT_TIERS, str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    counts = json.loads(out.read_text())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for tier, pattern in _TIER_SIZES.items():
        [stated] = re.findall(pattern, readme)
        stated_n, actual = int(stated.replace(",", "")), counts[tier]
        assert abs(stated_n - actual) <= actual / 10, (
            f"README.md says about {stated_n} tests in the {tier} tier; the suite collects "
            f"{actual}: update the README's Development section"
        )
