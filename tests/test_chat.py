"""Chat endpoints (issue 28) through the public surface: the manage page's form with kind
`chat`, real ticks against the fake Dee Wan, and a chat receiver that takes Slack's
`{"text": …}`. A refusal is one line of plain words; an endpoint hears at most one message a
minute, up to 10 lines and "and N more"; the URL is shown once, then only its host and its
last 4 characters, and is never in the database's bytes, a log or a page after that."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from fake_core import Fault
from fake_core.state import Installation
from scheduling.channels import chat as chat_module
from scheduling.channels.chat import url_context
from scheduling.domain.notifications import REFUSED, ProposalEvent, ScheduleEvent
from scheduling.domain.outcomes import Status
from scheduling.domain.wording import explain_result
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import OTHER_TOKEN_KEY, FakeClock, base_env
from tests.support.runtimes import Runtime, added_endpoint
from tests.support.webhooks import (
    CHAT_URL,
    DEE_WAN_REFUSALS,
    HOOK_URL,
    Receiver,
    add_chat_endpoint,
    add_endpoint,
    with_receivers,
)
from tests.support.world import (
    MINUTE,
    Browser,
    World,
    bulk_due,
    local,
    row,
    schedule,
    tick_at,
)

OTHER_CHAT_URL = "https://team.example.org/hooks/incoming/a7b6c5d4e3f2g1h0i9j8/slack"
SHOWN = "chat.example.com …Zq9X"


class Chat:
    """An installation with a chat endpoint (a receiver on `CHAT_URL`) hearing of refusals."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.receiver = Receiver(CHAT_URL, clock=world.clock.now_ms)
        with_receivers(world, self.receiver)

    async def set_up(self, events: tuple[str, ...] = ("schedule.refused",)) -> Installation:
        self.installation = await self.world.install()
        self.manage: Browser = await self.world.browser_for(self.installation, content_id=None)
        self.shown_once = await add_chat_endpoint(
            self.manage, self.installation.id, CHAT_URL, events
        )
        return self.installation

    def lines(self, text: str) -> list[str]:
        return [line for line in text.split("\n") if line.startswith("• ")]


@pytest.fixture
def chat(world: World) -> Chat:
    return Chat(world)


# -- every refusal path: one line per schedule ---------------------------------------------


@pytest.mark.parametrize(
    ("fault", "code"),
    DEE_WAN_REFUSALS,
    ids=[f"{code}-{i}" for i, (_, code) in enumerate(DEE_WAN_REFUSALS)],
)
async def test_each_refusal_by_dee_wan_is_one_line_in_its_tick(
    world: World, chat: Chat, fault: Fault, code: str
) -> None:
    installation = await chat.set_up()
    s = await schedule(world, installation)
    world.core.faults.push(fault, endpoint="transitions")
    report = await tick_at(world, s["due_at"])
    assert (await row(world, s["id"]))["result_code"] == code
    assert (report["delivery_events"], report["delivery_sends"]) == (1, 1)
    [text] = chat.receiver.texts()
    [line] = chat.lines(text)
    assert line.startswith(
        f"• Could not publish “Spring launch” ({s['version_id']}) at 10:05 UTC: "
    )
    stored = await row(world, s["id"])
    sentence = explain_result(
        code, None, ended_by=stored["ended_by"], tries=stored["attempt_count"]
    )
    assert line.endswith(chat_module.escape(sentence))  # the card's own sentence
    assert text.endswith(f"See them: https://scheduling.example/installations/{installation.id}")
    await tick_at(world, s["due_at"] + 5 * MINUTE)
    assert len(chat.receiver.received) == 1  # told once


