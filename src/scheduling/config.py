"""Configuration: every variable and secret, validated in one place.

A bad value never stops the whole Worker: each request that needs it answers
500 `misconfigured` (see `Misconfigured`). The local runtime calls
`Configuration.raise_for_problems()` at start-up instead. Messages name the
variable and never carry its value.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Generic, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

from scheduling.domain.secrets import admin_secret_problem, token_key_problem
from scheduling.limits import (
    D1_QUERIES,
    INVOCATION_LIMITS,
    SUBREQUESTS,
    TICK_TIME,
    InvocationLimit,
    lease_problem,
)

log = logging.getLogger("scheduling")
T = TypeVar("T")

VARIABLES = (
    "PUBLIC_ORIGIN",
    "ENVIRONMENT",
    "DEE_WAN_DEV_ORIGINS",
    "MAX_ATTEMPTS",
    "MAX_LATENESS_MS",
    "LEASE_MS",
    "MAX_RETRY_AFTER_MS",
    "MAX_ROWS_PER_BATCH",
    "SEND_CONCURRENCY",
    *(limit.variable for limit in INVOCATION_LIMITS),
    "MAX_IN_FLIGHT_PER_INSTALLATION",
    "MAX_SLOTS_PER_INSTALLATION",
    "RETENTION_DAYS",
    "MAX_CREATES_PER_MINUTE",
    "CLOCK_LEAD_MS",
)
# Names a variable had before, still read (with a warning) when the new one is not set:
# MAX_ROWS_PER_TICK bounds a batch (a tick runs batch after batch until its budget is spent).
RENAMED = {"MAX_ROWS_PER_TICK": "MAX_ROWS_PER_BATCH"}
_warned_renamed: set[str] = set()
# Read by the local runtime only: a Worker's clock is its SCHEDULE_CLOCK binding, a Durable
# Object namespace of that name (a variable of the same name would clash with it).
LOCAL_VARIABLES = ("SCHEDULE_CLOCK",)
SECRETS = ("ADMIN_SECRET", "TOKEN_KEY")
REQUIRED = ("PUBLIC_ORIGIN", "ADMIN_SECRET", "TOKEN_KEY")


class Misconfigured(Exception):
    """A request needed a variable whose value is missing or invalid."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class ConfigurationError(Exception):
    """One or more variables are invalid; raised by the local runtime at start-up."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        lines = [f"{name}: {reason}" for name, reason in sorted(problems.items())]
        # One problem is one line; several are one line each.
        said = f" {lines[0]}" if len(lines) == 1 else "".join(f"\n  {line}" for line in lines)
        super().__init__(f"invalid configuration:{said}")
        self.problems = dict(problems)


def parse_origin(value: str, *, allow_http: bool = True) -> str:
    """An origin is scheme://host[:port] with nothing after it."""
    parts = urlsplit(value)
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes or not parts.hostname:
        raise ValueError("must be an origin such as https://scheduling.example")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not contain credentials")
    if parts.path not in ("", "/") or parts.query or parts.fragment or value.endswith("/"):
        raise ValueError("must be an origin with no path, query, fragment or trailing slash")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ValueError("has an invalid port") from None
    return f"{parts.scheme}://{parts.netloc}".lower()


def _origin(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return parse_origin(value.strip())


def _origin_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, tuple):
        return value
    if not isinstance(value, str):
        raise ValueError("must be a comma-separated list of origins")
    origins = []
    for item in value.split(","):
        if item.strip():
            try:
                origins.append(parse_origin(item.strip()))
            except ValueError as exc:
                raise ValueError(f"each entry {exc}") from None
    return tuple(origins)


# ADMIN_SECRET: long enough, and with enough different characters that it was not typed by
# leaning on a key (`aaaaaaaaaaaaaaaa` is 16 characters and one guess).
ADMIN_SECRET_MIN_LENGTH = 16
ADMIN_SECRET_MIN_DIFFERENT = 8


