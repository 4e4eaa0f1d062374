"""What is not the project's own code: vendored, generated, fixtures, excluded by config."""

from __future__ import annotations

from pathlib import Path

from selfforge.context.thirdparty import third_party


def test_vendor_and_fixture_directories(tmp_path: Path) -> None:
    tp = third_party(tmp_path)
    assert tp("pkg/_vendor/six.py") and tp("vendor/lib.go") and tp("third_party/x/y.c")
    assert tp("web/node_modules/react/index.js")
    assert tp("tests/data/sample/setup.py") and tp("pkg/testdata/input.py")
    assert not tp("pkg/vendoring.py") and not tp("tests/test_data_loader.py")
    assert not tp("src/pkg/core.py")


def test_the_projects_own_statements(tmp_path: Path) -> None:
    (tmp_path / ".gitattributes").write_text(
        "*.py text\ngen/*.py linguist-generated\nlibs/** linguist-vendored=true\n"
    )
    (tmp_path / "ruff.toml").write_text('exclude = ["**/_compat", "src/pkg/_distutils"]\n')
    (tmp_path / "setup.cfg").write_text("[flake8]\nexclude = .git,legacy\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nnorecursedirs = dist build examples\n")
    tp = third_party(tmp_path)
    assert tp.why("gen/api_pb2.py") == "excluded by the project (gen/*.py)"
    assert tp("libs/yaml/reader.py")
    assert tp("src/pkg/_distutils/core.py") and tp("a/_compat/b.py")
    assert tp("legacy/old.py") and tp("examples/demo.py")
    assert not tp("src/pkg/dist.py") and not tp("build_tools/make.py")


def test_tool_defaults_say_nothing_about_the_project(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nnorecursedirs = .* build dist *.egg\n")
    tp = third_party(tmp_path)
    assert not tp("build/lib.py") and not tp("src/pkg/core.py")


def test_a_task_about_the_projects_code_finds_its_own_file_first(tmp_path: Path) -> None:
    from selfforge.context.build import map_for_task

    from conftest import make_repo

    body = '"""Parse configuration text into a table."""\n\n\ndef parse_config(text):\n'
    repo = make_repo(
        tmp_path / "r",
        {
            "pkg/config.py": body + "    return dict(line.split('=') for line in text)\n",
            "pkg/_vendor/tomli/_parser.py": body * 3 + "    return parse_config(text)\n",
            "pkg/_vendor/tomli/config.py": body + "    return {}\n",
        },
    )
    view = map_for_task(
        repo, state_dir=tmp_path / "state", token_budget=2000, task="parse config text"
    )
    assert view.files[0] == "pkg/config.py"
