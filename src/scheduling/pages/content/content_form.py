"""The content page's form as the template reads it: the changes it offers, the values it
shows (fresh, as entered after a refusal, or as posted while Dee Wan could not be read), why
it was refused, and the time arithmetic done for the editor."""

from __future__ import annotations

from dataclasses import dataclass, replace

from scheduling.actions.create import FormRefusal, ScheduleForm
from scheduling.dee_wan import UNAVAILABLE
from scheduling.domain.collisions import before_text
from scheduling.domain.content import ContentRead
from scheduling.domain.localtime import Retry, occurrence_labels, occurrences
from scheduling.domain.outcomes import UNTRUSTED
from scheduling.domain.pins import ShownVersions
from scheduling.domain.release import ReleaseStatus
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import WAITING
from scheduling.domain.time_words import duration_words, instant_text, wall_text
from scheduling.domain.timezones import canonical_zone
from scheduling.http.html import time_labels
from scheduling.http.html.view_models import replaces_text
from scheduling.pages.content.content_read import ContentView


@dataclass(frozen=True)
class Choice:
    """One change the form offers."""

    value: str  # "kind:to"
    label: str
    disabled: bool
    replaces: str | None = None  # what choosing it does to the live schedule of its kind
    replaces_id: str | None = None
    collides: str | None = None  # the other kind's waiting schedule it would collide with
    collides_id: str | None = None


@dataclass(frozen=True)
class FormError:
    """Why the form was refused, and the times it offers instead."""

    code: str
    text: str
    field: str
    retries: tuple[Retry, ...]  # one-click ways out: the same form with one field changed
    retry_of: str | None = None  # refused on a Try again of this schedule: offer it again


@dataclass(frozen=True)
class KeptForm:
    """What a create or a Try again posted, kept when Dee Wan could not be read to judge it:
    the page comes back with it, to be sent again once Dee Wan answers."""

    form: ScheduleForm | None  # a create's fields, as entered
    pins: ShownVersions | None  # the versions the posted page showed
    retry_of: str | None = None  # a Try again of this schedule


UNREAD_NOTES = {
    UNAVAILABLE: "Dee Wan is not answering right now",
    UNTRUSTED: (
        "Dee Wan answered about this content in a way its plugin protocol does not allow"
        " (a garbled or unexpected answer)"
    ),
}


def _unread_form(
    view: ContentView, kept: KeptForm | None
) -> tuple[ShownVersions | None, tuple[Choice, ...], ScheduleForm, FormError | None]:
    """Without a read, the only form is the one that was posted: its change as it was
    offered, the rest as entered, and above it why nothing was scheduled."""
    empty = ScheduleForm()
    if kept is None or view.unread is None:
        return None, (), empty, None
    why = UNREAD_NOTES.get(view.unread.code, "Dee Wan could not be read")
    form = kept.form or empty
    choice = _posted_choice(form.transition, kept.pins)
    if kept.retry_of:
        then = "press Try again on it in a minute"
    elif choice is not None:
        then = "the form keeps what you entered: press Schedule again in a minute"
    else:
        then = "try again in a minute"
    error = FormError(
        view.unread.code,
        f"{why}, so this could not be checked and nothing was scheduled; {then}.",
        "transition",
        (),
    )
    return kept.pins, (choice,) if choice else (), form, error


def _posted_choice(transition: str, pins: ShownVersions | None) -> Choice | None:
    kind, _, _ = transition.partition(":")
    if pins is None or kind not in ("publish", "unpublish"):
        return None
    version = pins.pin(kind)
    if version is None:
        return None
    label = (
        f"Publish version {version}"
        if kind == "publish"
        else f"Unpublish published version {version}"
    )
    return Choice(transition, label, False)


