"""The operator page (`GET /admin`), in UTC, the operator's clock, and erasing an
installation's data. A rare route: the app imports it on its first request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from scheduling.domain.outcomes import FINISHED, LIVE
from scheduling.domain.secrets import is_id
from scheduling.domain.times import BOUNDS_MS, instant_text
from scheduling.domain.wording import (
    KIND,
    Refusal,
    counted,
    explain,
    explain_result,
    support_detail,
)
from scheduling.http.html.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.http.routing import require_operator, require_operator_login
from scheduling.operator.status import (
    DAY,
    STALL_AFTER_MS,
    OperatorView,
    Slot,
    Window,
    read_operator_view,
)
from scheduling.pages.charts import Chart, Frame, Series, duration_label, line_chart, stacked_bars
from scheduling.ports import Database
from scheduling.repository import installations
from scheduling.repository.history import Retrying
from scheduling.services import Services, log

# -- what needs attention, first on the page ----------------------------------------------------


@dataclass(frozen=True)
class RefusalRow:
    when: str
    installation_id: str
    content_id: str
    change: str  # `Publish version ver_3`
    code: str
    ended_by: str | None
    reason: str  # the schedule's card's own sentence


@dataclass(frozen=True)
class RetryRow:
    schedule_id: str
    content_id: str
    change: str  # `Publish version ver_3`
    due: str
    next_try: str  # `try 3 at Wed 1 Jul 2026, 13:40:05 UTC`
    reason: str  # its last try's answer, in the card's words
    support: str


@dataclass(frozen=True)
class FailingInstallation:
    """An installation whose Dee Wan failed the last try of a schedule that will try again."""

    id: str
    site_id: str
    since: str  # its first such schedule's first try
    schedules: tuple[RetryRow, ...]


@dataclass(frozen=True)
class HeldRow:
    """A held release: what was not done and why, since when."""

    id: str
    name: str
    installation_id: str
    item: str
    reason: str
    code: str | None
    since: str


def ago(ms: int) -> str:
    return f"{duration_label(max(0, ms) / 1000)} ago"


def failing_installations(view: OperatorView) -> tuple[FailingInstallation, ...]:
    by_installation: dict[str, list[Retrying]] = {}
    for retrying in view.retrying:
        by_installation.setdefault(retrying.installation_id, []).append(retrying)
    failing = []
    for installation_id, rows in by_installation.items():
        since = min((r.first_try for r in rows if r.first_try is not None), default=view.now)
        failing.append(
            FailingInstallation(
                id=installation_id,
                site_id=rows[0].site_id,
                since=f"{instant_text(since, 'UTC', seconds=True)} ({ago(view.now - since)})",
                schedules=tuple(_retry_row(r) for r in rows),
            )
        )
    return tuple(failing)


def _retry_row(r: Retrying) -> RetryRow:
    last = r.last
    return RetryRow(
        schedule_id=r.schedule_id,
        content_id=r.content_id,
        change=f"{KIND.get(r.kind, r.kind)} version {r.version_id}",
        due=instant_text(r.due_at, "UTC"),
        next_try=f"try {r.attempts + 1} at {instant_text(r.next_attempt_at, 'UTC', seconds=True)}",
        reason=explain_result(r.result_code, last),
        support=support_detail(*((last.code, last.http_status) if last else (r.result_code,))),
    )


def refusal_rows(view: OperatorView) -> tuple[RefusalRow, ...]:
    return tuple(
        RefusalRow(
            when=instant_text(r.at, "UTC", seconds=True),
            installation_id=r.installation_id,
            content_id=r.content_id,
            change=f"{KIND.get(r.kind, r.kind)} version {r.version_id}",
            code=r.code,
            ended_by=r.ended_by,
            reason=explain_result(
                r.code, r.last, ended_by=r.ended_by, tries=r.attempts,
                lateness_ms=view.max_lateness_ms,
            ),
        )
        for r in view.refusals
    )  # fmt: skip


def refusals_caption(count: int) -> str:
    latest = "schedule" if count == 1 else counted(count, "schedule")
    return f"The latest {latest} refused, across installations, newest first"


def held_rows(view: OperatorView) -> tuple[HeldRow, ...]:
    """The held releases: the item not done, the card's sentence for it, since when."""
    return tuple(
        HeldRow(h.id, h.name, h.installation_id, h.held_by, explain(h.held_code), h.held_code,
                instant_text(h.held_at, "UTC", seconds=True))
        for h in view.held
    )  # fmt: skip


