"""The four charts of one window of the operator page (lateness, backlog, sends, cron delay),
each with the summary a person reads first. Times are in UTC, the operator's clock."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from scheduling.domain.wording import counted
from scheduling.operator.view import Slot, Window
from scheduling.pages.admin import charts
from scheduling.pages.admin.charts import Chart, Frame, Series, duration_label

MINUTE_MS = 60_000


def window_charts(
    window: Window, frame: Frame, max_lateness_ms: int, missed: Sequence[int]
) -> tuple[Chart, Chart, Chart, Chart]:
    slots = window.slots
    present = [s for s in slots if s is not None]
    prefix = window.shape.name

    def values(pick: Callable[[Slot], float]) -> tuple[float | None, ...]:
        return tuple(None if s is None else pick(s) for s in slots)

    backlog = charts.line_chart(
        f"{prefix}-backlog",
        "Due backlog",
        _backlog_summary(present),
        frame,
        [Series("due rows left after a tick (max)", "backlog", values(lambda s: s.backlog))],
        duration=False,
    )
    sends = charts.stacked_bars(
        f"{prefix}-sends",
        f"Sends per {_slot_name(window.shape.slot_ms)}",
        _sends_summary(present),
        frame,
        [
            Series("completed", "completed", values(lambda s: s.completed)),
            Series("will retry", "retrying", values(lambda s: s.retrying)),
            Series("refused", "refused", values(lambda s: s.refused)),
        ],
    )
    cron = charts.line_chart(
        f"{prefix}-cron",
        "Cron delay",
        _cron_summary(present, frame, missed),
        frame,
        [Series("delay (max)", "cron", values(lambda s: s.cron_delay_ms / 1000))],
        duration=True,
    )
    return (_lateness_chart(window, frame, max_lateness_ms), backlog, sends, cron)


def _lateness_chart(window: Window, frame: Frame, max_lateness_ms: int) -> Chart:
    slots = window.slots
    present = [s for s in slots if s is not None]

    def sent(pick: Callable[[Slot], float]) -> tuple[float | None, ...]:
        """Lateness exists only where something was sent."""
        return tuple(None if s is None or not s.sends else pick(s) for s in slots)

    cap_s = max_lateness_ms / 1000
    failed = sum(s.failed for s in present)
    return charts.line_chart(
        f"{window.shape.name}-lateness",
        "Send lateness",
        _lateness_summary(present, cap_s, failed),
        frame,
        [
            Series("worst (max)", "max", sent(lambda s: s.lateness_max_ms / 1000)),
            Series("median (p50)", "p50", sent(lambda s: s.lateness_p50_ms / 1000)),
        ],
        duration=True,
        rule=(cap_s, f"lateness cap ({duration_label(cap_s)})"),
    )


def _slot_name(slot_ms: int) -> str:
    return "hour" if slot_ms == 60 * MINUTE_MS else f"{slot_ms // MINUTE_MS} minutes"


def _when(slot: Slot) -> str:
    return datetime.fromtimestamp(slot.start / 1000, UTC).strftime("%Y-%m-%d %H:%M") + " UTC"


def _lateness_summary(present: Sequence[Slot], cap_s: float, failed: int) -> str:
    sent = [s for s in present if s.sends]
    failed_words = (
        f" {failed} failed tick{'s' if failed != 1 else ''}, marked in red." if failed else ""
    )
    if not sent:
        return f"Nothing was sent. The lateness cap is {duration_label(cap_s)}.{failed_words}"
    worst = max(sent, key=lambda s: s.lateness_max_ms)
    median = max(sent, key=lambda s: s.lateness_p50_ms)
    return (
        f"The latest send left {duration_label(worst.lateness_max_ms / 1000)} after its due time "
        f"(in the slot from {_when(worst)}); the highest median was "
        f"{duration_label(median.lateness_p50_ms / 1000)}. The lateness cap is "
        f"{duration_label(cap_s)}.{failed_words}"
    )


def _backlog_summary(present: Sequence[Slot]) -> str:
    if not present or max(s.backlog for s in present) == 0:
        return "Every tick left nothing due behind it."
    worst = max(present, key=lambda s: s.backlog)
    return (
        f"At most {worst.backlog:,} due rows were left after a tick (in the slot from "
        f"{_when(worst)}); they went to the ticks after it."
    )


def _sends_summary(present: Sequence[Slot]) -> str:
    completed = sum(s.completed for s in present)
    retrying = sum(s.retrying for s in present)
    refused = sum(s.refused for s in present)
    unsent = sum(s.refused_unsent for s in present)
    total = completed + retrying + refused
    text = (
        f"{counted(total, 'command')} sent: {completed:,} completed, {retrying:,} to be retried,"
        f" {refused:,} refused."
    )
    if unsent:
        text += (
            f" {counted(unsent, 'schedule')} {'was' if unsent == 1 else 'were'} refused without"
            " a send (past a cap, or its token unreadable)."
        )
    return text


def _cron_summary(present: Sequence[Slot], frame: Frame, missed: Sequence[int]) -> str:
    delays = [s for s in present if s.ticks]
    text = "No tick was recorded." if not delays else ""
    if delays:
        worst = max(delays, key=lambda s: s.cron_delay_ms)
        text = (
            "The cron delivered every tick on time."
            if worst.cron_delay_ms == 0
            else f"The cron delivered a tick up to {duration_label(worst.cron_delay_ms / 1000)} "
            f"late (in the slot from {_when(worst)})."
        )
    minutes = sum(missed)
    if minutes:
        text += (
            f" {minutes:,} minute{'s' if minutes != 1 else ''} had no tick, in "
            f"{len(frame.gaps)} slot{'s' if len(frame.gaps) != 1 else ''} shaded grey."
        )
    return text