async def test_a_refusal_is_one_line_of_a_message_to_a_url_sealed_in_the_database(
    runtime: Runtime,
) -> None:
    """On both runtimes (the Worker's: the URL sealed with WebCrypto, the message sent by its
    fetch): in plain, only the URL's host and last 4 characters, and never in the log."""
    installation_id = await runtime.install()
    with runtime.receiver() as receiver:
        url = receiver.url
        endpoint_id, shown = await added_endpoint(runtime, installation_id, url, kind="chat")
        assert shown == url
        sql = "SELECT url, secret_sealed FROM notification_endpoints WHERE id = ?"
        [stored] = await runtime.rows(sql, endpoint_id)
        assert stored["url"] == f"{urlsplit(url).netloc} …{url[-4:]}"
        assert url not in stored["secret_sealed"]
        assert (
            await runtime.unsealed(
                stored["secret_sealed"], url_context(installation_id, endpoint_id)
            )
            == url
        )
        editor = await runtime.open_page(installation_id, content_id=runtime.content)
        due = runtime.minute_ahead(2)
        await editor.create(installation_id, local(due), timezone="UTC")
        runtime.fault(Fault.respond(409, "workflow_conflict"))
        await runtime.tick(due)
        [message] = receiver.received
        assert message.headers["content-type"] == "application/json"
        [line, tail] = json.loads(message.body)["text"].split("\n")
        assert line.startswith("• Could not publish “Spring launch” (")
        # The card's own sentence for Dee Wan's 409 `workflow_conflict`.
        assert ": Dee Wan's workflow does not allow this change from the content" in line
        assert line.endswith("so it was not applied. Check the content in Dee Wan, then try again.")
        assert tail.endswith(f"/installations/{installation_id}")
        told = "SELECT status, last_http_status FROM webhook_deliveries WHERE installation_id = ?"
        assert await runtime.rows(told, installation_id) == [
            {"status": "delivered", "last_http_status": 204}
        ]
        await runtime.tick(due + MINUTE)
        assert len(receiver.received) == 1  # told once
        assert url not in runtime.log_text()


async def test_a_token_unreadable_is_a_line_that_waits_for_the_key_its_url_is_sealed_under(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """The chat URL does not open under another TOKEN_KEY either: the line waits, then goes.
    (Every other way a schedule ends refused writes the same event: `test_notifications.py`.)"""
    world = World(db, clock)
    chat = Chat(world)
    installation = await chat.set_up()
    elsewhere = World(db, clock, env=base_env(TOKEN_KEY=OTHER_TOKEN_KEY))
    elsewhere.core = world.core
    with_receivers(elsewhere, chat.receiver)
    unreadable = await schedule(world, installation, "cnt_page", in_minutes=30)
    await tick_at(elsewhere, unreadable["due_at"])
    assert (await row(world, unreadable["id"]))["result_code"] == "token_unreadable"
    assert chat.receiver.received == []  # its URL does not open under that key either
    [waiting] = (
        await db.prepare("SELECT * FROM webhook_deliveries WHERE status = 'waiting'").all()
    ).results
    assert waiting["last_error"] == "secret_unreadable"
    await tick_at(world, max(waiting["next_attempt_at"], unreadable["due_at"] + MINUTE))
    [text] = chat.receiver.texts()
    [line] = chat.lines(text)
    assert line.startswith(f"• Could not publish “{title(world, 'cnt_page')}” (")
    assert "rotate it in Dee Wan" in line


def title(world: World, content_id: str) -> str:
    return world.core.state.contents[content_id].title


# -- one message a minute, ten lines and "and N more" -------------------------------------


async def test_a_burst_of_50_refusals_is_one_message_then_one_more_the_next_minute(
    world: World, chat: Chat
) -> None:
    installation = await chat.set_up()
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 50, due, "burst")
    world.core.faults.push(
        Fault.respond(409, "workflow_conflict"), endpoint="transitions", times=55
    )
    report = await tick_at(world, due)
    assert (report["refused"], report["delivery_events"], report["delivery_sends"]) == (50, 50, 1)
    assert report["deliveries_delivered"] == 50  # one message tells all fifty
    [text] = chat.receiver.texts()
    lines = chat.lines(text)
    assert len(lines) == 10
    assert all(line.startswith("• Could not publish “burst") for line in lines)
    assert text.split("\n")[-1] == (
        f"and 40 more: https://scheduling.example/installations/{installation.id}"
    )
    # Five more refused later in the same minute wait for the next one.
    await bulk_due(world, installation, 5, due + 20_000, "later")
    later = await tick_at(world, due + 30_000)
    assert (later["delivery_events"], later["delivery_sends"]) == (5, 0)
    assert (await tick_at(world, due + 59_999))["delivery_sends"] == 0
    await tick_at(world, due + MINUTE)
    first, second = chat.receiver.received
    assert second.at - first.at >= MINUTE
    assert [line[:22] for line in chat.lines(chat.receiver.texts()[1])] == [
        "• Could not publish “l"
    ] * 5
    assert chat.receiver.texts()[1].endswith(f"See them: {page(installation)}")
    rows = await world.db.prepare("SELECT status, count(*) AS n FROM webhook_deliveries").all()
    assert rows.results == [{"status": "delivered", "n": 55}]


def page(installation: Installation) -> str:
    return f"https://scheduling.example/installations/{installation.id}"


