"""Time entry that does the arithmetic, receipts that say until when, and attempt history.
The test clock starts at 2026-07-01 10:00:00 UTC (12:00 CEST in Paris, the site's zone)."""

from __future__ import annotations

import re

import pytest

from fake_core import Fault
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import START_MS, FakeClock, base_env
from tests.support.world import World, row, schedules_on, tick_at

MINUTE = 60_000


def flat(html: str) -> str:
    return re.sub(r"\s+", " ", html)


def error_box(html: str) -> str:
    found = re.search(r'<div class="problem".*?</div>', html, re.S)
    assert found, "no error on the page"
    return found.group(0)


# -- the form ---------------------------------------------------------------------------


async def test_the_form_says_what_time_it_is_now_and_suggests_a_time(world: World) -> None:
    installation = await world.install()
    html = (await world.open_page(installation)).page()
    # Written the one way (was `2026-07-01 12:00 CEST`).
    assert re.search(
        r'data-now-zone="Europe/Paris">Now in Europe/Paris:'
        r" Wed 1 Jul 2026, 12:00 CEST \(Europe/Paris; 10:00 UTC\)<",
        html,
    )
    assert 'aria-describedby="local_time-hint now-hint"' in html
    # The next whole hour at least half an hour ahead, in the form's zone; the picker's value
    # is the HTML standard's, the hint says it the one way.
    assert re.search(r'id="local_time" name="local_time"[^>]*value="2026-07-01T13:00"', html)
    # It says what it really picks (was "(the next whole hour)").
    assert (
        "Suggested: Wed 1 Jul 2026, 13:00, the first whole hour at least 30 minutes from now."
        in html
    )
    # Which occurrence of a time that happens twice is asked only when it matters.
    assert 'name="fold"' not in html
    assert "happens twice" not in html
    assert html.count("Now in ") == 1
    # The zone field suggests IANA names.
    assert 'list="zones"' in html
    assert '<datalist id="zones">' in html
    assert '<option value="America/New_York">' in html
    assert '<option value="Europe/Paris">' in html


async def test_a_past_time_says_the_time_in_the_zone_and_offers_the_next_minute(
    world: World,
) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    response = await browser.create(
        installation.id, local_time="2026-07-01T05:00", timezone="america/new_york"
    )
    assert response.status == 422
    html = response.body.decode()
    assert 'data-error-code="past_time"' in html
    # The zone typed in any case is written back in its proper case.
    assert re.search(r'id="timezone" name="timezone"[^>]*value="America/New_York"', html)
    assert 'value="america/new_york"' not in html
    # What time it is there is said once, beside the time, in the chosen zone.
    assert html.count("Now in ") == 1
    assert re.search(
        r'data-now-zone="America/New_York">Now in America/New_York:'
        r" Wed 1 Jul 2026, 06:00 EDT \(America/New_York; 10:00 UTC\)<",
        html,
    )
    assert "Wed 1 Jul 2026, 05:00 EDT (America/New_York; 09:00 UTC) has already passed." in html
    assert "You entered Wed 1 Jul 2026, 05:00." in html
    # Now is 06:00 EDT: the next minute, 06:01, in the same zone, as a one-click retry (issue 38).
    button = re.search(r'<button type="submit" data-retry-local-time="([^"]+)">([^<]+)<', html)
    assert button
    assert button.groups() == (
        "2026-07-01T06:01",
        "Schedule it at Wed 1 Jul 2026, 06:01 EDT instead",
    )
    made = await browser.create(
        installation.id, local_time=button.group(1), timezone="America/New_York"
    )
    assert made.status == 303
    unknown = await browser.create(installation.id, timezone="Mars/Base")
    text = unknown.body.decode()
    assert "data-now-chosen" not in text  # no clock for a zone that does not exist
    assert 'data-now-zone="Europe/Paris"' in text  # the site's zone instead


