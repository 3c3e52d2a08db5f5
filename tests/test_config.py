from __future__ import annotations

import base64
import logging
import secrets
from pathlib import Path

import pytest

from scheduling import config as config_module
from scheduling.config import VARIABLES, Configuration, ConfigurationError, Misconfigured
from scheduling.runtimes.cpython.server import load_vars
from tests.support.app import base_env


def test_defaults_match_the_reference() -> None:
    config = Configuration.from_mapping(base_env())
    assert config.problems == {}
    assert (config.max_attempts, config.max_lateness_ms, config.lease_ms) == (5, 900_000, 60_000)
    assert config.max_retry_after_ms == 300_000
    assert config.max_rows_per_batch == 20
    assert config.environment == "production"
    assert config.dev_origins == ()
    assert (config.send_concurrency, config.tick_budget_ms) == (6, 45_000)


def test_numbers_arrive_as_strings_from_dev_vars() -> None:
    config = Configuration.from_mapping(base_env(MAX_ATTEMPTS="3", LEASE_MS="70000"))
    assert (config.max_attempts, config.lease_ms) == (3, 70_000)


@pytest.mark.parametrize("length", [0, 16, 31, 33, 64])
def test_token_key_must_be_exactly_32_bytes(length: int) -> None:
    key = base64.b64encode(b"k" * length).decode()
    config = Configuration.from_mapping(base_env(TOKEN_KEY=key))
    if length == 0:
        assert config.problems["TOKEN_KEY"] == "is not set"
    else:
        assert f"got {length} bytes" in config.problems["TOKEN_KEY"]
    with pytest.raises(Misconfigured) as raised:
        config.token_key  # noqa: B018
    assert raised.value.name == "TOKEN_KEY"
    assert not key or key not in str(raised.value)


@pytest.mark.parametrize(
    "key",
    [
        bytes(32),  # 32 zero bytes
        b"\xff" * 32,
        bytes(range(32)),  # counting
        bytes(range(64, 0, -2)),
        b"\x13\x37" * 16,  # a short block repeated
        bytes(range(100, 116)) * 2,  # two equal halves
        b"The quick brown fox jumps over t",  # text (issue 45, item 11)
    ],
)
def test_a_token_key_whose_bytes_follow_a_pattern_is_refused(key: bytes) -> None:
    """Issue 37, item 3: a TOKEN_KEY of 32 zero bytes was accepted."""
    encoded = base64.b64encode(key).decode()
    config = Configuration.from_mapping(base_env(TOKEN_KEY=encoded))
    problem = config.problems["TOKEN_KEY"]
    assert problem.startswith("is not random")
    assert "openssl rand -base64 32" in problem
    with pytest.raises(Misconfigured):
        config.token_key  # noqa: B018
    assert encoded not in problem


def test_random_token_keys_are_taken() -> None:
    for _ in range(1000):
        key = base64.b64encode(secrets.token_bytes(32)).decode()
        assert "TOKEN_KEY" not in Configuration.from_mapping(base_env(TOKEN_KEY=key)).problems


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [("TOKEN_KEY", "not base64 !!", "base64"), ("ADMIN_SECRET", "short-secret", "at least 16")],
)
def test_a_bad_secret_is_named_without_its_value(name: str, value: str, problem: str) -> None:
    config = Configuration.from_mapping(base_env(**{name: value}))
    assert problem in config.problems[name]
    with pytest.raises(ConfigurationError) as raised:
        config.raise_for_problems()
    assert name in str(raised.value)
    assert value not in str(raised.value)


def test_one_bad_variable_leaves_the_others_usable() -> None:
    config = Configuration.from_mapping(base_env(MAX_ATTEMPTS="many", TOKEN_KEY=None))
    assert set(config.problems) == {"MAX_ATTEMPTS", "TOKEN_KEY"}
    assert config.public_origin == "https://scheduling.example"
    assert config.admin_secret
    with pytest.raises(Misconfigured):
        config.max_attempts  # noqa: B018