async def test_each_chat_endpoint_and_each_webhook_hears_on_its_own(
    world: World, chat: Chat
) -> None:
    other = Receiver(OTHER_CHAT_URL)
    hook = Receiver(HOOK_URL)
    with_receivers(world, other, hook)
    installation = await chat.set_up()
    await add_chat_endpoint(chat.manage, installation.id, OTHER_CHAT_URL)
    await add_endpoint(chat.manage, installation.id, HOOK_URL)
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 12, due, "pair")
    world.core.faults.push(
        Fault.respond(409, "workflow_conflict"), endpoint="transitions", times=12
    )
    report = await tick_at(world, due)
    assert report["delivery_sends"] == 1 + 1 + 12  # a message per chat, a POST per event
    assert [len(chat.lines(t)) for t in (*chat.receiver.texts(), *other.texts())] == [10, 10]
    assert len(hook.received) == 12
    assert all(json.loads(d.body)["type"] == "schedule.refused" for d in hook.received)


# -- failures, 429, the test event ---------------------------------------------------------


async def test_a_429_is_tried_again_at_its_retry_after_and_a_failure_on_the_backoff(
    world: World, chat: Chat
) -> None:
    installation = await chat.set_up()
    chat.receiver.answer_next((429, {"retry-after": "150"}), 500)
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    await tick_at(world, s["due_at"])
    [waiting] = await deliveries(world)
    assert (waiting["status"], waiting["last_http_status"]) == ("waiting", 429)
    assert waiting["next_attempt_at"] - s["due_at"] == 150_000
    await tick_at(world, waiting["next_attempt_at"])  # 500: the backoff, a minute at least
    [again] = await deliveries(world)
    assert again["next_attempt_at"] - waiting["next_attempt_at"] >= MINUTE
    await tick_at(world, again["next_attempt_at"])
    texts = chat.receiver.texts()
    assert len(texts) == 3
    assert len(set(texts)) == 1  # the same message each time
    [done] = await deliveries(world)
    assert (done["status"], done["attempt_count"]) == ("delivered", 3)


async def deliveries(world: World) -> list[dict[str, Any]]:
    return (await world.db.prepare("SELECT * FROM webhook_deliveries").all()).results


async def test_the_test_event_is_a_chat_message_and_a_chat_has_no_secret_to_rotate(
    world: World, chat: Chat
) -> None:
    installation = await chat.set_up()
    [endpoint] = (await world.db.prepare("SELECT id FROM notification_endpoints").all()).results
    base = f"/installations/{installation.id}/notifications/{endpoint['id']}"
    form = {"csrf_token": chat.manage.csrf(), "opened_for": "manage"}
    assert (await chat.manage.post(f"{base}/test", form)).status == 303
    [text] = chat.receiver.texts()
    assert text == f"{chat_module.TEST_TEXT}\n{page(installation)}"
    shown = (await chat.manage.get(f"/installations/{installation.id}/notifications")).body.decode()
    assert 'data-endpoint-kind="chat"' in shown
    assert "HTTP 204 at" in shown
    assert f"{base}/rotate" not in shown
    refused = await chat.manage.post(f"{base}/rotate", form)
    assert refused.status == 409
    assert b'data-error-code="chat_has_no_secret"' in refused.body


# -- the URL is the secret -------------------------------------------------------------------


