"""The plugin's own `/` through the real Worker entry under Pyodide."""

from __future__ import annotations

import pytest

from tests.pyodide_harness.harness import Harness

pytestmark = pytest.mark.pyodide


def test_the_worker_says_what_it_is_at_its_root(harness: Harness) -> None:
    with harness.client(follow_redirects=False) as client:
        response = client.get("/")
        head = client.head("/")
        with harness.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS="http://localhost:8787"):
            developing = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"].startswith("default-src 'none';")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "<h1>Scheduling for Dee Wan</h1>" in response.text
    assert "In development" not in response.text
    assert (head.status_code, head.content) == (200, b"")
    assert '<a href="http://localhost:8787/">' in developing.text