@pytest.mark.parametrize(
    "origin",
    [
        "scheduling.example",
        "https://scheduling.example/",
        "https://scheduling.example/x",
        "https://u:p@scheduling.example",
        "ftp://scheduling.example",
        "https://x.example?q=1",
    ],
)
def test_public_origin_must_be_a_bare_origin(origin: str) -> None:
    config = Configuration.from_mapping(base_env(PUBLIC_ORIGIN=origin))
    assert "PUBLIC_ORIGIN" in config.problems


def test_plain_http_is_refused_outside_development_but_on_this_machine() -> None:
    """Issue 45, item 14: `PUBLIC_ORIGIN=http://…` in production started, and sent no
    Strict-Transport-Security."""
    plain = Configuration.from_mapping(base_env(PUBLIC_ORIGIN="http://scheduling.example"))
    said = plain.problems["PUBLIC_ORIGIN"]
    assert said.startswith("must be https when ENVIRONMENT is production")
    with pytest.raises(ConfigurationError):
        plain.raise_for_problems()
    staging = base_env(PUBLIC_ORIGIN="http://10.0.0.7:8788", ENVIRONMENT="staging")
    assert "PUBLIC_ORIGIN" in Configuration.from_mapping(staging).problems
    for taken in (
        base_env(PUBLIC_ORIGIN="http://scheduling.example", ENVIRONMENT="development"),
        base_env(PUBLIC_ORIGIN="http://localhost:8788"),
        base_env(PUBLIC_ORIGIN="http://127.0.0.1:8788"),
        base_env(PUBLIC_ORIGIN="http://[::1]:8788"),
        base_env(PUBLIC_ORIGIN="https://scheduling.example"),
    ):
        assert "PUBLIC_ORIGIN" not in Configuration.from_mapping(taken).problems, taken


def test_dev_origins_are_a_list_of_exact_origins() -> None:
    config = Configuration.from_mapping(
        base_env(DEE_WAN_DEV_ORIGINS="http://localhost:8787, http://127.0.0.1:9000")
    )
    assert config.dev_origins == ("http://localhost:8787", "http://127.0.0.1:9000")
    bad = Configuration.from_mapping(base_env(DEE_WAN_DEV_ORIGINS="http://localhost:8787/path"))
    assert "DEE_WAN_DEV_ORIGINS" in bad.problems


def test_a_lease_must_outlive_its_batch() -> None:
    # 20 rows in waves of 2 take up to 10 x 10 s: a 60 s lease could expire mid-batch.
    config = Configuration.from_mapping(base_env(SEND_CONCURRENCY="2"))
    assert "LEASE_MS" in config.problems
    assert "MAX_ROWS_PER_BATCH=20" in config.problems["LEASE_MS"]
    assert "SEND_CONCURRENCY=2" in config.problems["LEASE_MS"]
    with pytest.raises(Misconfigured):
        config.lease_ms  # noqa: B018
    fine = Configuration.from_mapping(
        base_env(SEND_CONCURRENCY="2", LEASE_MS="115000", TICK_BUDGET_MS="90000")
    )
    assert fine.problems == {}


def test_the_tick_budget_must_end_before_the_lease() -> None:
    config = Configuration.from_mapping(base_env(TICK_BUDGET_MS="60000"))
    assert config.problems["TICK_BUDGET_MS"] == "must be less than LEASE_MS (60000)"


def test_per_tick_budgets_must_fit_one_batch() -> None:
    config = Configuration.from_mapping(base_env())
    assert (config.max_d1_queries_per_tick, config.max_sends_per_tick) == (1_000, 1_000)
    tight = Configuration.from_mapping(
        base_env(MAX_D1_QUERIES_PER_TICK="10", MAX_SENDS_PER_TICK="19")
    )
    # One batch at its worst (its due query, claim, settle, and their outbox events: 12)
    # and the tick's record.
    assert tight.problems["MAX_D1_QUERIES_PER_TICK"].startswith(
        "must be at least 15 for MAX_ROWS_PER_BATCH=20"
    )
    assert tight.problems["MAX_SENDS_PER_TICK"] == "must be at least MAX_ROWS_PER_BATCH (20)"
    assert (
        Configuration.from_mapping(
            base_env(MAX_D1_QUERIES_PER_TICK="50", MAX_SENDS_PER_TICK="50")
        ).problems
        == {}
    )


