"""Prompt assembly: per-section budgets that adapt to the context window."""

from __future__ import annotations

import pytest

from selfforge.context import assemble_sections
from selfforge.context.assemble import PromptTooLarge
from selfforge.context.tokens import estimate_tokens

LESSONS = "- 'fix add' was rejected: the edit broke sub(); change only add()\n"


def sections(files_lines: int = 5000, failure_lines: int = 3000) -> dict[str, str]:
    return {
        "directives": "- All tests pass\n- No lint errors\n",
        "task": "Fix add() in calc.py",
        "instructions": "Reply with SEARCH/REPLACE blocks.\n" * 20,
        "lessons": LESSONS,
        "repo_map": "".join(f"pkg/m{i}.py:\n  def f{i}(x)\n" for i in range(2000)),
        "files": "".join(f"line {i} of the file\n" for i in range(files_lines)),
        "failures": "".join(f"failure line {i}\n" for i in range(failure_lines)),
    }


def test_everything_fits_the_window_and_fixed_sections_are_never_cut() -> None:
    given = sections()
    prompt = assemble_sections(given, context_window=8000, reserve_output=2000)
    assert prompt.total_tokens <= 8000 - 2000
    assert prompt.sections["task"] == given["task"]
    assert prompt.sections["instructions"] == given["instructions"]
    assert list(prompt.sections) == list(given)


def test_short_lessons_survive_whole_while_large_sections_are_cut() -> None:
    prompt = assemble_sections(sections(), context_window=4000, reserve_output=1000)
    assert prompt.sections["lessons"] == LESSONS
    assert set(prompt.cut) == {"repo_map", "files", "failures"}
    assert "cut to fit the context" in prompt.sections["files"]
    assert prompt.sections["files"].startswith("line 0 of the file\n")


def test_budgets_grow_with_the_context_window() -> None:
    small = assemble_sections(sections(), context_window=4000, reserve_output=1000)
    large = assemble_sections(sections(), context_window=32000, reserve_output=1000)
    assert large.tokens["files"] > 5 * small.tokens["files"]
    assert large.tokens["repo_map"] > small.tokens["repo_map"]


def test_room_a_section_does_not_need_goes_to_the_others() -> None:
    given = sections(failure_lines=0)
    with_failures = assemble_sections(sections(), context_window=6000, reserve_output=1000)
    without = assemble_sections(given, context_window=6000, reserve_output=1000)
    assert without.tokens["files"] > with_failures.tokens["files"]


def test_failures_keep_their_head_and_tail() -> None:
    prompt = assemble_sections(sections(), context_window=4000, reserve_output=1000)
    failures = prompt.sections["failures"]
    assert failures.startswith("failure line 0\n")
    assert failures.endswith("failure line 2999\n")
    assert "failures:" in failures and "lines (~" in failures


def test_tokens_are_reported_per_section_for_the_journal() -> None:
    prompt = assemble_sections(sections(), context_window=4000, reserve_output=1000)
    assert set(prompt.tokens) == set(sections())
    for name, text in prompt.sections.items():
        assert prompt.tokens[name] == estimate_tokens(text)


def test_a_window_too_small_for_the_fixed_sections_empties_the_rest_but_keeps_them() -> None:
    given = sections()
    prompt = assemble_sections(given, context_window=100, reserve_output=50)
    assert prompt.sections["task"] == given["task"]
    assert prompt.tokens["files"] <= 30  # at most the note saying it was cut


def _files(target_lines: int, other_lines: int) -> str:
    target = "".join(f"    x{i} = add({i}, {i})\n" for i in range(target_lines))
    other = "".join(f"    y{i} = mul({i}, {i})\n" for i in range(other_lines))
    return f"calc.py\n```\n{target}```\n\nother.py\n```\n{other}```"


def test_the_target_file_survives_whole_and_the_others_give_way_in_order() -> None:
    given = {**sections(), "files": _files(60, 400)}
    prompt = assemble_sections(given, context_window=2048, reserve_output=512)
    assert prompt.sections["files"].startswith(given["files"].split("\n\nother.py")[0])
    assert "repo_map" in prompt.cut and "files" in prompt.cut  # the map went first
    assert prompt.total_tokens <= 2048 - 512


def test_a_target_file_larger_than_the_window_stops_with_the_fix() -> None:
    given = {**sections(), "files": _files(400, 0)}
    with pytest.raises(PromptTooLarge) as caught:
        assemble_sections(given, context_window=2048, reserve_output=512)
    message = caught.value.message
    assert "window is 2048 tokens" in message and "-c 8192" in message
    assert "\n" not in message
