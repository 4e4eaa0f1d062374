"""`selfforge demo --lang go|rust|js`: the same story as the Python demo on a sample
project in that language, with its real toolchain: the shared-helper fix is rejected for
the regression it causes (named in the runner's own ids), the call-site fix lands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from test_runner_node import NODE_20

from conftest import CARGO_STARTS, cli, log_json

CASES = {
    "go": ("go", "calc.go", "combine(a, b, 1)", "example.com/calc::TestSub"),
    "rust": ("cargo", "src/lib.rs", "combine(a, b, 1.0)", "tests/calc.rs::test_sub"),
    "js": ("node", "calc.js", "combine(a, b, 1)", "test/calc.test.js::sub"),
}


@pytest.mark.parametrize("lang", sorted(CASES))
def test_the_demo_runs_in_each_language(tmp_path: Path, lang: str) -> None:
    program, path, fixed, regression = CASES[lang]
    if (
        shutil.which(program) is None
        or (lang == "js" and not NODE_20)
        or (lang == "rust" and not CARGO_STARTS)
    ):
        pytest.skip(f"needs {program}")
    where = tmp_path / "demo"
    proc = cli("demo", "--lang", lang, "--replay", "--dir", str(where))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcomes = [(a["outcome"], a["reason"]) for a in log_json(where)]
    assert outcomes[0][0] == "rejected" and regression in outcomes[0][1]
    assert outcomes[1][0] == "accepted"
    assert fixed in (where / path).read_text()


def test_an_unknown_language_is_a_clear_error(tmp_path: Path) -> None:
    proc = cli("demo", "--lang", "cobol", "--replay", "--dir", str(tmp_path / "d"))
    assert proc.returncode != 0
    assert "--lang 'cobol' is not one of: python, go, rust, js" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
