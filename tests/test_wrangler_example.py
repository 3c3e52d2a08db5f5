"""wrangler.example.jsonc deploys as it is once the D1 id is filled in (issue 26.10): it binds
nothing that must be created first but that database. Its outbound fetches are strictly public
(issue 31.4). wrangler itself reads it in tests/test_pyodide_runtime.py."""

from __future__ import annotations

import re

from scripts.wrangler_config import read_config
from tests.support.wrangler_example import EXAMPLE

# What a config may hold when nothing but its D1 database has to exist before `wrangler
# deploy`: a KV namespace, an R2 bucket, a service or a Durable Object named in it
# would have to be created (or deployed) first, or the deploy fails.
NEEDS_NOTHING_CREATED = {
    "name",
    "main",
    "compatibility_date",
    "compatibility_flags",
    "d1_databases",
    "ratelimits",  # a namespace_id is any number of the account's choosing
    "observability",
    "triggers",
    "vars",
}
PLACEHOLDER = "00000000-0000-0000-0000-000000000000"


def test_as_it_is_the_example_needs_only_its_d1_database_created() -> None:
    config = read_config(EXAMPLE)
    assert set(config) <= NEEDS_NOTHING_CREATED, set(config) - NEEDS_NOTHING_CREATED
    [database] = config["d1_databases"]
    assert database["database_id"] == PLACEHOLDER
    # The placeholder is the only thing to fill in: no other id, account or route to set.
    text = EXAMPLE.read_text("utf-8")
    assert re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text) == [
        PLACEHOLDER
    ]
    assert not {"account_id", "routes", "route"} & set(config)


def test_outbound_fetches_are_strictly_public_and_the_example_says_why() -> None:
    config = read_config(EXAMPLE)
    assert config["compatibility_flags"] == ["python_workers", "global_fetch_strictly_public"]
    text = EXAMPLE.read_text("utf-8")
    assert "straight to that zone's origin server" in text.replace("\n  // ", " ")


def test_workers_logs_keep_the_workers_lines_and_no_request_url() -> None:
    """Issue 45, item 12: at full sampling with the invocation log on, Workers Logs recorded
    each request's URL, a launch's `?dee_wan_launch=dwl_…` code among them."""
    observability = read_config(EXAMPLE)["observability"]
    assert observability["enabled"] is True
    logs = observability["logs"]
    assert logs["enabled"] is True
    assert logs["invocation_logs"] is False
