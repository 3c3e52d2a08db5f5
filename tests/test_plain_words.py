"""The editor's pages in plain words (issue 22), through forms, status codes, words and `data-*`.
The test clock starts at Wed 1 Jul 2026, 10:00 UTC (12:00 CEST in Paris, the site's zone)."""

from __future__ import annotations

import html as markup
import re
from datetime import UTC, date, datetime, timedelta

import pytest

from fake_core import Fault
from fake_core.state import Installation
from scheduling.repository import schedules
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import START_MS, FakeClock
from tests.support.records import new_schedule
from tests.support.runtimes import Runtime
from tests.support.time_format import raw_times
from tests.support.world import World, row, schedules_on, stored, tick_at, words

MINUTE = 60_000


def between(page: str, start: str, end: str) -> str:
    assert start in page, f"{start!r} not on the page"
    return page.split(start, 1)[1].split(end, 1)[0]


def retry_forms(page: str) -> list[dict[str, str]]:
    """The one-click ways out of a refusal: each form's hidden fields."""
    return [
        {k: markup.unescape(v) for k, v in re.findall(r'name="([^"]+)" value="([^"]*)"', form)}
        for form in re.findall(r'<form [^>]*class="retry">(.*?)</form>', page, re.S)
    ]


def next_year(runtime: Runtime) -> int:
    return datetime.fromtimestamp(runtime.now_ms() / 1000, UTC).year + 1


def day(when: date) -> str:
    """A day as the pages write it: `Fri 2 Jul 2027`."""
    return f"{when:%a} {when.day} {when:%b} {when.year}"


# -- 1. replacing is said before and after -----------------------------------------------


async def test_the_form_says_what_a_new_schedule_would_replace_per_change(world: World) -> None:
    installation = await world.install()
    world.core.state.edit("cnt_pub")  # a newer version: publish and unpublish are offered
    browser = await world.open_page(installation, "cnt_pub")
    fresh = browser.page()
    assert "data-replaces" not in fresh
    made = await browser.create(installation.id, transition="unpublish:draft")
    assert made.status == 303
    page = (await browser.get(f"/installations/{installation.id}")).body.decode()
    sid = str((await stored(world))[0]["id"])
    # One note, on the unpublish choice only, tied to its radio button.
    notes = re.findall(r'<p class="hint replaces" id="([^"]+)" data-replaces="([^"]+)"', page)
    assert len(notes) == 1
    note_id, replaces = notes[0]
    assert replaces == sid
    radio = re.search(
        r'<input type="radio" name="transition"[^>]*value="unpublish:draft"[^>]*>', page
    )
    assert radio
    assert f'aria-describedby="{note_id}"' in radio.group(0)
    publish = re.search(
        r'<input type="radio" name="transition"[^>]*value="publish:published"[^>]*>', page
    )
    assert publish
    assert "-replaces" not in publish.group(0)
    # It collides with the waiting unpublish instead (issue 38), and says so.
    assert 'aria-describedby="t-1-collides"' in publish.group(0)
    assert (
        "A new schedule replaces the waiting one of version"
        f" {world.core.state.group_of('cnt_pub').published_version_id} for Thu 2 Jul 2026,"
        " 09:00 CEST (Europe/Paris; 07:00 UTC): that one will not be sent." in words(page)
    )


async def test_the_receipt_names_the_schedule_it_replaced(runtime: Runtime) -> None:
    year = next_year(runtime)
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    first = await editor.create(installation_id, f"{year}-07-02T09:00")
    # The form now says, on the publish choice, what a new schedule would replace.
    assert f'data-replaces="{first}"' in editor.page
    assert "A new schedule replaces the waiting one of version" in words(editor.page)
    await editor.create(installation_id, f"{year}-07-03T08:30")
    receipt = between(editor.page, "data-confirmation=", "</div>")
    assert f'data-replaced="{first}"' in receipt
    [replaced] = await runtime.rows("SELECT version_id FROM schedules WHERE id = ?", first)
    assert (
        f"It replaces the schedule of version {replaced['version_id']} for"
        f" {day(date(year, 7, 2))}, 09:00 CEST (Europe/Paris; 07:00 UTC),"
        " which will not be sent" in words(receipt)
    )
    assert 'data-history-count="1" data-replaced-count="1"' in editor.page
    assert raw_times(editor.page) == []