def _admin_secret(value: Any) -> str:
    if not isinstance(value, str) or len(value) < ADMIN_SECRET_MIN_LENGTH:
        raise ValueError(f"must be at least {ADMIN_SECRET_MIN_LENGTH} characters")
    if len(set(value)) < ADMIN_SECRET_MIN_DIFFERENT:
        raise ValueError(
            f"has too little variety: use at least {ADMIN_SECRET_MIN_DIFFERENT} different"
            " characters (a random one: openssl rand -base64 32)"
        )
    problem = admin_secret_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _token_key(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise ValueError("must be base64 of exactly 32 bytes")
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("is not valid base64 (expected base64 of exactly 32 bytes)") from None
    if len(key) != 32:
        raise ValueError(f"must decode to exactly 32 bytes, got {len(key)} bytes")
    problem = token_key_problem(key)
    if problem is not None:
        raise ValueError(problem)
    return key


def _environment(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty name such as production or development")
    return value.strip().lower()


PositiveInt = Annotated[int, Field(gt=0)]
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


class _Settings(BaseModel):
    """The settings but the invocation limits, which `_SETTINGS` adds from their entries."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    PUBLIC_ORIGIN: Annotated[str | None, BeforeValidator(_origin)] = None
    ENVIRONMENT: Annotated[str, BeforeValidator(_environment)] = "production"
    DEE_WAN_DEV_ORIGINS: Annotated[tuple[str, ...], BeforeValidator(_origin_list)] = ()
    MAX_ATTEMPTS: PositiveInt = 5
    MAX_LATENESS_MS: PositiveInt = 900_000
    LEASE_MS: PositiveInt = 60_000
    MAX_RETRY_AFTER_MS: PositiveInt = 300_000
    MAX_ROWS_PER_BATCH: Annotated[int, Field(gt=0, le=500)] = 20
    SEND_CONCURRENCY: Annotated[int, Field(gt=0, le=50)] = 6
    # One installation's Dee Wan never has more of our requests in flight at once.
    MAX_IN_FLIGHT_PER_INSTALLATION: Annotated[int, Field(gt=0, le=50)] = 6
    # Of an invocation's slots, at most this many carry one installation's sends while another
    # installation has sends in it (None: half of SEND_CONCURRENCY): a slow Dee Wan never
    # holds them all.
    MAX_SLOTS_PER_INSTALLATION: Annotated[int | None, Field(gt=0, le=50)] = None
    # Finished schedules (and what hangs off them) and ended deliveries are purged
    # this many days after they ended.
    RETENTION_DAYS: Annotated[int, Field(gt=0, le=36_500)] = 400
    # Each create reads Dee Wan: at most this many a minute per person.
    MAX_CREATES_PER_MINUTE: Annotated[int, Field(gt=0, le=10_000)] = 30
    # With an alarm clock per installation: how long before a due second its clock wakes
    # (a Python isolate's cold start); the invocation then waits for the second itself.
    CLOCK_LEAD_MS: Annotated[int, Field(ge=0, le=60_000)] = 1_500
    # The local runtime's clocks (1: `serve` keeps one per installation, in process).
    SCHEDULE_CLOCK: bool = False
    ADMIN_SECRET: Annotated[str | None, BeforeValidator(_admin_secret)] = None
    TOKEN_KEY: Annotated[bytes | None, BeforeValidator(_token_key)] = None


_LIMIT_FIELDS: dict[str, Any] = {
    limit.variable: (PositiveInt, limit.default) for limit in INVOCATION_LIMITS
}
_SETTINGS = create_model("_SETTINGS", __base__=_Settings, **_LIMIT_FIELDS)


def _timing_problems(settings: _Settings, problems: Mapping[str, str]) -> dict[str, str]:
    """Settings that are each valid but break the lease contract together."""
    names = (
        "LEASE_MS",
        "MAX_ROWS_PER_BATCH",
        "SEND_CONCURRENCY",
        "MAX_SLOTS_PER_INSTALLATION",
        *(limit.variable for limit in INVOCATION_LIMITS),
    )
    if any(name in problems for name in names):
        return {}
    concurrency = settings.SEND_CONCURRENCY
    share = settings.MAX_SLOTS_PER_INSTALLATION or -(-concurrency // 2)
    short = lease_problem(settings.LEASE_MS, settings.MAX_ROWS_PER_BATCH, concurrency, share)
    found = {} if short is None else {"LEASE_MS": short}
    for limit in INVOCATION_LIMITS:
        problem = limit.fits(lambda name: int(getattr(settings, name)))
        if problem is not None:
            found[limit.variable] = problem
    return found


def _plain_http_problem(settings: _Settings) -> dict[str, str]:
    """PUBLIC_ORIGIN on plain http outside development and off this machine: the session
    cookie (`__Host-`, Secure) and Strict-Transport-Security need https."""
    origin, environment = settings.PUBLIC_ORIGIN or "", settings.ENVIRONMENT
    host = urlsplit(origin).hostname
    if not origin.startswith("http://") or environment == "development" or host in _LOOPBACK:
        return {}
    return {
        "PUBLIC_ORIGIN": f"must be https when ENVIRONMENT is {environment} (browsers keep the"
        " session cookie and Strict-Transport-Security only over https)"
    }


def _warn_renamed(old: str, new: str, *, taken: bool) -> None:
    """Said once per process: a Worker's isolate reads its env on every request."""
    if old in _warned_renamed:
        return
    _warned_renamed.add(old)
    if taken:
        log.warning("%s is now called %s: its value is read as %s; rename it", old, new, new)
    else:
        log.warning("%s is now called %s: both are set, %s is read; remove %s", old, new, new, old)


class _Setting(Generic[T]):
    """A setting as `kind`: reading it raises `Misconfigured` while it is missing or invalid."""

    def __init__(self, variable: str, kind: Callable[[Any], T]) -> None:
        self.variable, self.kind = variable, kind

    def __get__(self, config: Configuration, owner: type[Configuration]) -> T:
        return self.kind(config._need(self.variable))


class Configuration:
    """Validated settings plus the problems found, variable by variable."""

    def __init__(self, settings: _Settings, problems: Mapping[str, str]) -> None:
        self._settings = settings
        self.problems: dict[str, str] = dict(problems)

    @classmethod
    def from_mapping(cls, env: Mapping[str, Any]) -> Configuration:
        raw = {
            name: env[name]
            for name in (*VARIABLES, *LOCAL_VARIABLES, *SECRETS)
            if env.get(name) is not None and env.get(name) != ""
        }
        for old, new in RENAMED.items():
            if env.get(old) is not None and env.get(old) != "":
                _warn_renamed(old, new, taken=new not in raw)
                raw.setdefault(new, env[old])
        problems: dict[str, str] = {}
        while True:
            try:
                settings = _SETTINGS.model_validate(raw)
                break
            except ValidationError as exc:
                # Drop each bad field, remember why, and validate the rest again.
                for error in exc.errors(include_input=False, include_url=False):
                    name = str(error["loc"][0])
                    message = error["msg"].removeprefix("Value error, ")
                    problems[name] = message[0].lower() + message[1:]
                    raw.pop(name, None)
        for name in REQUIRED:
            if name not in raw and name not in problems:
                problems[name] = "is not set"
        problems.update(_timing_problems(settings, problems))
        problems.update(_plain_http_problem(settings))
        return cls(settings, problems)

    def raise_for_problems(self) -> None:
        if self.problems:
            raise ConfigurationError(self.problems)

    def _need(self, name: str) -> Any:
        if name in self.problems:
            raise Misconfigured(name, self.problems[name])
        return getattr(self._settings, name)

    def allowance(self, limit: InvocationLimit) -> int:
        """What the operator allows one invocation of `limit` (`limits.INVOCATION_LIMITS`)."""
        return int(self._need(limit.variable))

    public_origin = _Setting("PUBLIC_ORIGIN", str)
    environment = _Setting("ENVIRONMENT", str)
    dev_origins: _Setting[tuple[str, ...]] = _Setting("DEE_WAN_DEV_ORIGINS", tuple)
    max_attempts = _Setting("MAX_ATTEMPTS", int)
    max_lateness_ms = _Setting("MAX_LATENESS_MS", int)
    lease_ms = _Setting("LEASE_MS", int)
    max_retry_after_ms = _Setting("MAX_RETRY_AFTER_MS", int)
    max_rows_per_batch = _Setting("MAX_ROWS_PER_BATCH", int)
    send_concurrency = _Setting("SEND_CONCURRENCY", int)
    tick_budget_ms = _Setting(TICK_TIME.variable, int)
    max_d1_queries_per_tick = _Setting(D1_QUERIES.variable, int)
    max_sends_per_tick = _Setting(SUBREQUESTS.variable, int)
    max_in_flight_per_installation = _Setting("MAX_IN_FLIGHT_PER_INSTALLATION", int)
    retention_days = _Setting("RETENTION_DAYS", int)
    max_creates_per_minute = _Setting("MAX_CREATES_PER_MINUTE", int)
    clock_lead_ms = _Setting("CLOCK_LEAD_MS", int)
    schedule_clock = _Setting("SCHEDULE_CLOCK", bool)
    admin_secret = _Setting("ADMIN_SECRET", str)
    token_key = _Setting("TOKEN_KEY", bytes)

    @property
    def is_https(self) -> bool:
        """PUBLIC_ORIGIN is https (False when it is not set correctly)."""
        return "PUBLIC_ORIGIN" not in self.problems and str(
            self._settings.PUBLIC_ORIGIN
        ).startswith("https://")

    @property
    def is_development(self) -> bool:
        return "ENVIRONMENT" not in self.problems and self._settings.ENVIRONMENT == "development"

    @property
    def max_slots_per_installation(self) -> int:
        """MAX_SLOTS_PER_INSTALLATION, or half of SEND_CONCURRENCY (rounded up) when not set."""
        share = self._need("MAX_SLOTS_PER_INSTALLATION")
        return int(share) if share is not None else -(-self.send_concurrency // 2)
