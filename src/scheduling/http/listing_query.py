"""A listing's own query parameters (`show`, `page`, `zone`), each checked; the rest dropped.

The content page and the manage view page the same way, and a cancel posted
from either comes back to the same page, filter and zone.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduling.domain.statuses import GROUPS
from scheduling.domain.timezones import canonical_zone
from scheduling.http.requests import ascii_int

SHOWS = ("all", *GROUPS)
MAX_PAGE = 100_000


def view_query(query: Mapping[str, str]) -> dict[str, str]:
    """The view's own parameters from a query or a form, each checked; the rest dropped."""
    chosen: dict[str, str] = {}
    if query.get("show") in SHOWS:
        chosen["show"] = query["show"]
    number = ascii_int(query.get("page"), max_digits=len(str(MAX_PAGE)))
    if number is not None and 1 <= number <= MAX_PAGE:
        chosen["page"] = str(number)
    zone = canonical_zone(query.get("zone", ""))
    if zone is not None:
        chosen["zone"] = zone
    return chosen


def ignored(query: Mapping[str, str]) -> dict[str, str]:
    """The view's own parameters that were given but could not be used, as given: the page
    says so rather than change the view silently."""
    chosen = view_query(query)
    return {
        name: query[name]
        for name in ("show", "page", "zone")
        if query.get(name, "").strip() and name not in chosen
    }


def page_number(query: Mapping[str, str]) -> int:
    return int(view_query(query).get("page", "1"))


def back_query(fields: Mapping[str, str]) -> list[tuple[str, str]]:
    """After a cancel, back to the same page, filter and zone."""
    return list(view_query(fields).items())