# -- 2. cancel through a confirmation page ------------------------------------------------


async def test_cancel_asks_first_naming_change_version_time_and_title(runtime: Runtime) -> None:
    year = next_year(runtime)
    installation_id = await runtime.install()
    base = f"/installations/{installation_id}"
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    sid = await editor.create(installation_id, f"{year}-07-02T09:00")
    [made] = await runtime.rows("SELECT version_id FROM schedules WHERE id = ?", sid)
    version, when = made["version_id"], f"{day(date(year, 7, 2))}, 09:00 CEST"
    page = (await editor.get(base)).text
    # The card's Cancel is a link to the confirmation, not a form that cancels at once.
    assert f'<a class="button cancel" href="{base}/schedules/{sid}/cancel">' in page
    assert f'action="{base}/schedules/{sid}/cancel"' not in page
    reads = len(runtime.calls("content"))
    confirm = await editor.get(f"{base}/schedules/{sid}/cancel")
    assert confirm.status_code == 200
    assert f'data-cancel-confirmation="{sid}"' in confirm.text
    said = words(confirm.text)
    assert "Cancel this schedule?" in said
    assert "Content “Spring launch”" in said
    assert f"Change Publish version {version}" in said
    assert f"When {when} (Europe/Paris; 07:00 UTC)" in said
    assert raw_times(confirm.text) == []
    status = "SELECT status FROM schedules WHERE id = ?"
    assert await runtime.rows(status, sid) == [{"status": "pending"}]  # asking cancels nothing
    head = await editor.http.head(f"{base}/schedules/{sid}/cancel", headers=editor._headers())
    assert (head.status_code, head.content) == (200, b"")
    assert len(runtime.calls("content")) == reads + 2  # the title, read live (GET, HEAD)
    cancel = {"csrf_token": editor.csrf}
    cancelled = await editor.post_form(f"{base}/schedules/{sid}/cancel", cancel)
    assert cancelled.status_code == 303
    assert await runtime.rows(status, sid) == [{"status": "cancelled"}]
    after = (await editor.get(cancelled.headers["location"])).text
    flash = between(after, f'data-cancelled="{sid}"', "</div>")
    assert (
        f"Cancelled: the schedule to publish version {version} at {when}"
        " (Europe/Paris; 07:00 UTC). Nothing was sent to Dee Wan." in words(flash)
    )


async def test_the_confirmation_refuses_what_the_cancel_would_refuse(world: World) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    assert (await editor.create(installation.id)).status == 303
    sid = str((await stored(world))[0]["id"])
    viewer = await world.open_page(installation, person="usr_viewer")
    refused = await viewer.get(f"/installations/{installation.id}/schedules/{sid}/cancel")
    assert refused.status == 403
    assert 'data-error-code="cancel_not_allowed"' in refused.body.decode()
    assert "cancel-confirm" not in refused.body.decode()
    missing = await editor.get(f"/installations/{installation.id}/schedules/sch_nope/cancel")
    assert missing.status == 404
    assert (await editor.cancel(installation.id, sid)).status == 303
    ended = await editor.get(f"/installations/{installation.id}/schedules/{sid}/cancel")
    assert ended.status == 409
    assert 'data-error-code="not_cancellable"' in ended.body.decode()
    # The post keeps its own rules: without the session's CSRF token nothing is cancelled.
    assert (await editor.create(installation.id)).status == 303
    other = str((await stored(world))[-1]["id"])
    forged = await editor.post(
        f"/installations/{installation.id}/schedules/{other}/cancel", {"csrf_token": "x" * 43}
    )
    assert forged.status == 403
    assert (await row(world, other))["status"] == "pending"


async def test_the_confirmation_and_the_cancel_work_with_dee_wan_down(world: World) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    assert (await editor.create(installation.id)).status == 303
    sid = str((await stored(world))[0]["id"])
    world.core.faults.push(Fault.respond(503, "unavailable"), endpoint="content")
    confirm = await editor.get(f"/installations/{installation.id}/schedules/{sid}/cancel")
    assert confirm.status == 200
    assert "(Dee Wan did not give its title)" in words(confirm.body.decode())
    transitions = len(world.core.calls.of("transitions"))
    assert (await editor.cancel(installation.id, sid)).status == 303
    assert (await row(world, sid))["status"] == "cancelled"
    assert len(world.core.calls.of("transitions")) == transitions


