"""build_context on real repositories, and lessons from the journal reaching the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.context import assemble_sections, build_context
from selfforge.context.tokens import estimate_tokens
from test_context_sample import SHOP, shop_repo

from conftest import make_repo


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shop_repo(tmp_path_factory.mktemp("build") / "shop")


def test_chosen_files_come_whole_and_the_map_covers_the_rest(shop: Path) -> None:
    bundle = build_context(
        shop,
        "apply_discount rounds 33 percent wrongly",
        state_dir=shop / ".selfforge",
        token_budget=1500,
    )
    assert bundle.chosen[0] == "shop/pricing.py"
    first = bundle.files[0]
    assert (first.path, first.whole, first.text) == (
        "shop/pricing.py",
        True,
        SHOP["shop/pricing.py"],
    )
    assert "shop/pricing.py:" not in bundle.repo_map  # shown whole, so not outlined again
    assert "shop/inventory.py:" in bundle.repo_map
    used = estimate_tokens(bundle.repo_map) + sum(estimate_tokens(f.text) for f in bundle.files)
    assert used <= 1500
    assert bundle.index_stats is not None


def test_a_large_file_is_shown_as_a_focused_excerpt(tmp_path: Path) -> None:
    filler = "".join(
        f'def routine_{i}(x):\n    """Routine number {i}."""\n    return x * {i}\n\n\n'
        for i in range(300)
    )
    target = 'def parse_invoice_total(text):\n    """Total from an invoice."""\n    return 0\n'
    repo = make_repo(tmp_path / "big", {"billing.py": filler + target, "other.py": "X = 1\n"})
    bundle = build_context(
        repo,
        "parse_invoice_total ignores the VAT line",
        state_dir=repo / ".selfforge",
        token_budget=800,
    )
    excerpt = bundle.files[0]
    assert (excerpt.path, excerpt.whole) == ("billing.py", False)
    assert target in excerpt.text
    assert "not shown" in excerpt.text
    assert estimate_tokens(excerpt.text) <= 800


def test_a_second_build_reparses_nothing(shop: Path) -> None:
    build_context(shop, "tax_for", state_dir=shop / ".selfforge", token_budget=500)
    again = build_context(shop, "tax_for", state_dir=shop / ".selfforge", token_budget=500)
    assert again.index_stats is not None and again.index_stats.parsed == 0


def test_a_lesson_from_a_failed_attempt_reaches_a_later_similar_prompt(
    shop: Path, tmp_path: Path
) -> None:
    journal_module = pytest.importorskip("selfforge.journal.store")
    from selfforge.journal.lessons import similar_attempts

    journal = journal_module.Journal(tmp_path / "journal.db")
    run = journal.start_run(
        pid=1,
        base_branch="main",
        base_commit="0" * 40,
        model="script:x",
        goals=["g"],
        land_mode="merge",
    )
    failed = journal.start_attempt(run, 1, "Fix rounding in apply_discount", "0" * 40)
    journal.finish_attempt(failed, outcome="rejected", reason="test_cart failed", repairs=1)
    lesson = "round only the final price; Cart.total also calls apply_discount"
    journal.set_lesson(failed, lesson)
    unrelated = journal.start_attempt(run, 2, "Document the shipping rates", "0" * 40)
    journal.finish_attempt(unrelated, outcome="accepted", reason="ok", repairs=0)

    later_task = "apply_discount rounds 33 percent wrongly"
    lessons = [a.lesson or a.reason for a in similar_attempts(journal, later_task, limit=3)]
    journal.close()
    assert lessons[0] == lesson

    bundle = build_context(
        shop, later_task, state_dir=shop / ".selfforge", token_budget=2000, lessons=lessons
    )
    prompt = assemble_sections(
        {
            "task": later_task,
            "instructions": "Reply with SEARCH/REPLACE blocks.",
            "lessons": "\n".join(f"- {item}" for item in bundle.lessons),
            "repo_map": bundle.repo_map * 20,  # more than fits, so budgets bite
            "files": "\n".join(f.text for f in bundle.files) * 20,
        },
        context_window=3000,
        reserve_output=1000,
    )
    assert lesson in prompt.sections["lessons"]
    assert "files" in prompt.cut and "lessons" not in prompt.cut
