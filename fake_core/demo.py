"""`--seed demo`: a small site to click through by hand."""

from __future__ import annotations

from fake_core.core import FakeCore


def seed_demo(core: FakeCore) -> None:
    state = core.state
    state.site.id = "site_demo"
    state.site.timezone = "Europe/Paris"
    state.add_person("usr_editor", "Ada Lovelace (editor)", {"publish", "unpublish"})
    state.add_person("usr_viewer", "Grace Hopper (viewer)", set(), role="viewer")
    # Dee Wan offers the Manage launch to site admins only.
    state.add_person(
        "usr_admin", "Margaret Hamilton (admin)", {"publish", "unpublish"}, role="admin"
    )
    state.add_content("cnt_spring", "Spring launch", model="article", locale="en")
    state.add_translation("cnt_spring", "cnt_spring_fr", "Lancement de printemps", locale="fr")
    state.add_content("cnt_news", "Summer news", model="article", locale="en")
    state.add_content("cnt_about", "About us", model="page", locale="en", published=True)
