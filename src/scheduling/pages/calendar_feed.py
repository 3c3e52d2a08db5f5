"""`GET /calendar-feeds/{token}.ics`: a person's calendar feed (RFC 5545), which a calendar
client fetches without a session, so its address is the credential: a malformed one is
refused before any lookup, an unknown or revoked one is 404, and one whose person stopped
launching Scheduling, or whose installation is gone, 410; never with more detail.

One event a waiting change, from a day ago on: its `UID` holds the schedule id, its start
the instant in UTC, its summary the change and the title the person could see, its `URL` the
installation's page; no pin, no secret. Written here rather than with the `icalendar`
package, whose import and folding cost more than the feed. A rare route: the app imports it
on a calendar client's first request.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlsplit

from scheduling.domain.schedules import Schedule
from scheduling.domain.secrets import has_shape
from scheduling.domain.times import instant_text
from scheduling.domain.wording import KIND, STATUS, Refusal, content_text
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.limits import MAX_STORED_INTEGER
from scheduling.pages.since_last_visit import title_of
from scheduling.repository import people
from scheduling.services import Services

MAX_EVENTS = 1_000
DAY_MS = 86_400_000


async def feed(request: Request, services: Services) -> Response:
    token, now = request.path_params["token"], services.clock.now_ms()
    found = None
    if has_shape("calendar_feed", token):
        found = await people.find_feed(services.db, await services.crypto.sha256_hex(token), now)
    if found is None:
        raise Refusal(404, "not_found", "There is nothing at this address.")
    if not found.live:
        raise Refusal(410, "feed_ended", "This calendar feed has ended.")
    listed = await people.waiting(
        services.db, found.installation_id, now - DAY_MS, MAX_STORED_INTEGER, MAX_EVENTS
    )
    origin = services.config.public_origin
    kind = "manage" if found.whole else "content"
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Dee Wan Scheduling//Calendar feed//EN"]
    lines.append("X-WR-CALNAME:Scheduling")
    for item in listed:
        title = await title_of(services, item, None, found.person_id, kind)
        lines += _event(item.schedule, title, origin, now)
    lines.append("END:VCALENDAR")
    body = "".join(_folded(line) + "\r\n" for line in lines).encode()
    headers = [("content-type", "text/calendar; charset=utf-8"), ("cache-control", "no-store")]
    return Response(200, body, headers)


def _event(schedule: Schedule, title: str | None, origin: str, now: int) -> list[str]:
    what = f"{KIND.get(schedule.kind, schedule.kind)} {content_text(schedule.content_id, title)}"
    when = instant_text(schedule.due_at, schedule.timezone, utc=False)
    return [
        "BEGIN:VEVENT",
        f"UID:{schedule.id}@{urlsplit(origin).hostname}",
        f"DTSTAMP:{_utc(now)}",
        f"DTSTART:{_utc(schedule.due_at)}",
        f"SUMMARY:{_text(what)}",
        f"DESCRIPTION:{_text(f'{STATUS[schedule.status]}: due {when}.')}",
        f"URL:{origin}/installations/{schedule.installation_id}",
        "END:VEVENT",
    ]


def _utc(ms: int) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, UTC):%Y%m%dT%H%M%SZ}"


def _text(value: str) -> str:
    """A TEXT value (RFC 5545 §3.3.11): backslash, semicolon, comma and newline escaped."""
    for plain, escaped in (("\\", "\\\\"), (";", "\\;"), (",", "\\,"), ("\n", "\\n")):
        value = value.replace(plain, escaped)
    return value


def _folded(line: str) -> str:
    """Folded into lines of at most 75 octets (§3.1), never inside a character."""
    if len(line.encode()) <= 75:
        return line
    parts, part, size = [], "", 0
    for char in line:
        octets = len(char.encode())
        if size + octets > 75:
            parts.append(part)
            part, size = " ", 1
        part, size = part + char, size + octets
    return "\r\n".join([*parts, part])
