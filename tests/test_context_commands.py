"""`selfforge index` and `selfforge map` through the real command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from test_context_sample import shop_repo

from conftest import cli


def test_index_prints_counts_and_a_second_run_parses_nothing(tmp_path: Path) -> None:
    repo = shop_repo(tmp_path / "shop")
    first = cli("index", "--repo", str(repo), check=True).stdout
    assert "parsed" in first and "definitions" in first
    assert "(0 parsed" in cli("index", "--repo", str(repo), check=True).stdout
    assert (repo / ".selfforge" / "index.db").is_file()
    assert ".selfforge" not in _git_status(repo)


def test_map_json_lists_the_chosen_files_best_first_and_the_map(tmp_path: Path) -> None:
    repo = shop_repo(tmp_path / "shop")
    out = cli(
        "map",
        "--repo",
        str(repo),
        "--tokens",
        "200",
        "--task",
        "Stock.reserve",
        "--json",
        check=True,
    ).stdout
    data = json.loads(out)
    assert data["files"][0] == "shop/inventory.py"
    assert data["map"].startswith("shop/inventory.py:")
    assert data["tokens"] <= 200


def test_map_prints_the_files_then_the_map(tmp_path: Path) -> None:
    repo = shop_repo(tmp_path / "shop")
    out = cli("map", "--repo", str(repo), "--task", "shipping_cost", check=True).stdout
    assert out.startswith("files for the task, best first:\n  shop/shipping.py\n")
    assert "def shipping_cost(cart: Cart) -> float" in out


def test_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    not_git = cli("map", "--repo", str(tmp_path))
    assert not_git.returncode == 2 and "not inside a git repository" in not_git.stderr
    repo = shop_repo(tmp_path / "shop")
    bad_budget = cli("map", "--repo", str(repo), "--tokens", "0")
    assert bad_budget.returncode == 2 and "--tokens" in bad_budget.stderr


def _git_status(repo: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
