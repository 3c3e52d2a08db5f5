"""The kinds of endpoint, one entry each: what a kind is called, what it keeps sealed and
whether that rotates, how its address is checked, whether its due deliveries make one
message (a digest) and how often it may send, its words, and its channel.

Nothing outside this room names a kind: the actions, the outbox's SQL (the kinds are bound
values, `domain/deliveries.Pacing`), the pages and the database (migration 0018 keeps no list of
kinds) all read this registry. A new kind is one `ChannelKind` given to `register`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from scheduling.channels import chat
from scheduling.channels.port import Channel, OpenTarget
from scheduling.channels.webhook import StandardWebhook, new_secret, seal_secret
from scheduling.domain.addresses import Environment, endpoint_url_problem
from scheduling.domain.notifications import MESSAGE_INTERVAL_MS
from scheduling.domain.records import Pacing
from scheduling.ports import Crypto
from scheduling.services import Services


@dataclass(frozen=True)
class Kept:
    """What a new endpoint (or a rotation) keeps: what the pages show of its URL, and what is
    stored sealed under TOKEN_KEY."""

    shown_url: str
    sealed: str


# (crypto, installation id, endpoint id, the URL given) -> what the endpoint keeps
KeepSecret = Callable[[Crypto, str, str, str], Awaitable[Kept]]


@dataclass(frozen=True)
class ChannelKind:
    name: str  # as stored and as the form sends it
    label: str  # as the Notifications form and the endpoint's card name it
    channel: Callable[[Services], Channel]  # one per invocation or request
    keep: KeepSecret  # a new endpoint's (or a rotation's) sealed secret
    # Its URL is what it keeps sealed (a chat's incoming webhook): shown once when added, then
    # only in part. Otherwise it has a secret of its own, shown once.
    url_is_secret: bool
    rotates: bool  # "Rotate secret" gives it a new one
    revealed_name: str  # what the page calls what it reveals once ("Chat URL", "Signing secret")
    # How its address is checked: None when acceptable, otherwise why not, in a few words.
    url_problem: Callable[[str, Environment], str | None] = endpoint_url_problem
    digest: bool = False  # an endpoint's due deliveries are one message
    interval_ms: int = 0  # at most one message per this long (0: as they come)
    titled_lines: int = 0  # a digest's first lines that name their content by its title
    url_hint: str = ""  # what the form's URL hint adds for this kind
    told: str = ""  # how the page's introduction says an endpoint of this kind is told
    about: tuple[str, str] | None = None  # (name, address) the introduction links for more

    def revealed(self, opened: OpenTarget) -> str:
        """What the page shows once of an endpoint just added or rotated."""
        return opened.url if self.url_is_secret else opened.secret


async def _keep_signing_secret(
    crypto: Crypto, installation_id: str, endpoint_id: str, url: str
) -> Kept:
    secret = new_secret(crypto.random_token())
    sealed = await seal_secret(crypto, installation_id, endpoint_id, secret)
    return Kept(url, sealed)


async def _keep_chat_url(crypto: Crypto, installation_id: str, endpoint_id: str, url: str) -> Kept:
    sealed = await crypto.seal(url, chat.url_context(installation_id, endpoint_id))
    return Kept(chat.shown_url(url), sealed)


WEBHOOK = ChannelKind(
    name="webhook",
    label="Signed webhook, for a program (Standard Webhooks)",
    channel=StandardWebhook,
    keep=_keep_signing_secret,
    url_is_secret=False,
    rotates=True,
    revealed_name="Signing secret",
    told="a signed Standard Webhooks POST, which automation tools and a few lines of code can"
    " verify",
    about=("Standard Webhooks", "https://www.standardwebhooks.com/"),
)
CHAT = ChannelKind(
    name="chat",
    label="Chat message (Slack, Google Chat, Mattermost, Rocket.Chat, Discord's /slack URL)",
    channel=chat.SlackChat,
    keep=_keep_chat_url,
    url_is_secret=True,
    rotates=False,
    revealed_name="Chat URL",
    digest=True,
    interval_ms=MESSAGE_INTERVAL_MS,
    titled_lines=chat.MAX_LINES,
    url_hint="For a chat, its incoming-webhook URL: it is kept sealed and shown once.",
    told="a chat message in plain words (at most one a minute, naming up to"
    f" {chat.MAX_LINES} schedules)",
)

# In the order the form offers them; the first is the default.
_KINDS: dict[str, ChannelKind] = {kind.name: kind for kind in (WEBHOOK, CHAT)}


def kinds() -> tuple[ChannelKind, ...]:
    return tuple(_KINDS.values())


def default() -> ChannelKind:
    return next(iter(_KINDS.values()))


def kind_of(name: str) -> ChannelKind | None:
    """The kind so named; None for one no entry registers (refused wherever it is given)."""
    return _KINDS.get(name)


def register(kind: ChannelKind) -> None:
    if kind.name in _KINDS:
        raise ValueError(f"the channel kind {kind.name!r} is registered already")
    _KINDS[kind.name] = kind


@contextmanager
def registered(kind: ChannelKind) -> Iterator[ChannelKind]:
    """`kind` registered for as long as the block runs (a test's own kind)."""
    register(kind)
    try:
        yield kind
    finally:
        del _KINDS[kind.name]


def channels(services: Services) -> dict[str, Channel]:
    """One channel of each kind, for one invocation or request."""
    return {name: kind.channel(services) for name, kind in _KINDS.items()}


def pacing() -> Pacing:
    """How the outbox groups and paces the kinds' messages."""
    kinds_ = _KINDS.values()
    return Pacing(
        digests=tuple(k.name for k in kinds_ if k.digest),
        intervals={k.name: k.interval_ms for k in kinds_ if k.interval_ms > 0},
        titled={k.name: k.titled_lines for k in kinds_ if k.titled_lines > 0},
    )
