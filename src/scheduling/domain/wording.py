"""Plain words: a `Refusal`, the one way to say no, and the words for every status and code.

Actions, guards and handlers raise a `Refusal`; `App.handle` renders it in one place (JSON on
the protocol and operator routes, the error page on the browser routes). Pages say the words
first; a code is only a detail for support (`support_detail`).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.domain.outcomes import RULES, Attempt, EndedBy, Status
from scheduling.domain.times import duration_words

# -- refusals --------------------------------------------------------------------------------------


class Refusal(Exception):
    """`status` and `code` say what happened; `message` says it to a person.

    `relaunch` adds the advice to open Scheduling again from Dee Wan (the
    session or the launch can no longer be used). `title` replaces the page
    heading chosen from the status, and `headers` go on the response as they
    are (`WWW-Authenticate`, `Allow`). `resend` keeps a refused form: its fields,
    which the page posts again, as they were, with one button (a form refused for
    now, such as one sent too often).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str = "",
        *,
        relaunch: bool = False,
        title: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
        resend: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.message = message
        self.relaunch = relaunch
        self.title = title
        self.headers = tuple(headers)
        self.resend = tuple(resend)

    @classmethod
    def too_many(
        cls,
        code: str,
        why: str,
        wait_s: int,
        *,
        title: str,
        then: str = "try again",
        resend: Sequence[tuple[str, str]] = (),
    ) -> Refusal:
        """429: `why`, how long to wait in words and in `Retry-After` (seconds)."""
        return cls(
            429,
            code,
            f"{why} Wait {wait_s} second{'s' if wait_s != 1 else ''}, then {then}.",
            title=title,
            headers=[("retry-after", str(wait_s))],
            resend=resend,
        )

    @classmethod
    def explained(cls, status: int, code: str, *, relaunch: bool = False) -> Refusal:
        """A refusal whose message is the code's plain words (`explain`)."""
        return cls(status, code, explain(code), relaunch=relaunch)


def invalid_request(message: str) -> Refusal:
    """A request whose bytes are not what the route takes: 400 `invalid_request`."""
    return Refusal(400, "invalid_request", message)


# -- words for statuses and codes ------------------------------------------------------------------

STATUS: dict[Status, str] = {
    Status.PENDING: "Waiting for its time",
    Status.RETRYING: "Will try again",
    Status.RUNNING: "Being sent to Dee Wan now",
    Status.COMPLETED: "Done",
    Status.REFUSED: "Not done",
    Status.CANCELLED: "Cancelled",
    Status.SUPERSEDED: "Replaced by a newer schedule",
    Status.QUEUED: "Waiting for the item before it in its release",
    Status.HELD: "Held: not sent",
}

KIND = {"publish": "Publish", "unpublish": "Unpublish"}

