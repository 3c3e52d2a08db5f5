"""The installation token is sealed to its installation and opened in one place."""

from __future__ import annotations

import logging

import pytest

from scheduling.domain.secrets import open_token, seal_token
from scheduling.runtimes.cpython.adapters import CpythonCrypto

TOKEN = "dwp_" + "A" * 43


async def test_a_sealed_token_opens_for_its_installation_only() -> None:
    crypto = CpythonCrypto(bytes(32))
    sealed = await seal_token(crypto, "ins_1", TOKEN)
    assert TOKEN not in sealed
    assert await open_token(crypto, "ins_1", sealed) == TOKEN
    assert await open_token(crypto, "ins_2", sealed) is None


async def test_a_token_the_key_cannot_open_is_none_and_logged_without_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sealed = await seal_token(CpythonCrypto(bytes(32)), "ins_1", TOKEN)
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        assert await open_token(CpythonCrypto(bytes([7]) * 32), "ins_1", sealed) is None
    assert "ins_1" in caplog.text
    assert "TOKEN_KEY" in caplog.text
    assert TOKEN not in caplog.text
    assert sealed not in caplog.text
