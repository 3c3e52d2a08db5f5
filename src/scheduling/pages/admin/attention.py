"""What needs attention, first on the operator page: each installation whose Dee Wan is
failing (since when, with its schedules that will try again and their last try's answer),
the latest refusals, and the held releases, each in its card's own sentence."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.time_words import instant_text
from scheduling.domain.wording import KIND, counted, explain, explain_result, support_detail
from scheduling.operator.view import OperatorView
from scheduling.pages.admin.charts import duration_label
from scheduling.repository.operator_queries import Retrying


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
