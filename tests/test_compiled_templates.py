"""The pages render templates compiled ahead of time (`compiled_templates.py`, written by
`python -m scripts.compile_templates`): the file must be what its sources compile to now."""

from __future__ import annotations

import jinja2
import pytest

from scheduling.http.html import render as rendering
from scheduling.http.next_steps import NextSteps
from scheduling.pages.template_sources import SOURCES
from scripts import compile_templates
from scripts.compile_templates import TARGET, compiling_environment, generate


def test_the_compiled_templates_are_what_the_sources_compile_to() -> None:
    assert TARGET.read_text("utf-8") == generate(), (
        "run: .venv/bin/python -m scripts.compile_templates"
    )


def test_a_changed_template_makes_the_file_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: one word changed in one source changes the generated file."""
    changed = {**SOURCES, "home.html": SOURCES["home.html"].replace("Scheduling", "Planning", 1)}
    monkeypatch.setattr(compile_templates, "SOURCES", changed)
    assert generate() != TARGET.read_text("utf-8")


def test_the_pages_render_with_the_options_they_were_compiled_with() -> None:
    compiling = compiling_environment()
    rendering_env = rendering._ENVIRONMENT
    for option in ("autoescape", "undefined", "trim_blocks", "lstrip_blocks"):
        assert getattr(rendering_env, option) == getattr(compiling, option), option


def test_a_compiled_page_renders_as_its_source_does() -> None:
    """The same error page, from the compiled function and from jinja2 compiling the source."""
    from_sources = compiling_environment()
    from_sources.loader = jinja2.DictLoader(SOURCES)
    context = {
        "title": "Not found <here>",
        "code": "not_found",
        "message": "No such schedule & no such page.",
        "relaunch": True,
        "resend": (("a", "1"), ("b", "<2>")),
        "resend_to": "/x",
        "steps": NextSteps(retry_href="/r", dee_wan_href="/d", after_launch=True),
        "person_name": "Ada",
    }
    expected = from_sources.get_template("error.html").render(**context)
    assert rendering.render("error.html", **context) == expected
    assert "&lt;here&gt;" in expected  # autoescaped in both


def test_an_unknown_template_is_not_found() -> None:
    with pytest.raises(jinja2.TemplateNotFound):
        rendering.render("nothing.html")
