"""`GET /admin` as the template reads it: the runner's status in words, what needs attention
(`attention.py`), the releases by status, the installations, then each window of the tick
history as four charts with their summaries and one table of the same numbers. Times are in
UTC, the operator's clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from scheduling.domain.lateness import BOUNDS_MS
from scheduling.domain.statuses import FINISHED, LIVE
from scheduling.domain.wording import counted
from scheduling.http.guards import require_operator_login
from scheduling.http.html.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.operator.health import STALL_AFTER_MS
from scheduling.operator.view import DAY, OperatorView, Slot, Window, read_operator_view
from scheduling.pages.admin.attention import (
    FailingInstallation,
    HeldRow,
    RefusalRow,
    ago,
    failing_installations,
    held_rows,
    refusal_rows,
    refusals_caption,
)
from scheduling.pages.admin.charts import Chart, Frame, duration_label
from scheduling.pages.admin.operator_charts import window_charts
from scheduling.services import Services

MINUTE_MS = 60_000


@dataclass(frozen=True)
class Fact:
    term: str
    value: str


@dataclass(frozen=True)
class SlotRow:
    label: str
    ticks: int
    failed: int
    missed: int
    lateness: str
    backlog: int
    completed: int
    retrying: int
    refused: int
    refused_unsent: int
    cron_delay: str


@dataclass(frozen=True)
class HistogramRow:
    label: str
    count: int


@dataclass(frozen=True)
class WindowSection:
    name: str
    label: str
    slot_label: str
    charts: tuple[Chart, ...]
    rows: tuple[SlotRow, ...]
    histogram: tuple[HistogramRow, ...]
    sends: int


@dataclass(frozen=True)
class InstallationRow:
    id: str
    site_id: str
    live: int
    refused: int
    last_send: str


@dataclass(frozen=True)
class OperatorPage:
    template: ClassVar[str] = "operator.html"

    title: str
    stalled: bool
    facts: tuple[Fact, ...]
    windows: tuple[WindowSection, ...]
    refusals: tuple[RefusalRow, ...]
    refusals_caption: str
    installations: tuple[InstallationRow, ...]
    failing: tuple[FailingInstallation, ...] = ()
    person_name: str | None = None
    releases: str = ""  # `2 waiting, 1 held, 5 completed, 0 cancelled`
    held: tuple[HeldRow, ...] = ()


def operator_page(view: OperatorView) -> OperatorPage:
    status = view.status
    failing = failing_installations(view)
    return OperatorPage(
        title="Operator",
        stalled=bool(status["stalled"] or status["code_behind_database"]),
        facts=_facts(view.now, status, len(failing))
        + _backstop_facts(view.windows[0])
        + _clock_facts(view.windows[0]),
        failing=failing,
        windows=tuple(_window(view, window) for window in view.windows),
        refusals=refusal_rows(view),
        refusals_caption=refusals_caption(len(view.refusals)),
        installations=tuple(
            InstallationRow(
                id=line.id,
                site_id=line.site_id,
                live=line.live,
                refused=line.refused_recently,
                last_send="never" if line.last_sent_at is None else _instant(line.last_sent_at),
            )
            for line in view.installations
        ),
        releases=", ".join(f"{n} {status}" for status, n in view.releases.items()),
        held=held_rows(view),
    )


# -- the status, in words ---------------------------------------------------------------


def _instant(ms: int, *, seconds: bool = False) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, UTC):%Y-%m-%d %H:%M{':%S' if seconds else ''}} UTC"


def _facts(now: int, status: dict[str, Any], failing: int = 0) -> tuple[Fact, ...]:
    last = status["last_tick"]
    if status["code_behind_database"]:
        runner = (
            "Not running: the database has migrations this code does not know ("
            + ", ".join(status["code_behind_database"])
            + "), so it is newer than the code deployed. Deploy the code that has them."
        )
    elif status["stalled"]:
        runner = (
            f"Stalled: work is due and no tick has run to its end for over "
            f"{STALL_AFTER_MS // MINUTE_MS} minutes."
        )
    elif last is None:
        runner = "No tick has run yet; nothing is due."
    elif failing:
        runner = (
            f"Running, but the Dee Wan of {counted(failing, 'installation')} is failing:"
            " see Needs attention, below."
        )
    else:
        runner = "Running."
    facts = [Fact("Runner", runner)]
    if last is not None:
        facts.append(
            Fact(
                "Last tick",
                f"{last['at'].replace('T', ' ').replace('Z', ' UTC')} ({ago(last['age_ms'])}); "
                f"took {duration_label(last['duration_ms'] / 1000)}, "
                f"cron delay {duration_label(last['cron_delay_ms'] / 1000)}, "
                f"{last['sends']} sent.",
            )
        )
    oldest = status["oldest_overdue"]
    backlog = f"{status['due_backlog']:,} due now"
    if oldest is not None:
        backlog += f"; the oldest was due {ago(oldest['age_ms'])}"
    facts.append(Fact("Due backlog", backlog + "."))
    live = status["schedules"]
    facts.append(Fact("Live schedules", ", ".join(f"{live[s]:,} {s}" for s in LIVE) + "."))
    done = status["finished_last_24h"]
    facts.append(
        Fact(
            "Finished in 24 hours",
            ", ".join(f"{done[s]:,} {s}" for s in FINISHED) + ".",
        )
    )
    return tuple(facts)


def _backstop_facts(day: Window) -> tuple[Fact, ...]:
    """The ticks requests ran because the cron had stopped (none: nothing to say)."""
    backstops = sum(s.backstops for s in day.slots if s is not None)
    if not backstops:
        return ()
    return (
        Fact(
            "Backstop",
            f"{counted(backstops, 'tick')} in the last 24 hours ran from a request because the"
            " cron's last tick was over 2 minutes old: check the Cron Trigger.",
        ),
    )


def _clock_facts(day: Window) -> tuple[Fact, ...]:
    """With an alarm clock per installation: its wake-ups over the window, and what the
    cron's watchdog had to catch (none where no clock has woken or been watched)."""
    present = [s for s in day.slots if s is not None]
    alarms = sum(s.alarms for s in present)
    caught = sum(s.caught for s in present)
    rearmed = sum(s.clocks_rearmed for s in present)
    if not (alarms or caught or rearmed):
        return ()
    latest = max((s.alarm_lateness_max_ms for s in present), default=0)
    wake_ups = f"{alarms:,} wake-up{'' if alarms == 1 else 's'} in the last 24 hours"
    sends = f"their sends left at most {duration_label(latest / 1000)} after the due second"
    watchdog = (
        "the watchdog caught nothing"
        if not (caught or rearmed)
        else f"the watchdog sent {caught:,} schedule{'' if caught == 1 else 's'} no clock took"
        f" and woke {rearmed:,} clock{'' if rearmed == 1 else 's'} asleep past what was due"
    )
    return (Fact("Alarm clocks", f"{wake_ups}; {sends}; {watchdog}."),)