# -- the charts of one window ----------------------------------------------------------------------

MINUTE_MS = 60_000


def window_charts(
    window: Window, frame: Frame, max_lateness_ms: int, missed: Sequence[int]
) -> tuple[Chart, Chart, Chart, Chart]:
    slots = window.slots
    present = [s for s in slots if s is not None]
    prefix = window.shape.name

    def values(pick: Callable[[Slot], float]) -> tuple[float | None, ...]:
        return tuple(None if s is None else pick(s) for s in slots)

    backlog = line_chart(
        f"{prefix}-backlog",
        "Due backlog",
        _backlog_summary(present),
        frame,
        [Series("due rows left after a tick (max)", "backlog", values(lambda s: s.backlog))],
        duration=False,
    )
    sends = stacked_bars(
        f"{prefix}-sends",
        f"Sends per {_slot_words(window.shape.slot_ms, ' minutes')}",
        _sends_summary(present),
        frame,
        [
            Series("completed", "completed", values(lambda s: s.completed)),
            Series("will retry", "retrying", values(lambda s: s.retrying)),
            Series("refused", "refused", values(lambda s: s.refused)),
        ],
    )
    cron = line_chart(
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
    return line_chart(
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
        f"(in the slot from {_instant(worst.start)}); the highest median was "
        f"{duration_label(median.lateness_p50_ms / 1000)}. The lateness cap is "
        f"{duration_label(cap_s)}.{failed_words}"
    )


def _backlog_summary(present: Sequence[Slot]) -> str:
    if not present or max(s.backlog for s in present) == 0:
        return "Every tick left nothing due behind it."
    worst = max(present, key=lambda s: s.backlog)
    return (
        f"At most {worst.backlog:,} due rows were left after a tick (in the slot from "
        f"{_instant(worst.start)}); they went to the ticks after it."
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
            f"late (in the slot from {_instant(worst.start)})."
        )
    minutes = sum(missed)
    if minutes:
        text += f" {counted(minutes, 'minute')} had no tick, in {counted(len(frame.gaps), 'slot')} shaded grey."
    return text


# -- the template ----------------------------------------------------------------------------------

OPERATOR = """{% extends "base.html" %}
{% macro key(item) %}<svg class="key" viewBox="0 0 28 14" width="28" height="14" aria-hidden="true" focusable="false">{% if item.shape == "line" %}<line class="series {{ item.css }}" x1="2" y1="7" x2="26" y2="7"/>{% elif item.shape == "mark" %}<line class="{{ item.css }}" x1="14" y1="0" x2="14" y2="14"/>{% else %}<rect class="bar {{ item.css }}" x="4" y="1" width="20" height="12"/>{% endif %}</svg>{% endmacro %}
{% macro chart(c) %}
<figure class="chart" data-chart="{{ c.id }}" aria-labelledby="{{ c.id }}-title">
  <h4 id="{{ c.id }}-title">{{ c.title }}</h4>
  <svg viewBox="0 0 {{ c.width }} {{ c.height }}" role="img" aria-labelledby="{{ c.id }}-title" aria-describedby="{{ c.id }}-summary" focusable="false">
    {% for g in c.gaps %}<rect class="gap" x="{{ g.x }}" y="{{ g.y }}" width="{{ g.width }}" height="{{ g.height }}"/>{% endfor %}
    {% for t in c.y_ticks %}<line class="grid" x1="{{ c.plot_left }}" y1="{{ t.position }}" x2="{{ c.plot_right }}" y2="{{ t.position }}"/><text class="y-label" x="{{ c.plot_left - 8 }}" y="{{ t.position }}">{{ t.label }}</text>{% endfor %}
    {% for r in c.rects %}<rect class="bar {{ r.css }}" x="{{ r.x }}" y="{{ r.y }}" width="{{ r.width }}" height="{{ r.height }}"/>{% endfor %}
    {% if c.rule %}<line class="series rule" x1="{{ c.plot_left }}" y1="{{ c.rule.y }}" x2="{{ c.plot_right }}" y2="{{ c.rule.y }}"/>{% endif %}
    {% for l in c.lines %}{% if l.d %}<path class="series {{ l.css }}" d="{{ l.d }}"/>{% endif %}{% for x, y in l.dots %}<circle class="dot {{ l.css }}" cx="{{ x }}" cy="{{ y }}" r="5"/>{% endfor %}{% endfor %}
    {% for x in c.markers %}<line class="failed" x1="{{ x }}" y1="{{ c.plot_top }}" x2="{{ x }}" y2="{{ c.plot_bottom }}"/>{% endfor %}
    <line class="axis" x1="{{ c.plot_left }}" y1="{{ c.plot_bottom }}" x2="{{ c.plot_right }}" y2="{{ c.plot_bottom }}"/>
    {% for t in c.x_ticks %}<line class="axis{% if t.minor %} minor{% endif %}" x1="{{ t.position }}" y1="{{ c.plot_bottom }}" x2="{{ t.position }}" y2="{{ c.plot_bottom + 6 }}"/><text class="x-label{% if t.minor %} minor{% endif %}" x="{{ t.position }}" y="{{ c.height - 6 }}">{{ t.label }}</text>{% endfor %}
  </svg>
  <ul class="legend">{% for item in c.legend %}<li>{{ key(item) }}{{ item.label }}</li>{% endfor %}</ul>
  <p class="summary" id="{{ c.id }}-summary">{{ c.summary }}</p>
</figure>
{% endmacro %}
{% block main %}
<h1>Scheduling: the runner</h1>
<p>For the operator: how the every-minute runner has done, from the tick history this plugin keeps for 7 days. Times are in UTC.</p>
<dl class="facts status-facts" data-stalled="{{ 'true' if stalled else 'false' }}">
{% for f in facts %}  <dt>{{ f.term }}</dt><dd{% if stalled and loop.first %} class="stalled"{% endif %}>{{ f.value }}</dd>
{% endfor %}</dl>
<p class="hint">Machines read the same: <code>/healthz</code> for uptime monitors, <code>/admin/metrics</code> for Prometheus, <code>/admin/status</code> as JSON.</p>

<section class="attention" aria-labelledby="attention">
  <h2 id="attention">Needs attention</h2>
  <h3 id="failing">Dee Wan failing</h3>
  {% for f in failing %}
  <div class="failing" data-failing="{{ f.id }}">
    <p><strong>Installation <code>{{ f.id }}</code></strong> (site <code>{{ f.site_id }}</code>): its Dee Wan has failed since {{ f.since }}. {{ f.schedules|length }} schedule{{ "" if f.schedules|length == 1 else "s" }} will try again:</p>
    <ul class="retrying">
    {% for r in f.schedules %}<li data-schedule="{{ r.schedule_id }}">{{ r.change }} of content <code>{{ r.content_id }}</code>, due {{ r.due }}; {{ r.next_try }}. Last try: {{ r.reason }} <span class="support">({{ r.support }})</span></li>
    {% endfor %}</ul>
  </div>
  {% else %}<p class="empty">No installation's Dee Wan is failing: every schedule's last try was answered.</p>{% endfor %}
  <h3 id="refusals">Latest refusals</h3>
  {% if refusals %}
  <p class="table-title" id="refusals-caption">{{ refusals_caption }}</p>
  <div class="table-frame" role="region" aria-labelledby="refusals-caption" tabindex="0">
  <table class="stacks" data-table="refusals" aria-labelledby="refusals-caption">
    <thead><tr><th scope="col">Refused at</th><th scope="col">What</th><th scope="col">Why</th><th scope="col">Installation</th></tr></thead>
    <tbody>
    {% for r in refusals %}<tr data-code="{{ r.code }}"{% if r.ended_by %} data-ended-by="{{ r.ended_by }}"{% endif %}><td class="when" data-label="Refused at">{{ r.when }}</td><td data-label="What">{{ r.change }} of content <code>{{ r.content_id }}</code></td><td class="why" data-label="Why">{{ r.reason }} <span class="support">(code {{ r.code }})</span></td><td data-label="Installation"><code>{{ r.installation_id }}</code></td></tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
  {% else %}<p class="empty">No schedule has been refused.</p>{% endif %}
  <h3 id="releases">Held releases</h3>
  <p data-releases>Releases by status: {{ releases or "none yet" }}.</p>
  {% if held %}
  <p class="table-title" id="held-caption">Held releases: an item was not done and the rest waits for a person; the longest held first</p>
  <div class="table-frame" role="region" aria-labelledby="held-caption" tabindex="0">
  <table class="stacks" data-table="held" aria-labelledby="held-caption">
    <thead><tr><th scope="col">Release</th><th scope="col">Installation</th><th scope="col">Item not done, and why</th><th scope="col">Held since</th></tr></thead>
    <tbody>
    {% for h in held %}<tr data-release-id="{{ h.id }}" data-release-status="held"><td data-label="Release">“{{ h.name }}” <code>{{ h.id }}</code></td><td data-label="Installation"><code>{{ h.installation_id }}</code></td><td class="why" data-label="Item not done, and why"><code>{{ h.item }}</code>: {{ h.reason }}{% if h.code %} <span class="support">(code {{ h.code }})</span>{% endif %}</td><td class="when" data-label="Held since">{{ h.since }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
  {% else %}<p class="empty">No release is held.</p>{% endif %}
</section>

<section aria-labelledby="installations">
  <h2 id="installations">Installations</h2>
  {% if installations %}
  <p class="table-title" id="installations-caption">Installations with live schedules, refusals in the last 24 hours, or the latest sends; most refusals first</p>
  <div class="table-frame" role="region" aria-labelledby="installations-caption" tabindex="0">
  <table data-table="installations" aria-labelledby="installations-caption">
    <thead><tr><th scope="col">Installation</th><th scope="col">Site</th><th scope="col">Live schedules</th><th scope="col">Refused in 24 h</th><th scope="col">Last send</th></tr></thead>
    <tbody>
    {% for i in installations %}<tr data-installation="{{ i.id }}"><th scope="row"><code>{{ i.id }}</code></th><td><code>{{ i.site_id }}</code></td><td>{{ i.live }}</td><td>{{ i.refused }}</td><td class="when">{{ i.last_send }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
  {% else %}<p class="empty">No installation yet.</p>{% endif %}
</section>
{% for w in windows %}
<section class="window" aria-labelledby="window-{{ w.name }}" data-window="{{ w.name }}">
  <h2 id="window-{{ w.name }}">{{ w.label }}</h2>
  <p class="hint">Each point is the worst of {{ "an" if w.slot_label == "hour" else "a" }} {{ w.slot_label }} slot; each bar adds up the slot's sends.</p>
  <div class="charts">
  {% for c in w.charts %}{{ chart(c) }}{% endfor %}
  </div>
  <details class="numbers">
    <summary>The same numbers as tables ({{ w.label|lower }})</summary>
    <p class="table-title" id="{{ w.name }}-slots-caption">Ticks by {{ w.slot_label }} slot, {{ w.label|lower }} (UTC)</p>
    <div class="table-frame" role="region" aria-labelledby="{{ w.name }}-slots-caption" tabindex="0">
    <table class="numbers" data-table="{{ w.name }}-slots" aria-labelledby="{{ w.name }}-slots-caption">
      <thead><tr><th scope="col">Slot from</th><th scope="col">Ticks</th><th scope="col">Failed</th><th scope="col">Minutes without a tick</th><th scope="col">Lateness p50 / max</th><th scope="col">Backlog left</th><th scope="col">Completed</th><th scope="col">Will retry</th><th scope="col">Refused</th><th scope="col">Refused unsent</th><th scope="col">Cron delay</th></tr></thead>
      <tbody>
      {% for r in w.rows %}<tr{% if r.failed %} class="failed-row"{% endif %}><th scope="row">{{ r.label }}</th><td>{{ r.ticks }}</td><td>{{ r.failed }}</td><td>{{ r.missed }}</td><td>{{ r.lateness }}</td><td>{{ r.backlog }}</td><td>{{ r.completed }}</td><td>{{ r.retrying }}</td><td>{{ r.refused }}</td><td>{{ r.refused_unsent }}</td><td>{{ r.cron_delay }}</td></tr>
      {% else %}<tr><td colspan="11">No tick recorded.</td></tr>{% endfor %}
      </tbody>
    </table>
    </div>
    <p class="table-title" id="{{ w.name }}-lateness-caption">How late {% if w.sends == 1 %}the one send{% else %}the {{ w.sends }} sends{% endif %} left, {{ w.label|lower }}</p>
    <div class="table-frame" role="region" aria-labelledby="{{ w.name }}-lateness-caption" tabindex="0">
    <table class="numbers" data-table="{{ w.name }}-lateness" aria-labelledby="{{ w.name }}-lateness-caption">
      <thead><tr><th scope="col">After their due time</th><th scope="col">Sends</th></tr></thead>
      <tbody>{% for h in w.histogram %}<tr><th scope="row">{{ h.label }}</th><td>{{ h.count }}</td></tr>{% endfor %}</tbody>
    </table>
    </div>
  </details>
</section>
{% endfor %}

{% endblock %}
"""


# -- the page --------------------------------------------------------------------------------------


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
        Fact("Finished in 24 hours", ", ".join(f"{done[s]:,} {s}" for s in FINISHED) + ".")
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
    wake_ups = f"{counted(alarms, 'wake-up')} in the last 24 hours"
    sends = f"their sends left at most {duration_label(latest / 1000)} after the due second"
    watchdog = (
        "the watchdog caught nothing"
        if not (caught or rearmed)
        else f"the watchdog sent {counted(caught, 'schedule')} no clock took"
        f" and woke {counted(rearmed, 'clock')} asleep past what was due"
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


def _slot_words(slot_ms: int, minutes_word: str = "-minute") -> str:
    """`10-minute`, `hour`: as in "a 10-minute slot"; `10 minutes`: "sends per 10 minutes"."""
    minutes = slot_ms // MINUTE_MS
    return "hour" if minutes == 60 else f"{minutes}{minutes_word}"


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


async def operator(request: Request, services: Services) -> Response:
    await require_operator_login(request, services)
    view = await read_operator_view(
        services.db, services.clock.now_ms(), services.config.max_lateness_ms
    )
    return page(operator_page(view))


# -- deleting an installation's data ---------------------------------------------------------------


async def delete_installation_data(db: Database, installation_id: str) -> None:
    if not is_id(installation_id) or await installations.get(db, installation_id) is None:
        raise Refusal.explained(404, "installation_not_found")
    # The batch re-checks "none running" itself; the read first only spares a write.
    running = await installations.has_running_schedule(db, installation_id)
    if running or not await installations.delete_all_data(db, installation_id):
        if await installations.get(db, installation_id) is None:
            raise Refusal.explained(404, "installation_not_found")
        raise Refusal(409, "execution_in_progress", "a schedule is running; try again shortly")
    log.info("installation %s: all plugin data deleted", installation_id)


async def delete_data(request: Request, services: Services) -> Response:
    await require_operator(request, services)
    installation_id = request.path_params["installation_id"]
    await delete_installation_data(services.db, installation_id)
    return json_response({"code": "deleted", "installation_id": installation_id})
