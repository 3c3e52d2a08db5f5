"""Zones come from the pinned tzdata package only, and a stored due_at is never recomputed."""

from __future__ import annotations

import importlib.resources
import re
import zoneinfo
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduling.domain import times
from scheduling.domain.times import ResolvedTime, TimeRefusal, resolve_local_time

ROOT = Path(__file__).resolve().parents[1]


def resolve(zone: str) -> ResolvedTime | TimeRefusal:
    """09:00 next year in `zone`, as the form sends it."""
    return resolve_local_time("2027-01-01T09:00", zone, None, now=datetime(2026, 1, 1, tzinfo=UTC))


def test_the_os_zone_database_is_never_consulted(tmp_path: Path) -> None:
    # A host whose "Europe/Berlin" is really UTC: zoneinfo believes it, the plugin must not.
    (tmp_path / "Europe").mkdir()
    utc = importlib.resources.files("tzdata.zoneinfo").joinpath("UTC").read_bytes()
    (tmp_path / "Europe" / "Berlin").write_bytes(utc)
    zoneinfo.reset_tzpath([str(tmp_path)])
    zoneinfo.ZoneInfo.clear_cache()
    times.get_zone.cache_clear()
    summer = datetime(2026, 7, 1)
    try:
        assert zoneinfo.ZoneInfo("Europe/Berlin").utcoffset(summer) == timedelta(0)
        assert times.get_zone("Europe/Berlin").utcoffset(summer) == timedelta(hours=2)
    finally:
        zoneinfo.reset_tzpath()
        zoneinfo.ZoneInfo.clear_cache()
        times.get_zone.cache_clear()


def test_tzdata_is_the_version_pyproject_pins() -> None:
    pinned = re.search(r'"tzdata==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned
    from importlib.metadata import version

    assert version("tzdata") == pinned.group(1)


@pytest.mark.parametrize("name", ["../etc/passwd", "/etc/localtime", "Europe/../UTC", ""])
def test_only_listed_zone_names_resolve(name: str) -> None:
    result = resolve(name)
    assert not isinstance(result, ResolvedTime)
    assert result.code == "unknown_timezone"


@pytest.mark.parametrize(
    ("typed", "stored"),
    [("europe/berlin", "Europe/Berlin"), ("EUROPE/BERLIN", "Europe/Berlin"), (" utc ", "UTC")],
)
def test_a_zone_is_matched_whatever_its_case_and_stored_canonical(typed: str, stored: str) -> None:
    result = resolve(typed)
    assert isinstance(result, ResolvedTime)
    assert result.timezone == stored


@pytest.mark.parametrize(
    ("typed", "first"),
    [
        ("Europe/Berln", "Europe/Berlin"),
        ("Berlin", "Europe/Berlin"),
        ("America/NewYork", "America/New_York"),
        ("new york", "America/New_York"),
        ("Asia/Tokio", "Asia/Tokyo"),
        ("paris", "Europe/Paris"),
    ],
)
def test_an_unknown_zone_is_said_back_with_up_to_three_close_names(typed: str, first: str) -> None:
    result = resolve(typed)
    assert not isinstance(result, ResolvedTime)
    assert result.code == "unknown_timezone"
    assert f"“{typed}” is not a time zone name this plugin knows." in result.message
    names = [retry.value for retry in result.retries]
    assert 1 <= len(names) <= 3
    assert names[0] == first
    assert f"Did you mean {first}" in result.message
    assert {retry.field for retry in result.retries} == {"timezone"}


def test_no_suggestion_for_utc_plus_is_a_posix_zone_of_the_other_sign() -> None:
    assert not any(name.startswith("Etc/GMT+") for name in times.zone_suggestions("UTC+2"))


@pytest.mark.parametrize(
    ("typed", "itself", "other"),
    [("Europe/Kiev", "Europe/Kiev", "Europe/Kyiv"), ("europe/kyiv", "Europe/Kyiv", "Europe/Kiev")],
)
def test_a_zone_is_never_suggested_for_itself(typed: str, itself: str, other: str) -> None:
    """Issue 37: `zone_suggestions("Europe/Kiev")` offered Europe/Kiev first."""
    suggested = times.zone_suggestions(typed)
    assert itself not in suggested
    assert suggested[0] == other


def test_long_text_gets_no_suggestions_and_is_quoted_short() -> None:
    typed = "Europe/" + "x" * 10_000
    assert times.zone_suggestions(typed) == ()
    result = resolve(typed)
    assert not isinstance(result, ResolvedTime)
    assert len(result.message) < 300
