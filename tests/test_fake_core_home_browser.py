"""The local Dee Wan's home page, and the plugin's own `/`, in headless Chromium at 1280 and
390 px: a phone reads it (viewport tag, no sideways scrolling, table rows as cards), 0 axe-core
WCAG 2.2 A/AA violations, and "Run the tick now" through `scripts.devstack.DevStack`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize

from scripts.devstack import DevStack
from tests.support.browser import axe_violations, installed_stack, missing_pieces

WIDE: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(missing_pieces() is not None, reason=missing_pieces() or ""),
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    with installed_stack(tmp_path_factory.mktemp("devstack"), quiet=True) as dev:
        yield dev


def opened(browser: Browser, url: str, size: ViewportSize) -> Page:
    # is_mobile: Chromium then lays a page out as a phone does, at 980 px unless a
    # viewport tag says otherwise.
    context = browser.new_context(viewport=size, is_mobile=size == PHONE, locale="en-US")
    page = context.new_page()
    page.goto(url)
    return page


def check(page: Page, name: str, shots: Path) -> None:
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    width = page.viewport_size["width"] if page.viewport_size else 0
    layout = page.evaluate("[window.innerWidth, document.documentElement.scrollWidth]")
    assert layout == [width, width], f"{name}: laid out {layout[1]} px wide in a {width} px window"
    violations = axe_violations(page)
    assert violations == [], f"{name}: " + "\n".join(violations)
    assert page.locator("script").count() == 0


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "390"])
def test_the_home_page_reads_at_1280_and_390(
    stack: DevStack, browser: Browser, shots: Path, size: ViewportSize
) -> None:
    page = opened(browser, f"{stack.core_origin}/", size)
    check(page, f"fake-core-home-{size['width']}", shots)
    # On a phone the cells are cards' lines, not table cells: found by their column's name.
    news = page.locator('td[data-label="id"]', has_text=re.compile(r"^cnt_news$"))
    row = page.locator("tr").filter(has=news)
    shown_as = row.evaluate("tr => getComputedStyle(tr).display")
    assert shown_as == ("table-row" if size == WIDE else "block")
    # Every content row keeps its launch, whatever the width.
    ins = stack.installation["id"]
    assert row.get_by_role("button", name=f"Schedule ({ins})").is_visible()
    manage = page.locator("form").filter(has=page.get_by_role("button", name=f"Scheduling ({ins})"))
    people = manage.get_by_role("combobox", name="as person").locator("option").all_inner_texts()
    assert people == ["Margaret Hamilton (admin)"], "Dee Wan offers Manage to site admins only"
    page.context.close()


def test_run_the_tick_now_asks_the_plugin_and_says_what_it_sent(
    stack: DevStack, browser: Browser, shots: Path
) -> None:
    page = opened(browser, f"{stack.core_origin}/", PHONE)
    with page.expect_navigation():
        page.get_by_role("button", name="Run the tick now").click()
    notice = page.get_by_role("status")
    assert notice.inner_text() == "The plugin ran a tick: nothing was due, so nothing was sent."
    check(page, "fake-core-home-after-tick-390", shots)
    page.context.close()


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "390"])
def test_the_plugins_own_root_says_where_to_go(
    stack: DevStack, browser: Browser, shots: Path, size: ViewportSize
) -> None:
    page = opened(browser, f"{stack.plugin_origin}/", size)
    check(page, f"plugin-root-{size['width']}", shots)
    assert page.get_by_role("heading", level=1).inner_text() == "Scheduling for Dee Wan"
    link = page.get_by_role("link", name=stack.core_origin)
    assert link.get_attribute("href") == f"{stack.core_origin}/"
    page.context.close()
