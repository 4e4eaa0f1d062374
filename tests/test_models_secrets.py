"""Keys stay out of child environments, masked text, and the user keys file is read."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selfforge.models import secrets
from selfforge.models.tokens import estimate_tokens


def test_scrub_env_drops_key_variables_and_keeps_the_rest() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "GEMINI_API_KEY": "g-secret-value",
        "MY_SERVICE_TOKEN": "t",
        "DB_SECRET": "s",
        "custom_api_key": "c",
        "TOKENIZERS_PARALLELISM": "false",
    }
    assert secrets.scrub_env(env) == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "TOKENIZERS_PARALLELISM": "false",
    }


def test_mask_replaces_set_key_values(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-abcdefgh12345")
    text = "request failed with key sk-ant-abcdefgh12345 in header"
    assert secrets.mask(text) == "request failed with key *** in header"
    assert secrets.mask("") == ""


def test_mask_ignores_short_values(monkeypatch) -> None:
    monkeypatch.setenv("X_TOKEN", "1")
    assert secrets.mask("version 1.0") == "version 1.0"


def test_get_key_reads_env_then_user_keys_file(tmp_path, monkeypatch) -> None:
    (tmp_path / "keys.toml").write_text('[keys]\nGEMINI_API_KEY = "AIzaFromFile0123456"\n')
    env = {"SELFFORGE_CONFIG_DIR": str(tmp_path)}
    key = secrets.get_key(["GEMINI_API_KEY"], env)
    assert key is not None and key.get_secret_value() == "AIzaFromFile0123456"
    assert "AIzaFromFile" not in repr(key) and "AIzaFromFile" not in str(key)
    assert secrets.get_key(["GEMINI_API_KEY"], {**env, "GEMINI_API_KEY": "envwins123"})
    assert secrets.get_key(["OPENAI_API_KEY"], env) is None
    # A value read once is masked from then on, even though it is not in os.environ.
    assert secrets.mask("x AIzaFromFile0123456 y") == "x *** y"


def test_user_config_dir_is_outside_the_repo(monkeypatch, tmp_path) -> None:
    assert secrets.user_config_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "selfforge"


def test_estimate_tokens_is_in_a_sane_range() -> None:
    assert estimate_tokens("") == 0
    prose = "The quick brown fox jumps over the lazy dog. " * 20
    assert 180 <= estimate_tokens(prose) <= 260  # real tokenizers: ~200
    code = "def add(a: int, b: int) -> int:\n    return a + b\n" * 10
    assert estimate_tokens(code) >= len(code) // 4


def test_mask_survives_a_broken_keys_file(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SELFFORGE_CONFIG_DIR", str(tmp_path))
    (tmp_path / "keys.toml").write_text("GEMINI_API_KEY = unterminated\n")
    assert secrets.mask("plain text") == "plain text"


_KEY = "Zq9-secret-value-77"


@settings(max_examples=60, deadline=None)
@given(st.text(), st.text())
def test_mask_never_lets_a_remembered_key_through(before: str, after: str) -> None:
    secrets.remember(_KEY)
    assert _KEY not in secrets.mask(before + _KEY + after)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True), st.text()))
def test_scrub_env_keeps_no_secret_names(env: dict[str, str]) -> None:
    kept = secrets.scrub_env({**env, "OPENAI_API_KEY": "x", "A_TOKEN": "y"})
    assert not any(secrets.is_secret_name(name) for name in kept)
    assert all(kept[name] == env[name] for name in kept)