async def test_an_ambiguous_time_names_both_instants_and_focuses_the_choice(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    response = await browser.create(
        installation.id, local_time="2026-10-25T02:30", timezone="Europe/Berlin"
    )
    assert response.status == 422
    html = response.body.decode()
    earlier = "Sun 25 Oct 2026, 02:30 CEST (Europe/Berlin; 00:30 UTC)"
    later = "Sun 25 Oct 2026, 02:30 CET (Europe/Berlin; 01:30 UTC)"
    assert f"{earlier}, or {later}" in error_box(html)
    assert re.findall(r"<[^>]* autofocus[^>]*>", html) == [
        '<input type="radio" name="fold" id="fold-earlier" value="earlier" autofocus>'
    ]
    assert f'<label for="fold-earlier">The earlier one: {earlier}</label>' in html
    assert f'<label for="fold-later">The later one: {later}</label>' in html
    # And a one-click choice of the two instants, as for a skipped time.
    box = error_box(html)
    assert ">Schedule it at Sun 25 Oct 2026, 02:30 CEST (the earlier one)</button>" in box
    assert ">Schedule it at Sun 25 Oct 2026, 02:30 CET (the later one)</button>" in box
    later_form = box.split('data-retry-fold="later"', 1)[0].rsplit("<form", 1)[1]
    assert 'name="fold" value="later"' in later_form
    assert 'name="local_time" value="2026-10-25T02:30"' in later_form
    other = await browser.create(
        installation.id, local_time="2026-03-29T02:30", timezone="Europe/Berlin"
    )
    assert re.findall(r"<[^>]* autofocus[^>]*>", other.body.decode())[0].startswith(
        '<div class="problem"'
    )


async def test_a_fold_for_a_time_that_happens_once_is_ignored_with_a_note(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    response = await browser.create(installation.id, fold="later")
    assert response.status == 303
    assert (response.header("location") or "").endswith("&fold_ignored=later")
    stored = await world.db.prepare("SELECT fold FROM schedules").first()
    assert stored == {"fold": None}
    html = (await browser.follow(response)).body.decode()
    assert 'data-fold-ignored="later"' in html
    assert "Thu 2 Jul 2026, 09:00 CEST (Europe/Paris) happens only once" in html
    plain = await browser.get(f"/installations/{installation.id}?fold_ignored=later")
    assert "data-fold-ignored" not in plain.body.decode()  # only beside a receipt


# -- the receipt -------------------------------------------------------------------------


async def test_the_receipt_says_pin_local_time_utc_and_the_deadline(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    pinned = browser.shown()["version_id"]
    html = (await browser.follow(await browser.create(installation.id))).body.decode()
    receipt = re.search(
        r'<div class="notice" role="status" data-confirmation=.*?</div>', html, re.S
    )
    assert receipt
    text = receipt.group(0)
    assert f"the pinned version <code>{pinned}</code>" in text
    # One way of writing an instant (was "at 2026-07-02 09:00 CEST (Europe/Paris), which is
    # 2026-07-02 07:00 UTC" and a deadline of "07:15 UTC", without its date or zone).
    assert (
        'at <time datetime="2026-07-02T07:00:00Z">'
        "Thu 2 Jul 2026, 09:00 CEST (Europe/Paris; 07:00 UTC)</time>." in text
    )
    assert 'data-deadline="2026-07-02T07:15:00Z"' in text
    assert (
        'If Dee Wan cannot be reached, nothing is sent after <time datetime="2026-07-02T07:15:00Z">'
        "Thu 2 Jul 2026, 09:15 CEST (Europe/Paris; 07:15 UTC)</time>." in text
    )


@pytest.mark.parametrize(
    ("lateness", "local", "deadline"),
    [
        ("3600000", "2026-07-02T09:00", "Thu 2 Jul 2026, 10:00 CEST (Europe/Paris; 08:00 UTC)"),
        ("900000", "2026-07-03T01:50", "Fri 3 Jul 2026, 02:05 CEST (Europe/Paris; 00:05 UTC)"),
    ],  # 23:50 UTC: the deadline is the next day in UTC too
)
async def test_the_deadline_follows_max_lateness(
    db: SqliteDatabase, clock: FakeClock, lateness: str, local: str, deadline: str
) -> None:
    world = World(db, clock, env=base_env(MAX_LATENESS_MS=lateness))
    installation = await world.install()
    browser = await world.open_page(installation)
    html = (
        await browser.follow(await browser.create(installation.id, local_time=local))
    ).body.decode()
    assert re.search(
        rf'nothing is sent after <time datetime="[^"]+">{re.escape(deadline)}</time>.', html
    )


# -- attempt history -----------------------------------------------------------------------


async def test_attempts_in_seconds_local_and_utc_and_the_real_next_try(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    due = START_MS + 5 * MINUTE  # 12:05 CEST
    assert (await browser.create(installation.id, local_time="2026-07-01T12:05")).status == 303
    sid = str((await world.db.prepare("SELECT id FROM schedules").first() or {})["id"])

    world.core.faults.push(Fault.respond(503, "overloaded"))
    await tick_at(world, due)
    retrying = await row(world, sid)
    assert retrying["status"] == "retrying"
    html = flat((await browser.get(f"/installations/{installation.id}")).body.decode())
    # Words first, the status and the code once, for support (was "HTTP 503, `overloaded`.
    # Dee Wan had a temporary problem (HTTP 503, code overloaded)").
    expected = (
        "Started Wed 1 Jul 2026, 12:05:00 CEST (Europe/Paris; 10:05:00 UTC):"
        " Dee Wan had a temporary problem; the plugin will try again."
        ' <span class="support">(code overloaded, HTTP 503)</span>'
    )
    assert expected in html
    assert "a code this plugin does not know" not in html
    # The backoff planned a time within the minute; the cron tick that sends it is 12:06.
    assert due < retrying["next_attempt_at"] < due + MINUTE
    assert "next try Wed 1 Jul 2026, 12:06 CEST (Europe/Paris; 10:06 UTC)" in html

    # A second attempt twenty seconds into the minute is told apart from the first.
    world.core.faults.push(Fault.timeout())
    await tick_at(world, due + MINUTE + 20_000)
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert "Started Wed 1 Jul 2026, 12:06:20 CEST (Europe/Paris; 10:06:20 UTC):" in html
    assert "Dee Wan did not answer within 10 seconds" in html

    # When no tick has run since the planned instant, the next try is the next tick, not the past.
    planned = (await row(world, sid))["next_attempt_at"]
    world.clock.now = planned + 2 * MINUTE + 30_000
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    upcoming = (world.clock.now // MINUTE + 1) * MINUTE
    minute = f"{(upcoming // MINUTE) % 60:02d}"
    assert re.search(
        rf"next try Wed 1 Jul 2026, 12:{minute} CEST \(Europe/Paris; 10:{minute} UTC\)", html
    )

    # Past the lateness cap there is no next try to promise.
    world.clock.now = due + 15 * MINUTE + 1
    item = schedules_on((await browser.get(f"/installations/{installation.id}")).body.decode())[0]
    assert item["status"] == "retrying"
    # It says the next run ends it, not "Will try again" beside "No more tries".
    assert (
        "No more tries: nothing is sent after Wed 1 Jul 2026, 12:20 CEST (Europe/Paris;"
        " 10:20 UTC), so the next run, at Wed 1 Jul 2026, 12:21 CEST (Europe/Paris; 10:21 UTC),"
        " ends it not done." in browser.page()
    )
    assert ">Ends not done at the next run</span>" in browser.page()
    assert "Will try again" not in browser.page()
    assert "next try" not in browser.page()


async def test_a_5xx_that_was_not_retried_is_not_called_temporary(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    assert (await browser.create(installation.id, local_time="2026-07-01T12:05")).status == 303
    world.core.faults.push(Fault.respond(501, "not_implemented"))
    await tick_at(world, START_MS + 5 * MINUTE)
    html = (await browser.get(f"/installations/{installation.id}")).body.decode()
    assert schedules_on(html)[0]["result-code"] == "untrusted_response"
    assert "temporary problem" not in html


async def test_est_is_refused_as_a_fixed_offset_offering_new_york(world: World) -> None:
    """Issue 45 item 15: `EST` was taken as if it were New York; it is UTC-05:00 all year, so
    09:00 EST in July is 10:00 in New York. Refused saying so, with New York's zone and a
    place that keeps EST all year a click away; nothing stored."""
    installation = await world.install()
    browser = await world.open_page(installation)
    response = await browser.create(installation.id, local_time="2026-07-02T09:00", timezone="EST")
    assert response.status == 422
    html = response.body.decode()
    assert 'data-error-code="fixed_offset_zone"' in html
    assert "EST is a fixed offset, UTC-05:00 all year, with no daylight saving" in html
    offered = re.findall(r'<button type="submit" data-retry-timezone="([^"]+)"', html)
    assert offered == ["America/New_York", "America/Panama"]
    made = await browser.create(installation.id, local_time="2026-07-02T09:00", timezone=offered[0])
    assert made.status == 303
    stored = await world.db.prepare("SELECT timezone, due_at FROM schedules").all()
    assert [(r["timezone"], r["due_at"]) for r in stored.results] == [
        ("America/New_York", 1_782_997_200_000)  # 13:00 UTC: New York's 09:00 in July
    ]