# Each says why, and what to do next where there is something to do.
CODES = {
    # Dee Wan's answers
    "transition_applied": "Dee Wan applied the change.",
    "idempotent_replay": "Dee Wan had already applied this exact change; nothing was done twice.",
    "invalid_request": "Dee Wan found the plugin's request malformed, so nothing was applied. This is a fault in the plugin: tell its operator, with the support line below.",
    "plugin_unauthorized": "Dee Wan no longer accepts this installation (it was uninstalled, or its token was replaced), so nothing was applied. An admin can install it again or rotate its token in Dee Wan.",
    "capability_refused": "The plugin is not allowed to do this for this content, so nothing was applied. An admin can grant it in Dee Wan.",
    "requester_unauthorized": "The person who scheduled this may no longer make this change in Dee Wan, so it was not applied. Someone who may can schedule it again.",
    "content_not_found": "The content no longer exists in Dee Wan, so there was nothing to change.",
    "scheduled_target_stale": "The content changed after it was scheduled (a newer version or workflow change), so the pinned version was not used. Schedule it again to pin the current version.",
    "workflow_conflict": "Dee Wan's workflow does not allow this change from the content's current state (for example while it is in review), so it was not applied. Check the content in Dee Wan, then try again.",
    "dependent_content": "Dee Wan did not apply it because other content depends on this one. Check what depends on it in Dee Wan, then try again.",
    "idempotency_key_reused": "Dee Wan saw this schedule's key with a different request, so nothing was applied. This is a fault in the plugin: tell its operator, with the support line below.",
    "transition_unavailable": "This change is not possible from the content's current state in Dee Wan (it may have been made by hand already), so nothing was applied. Check the content in Dee Wan.",
    "transition_refused": "Dee Wan's workflow rules did not allow this change when it was sent, so it was not applied. Check the content in Dee Wan, then try again.",
    # A 429 or a 5xx the runner retries is worded by its status (`explain_answer`).
    "network_error": "Dee Wan could not be reached; the plugin will try again.",
    "timeout": "Dee Wan did not answer within 10 seconds; the plugin will try again.",
    # The plugin's own results
    "untrusted_response": "Dee Wan answered in a way its plugin protocol does not allow (a garbled or unexpected answer), so the plugin sent nothing more and cannot tell whether the change was applied. Check the content in Dee Wan.",
    "retry_exhausted": "The plugin stopped trying: too many tries, or it was too late to send. If the last try got no answer, whether Dee Wan applied it is unknown — check the content in Dee Wan.",
    "token_unreadable": "The installation's token can no longer be read — rotate it in Dee Wan.",
    "held_stale": "Not sent: a change of this content done before it made its pin out of date, so Dee Wan would have refused it. Pin it again in one step, or cancel it.",
    "held_conflict": "Not sent: a check found that the content changed since it was pinned, so Dee Wan would have refused it. Pin it again in one step, or cancel it.",
    "release_held": "Not sent: an earlier item of its release was not done, so the release stopped there. Resume the release, or cancel the rest, on its page.",
    "execution_in_progress": "A schedule for this content is being sent right now. Try again in a minute.",
    "not_cancellable": "Only a schedule that is waiting or will try again can be cancelled.",
    "not_repinnable": "Only a schedule that is still waiting can be pinned again, moved or sent now; this one has ended or was replaced since the page was shown. Reload the page to see it.",
    # Form refusals (a refused time and a changed pin say why in their own words)
    "transition_not_allowed": "You may not make this change to this content now.",
    "too_many_creates": "You have made as many schedules as Scheduling takes from one person in a minute.",
    "nothing_published": "Nothing is published, so there is nothing to unpublish.",
    "dee_wan_unavailable": "Dee Wan is not answering right now. Nothing was changed; try again in a minute.",
    "cancel_not_allowed": "You may not cancel this schedule: Dee Wan does not let you make this change to this content now.",
    "other_content": "This schedule belongs to other content. Use the Scheduling page in Dee Wan.",
    "schedule_not_found": "There is no such schedule in this installation.",
    "installation_not_found": "There is no such installation.",
    # Acting on a refused schedule
    "not_retryable": "Only a schedule that ended not done can be tried again; this one has not. Reload the page to see it as it is now.",
    "retry_from_content": "A schedule is tried again from its content's page: open the content in Dee Wan and press Schedule.",
    "not_dismissable": "Only a schedule that ended not done and was not dismissed yet can be dismissed. Reload the page to see it as it is now.",
    "dismiss_from_manage": "A refused schedule is dismissed by a site admin, from Scheduling under Manage in Dee Wan.",
    # Releases
    "release_not_found": "There is no such release in this installation.",
    "release_closed": "This release no longer waits for its time (it was sent, held or cancelled), or it holds as many items as a release may (200). Reload its page to see it as it is now.",
    "release_item_alone": "This schedule is an item of a release, which moves and is sent as one: move the release, or take the item out of it first (cancel it, and schedule it on its own).",
    "not_reorderable": "Items are put in a new order only while their release waits for its time and nothing of it is being sent. Reload its page to see it as it is now.",
    "not_resumable": "Only a held release can be resumed, once; reload its page to see it as it is now.",
    "nothing_to_resume": "Nothing after that item is left to send: cancel the rest instead, or resume with the item itself.",
    "invalid_release_name": "Give the release a name of at most 100 characters.",
    "too_many_releases": "An installation has at most 100 releases waiting at once: send, cancel or complete one first.",
    # Notifications
    "manage_only": "Notifications are set up from Scheduling under Manage in Dee Wan, by a site admin.",
    "endpoint_not_found": "There is no such notification endpoint in this installation.",
    "unknown_event": "Choose among the events this form lists.",
    "no_events": "Choose at least one event to be told of.",
    "too_many_endpoints": "An installation has at most 5 notification endpoints. Delete one first.",
    "too_many_tests": "A test event is sent to an endpoint one at a time, and at most 5 a minute.",
    "too_many_sends_again": "A delivery is sent again to an endpoint one at a time, and at most 5 a minute with its test events.",
    "unknown_endpoint_kind": "Choose one of the kinds of endpoint the form offers.",
    "not_sendable_again": "Only a delivery that was delivered or has failed can be sent again, and only to an endpoint that is enabled.",
    "endpoint_disabled": "This endpoint is disabled: enable it again first.",
    "endpoint_not_disabled": "This endpoint is not disabled.",
    "unknown_replay_window": "Choose how far back to replay among the choices the form lists.",
    "chat_has_no_secret": "This endpoint has no signing secret to rotate: its URL is its secret. Delete it and add the new URL.",
}

UNKNOWN_OUTCOME = " Its last try got no answer, so whether Dee Wan applied it is unknown: check the content in Dee Wan."


def ended_by_text(ended_by: str | None, *, tries: int, lateness_ms: int) -> str | None:
    """Which limit ended it, naming the limit: `Dee Wan did not accept it in 5 tries, …`."""
    if ended_by == EndedBy.ATTEMPTS:
        return (
            f"Dee Wan did not accept it in {tries} tr{'y' if tries == 1 else 'ies'},"
            " so the plugin stopped trying."
        )
    if ended_by == EndedBy.LATENESS:
        return (
            f"It was still not sent {duration_words(lateness_ms)} after its time had passed,"
            " so the plugin stopped trying: nothing is sent later than that."
        )
    if ended_by == EndedBy.RETRY_AFTER:
        return (
            "Dee Wan asked to wait past the limit before the next try,"
            " so the plugin stopped trying."
        )
    return None