# -- a window: its frame, four charts, one table --------------------------------------------


def _window(view: OperatorView, window: Window) -> WindowSection:
    shape = window.shape
    frame = _frame(view.now, window)
    present = [s for s in window.slots if s is not None]
    missed = _missed(view.now, window)
    return WindowSection(
        name=shape.name,
        label=shape.label,
        slot_label=_slot_words(shape.slot_ms),
        charts=window_charts(window, frame, view.max_lateness_ms, missed),
        rows=tuple(
            _row(slot, missed[i], window.since + i * shape.slot_ms, shape.slot_ms)
            for i, slot in enumerate(window.slots)
            if slot is not None or missed[i]
        ),
        histogram=_histogram(present),
        sends=sum(s.sends for s in present),
    )


def _slot_words(slot_ms: int) -> str:
    """`10-minute`, `hour`: as in "a 10-minute slot", "sends per hour"."""
    minutes = slot_ms // MINUTE_MS
    return "hour" if minutes == 60 else f"{minutes}-minute"


def _frame(now: int, window: Window) -> Frame:
    shape = window.shape
    every = 3 * 60 * MINUTE_MS if shape is DAY else 24 * 60 * MINUTE_MS
    labels = []
    for index in range(len(window.slots)):
        start = window.since + index * shape.slot_ms
        if start % every == 0:
            moment = datetime.fromtimestamp(start / 1000, UTC)
            labels.append(
                (index, f"{moment:%H:%M}" if shape is DAY else f"{moment:%a} {moment.day}")
            )
    missed = _missed(now, window)
    return Frame(
        slots=len(window.slots),
        x_labels=tuple(labels),
        failed=tuple(i for i, s in enumerate(window.slots) if s is not None and s.failed),
        gaps=tuple(i for i, n in enumerate(missed) if n),
    )


def _missed(now: int, window: Window) -> tuple[int, ...]:
    """Minutes of each slot without a tick, from the history's start to now. A history that
    starts inside the window starts somewhere within its first slot, which is not counted;
    the slot under way counts only the minutes already past, less one for a tick in flight."""
    shape = window.shape
    first = next((i for i, s in enumerate(window.slots) if s is not None and s.ticks), None)
    if first:  # after the window's first slot: the history began in it
        first += 1
    counts = []
    for index, slot in enumerate(window.slots):
        start = window.since + index * shape.slot_ms
        if first is None or index < first or start >= now:
            counts.append(0)
            continue
        end = start + shape.slot_ms
        expected = shape.slot_ms // MINUTE_MS if end <= now else (now - start) // MINUTE_MS - 1
        counts.append(max(0, expected - (0 if slot is None else slot.ticks)))
    return tuple(counts)


def _row(slot: Slot | None, missed: int, start: int, slot_ms: int) -> SlotRow:
    label = _instant(start).removesuffix(" UTC")
    if slot is None:
        return SlotRow(label, 0, 0, missed, "—", 0, 0, 0, 0, 0, "—")
    lateness = (
        f"{duration_label(slot.lateness_p50_ms / 1000)} / "
        f"{duration_label(slot.lateness_max_ms / 1000)}"
        if slot.sends
        else "—"
    )
    return SlotRow(
        label=label,
        ticks=slot.ticks,
        failed=slot.failed,
        missed=missed,
        lateness=lateness,
        backlog=slot.backlog,
        completed=slot.completed,
        retrying=slot.retrying,
        refused=slot.refused,
        refused_unsent=slot.refused_unsent,
        cron_delay=duration_label(slot.cron_delay_ms / 1000),
    )


def _histogram(present: Sequence[Slot]) -> tuple[HistogramRow, ...]:
    """How many sends of the window left within each bound (not cumulative), then the rest."""
    cumulative = [sum(s.lateness_buckets[i] for s in present) for i in range(len(BOUNDS_MS))]
    total = sum(s.sends for s in present)
    rows, below, previous = [], 0, None
    for bound, upto in zip(BOUNDS_MS, cumulative, strict=True):
        high = duration_label(bound / 1000)
        label = f"{high} or less" if previous is None else f"{previous} – {high}"
        rows.append(HistogramRow(label, upto - below))
        below, previous = upto, high
    rows.append(HistogramRow(f"more than {previous}", total - below))
    return tuple(rows)


# -- summaries: each chart in one or two sentences ---------------------------------------------


async def operator(request: Request, services: Services) -> Response:
    await require_operator_login(request, services)
    view = await read_operator_view(
        services.db, services.clock.now_ms(), services.config.max_lateness_ms
    )
    return page(operator_page(view))