def _choices(read: ContentRead, live: tuple[Schedule, ...]) -> tuple[Choice, ...]:
    by_kind = {s.kind: s for s in live}
    choices = []
    for t in read.workflow.transitions:
        if t.kind == "publish":
            label = f"Publish version {read.content.current_version_id}"
            disabled = False
        else:
            published = read.content.published_version_id
            label = (
                f"Unpublish published version {published}"
                if published
                else "Unpublish (nothing is published)"
            )
            disabled = published is None
        existing = by_kind.get(t.kind)
        other = next(
            (s for s in live if s.kind != t.kind and s.status in WAITING and not s.needs_repin),
            None,
        )
        choices.append(
            Choice(
                f"{t.kind}:{t.to}",
                label,
                disabled,
                replaces=replaces_text(existing) if existing else None,
                replaces_id=existing.id if existing else None,
                collides=before_text(other) if other else None,
                collides_id=other.id if other else None,
            )
        )
    return tuple(choices)


def _entered(form: ScheduleForm, refused: bool) -> str | None:
    """The picker writes dates the browser's way; the hint says the same time the one way."""
    if not form.local_time:
        return None
    said = wall_text(form.local_time)
    if said == form.local_time:
        return None  # not a value the picker sends: nothing to restate
    if refused:
        return f"You entered {said}."
    lead = duration_words(time_labels.SUGGESTION_LEAD_MS)
    return f"Suggested: {said}, the first whole hour at least {lead} from now."


def _defaults(choices: tuple[Choice, ...], zone: str, now_ms: int) -> ScheduleForm:
    """A fresh form: the first change offered, the first whole hour in `zone` at least
    `SUGGESTION_LEAD_MS` ahead."""
    return ScheduleForm(
        transition=next((c.value for c in choices if not c.disabled), ""),
        local_time=time_labels.suggested_local_time(zone, now_ms),
        timezone=zone,
        fold="",
    )


@dataclass(frozen=True)
class FormPart:
    """What the page's form shows, and how."""

    pins: ShownVersions | None  # what the page shows, which its forms carry
    choices: tuple[Choice, ...]
    form: ScheduleForm
    error: FormError | None
    zone: str | None  # the form's zone, written the canonical way; None when it is not one
    time_entered: str | None
    fold_choices: tuple[str, ...] | None
    focus_fold: bool
    releases: tuple[Choice, ...] = ()  # the waiting releases the change may join


def _releases(view: ContentView) -> tuple[Choice, ...]:
    """The installation's releases still waiting for their time (listed by their time)."""
    return tuple(
        Choice(r.id, f"“{r.name}”, at {instant_text(r.due_at, r.timezone)}", False)
        for r in view.releases
        if r.status == ReleaseStatus.WAITING and r.due_at > view.now_ms
    )


def form_part(view: ContentView, refusal: FormRefusal | None, kept: KeptForm | None) -> FormPart:
    """`refusal`: the form comes back with what was entered and what was wrong with it.
    Without Dee Wan's read (`view.unread`), `kept` is what a refused create or Try again
    posted: it comes back with Dee Wan's state said above it."""
    read = view.read
    if read is not None:
        pins: ShownVersions | None = ShownVersions(
            read.content.current_version_id, read.content.published_version_id
        )
        choices = _choices(read, view.live)
        # After a create, offer the zone just used rather than the site's again.
        zone = view.made.timezone if view.made is not None else read.site.timezone
        form = refusal.form if refusal else _defaults(choices, zone, view.now_ms)
        error = (
            FormError(
                refusal.code, refusal.message, refusal.field, refusal.retries, refusal.retry_of
            )
            if refusal
            else None
        )
    else:
        pins, choices, form, error = _unread_form(view, kept)
    # A zone typed in any case is written back the canonical way.
    form_zone = canonical_zone(form.timezone)
    if form_zone is not None:
        form = replace(form, timezone=form_zone)
    both = occurrences(form.local_time, form.timezone)
    fold_choices = tuple(occurrence_labels(*both)) if both else None
    focus_fold = bool(error and error.code == "ambiguous_local_time" and fold_choices)
    entered = _entered(form, error is not None)
    return FormPart(
        pins, choices, form, error, form_zone, entered, fold_choices, focus_fold, _releases(view)
    )