async def test_the_url_is_shown_once_then_only_its_host_and_last_4_characters(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    apply_migrations(database.connection)
    world = World(database, clock)
    chat = Chat(world)
    installation = await chat.set_up()
    assert f"data-secret-url>{CHAT_URL}<" in chat.shown_once
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    await tick_at(world, s["due_at"])
    assert len(chat.receiver.received) == 1  # sent to the URL itself
    pages = [
        (await chat.manage.get(f"/installations/{installation.id}/notifications")).body.decode(),
        (await chat.manage.get(f"/installations/{installation.id}/notifications")).body.decode(),
    ]
    for shown in pages:
        assert SHOWN in shown
        assert "data-secret-url" not in shown
    stored = await world.db.prepare("SELECT url, secret_sealed FROM notification_endpoints").all()
    assert stored.results[0]["url"] == SHOWN
    database.close()
    secret_part = CHAT_URL.split("/services/")[1]
    for where, data in (
        ("database", (tmp_path / "plugin.sqlite3").read_bytes()),
        ("logs", caplog.text.encode()),
        ("pages", "".join(pages).encode()),
    ):
        assert secret_part.encode() not in data, where
        assert secret_part[:12].encode() not in data, where


async def test_a_chat_url_follows_the_host_rules_and_bad_kinds_are_refused_with_a_code(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    manage = await runtime.open_page(installation_id)
    path = f"/installations/{installation_id}/notifications"
    for kind, url, code in (
        ("chat", "http://chat.example.com/hook", "invalid_endpoint_url"),
        ("chat", "https://127.0.0.1/hook", "invalid_endpoint_url"),
        ("chat", "https://intranet/hook", "invalid_endpoint_url"),
        ("sms", CHAT_URL, "unknown_endpoint_kind"),
        ("", CHAT_URL, "unknown_endpoint_kind"),
    ):
        await manage.get(f"/installations/{installation_id}/notifications")
        fields = {"csrf_token": manage.csrf, "opened_for": "manage", "kind": kind, "url": url,
                  "events": ["schedule.refused"]}  # fmt: skip
        response = await manage.post_form(path, fields)
        assert response.status_code == 422, (kind, url)
        assert f'data-error-code="{code}"' in response.text
    assert await runtime.count("notification_endpoints", installation_id) == 0


# -- the lines themselves ------------------------------------------------------------------


def test_a_title_or_a_name_never_mentions_anyone_nor_becomes_a_link() -> None:
    """Issue 45 item 8: Slack reads `<!here>`, Mattermost, Rocket.Chat and Discord read a bare
    `@here`, `@channel`, `@everyone` or `@all`, Markdown links, and any of them may link a
    bare address. What Dee Wan or a person named is shown as written, but read as none of
    them: an invisible space breaks each."""
    title = "@here @channel [Win](https://evil.example/x) www.evil.example @everyone"
    event = ScheduleEvent(
        type=REFUSED,
        at=0,
        installation_id="ins_1",
        schedule_id="sch_1",
        content_id="cnt_1",
        kind="publish",
        to_state="published",
        version_id="@all",
        due_at=1_782_896_400_000,
        local_time="2026-07-01T09:00",
        timezone="UTC",
        status=Status.REFUSED,
        result_code="content_not_found",
        attempts=1,
        outcome_unknown=False,
        message=explain_result("content_not_found", None),
    )
    proposal = ProposalEvent(
        at=0,
        installation_id="ins_1",
        proposal_id="prp_1",
        content_id="docs.example",
        kind="publish",
        to_state="published",
        due_at=1_782_896_400_000,
        local_time="2026-07-01T09:00",
        timezone="UTC",
        proposed_by="@channel bot",
        for_person="[Ada](http://evil.example)",
    )
    for line in (
        chat_module.event_line(event, title),
        chat_module.event_line(ProposalEvent.read(proposal.body("https://s.example")), None),
    ):
        for markup in ("@here", "@channel", "@everyone", "@all", "](", "://", "evil.example"):
            assert markup not in line
    assert f"“{title}” (@all)" in chat_module.event_line(event, title).replace("\u200b", "")
    said = chat_module.event_line(proposal, None).replace("\u200b", "")
    assert said.startswith("@channel bot proposes to publish docs.example at 09:00 UTC")
    assert "for [Ada](http://evil.example): confirm" in said


def test_a_line_escapes_what_a_chat_would_read_as_markup_and_cuts_a_long_title() -> None:
    event = ScheduleEvent(
        type=REFUSED,
        at=0,
        installation_id="ins_1",
        schedule_id="sch_1",
        content_id="cnt_1",
        kind="unpublish",
        to_state="draft",
        version_id="ver_9",
        due_at=1_782_896_400_000,  # 09:00 UTC: 11:00 in Paris, summer time
        local_time="2026-07-01T11:00",
        timezone="Europe/Paris",
        status=Status.REFUSED,
        result_code="content_not_found",
        attempts=1,
        outcome_unknown=False,
        message=explain_result("content_not_found", None),
    )
    body = event.body("https://scheduling.example")
    assert ScheduleEvent.read(body) == event  # what the chat reads back from the outbox
    line = chat_module.event_line(event, "<!channel> Q3 & <https://evil.example|click>")
    assert line == (
        "Could not unpublish “&lt;!channel&gt; Q3 &amp;"
        " &lt;https:\u200b//evil.\u200bexample|click&gt;” (ver_9) at 11:00 CEST: The content no"
        " longer exists in Dee Wan, so there was nothing to"
        " change."
    )
    long = chat_module.event_line(event, "x" * 500)
    assert "x" * (chat_module.MAX_TITLE_CHARS - 1) + "…" in long
    assert chat_module.event_line(event, None).startswith("Could not unpublish “cnt_1”")
    digest = chat_module.digest([f"line {i}" for i in range(10)], 2, "https://p.example/i")
    assert json.loads(digest)["text"].split("\n") == [
        *(f"• line {i}" for i in range(10)),
        "and 2 more: https://p.example/i",
    ]
