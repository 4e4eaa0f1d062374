"""A test a change adds must be able to fail (judge/new_tests.py), as teams gate commits
with `selfforge check` and as `selfforge run` judges a model's proposal: each new test
fails on the base's code, or on a mutant of the lines the change adds; one that passes
on the base and on every mutant tried checks nothing the change does."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, check_json, cli, directives, git, log_json, make_repo

FIXED = CALC.replace("return a - b", "return a + b", 1)
VACUOUS = "from calc import add\n\n\ndef test_add_more():\n    add(2, 3)\n    assert True\n"
# A green base whose tests do not catch add()'s bug: the commit's fix and its new test.
GREEN = {"calc.py": CALC, "test_calc.py": TEST_CALC.replace(
    "def test_add():\n    assert add(2, 3) == 5\n\n\n", ""
)}  # fmt: skip
REAL = "from calc import add\n\n\ndef test_add_more():\n    assert add(2, 3) == 5\n"


def _repo(tmp_path: Path, files: dict[str, str] | None = None, test: str | None = None) -> Path:
    files = files or {"calc.py": CALC, "test_calc.py": TEST_CALC}
    return make_repo(tmp_path / "r", files, directives(test) if test else directives())


def _commit(repo: Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def _can_fail(repo: Path) -> str:
    """What the last check journaled of its new tests: each one and how it can fail."""
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        [(output,)] = db.execute(
            "SELECT output FROM checks WHERE name = 'tests:can-fail' ORDER BY id DESC LIMIT 1"
        )
    return str(output)


def test_a_fix_with_a_vacuous_new_test_needs_review_naming_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path, GREEN)
    _commit(repo, "Fix add(); test it", {"calc.py": FIXED, "test_more.py": VACUOUS})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    [item] = verdict["review"]
    assert "test_more.py::test_add_more" in item
    assert "passes on the base and on every one of 2 mutants" in item, item
    assert "checks nothing the change does" in item


def test_the_vacuous_test_without_the_fix_is_not_accepted_either(tmp_path: Path) -> None:
    repo = _repo(tmp_path, GREEN)
    _commit(repo, "Test add()", {"test_more.py": VACUOUS})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert "test_more.py::test_add_more" in verdict["review"][0]
    # a test-only change: the test is tried on mutants of the code it names (add)
    assert "mutants of the code its new tests name" in verdict["review"][0]


def test_a_fix_with_a_real_new_test_is_accepted(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _commit(repo, "Fix add(); test it", {"calc.py": FIXED, "test_more.py": REAL})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    assert "test_more.py::test_add_more: fails on the base" in _can_fail(repo)


NEG = CALC + "\n\ndef neg(a):\n    return -a\n"
TEST_NEG = "from calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"


def test_a_new_test_of_new_code_is_shown_to_fail_on_a_mutant(tmp_path: Path) -> None:
    """On the base the test's module does not import (neg() is new): a mutant of neg()
    is what shows that it checks it."""
    repo = _repo(tmp_path, GREEN)
    _commit(repo, "neg()", {"calc.py": NEG, "test_neg.py": TEST_NEG})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    assert "test_neg.py::test_neg: fails on the mutant calc.py:" in _can_fail(repo)


def test_a_vacuous_test_of_new_code_is_not_proven_by_its_import(tmp_path: Path) -> None:
    """The same test made vacuous fails to import on the base just as well: the mutants
    show that it checks nothing."""
    repo = _repo(tmp_path, GREEN)
    vacuous = TEST_NEG.replace("neg(2) == -2", "True")
    _commit(repo, "neg()", {"calc.py": NEG, "test_neg.py": vacuous})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    # among what a person reviews, beside "no test runs the changed code" (neg() is not
    # called by the vacuous test)
    assert "test_neg.py::test_neg does not build on the base" in " ".join(verdict["review"])


# A change of constants only, no operator in it: its test does not import on the base,
# so only a mutant (the string emptied) tells a real test from a vacuous one; with no
# mutant at all (a new name bound to another), the test is not checked.
GREET = CALC + '\n\nGREETING = "hello"\n'
TEST_GREET = "from calc import GREETING\n\n\ndef test_greeting():\n    assert GREETING == 'hello'\n"


def test_a_new_test_of_new_constants_is_proven_by_a_mutant_or_not_at_all(tmp_path: Path) -> None:
    repo = _repo(tmp_path, GREEN)
    _commit(repo, "GREETING", {"calc.py": GREET, "test_greet.py": TEST_GREET})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    assert "test_greeting: fails on the mutant calc.py:" in _can_fail(repo)
    # the same commit, its test made trivially true (it still imports the new name)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    vacuous = TEST_GREET.replace("GREETING == 'hello'", "True")
    _commit(repo, "GREETING", {"calc.py": GREET, "test_greet.py": vacuous})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    # and an alias, no mutant to make: not building on the base proves nothing
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    alias = "from calc import add, plus\n\n\ndef test_greeting():\n    assert plus is add\n"
    _commit(repo, "plus", {"calc.py": CALC + "\n\nplus = add\n", "test_greet.py": alias})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert "no mutant of the change's lines could be made" in " ".join(verdict["review"])


MUL_LOOP = FIXED.replace(
    "def mul(a, b):\n    return a * b\n",
    "def mul(a, b):\n    total = 0\n    for _ in range(b):\n        total = total + a\n"
    "    return total\n",
)


def test_a_refactor_whose_new_test_kills_a_mutant_is_accepted(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"calc.py": FIXED, "test_calc.py": TEST_CALC})
    test = "from calc import mul\n\n\ndef test_mul_zero():\n    assert mul(7, 0) == 0\n"
    _commit(repo, "mul() by addition", {"calc.py": MUL_LOOP, "test_mul.py": test})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    # it passes on the base: a mutant of the new loop (total = 1) is what it fails
    assert "test_mul.py::test_mul_zero: fails on the mutant calc.py:" in _can_fail(repo)


# boltons b5c495b's shape: the change adds a fallback for what cannot be inspected, and a
# test that the fallback gives the old answer (it passes on the base, whose code never
# inspected anything). Only a mutant of the handler (`except ():`, which catches nothing)
# shows that the test checks the fallback.
CALL = """def call_args(names, target=None):
    keyword_only = set()
    return ", ".join(f"{n}={n}" if n in keyword_only else n for n in names)