# The events an endpoint may hear of, as the Notifications form names them.
EVENTS = {
    "schedule.refused": "A schedule ends not done (refused)",
    "schedule.completed": "A schedule is done",
    "schedule.retrying": "A schedule will try again",
    "proposal.created": "An agent proposes a schedule",
    "schedule.stale": "A schedule needs a new pin (it would be refused)",
    "release.held": "A release is held (an item was not done; the rest is not sent)",
    "release.completed": "A release completes (every item applied)",
    "test": "Test event",
}

# A delivery's state, and why an attempt did not deliver.
DELIVERY_STATUS = {
    "waiting": "Waiting",
    "sending": "Being sent",
    "delivered": "Delivered",
    "failed": "Failed",
}
DELIVERY_ERRORS = {
    "timeout": "no answer within 10 seconds",
    "network_error": "could not connect",
    "address_not_public": "not called: its name leads to this machine or a private network",
    "endpoint_gone": "the endpoint answered 410 Gone, so it was disabled",
    "endpoint_disabled": "the endpoint accepted nothing for 5 days, so it was disabled",
    "secret_unreadable": "its signing secret can no longer be read (TOKEN_KEY changed): rotate it",
}


def counted(n: int, one: str, many: str | None = None) -> str:
    """`1 command`, `2 commands`, `1,000 deliveries`: a count in proper plurals."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def change_text(kind: str, version_id: str) -> str:
    """`publish version ver_3`: a schedule's change, inside a sentence."""
    return f"{KIND.get(kind, kind).lower()} version {version_id}"


def content_text(content_id: str, title: str | None) -> str:
    """`“Summer news”`, or `content cnt_news` when Dee Wan did not give its title."""
    return f"“{title}”" if title is not None else f"content {content_id}"


def delivery_answer(http_status: int | None, error: str | None) -> str:
    """What an endpoint's last answer was, in a few words: `HTTP 500`, `no answer within 10 seconds`."""
    if error is not None and error in DELIVERY_ERRORS:
        return DELIVERY_ERRORS[error]
    return f"HTTP {http_status}" if http_status is not None else ""


def explain(code: str | None) -> str:
    """What a code means to an editor; a code this plugin never wrote (an older row) is named so."""
    if not code:
        return ""
    return CODES.get(code, "Dee Wan answered with a code this plugin does not know.")


def explain_answer(code: str | None, http_status: int | None) -> str:
    """What an answer meant, judged by its status first: a 5xx the runner retried is a
    temporary problem whatever its code, and a 429 a request to slow down. The status and
    the code are for support (`support_detail`), not repeated here."""
    if http_status is not None and 500 <= http_status <= 599 and code != "untrusted_response":
        return "Dee Wan had a temporary problem; the plugin will try again."
    if http_status == 429:
        return "Dee Wan asked the plugin to slow down; it will try again."
    return explain(code)


# The last try got no answer: Dee Wan may or may not have applied the change.
UNKNOWN_OUTCOME_CODES = frozenset(
    code for code in (RULES["timeout"].result_code, RULES["network_failure"].result_code) if code
)


def outcome_unknown(last: Attempt | None) -> bool:
    """Its last try timed out, lost its connection, or never finished (its runner died)."""
    return last is not None and (last.finished_at is None or last.code in UNKNOWN_OUTCOME_CODES)


def answered_status(result_code: str | None, last: Attempt | None) -> int | None:
    """The HTTP status the result came with: its last try's, when the result is that try's."""
    if last is None or last.code is None or last.code != result_code:
        return None
    return last.http_status


def explain_result(
    result_code: str | None,
    last: Attempt | None,
    *,
    ended_by: str | None = None,
    tries: int = 0,
    lateness_ms: int = 0,
) -> str:
    """The one sentence for a schedule's result, on its card and the operator page, in its
    webhook and its chat line, from its `last` try (the card's last attempt, the attempt
    the runner just made, or what a due row says of its last): judged by that try's HTTP
    status when the result came from it; a schedule a cap ended says which (`ended_by`, with
    its `tries` and the lateness cap), and whether its last try's outcome is unknown."""
    ended = ended_by_text(ended_by, tries=tries, lateness_ms=lateness_ms)
    if ended is not None:
        return ended + (UNKNOWN_OUTCOME if outcome_unknown(last) else "")
    return explain_answer(result_code, answered_status(result_code, last))


def support_detail(code: str | None, http_status: int | None = None) -> str:
    """What support needs to know, once: `code unavailable, HTTP 503`."""
    parts = [f"code {code}"] if code else []
    if http_status is not None:
        parts.append(f"HTTP {http_status}")
    return ", ".join(parts)