async def test_the_manage_cancel_message_names_the_content(world: World) -> None:
    installation = await world.install()
    editor = await world.open_page(installation)
    assert (await editor.create(installation.id)).status == 303
    sid = str((await stored(world))[0]["id"])
    manager = await world.browser_for(installation, content_id=None)
    response = await manager.cancel(installation.id, sid, "?show=upcoming")
    assert response.status == 303
    assert (response.header("location") or "").endswith(f"?cancelled={sid}&show=upcoming")
    after = (await manager.follow(response)).body.decode()
    assert "Cancelled: the schedule to publish version ver_1 of “Spring launch” at Thu 2 Jul" in (
        words(after)
    )


# -- 3. one way of writing an instant; the deadline; lateness; years ahead ----------------


async def test_the_deadline_has_its_date_its_zone_and_rfc3339(runtime: Runtime) -> None:
    """00:40 CET on 1 December is 23:40 UTC on 30 November: the deadline says both days."""
    year = next_year(runtime)
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    await editor.create(installation_id, f"{year}-12-01T00:40")
    deadline = re.search(r'<p data-deadline="([^"]+)">(.*?)</p>', editor.page, re.S)
    assert deadline
    assert deadline.group(1) == f"{year}-11-30T23:55:00Z"
    assert words(deadline.group(2)) == (
        f"If Dee Wan cannot be reached, nothing is sent after {day(date(year, 12, 1))}, 00:55 CET"
        f" (Europe/Paris; {day(date(year, 11, 30))}, 23:55 UTC)."
    )


