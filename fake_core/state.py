"""The fake core's world: site, persons, content groups, installations, what it received.

Plain dataclasses, no database. Publish/unpublish act on a translation group
(primary + translations) and bump its workflow revision, as core does. A
person's role decides whether Dee Wan offers them the Manage launch (site
admins only); their transitions decide what a content read offers them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from fake_core.wire import new_id

Kind = Literal["publish", "unpublish"]
KINDS: tuple[Kind, ...] = ("publish", "unpublish")
TARGET = {"publish": "published", "unpublish": "draft"}  # the `to` of each kind
CAPABILITY = {"publish": "workflow:publish", "unpublish": "workflow:unpublish"}
ALL_CAPABILITIES = frozenset({"content:read", "workflow:publish", "workflow:unpublish"})
ROLES = ("admin", "editor", "viewer")
RECEIVED_LIMIT = 200  # transition commands remembered for the home page, newest kept


@dataclass
class Site:
    id: str = "site_fake"
    timezone: str = "UTC"


@dataclass
class Person:
    id: str
    name: str
    transitions: frozenset[str] = frozenset(KINDS)  # which kinds they may take
    can_read: bool = True
    role: str = "editor"  # one of ROLES; only a site admin is offered the Manage launch

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


@dataclass
class ContentItem:
    id: str
    primary_id: str
    title: str
    model: str
    locale: str


@dataclass
class AppliedTransition:
    """One entry of a group's log; `source` is "plugin" or "core" (a human in core)."""

    kind: str
    version_id: str | None
    revision_before: int
    revision_after: int
    at_ms: int
    source: str = "plugin"
    installation_id: str | None = None
    idempotency_key: str | None = None
    requested_by: str | None = None


@dataclass
class Group:
    primary_id: str
    versions: list[str]
    current_version_id: str
    published_version_id: str | None = None
    revision: int = 1
    log: list[AppliedTransition] = field(default_factory=list)


@dataclass
class Installation:
    id: str
    plugin_origin: str
    token: str
    capabilities: frozenset[str] = ALL_CAPABILITIES
    models: frozenset[str] | None = None  # None: every model
    revoked: bool = False
    launch_urls: dict[str, str] = field(default_factory=dict)  # kind -> url template
    manifest: dict[str, Any] | None = None
    base_url: str | None = None  # what core sent at activation; None: registered without a plugin

    def may_act_on(self, model: str) -> bool:
        return self.models is None or model in self.models


@dataclass
class LaunchCode:
    code: str
    installation_id: str
    person_id: str
    context: dict[str, str]
    expires_at_ms: int
    used: bool = False


@dataclass
class Delegation:
    token: str
    installation_id: str
    person_id: str
    expires_at_ms: int


@dataclass
class ReceivedTransition:
    """One transition command as the home page lists it: what was asked, what core answered.

    Kept in the state (and the saved file), so the log survives a restart. Values
    taken from the body are shown as text, cut short: the body is the plugin's.
    """

    at_ms: int
    content_id: str
    kind: str
    version_id: str
    answer: str  # e.g. "200 transition_applied", or why there was none
    applied: bool
    installation_id: str | None  # whose token it carried, else whose key it named


@dataclass
class Remembered:
    """An applied idempotency key and the body it was applied with."""

    body: dict[str, Any]
    applied_at_ms: int


@dataclass(frozen=True)
class ReceivedWebhook:
    """A delivery to the receiver beside the core (`webhooks`), as its home page lists it."""

    at_ms: int
    webhook_id: str
    event_type: str
    summary: str  # the schedule and its result, as the body says
    verified: bool
    finding: str  # why it was not verified, in a few words ("" when it was)


@dataclass(frozen=True)
class ReceivedChat:
    """A message to the chat beside the core (`chat`), as its home page shows it."""

    at_ms: int
    channel: str  # the incoming webhook's path after /chat/
    text: str


class CoreState:
    def __init__(self) -> None:
        self.site = Site()
        self.persons: dict[str, Person] = {}
        self.contents: dict[str, ContentItem] = {}
        self.groups: dict[str, Group] = {}
        self.installations: dict[str, Installation] = {}
        self.launches: dict[str, LaunchCode] = {}
        self.delegations: dict[str, Delegation] = {}
        self.idempotency: dict[tuple[str, str], Remembered] = {}
        self.log: list[AppliedTransition] = []  # all groups, in order applied
        # The last RECEIVED_LIMIT transition commands, oldest first (the home page's log).
        self.received: list[ReceivedTransition] = []
        # Versions are numbered across the site, so no two groups share one.
        self.version_counter = 0
        # The plugin's webhooks: signing secrets pasted on the home page, newest first, and
        # the deliveries received, oldest first.
        self.webhook_secrets: list[str] = []
        self.webhooks: list[ReceivedWebhook] = []
        # The plugin's chat messages, oldest first.
        self.chat_messages: list[ReceivedChat] = []

    # -- seeding -------------------------------------------------------------

    def add_person(
        self,
        person_id: str,
        name: str,
        transitions: set[str] | frozenset[str] = frozenset(KINDS),
        *,
        can_read: bool = True,
        role: str = "editor",
    ) -> Person:
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}")
        person = Person(person_id, name, frozenset(transitions), can_read, role)
        self.persons[person_id] = person
        return person

    def add_content(
        self,
        content_id: str,
        title: str,
        *,
        model: str = "article",
        locale: str = "en",
        published: bool = False,
        revision: int = 1,
    ) -> ContentItem:
        """A primary item with one version, its own translation group."""
        item = ContentItem(content_id, content_id, title, model, locale)
        version = self._next_version()
        self.contents[content_id] = item
        self.groups[content_id] = Group(
            content_id, [version], version, version if published else None, revision
        )
        return item

    def add_translation(
        self, primary_id: str, content_id: str, title: str, *, locale: str
    ) -> ContentItem:
        primary = self.contents[primary_id]
        item = ContentItem(content_id, primary_id, title, primary.model, locale)
        self.contents[content_id] = item
        return item

    # -- what a human does in core -------------------------------------------

    def edit(self, content_id: str) -> str:
        """A new draft version becomes current; the workflow revision stays."""
        group = self.group_of(content_id)
        version = self._next_version()
        group.versions.append(version)
        group.current_version_id = version
        return version

    def publish_now(self, content_id: str, at_ms: int) -> None:
        group = self.group_of(content_id)
        self.apply(group, "publish", group.current_version_id, at_ms, source="core")

    def unpublish_now(self, content_id: str, at_ms: int) -> None:
        group = self.group_of(content_id)
        self.apply(group, "unpublish", group.published_version_id, at_ms, source="core")

    def bump_revision(self, content_id: str) -> int:
        group = self.group_of(content_id)
        group.revision += 1
        return group.revision

    # -- lookups and the one place a transition happens ----------------------

    def group_of(self, content_id: str) -> Group:
        return self.groups[self.contents[content_id].primary_id]

    def apply(
        self, group: Group, kind: str, version_id: str | None, at_ms: int, **meta: Any
    ) -> AppliedTransition:
        group.published_version_id = version_id if kind == "publish" else None
        entry = AppliedTransition(
            kind, version_id, group.revision, group.revision + 1, at_ms, **meta
        )
        group.revision += 1
        group.log.append(entry)
        self.log.append(entry)
        return entry

    def receive(self, entry: ReceivedTransition) -> None:
        self.received.append(entry)
        del self.received[:-RECEIVED_LIMIT]

    def new_installation_id(self) -> str:
        return new_id("ins_")

    def _next_version(self) -> str:
        self.version_counter += 1
        return f"ver_{self.version_counter}"