"""
CALL_TARGETED = """import inspect


def call_args(names, target=None):
    keyword_only = set()
    if target is not None:
        try:
            params = inspect.signature(target).parameters
        except (ValueError, TypeError):
            pass
        else:
            keyword_only = {p.name for p in params.values() if p.kind is p.KEYWORD_ONLY}
    return ", ".join(f"{n}={n}" if n in keyword_only else n for n in names)
"""
TEST_CALL = (
    "from call import call_args\n\n\ndef test_plain():\n    assert call_args(['a']) == 'a'\n"
)
TEST_TARGETED = """from call import call_args


def test_a_keyword_only_argument_is_passed_by_name():
    assert call_args(["a", "b"], target=lambda a, *, b: 0) == "a, b=b"


def test_a_target_without_a_signature_changes_nothing():
    assert call_args(["a"], target=map) == "a"
"""


def test_a_new_test_of_an_added_fallback_is_shown_to_fail_when_nothing_is_caught(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path, {"call.py": CALL, "test_call.py": TEST_CALL})
    _commit(repo, "call_args() passes keyword-only arguments by name",
            {"call.py": CALL_TARGETED, "test_targeted.py": TEST_TARGETED})  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    proof = _can_fail(repo)
    assert "test_a_keyword_only_argument_is_passed_by_name: fails on the base" in proof
    assert (
        "test_a_target_without_a_signature_changes_nothing: fails on the mutant "
        "call.py:9 '(ValueError, TypeError)' -> '()'"
    ) in proof, proof


# A change to two files: thirteen comparisons in one (its test fails on the base), a
# refactor of the other whose new test passes there. The mutants reach the second file
# within their dozen, not only the first's many lines.
ABOVE = "".join(f"\n\ndef above_{i}(x):\n    return x >= {i}\n" for i in range(13))
TEST_ABOVE = "from shapes import above_0\n\n\ndef test_above():\n    assert not above_0(0)\n"
TEST_DOUBLE = "from units import double\n\n\ndef test_double():\n    assert double(3) == 6\n"


def test_the_mutants_reach_every_file_of_a_change_not_only_the_first(tmp_path: Path) -> None:
    files = {"shapes.py": ABOVE, "units.py": "def double(x):\n    return 2 * x\n",
             "test_units_base.py": TEST_DOUBLE.replace("test_double", "test_base")}  # fmt: skip
    repo = _repo(tmp_path, files)
    _commit(repo, "strict bounds; double() by addition", {
        "shapes.py": ABOVE.replace(">=", ">"), "test_shapes.py": TEST_ABOVE,
        "units.py": "def double(x):\n    return x + x\n", "test_units.py": TEST_DOUBLE,
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    proof = _can_fail(repo)
    assert "test_shapes.py::test_above: fails on the base" in proof
    assert "test_units.py::test_double: fails on the mutant units.py:2" in proof, proof


GO_MOD = "module example.com/calc\n\ngo 1.19\n"
GO_CALC = "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
GO_TEST = 'package calc\n\nimport "testing"\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal("0")\n\t}\n}\n'  # noqa: E501


@pytest.mark.slow  # two checks of a Go module: about 20 s
@pytest.mark.skipif(shutil.which("go") is None, reason="needs go")
def test_a_vacuous_new_go_test_needs_review(tmp_path: Path) -> None:
    files = {"go.mod": GO_MOD, "calc.go": GO_CALC, "calc_test.go": GO_TEST}
    repo = _repo(tmp_path, files, test="go test ./...")
    vacuous = (
        'package calc\n\nimport "testing"\n\nfunc TestAddMore(t *testing.T) {\n'
        '\tif Add(2, 3) != 5 {\n\t\tt.Logf("2 + 3 is not 5")\n\t}\n}\n'
    )
    fixed = GO_CALC.replace("a - b", "a + b")
    _commit(repo, "Fix Add; test it", {"calc.go": fixed, "more_test.go": vacuous})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert "example.com/calc::TestAddMore" in verdict["review"][0]
    real = vacuous.replace("t.Logf", "t.Fatalf")
    _commit(repo, "Test Add for real", {"more_test.go": real})
    code, verdict = check_json(repo, "HEAD~2..HEAD")
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]


def test_run_refuses_a_model_s_vacuous_new_test(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    reply = (
        "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\n"
        "def add(a, b):\n    return a + b\n>>>>>>> REPLACE\n"
        "\ntest_more.py\n<<<<<<< SEARCH\n=======\n" + VACUOUS + ">>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[reply]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected", attempt["reason"]
    assert "test_more.py::test_add_more" in attempt["reason"]
    assert "checks nothing the change does" in attempt["reason"]
    assert not (repo / "test_more.py").exists()  # nothing landed


def test_mutants_of_c_like_lines_leave_strings_and_comments_alone(tmp_path: Path) -> None:
    """The machinery the judge and the bench share (judge/mutants.py) on TypeScript and Go:
    comparisons, booleans and signs flipped, never inside a string, a template or a
    comment, nor a generic's or an arrow's angle brackets."""
    from selfforge.judge.mutants import candidates

    (tmp_path / "a.ts").write_text(
        "export const f = <T>(a: number): boolean => a + 1 === 2 && 'x < 1' !== `y == ${a}`;\n"
        "// a > 0 || true\n"
    )
    (tmp_path / "a.go").write_text("package a\n\nfunc G(a int) bool { return a > 0 || a == -1 }\n")
    found = {(m.path, m.old, m.new) for m in candidates(tmp_path, {"a.ts": {1, 2}, "a.go": {3}})}
    assert found == {
        ("a.ts", "+", "-"), ("a.ts", "1", "0"), ("a.ts", "==", "!="), ("a.ts", "&&", "||"),
        ("a.ts", "!=", "=="),
        ("a.go", ">", "<="), ("a.go", "0", "1"), ("a.go", "||", "&&"), ("a.go", "==", "!="),
        ("a.go", "-", "+"), ("a.go", "1", "0"),
    }  # fmt: skip


def test_a_python_handler_is_made_to_catch_nothing_where_it_names_what_it_catches(
    tmp_path: Path,
) -> None:
    """`except E:`, `except (E, F) as e:` and a dotted name become `except ():` (still
    valid Python); a bare `except:`, an `except*` and a handler's body are left alone."""
    from selfforge.judge.mutants import candidates

    source = (
        "def f(g):\n    try:\n        g()\n    except (ValueError, mod.Err) as exc:  # a: b\n"
        "        raise\n    except KeyError:\n        pass\n    except:\n        pass\n"
        "    try:\n        g()\n    except* OSError:\n        pass\n"
    )
    (tmp_path / "a.py").write_text(source)
    found = [m for m in candidates(tmp_path, {"a.py": set(range(1, 14))}) if m.new == "()"]
    assert [(m.line, m.old) for m in found] == [(4, "(ValueError, mod.Err)"), (6, "KeyError")]
    for mutation in found:
        assert mutation.compiles(mutation.applied(source))
        assert mutation.undone().applied(mutation.applied(source)) == source
    assert "    except () as exc:  # a: b\n" in found[0].applied(source)


def test_the_mutants_are_spread_over_files_and_the_tests_own_file_comes_first() -> None:
    """`spread`: each file's first line before any file's second; `nearest`: the first
    mutant in a file an unproven test's id names (test_units.py: units.py), else the
    first."""
    from selfforge.judge.mutants import candidates, nearest, spread

    texts = {
        "shapes.py": ABOVE,
        "units.py": "def double(x):\n    return x + x\n",
        "calc.py": "def add(a, b):\n    return a - b\n",
    }
    lines = {"shapes.py": set(range(1, 60)), "units.py": {2}, "calc.py": {2}}
    order = spread(candidates(Path("."), lines, texts.__getitem__))
    assert order[0].path == "shapes.py"  # the best kind (a comparison) first
    assert {m.path for m in order[:3]} == set(texts)  # then the other files' first lines
    assert nearest(order, ["tests/test_units.py::test_double"]).path == "units.py"
    assert nearest(order, ["tests/test_other.py::test_x"]) is order[0]