def test_the_cap_per_installation_defaults_to_six() -> None:
    config = Configuration.from_mapping(base_env())
    assert config.max_in_flight_per_installation == 6
    config = Configuration.from_mapping(base_env(MAX_IN_FLIGHT_PER_INSTALLATION="2"))
    assert config.max_in_flight_per_installation == 2
    assert config.problems == {}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_IN_FLIGHT_PER_INSTALLATION", "0"),
        ("MAX_IN_FLIGHT_PER_INSTALLATION", "51"),
    ],
)
def test_the_cap_per_installation_out_of_range_is_named(name: str, value: str) -> None:
    config = Configuration.from_mapping(base_env(**{name: value}))
    assert config.problems[name].startswith("input should be")


def test_max_rows_per_tick_is_still_read_as_max_rows_per_batch_with_a_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: MAX_ROWS_PER_TICK bounds a batch (a tick runs batch after batch); the name
    says so now, and a config that still has the old one keeps working."""
    monkeypatch.setattr(config_module, "_warned_renamed", set())
    caplog.set_level(logging.WARNING, logger="scheduling")
    old = Configuration.from_mapping(base_env(MAX_ROWS_PER_TICK="7", LEASE_MS="60000"))
    assert old.problems == {}
    assert old.max_rows_per_batch == 7
    assert "MAX_ROWS_PER_TICK is now called MAX_ROWS_PER_BATCH" in caplog.text
    both = Configuration.from_mapping(base_env(MAX_ROWS_PER_TICK="7", MAX_ROWS_PER_BATCH="9"))
    assert both.max_rows_per_batch == 9
    assert caplog.text.count("is now called") == 1  # once per process
    assert "MAX_ROWS_PER_TICK" not in VARIABLES
    assert "MAX_ROWS_PER_BATCH" in VARIABLES


def test_the_old_name_is_read_from_a_vars_file(tmp_path: Path) -> None:
    vars_file = tmp_path / ".dev.vars"
    vars_file.write_text("MAX_ROWS_PER_TICK=8\n", "utf-8")
    assert Configuration.from_mapping(load_vars(vars_file, {})).max_rows_per_batch == 8


def test_an_installations_share_of_the_slots_is_half_of_them_unless_set() -> None:
    """MAX_SLOTS_PER_INSTALLATION (issue 45 item 9): half of SEND_CONCURRENCY, rounded up, by
    default, so two busy installations use every slot; a lease must outlive an installation's
    rows of a batch sent a share at a time."""

    def share(**env: str) -> int:
        config = Configuration.from_mapping(base_env(**env))
        assert config.problems == {}
        return config.max_slots_per_installation

    assert share() == 3
    assert share(SEND_CONCURRENCY="7") == 4
    assert share(SEND_CONCURRENCY="50", MAX_ROWS_PER_BATCH="100") == 25
    assert share(MAX_SLOTS_PER_INSTALLATION="2") == 2
    one = Configuration.from_mapping(base_env(MAX_SLOTS_PER_INSTALLATION="1"))
    assert one.problems["LEASE_MS"].startswith(
        "must be at least 75000 for MAX_ROWS_PER_BATCH=20, SEND_CONCURRENCY=6 and"
        " MAX_SLOTS_PER_INSTALLATION=1: a lease must outlive its batch"
    )
    assert (
        Configuration.from_mapping(
            base_env(MAX_SLOTS_PER_INSTALLATION="1", LEASE_MS="75000")
        ).problems
        == {}
    )
    assert (
        "MAX_SLOTS_PER_INSTALLATION"
        in Configuration.from_mapping(base_env(MAX_SLOTS_PER_INSTALLATION="0")).problems
    )