async def test_done_says_how_late_it_was(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    due = START_MS + 5 * MINUTE  # 12:05 CEST
    assert (await browser.create(installation.id, local_time="2026-07-01T12:05")).status == 303
    late_id = str((await stored(world))[0]["id"])
    other = await world.open_page(installation, "cnt_page")
    assert (await other.create(installation.id, local_time="2026-07-01T12:05")).status == 303
    on_time_id = next(str(r["id"]) for r in await stored(world) if r["content_id"] == "cnt_page")
    # A restart: the tick at the due minute never ran; the next one comes 2 min 10 s late.
    await tick_at(world, due + 2 * MINUTE + 10_000)
    page = (await browser.get(f"/installations/{installation.id}")).body.decode()
    item = next(i for i in schedules_on(page) if i["schedule-id"] == late_id)
    assert item["status"] == "completed"
    assert item["late-ms"] == "130000"
    assert "Done, 2 min late" in words(page)
    # A send within the minute is on time: plain "Done".
    await (
        world.db.prepare("UPDATE schedule_attempts SET started_at = ? WHERE schedule_id = ?")
        .bind(due + 30_000, on_time_id)
        .run()
    )
    page = (await other.get(f"/installations/{installation.id}")).body.decode()
    item = next(i for i in schedules_on(page) if i["schedule-id"] == on_time_id)
    assert "late-ms" not in item
    assert re.search(r'class="status status-completed">Done</span>', page)


async def test_a_time_years_ahead_is_accepted_with_a_note(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    response = await browser.create(installation.id, local_time="2031-07-02T09:00")
    assert response.status == 303
    page = (await browser.follow(response)).body.decode()
    note = re.search(r'<p data-years-ahead="([^"]+)">(.*?)</p>', page, re.S)
    assert note
    assert note.group(1) == "5 years"
    assert "that is about 5 years from now. If you meant an earlier year" in words(note.group(2))
    soon = await browser.create(installation.id, local_time="2027-06-30T09:00")
    assert "data-years-ahead" not in (await browser.follow(soon)).body.decode()


async def test_no_page_an_editor_is_shown_writes_a_raw_date_time(world: World) -> None:
    """Every page the in-process browser renders is scanned (`tests/support/time_format.py`);
    this walks the pages of every kind once and shows the scan can fail."""
    installation = await world.install()
    browser = await world.open_page(installation)
    seen = [browser.page()]
    refused = await browser.create(installation.id, local_time="2026-03-29T02:30")
    seen.append(refused.body.decode())
    seen.append((await browser.create(installation.id, local_time="")).body.decode())
    made = await browser.create(installation.id)
    seen.append((await browser.follow(made)).body.decode())
    sid = str((await stored(world))[0]["id"])
    seen.append(
        (
            await browser.get(f"/installations/{installation.id}/schedules/{sid}/cancel")
        ).body.decode()
    )
    manager = await world.browser_for(installation, content_id=None)
    seen.append(
        (await manager.get(f"/installations/{installation.id}?zone=Mars/Base")).body.decode()
    )
    for page in seen:
        assert raw_times(page) == []
    # The form's machine value keeps the picker's format; no text does.
    assert 'value="2026-03-29T02:30"' in seen[1]
    assert "YYYY" not in seen[2]
    assert raw_times("<p>at 2026-12-01T00:40</p>") == ["2026-12-01T00:40"]
    assert raw_times("<p>at 2026-12-01 00:37 CET</p>") == ["2026-12-01 00:37"]
    assert (
        raw_times('<input value="2026-12-01T00:40"><p data-deadline="2026-11-30T23:55:00Z">') == []
    )


# -- 4. zones in any case, suggestions; the first minute after a gap -----------------------


async def test_a_zone_in_any_case_is_stored_canonical(runtime: Runtime) -> None:
    year = next_year(runtime)
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    sid = await editor.create(installation_id, f"{year}-07-02T09:00", timezone="europe/berlin")
    [made] = await runtime.rows("SELECT timezone FROM schedules WHERE id = ?", sid)
    assert made == {"timezone": "Europe/Berlin"}
    assert f"{day(date(year, 7, 2))}, 09:00 CEST (Europe/Berlin; 07:00 UTC)" in editor.page


async def test_an_unknown_zone_is_said_back_with_suggestions_one_click_away(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    typed = runtime.noon(2)
    assert await editor.create(installation_id, typed, timezone="Europe/Berln") == "422"
    page = editor.page
    error = words(between(page, 'id="form-error"', "</div>\n"))
    assert "“Europe/Berln” is not a time zone name this plugin knows." in error
    assert "Did you mean Europe/Berlin" in error
    assert await runtime.count("schedules", installation_id) == 0
    choices = retry_forms(page)
    assert 1 <= len(choices) <= 3
    assert choices[0]["timezone"] == "Europe/Berlin"
    assert 'data-retry-timezone="Europe/Berlin">Schedule it in Europe/Berlin</button>' in page
    # Everything else entered is kept in the choice's form.
    assert (choices[0]["local_time"], choices[0]["transition"]) == (typed, "publish:published")
    made = await editor.post_form(f"/installations/{installation_id}/schedules", choices[0])
    assert made.status_code == 303
    [stored_] = await runtime.rows("SELECT timezone FROM schedules WHERE installation_id = ?",
                                   installation_id)  # fmt: skip
    assert stored_ == {"timezone": "Europe/Berlin"}


async def test_a_skipped_time_is_refused_with_the_first_minute_after_the_jump(
    runtime: Runtime,
) -> None:
    march = date(next_year(runtime), 3, 31)
    gap = march - timedelta(days=(march.weekday() + 1) % 7)  # the last Sunday: clocks jump
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    skipped = f"{gap.isoformat()}T02:30"
    assert await editor.create(installation_id, skipped, timezone="Europe/Berlin") == "422"
    page = editor.page
    assert 'data-error-code="nonexistent_local_time"' in page
    assert (
        f"{day(gap)}, 02:30 does not happen in Europe/Berlin: the clocks jump from 02:00"
        f" to 03:00. The first minute after the jump is {day(gap)}, 03:00 CEST"
        " (Europe/Berlin; 01:00 UTC)." in words(page)
    )
    [choice] = retry_forms(page)
    assert choice["local_time"] == f"{gap.isoformat()}T03:00"
    assert f'data-retry-local-time="{gap.isoformat()}T03:00"' in page
    assert f">Schedule it at {day(gap)}, 03:00 CEST instead</button>" in page
    made = await editor.post_form(f"/installations/{installation_id}/schedules", choice)
    assert made.status_code == 303
    sql = "SELECT local_time, timezone FROM schedules WHERE installation_id = ?"
    [row_] = await runtime.rows(sql, installation_id)
    assert (row_["local_time"], row_["timezone"]) == (f"{gap.isoformat()}T03:00", "Europe/Berlin")


async def test_an_empty_time_is_asked_for_in_words(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    refused = await browser.create(installation.id, local_time="")
    assert refused.status == 422
    assert "Choose a date and a time: the day, then the hour and minute." in refused.body.decode()


# -- 5. Dee Wan down or slow is temporary ----------------------------------------------------


@pytest.mark.parametrize(
    "fault", [Fault.respond(503, "unavailable"), Fault.respond(500, "boom"), Fault.timeout()]
)
async def test_dee_wan_down_on_the_content_read_is_temporary(world: World, fault: Fault) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    assert (await browser.create(installation.id)).status == 303
    world.core.faults.push(fault, endpoint="content")
    response = await browser.get(f"/installations/{installation.id}")
    # The schedules are the database's: the page is shown, and says Dee Wan is not answering
    # (issue 26, item 9: it was a 503 page that showed nothing).
    assert response.status == 200
    page = response.body.decode()
    assert 'data-unread="dee_wan_unavailable"' in page
    said = words(page)
    assert "Dee Wan is not answering right now, so this page shows the schedules as" in said
    assert "could not be trusted" not in said
    assert len(schedules_on(page)) == 1
    assert 'class="schedule-form"' not in page
    assert "Nothing can be scheduled until Dee Wan answers" in said
    # Its next steps: the page again, and Dee Wan.
    assert f'href="/installations/{installation.id}">Try again</a>' in page
    assert f'href="{world.core.base_url}">Back to Dee Wan</a>' in page
    # The words come first; the code is a detail for support.
    assert said.index("not answering") < said.index("code dee_wan_unavailable")


async def test_dee_wan_down_at_submit_stores_nothing_and_keeps_the_form(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    world.core.faults.push(Fault.respond(502, "bad_gateway"), endpoint="content")
    response = await browser.create(installation.id, local_time="2026-07-03T08:15")
    assert response.status == 503
    assert response.header("retry-after") == "60"
    page = response.body.decode()
    assert 'data-error-code="dee_wan_unavailable"' in page
    assert await stored(world) == []
    # The form comes back as it was entered, the reason above it.
    assert re.search(r'id="local_time" name="local_time"[^>]*value="2026-07-03T08:15"', page)
    assert 'name="transition" id="t-1" value="publish:published" checked' in page
    said = words(page)
    assert "the form keeps what you entered: press Schedule again in a minute" in said
    assert said.index("press Schedule again") < said.index("Date and time")
    # Sent again once Dee Wan answers, it is made.
    form = page.split('class="schedule-form"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'<input [^>]*name="([^"]+)"[^>]*value="([^"]*)"', form))
    assert (fields["local_time"], fields["timezone"]) == ("2026-07-03T08:15", "Europe/Paris")
    again = await browser.post(f"/installations/{installation.id}/schedules", fields)
    assert again.status == 303
    assert len(await stored(world)) == 1


async def test_a_garbled_answer_is_said_in_plain_words(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    world.core.faults.push(Fault.bad_json(200), endpoint="content")
    response = await browser.get(f"/installations/{installation.id}")
    assert response.status == 200
    page = response.body.decode()
    assert 'data-unread="untrusted_response"' in page
    said = words(page)
    assert "in a way its plugin protocol does not allow (a garbled or unexpected answer)" in said
    assert "could not be trusted" not in said
    assert "tell the plugin's operator" in said


# -- 6. plain words first; titles instead of ids --------------------------------------------


async def test_cards_lead_with_words_and_keep_codes_for_support(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation)
    assert (await browser.create(installation.id, local_time="2026-07-01T12:05")).status == 303
    await tick_at(world, START_MS + 5 * MINUTE)
    page = (await browser.get(f"/installations/{installation.id}")).body.decode()
    card = between(page, '<li class="schedule"', "</li>\n</ul>")
    assert "<dd>Dee Wan applied the change.</dd>" in card
    assert "<code>transition_applied</code>" not in card
    assert re.search(
        r'<p class="support">For support: schedule sch_\S+, no\. 1 of this change,'
        r" code transition_applied, HTTP 200\.</p>",
        card,
    )
    assert "<dd>Ada Lovelace</dd>" in card  # no "(schedule no. 1 of this change …)" after it


async def test_a_translation_names_its_group_by_title(world: World) -> None:
    installation = await world.install()
    browser = await world.open_page(installation, "cnt_fr")
    page = browser.page()
    assert 'data-primary-id="cnt_en"' in page
    assert "Translation of “Spring launch”: schedules apply to the whole translation group" in (
        words(page)
    )
    assert "<code>cnt_en</code>" not in page


# -- 8. history that stays out of the way ----------------------------------------------------


async def make_history(world: World, installation: Installation, reschedules: int) -> list[str]:
    """`reschedules` + 1 publish schedules of cnt_en, each replacing the one before."""
    ids = []
    for n in range(reschedules + 1):
        new = new_schedule(
            id=f"sch_h{n:03d}",
            installation_id=installation.id,
            due_at=START_MS + 3_600_000,
            timezone="Europe/Paris",
            local_time="2026-07-01T13:00",
        )
        world.clock.advance(1)
        await schedules.create(world.db, new, world.clock.now_ms())
        ids.append(new.id)
    return ids


async def test_replaced_schedules_fold_into_a_history_with_their_count(world: World) -> None:
    installation = await world.install()
    ids = await make_history(world, installation, 55)
    # Two that ended, on other kinds of change: they stay in view.
    browser = await world.open_page(installation)
    page = browser.page()
    in_view = between(page, 'aria-label="Schedules for this content"', "</ul>")
    assert re.findall(r'data-schedule-id="([^"]+)"', in_view) == [ids[-1]]
    history = re.search(
        r'<details class="history" id="history" ([^>]*)>(.*?)</details>', page, re.S
    )
    assert history
    assert 'data-history-count="55"' in history.group(1)
    assert 'data-replaced-count="55"' in history.group(1)
    assert " open" not in history.group(1)  # folded on the first page
    # It says how many of them this page shows.
    assert "History: 55 earlier schedules, all replaced by a newer one (49 on this page)" in words(
        history.group(2)
    )
    assert len(re.findall(r'data-status="superseded"', history.group(2))) == 49
    # Pages of 50 with links at the top as well as the bottom.
    assert page.count('rel="next"') == 2
    assert 'aria-label="Pages (top)"' in page
    assert 'aria-label="Pages (bottom)"' in page
    second = (await browser.get(f"/installations/{installation.id}?page=2")).body.decode()
    assert re.search(r'<details class="history" id="history" [^>]* open>', second)
    assert len(schedules_on(second)) == 6
    assert "(6 on this page)" in words(second)
    assert "the latest ended ones are on" in words(second)


async def test_the_latest_ended_schedules_stay_in_view_and_older_ones_fold(world: World) -> None:
    installation = await world.install()
    ids = await make_history(world, installation, 6)
    # The six replaced ones end in other ways instead: the latest three stay in view.
    for n, sid in enumerate(ids[:6]):
        status = "completed" if n % 2 else "cancelled"
        await (
            world.db.prepare(
                "UPDATE schedules SET status = ?, next_attempt_at = NULL, updated_at = ?"
                " WHERE id = ?"
            )
            .bind(status, START_MS + 10 + n, sid)
            .run()
        )
    page = (await world.open_page(installation)).page()
    in_view = between(page, 'aria-label="Schedules for this content"', "</ul>")
    assert re.findall(r'data-schedule-id="([^"]+)"', in_view) == [ids[6], ids[5], ids[4], ids[3]]
    assert 'data-history-count="3"' in page
    assert 'data-replaced-count="0"' in page


async def test_manage_folds_the_replaced_finished_ones(world: World) -> None:
    installation = await world.install()
    ids = await make_history(world, installation, 5)
    await (
        world.db.prepare(
            "UPDATE schedules SET status = 'completed', result_code = 'transition_applied',"
            " next_attempt_at = NULL, updated_at = ? WHERE id = ?"
        )
        .bind(START_MS + 99, ids[-1])
        .run()
    )
    manager = await world.browser_for(installation, content_id=None)
    page = (await manager.get(f"/installations/{installation.id}?show=finished")).body.decode()
    finished = between(page, 'data-group="finished">', "</section>")
    shown, folded = finished.split('<details class="history"', 1)
    assert re.findall(r'data-schedule-id="([^"]+)"', shown) == [ids[-1]]
    assert len(re.findall(r'data-status="superseded"', folded)) == 5
    assert 'data-replaced-count="5"' in folded
    assert "Replaced by a newer schedule: 5" in words(folded)


# -- 9. the manage view says what it could not do --------------------------------------------


async def seed_many(world: World, installation: Installation, count: int) -> None:
    for i in range(count):
        content_id = f"cnt_x{i:03d}"
        world.core.state.add_content(content_id, f"Item {i}")
        new = new_schedule(
            id=f"sch_x{i:03d}",
            installation_id=installation.id,
            content_id=content_id,
            due_at=START_MS + (i + 1) * 3_600_000,
        )
        await schedules.create(world.db, new, START_MS)


async def test_a_page_past_the_last_shows_the_last_keeping_zone_and_filter(world: World) -> None:
    installation = await world.install()
    await seed_many(world, installation, 63)
    manager = await world.browser_for(installation, content_id=None)
    page = (
        await manager.get(f"/installations/{installation.id}?page=99&show=upcoming&zone=Asia/Tokyo")
    ).body.decode()
    assert "Showing 51–63 of 63, page 2 of 2." in page
    assert "4901" not in page
    assert "There is no page 99: there are 2 pages, so this is the last one." in page
    assert 'data-zone="Asia/Tokyo"' in page
    assert re.search(r'data-filter="upcoming" data-count="63" aria-current="page"', page)
    assert len(schedules_on(page)) == 13
    # Typed by hand without a zone: the site's zone, read from the titles, not UTC.
    bare = (await manager.get(f"/installations/{installation.id}?page=99")).body.decode()
    assert 'data-zone="Europe/Paris"' in bare
    # Every link of the view keeps the zone and the filter; the zone form keeps the page.
    links = re.findall(r'<a rel="(?:prev|next)" href="([^"]+)"', page)
    assert links
    assert all("zone=Asia%2FTokyo" in link and "show=upcoming" in link for link in links)
    zone_form = between(page, 'class="zone-form"', "</form>")
    assert '<input type="hidden" name="show" value="upcoming">' in zone_form
    assert '<input type="hidden" name="page" value="2">' in zone_form


async def test_a_filter_that_does_not_exist_shows_all_and_says_so(world: World) -> None:
    installation = await world.install()
    await seed_many(world, installation, 3)
    manager = await world.browser_for(installation, content_id=None)
    response = await manager.get(f"/installations/{installation.id}?show=bogus")
    assert response.status == 200
    page = response.body.decode()
    assert 'data-notice="unknown_filter"' in page
    assert "There is no filter “bogus”: showing all schedules." in page
    assert re.search(r'data-filter="all" data-count="3" aria-current="page"', page)
    odd = (await manager.get(f"/installations/{installation.id}?page=%C2%B2")).body.decode()
    assert "There is no page “²”: showing page 1." in odd


async def test_a_page_past_the_end_of_a_content_shows_the_last_and_says_so(world: World) -> None:
    installation = await world.install()
    await make_history(world, installation, 60)
    browser = await world.open_page(installation)
    page = (await browser.get(f"/installations/{installation.id}?page=9")).body.decode()
    assert "There is no page 9: this is the last one, page 2." in page
    assert 'data-page-corrected="2"' in page
    assert "Showing 51–61 of 61, page 2 of 2." in page


async def test_titles_not_read_in_time_are_said(
    db: SqliteDatabase, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduling.pages import manage

    world = World(db, clock)
    installation = await world.install()
    await seed_many(world, installation, 4)
    monkeypatch.setattr(manage, "TITLES_BUDGET_S", 0.05)
    world.core.faults.set_latency(0.2, "content")
    manager = await world.browser_for(installation, content_id=None)
    page = (await manager.get(f"/installations/{installation.id}")).body.decode()
    assert 'data-titles-missing="4"' in page
    assert (
        "Dee Wan did not answer in time for 4 contents (it is slow or not answering right now),"
        " so their ids are shown instead. Reload the page to try again." in page
    )
    assert page.count("of content <code>cnt_x") == 4
