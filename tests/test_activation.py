"""Activation codes, activate/rotate (protocol §3, every row), delete-data."""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx
import pytest

from scheduling.app import App
from scheduling.domain.secrets import installation_token
from scheduling.runtimes.cpython.adapters import CpythonCrypto
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import activation, install, mint, post_activate, token
from tests.support.app import OPERATOR, FakeClock, base_env, body, call, make_app
from tests.support.runtimes import Runtime


async def count(db: SqliteDatabase, table: str, where: str = "1") -> int:
    row = await db.prepare(f"SELECT count(*) AS n FROM {table} WHERE {where}").first()
    return int(row["n"]) if row else 0


# -- minting ---------------------------------------------------------------


async def test_mint_without_a_body_gives_an_activate_code(app: App, db: SqliteDatabase) -> None:
    response = await call(app, "POST", "/admin/activation-codes", headers=OPERATOR)
    assert response.status == 201
    answer = body(response)
    assert answer["kind"] == "activate"
    assert answer["installation_id"] is None
    assert answer["code"].startswith("dwa_")
    assert len(answer["code"]) == 47
    assert answer["expires_at"] == "2026-07-01T10:15:00Z"
    stored = await db.prepare("SELECT * FROM activation_codes").first()
    assert stored is not None
    assert answer["code"] not in json.dumps(stored)
    assert stored["code_hash"] == await CpythonCrypto(bytes(32)).sha256_hex(answer["code"])


async def test_mint_with_empty_object_and_rotation_target(app: App) -> None:
    response = await call(app, "POST", "/admin/activation-codes", headers=OPERATOR, body=b"{}")
    assert body(response)["kind"] == "activate"
    await install(app, "ins_1")
    response = await call(
        app,
        "POST",
        "/admin/activation-codes",
        headers=OPERATOR,
        body=b'{"installation_id": "ins_1"}',
    )
    assert response.status == 201
    assert body(response)["kind"] == "rotate"
    assert body(response)["installation_id"] == "ins_1"


async def test_mint_rotation_for_unknown_installation_is_404(app: App) -> None:
    response = await call(
        app,
        "POST",
        "/admin/activation-codes",
        headers=OPERATOR,
        body=b'{"installation_id": "ins_nope"}',
    )
    assert response.status == 404
    assert body(response)["code"] == "installation_not_found"


@pytest.mark.parametrize(
    "payload",
    [
        b"[]",
        b"nope",
        b'{"installation_id": 5}',
        b'{"installation_id": "a/b"}',
        b'{"other": 1}',
        b'{"installation_id": "ins_1", "x": 1}',
    ],
)
async def test_mint_refuses_other_bodies(app: App, payload: bytes) -> None:
    response = await call(app, "POST", "/admin/activation-codes", headers=OPERATOR, body=payload)
    assert response.status == 400
    assert body(response)["code"] == "invalid_request"


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-secret-wrong-secret", "Basic abc", "Bearer", "operator-secret-0123456789"],
)
async def test_mint_needs_the_operator_bearer(
    app: App, db: SqliteDatabase, authorization: str | None
) -> None:
    headers = {"authorization": authorization} if authorization else {}
    response = await call(app, "POST", "/admin/activation-codes", headers=headers)
    assert response.status == 401
    assert await count(db, "activation_codes") == 0


@pytest.mark.parametrize("secret", [None, "fifteen-chars!!"])
async def test_admin_routes_are_misconfigured_without_a_proper_secret(
    runtime: Runtime, secret: str | None
) -> None:
    async with runtime.http() as http:
        wrong = await http.post("/admin/activation-codes", headers={"authorization": "Bearer no"})
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"].startswith("Bearer")
        with runtime.vars(ADMIN_SECRET=secret):
            for path in ("/admin/activation-codes", "/admin/installations/ins_1/delete-data"):
                answer = await http.post(path, headers={"authorization": f"Bearer {secret}"})
                assert (answer.status_code, answer.json()["code"]) == (500, "misconfigured")
                assert "ADMIN_SECRET" in answer.json()["message"]
            # Routes that do not need the secret keep working.
            assert (await http.get("/dee-wan/manifest.json")).status_code == 200
    assert "ADMIN_SECRET" in runtime.log_text()
    assert not secret or secret not in runtime.log_text()


# -- activate / rotate: protocol §3 ---------------------------------------


async def test_activate_seals_the_token_and_rotate_replaces_it(runtime: Runtime) -> None:
    """On both runtimes (the Worker's seal is WebCrypto's): no raw token is stored, and the
    sealed one opens, bound to its installation, to the token Dee Wan sent last."""
    installation_id = f"ins_{secrets.token_hex(6)}"
    runtime.installed.append(installation_id)
    async with runtime.http() as http:
        for action, answer, target in (
            ("activate", (201, {"code": "activated"}), {}),
            ("rotate", (200, {"code": "rotated"}), {"installation_id": installation_id}),
        ):
            minted = await http.post(
                "/admin/activation-codes", headers=runtime.operator, json=target
            )
            raw, code = token(), minted.json()["code"]
            fields: dict[str, Any] = {"action": action, "installation_id": installation_id}
            if action == "rotate":
                fields |= {"site_id": None, "base_url": None}  # a rotation names neither
            sent = await http.post("/dee-wan/activate", json=activation(code, token=raw, **fields))
            assert (sent.status_code, sent.json()) == answer
            [row] = await runtime.rows("SELECT * FROM installations WHERE id = ?", installation_id)
            assert (row["site_id"], row["base_url"]) == ("site_1", "https://cms.example")
            assert raw not in json.dumps(row)
            sealed = row["token_sealed"]
            assert await runtime.unsealed(sealed, installation_token(installation_id)) == raw


async def test_rotate_with_matching_site_and_base_url(app: App) -> None:
    await install(app)
    response = await post_activate(app, activation(await mint(app, "ins_1"), action="rotate"))
    assert response.status == 200


@pytest.mark.parametrize(
    "change",
    [
        {"protocol": "v2"},
        {"action": "install"},
        {"code": "dwa_short"},
        {"token": "dwp_short"},
        {"token": token("dwl_")},
        {"installation_id": "ins/1"},
        {"installation_id": "x" * 65},
        {"site_id": None},
        {"base_url": None},
        {"installation_id": None},
        {"code": 5},
    ],
)
async def test_malformed_body_is_400_and_consumes_nothing(
    app: App, db: SqliteDatabase, change: dict[str, object]
) -> None:
    code = await mint(app)
    response = await post_activate(app, activation(code, **change))
    assert (response.status, body(response)["code"]) == (400, "invalid_request")
    assert await count(db, "activation_codes", "used_at IS NULL") == 1
    assert (await post_activate(app, activation(code))).status == 201


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1]", b'"s"'])
async def test_non_object_bodies_are_400(app: App, raw: bytes) -> None:
    assert (await post_activate(app, raw)).status == 400


async def test_unknown_code_is_401(app: App) -> None:
    response = await post_activate(app, activation(token("dwa_")))
    assert (response.status, body(response)["code"]) == (401, "invalid_code")


async def test_expired_code_is_401(app: App, clock: FakeClock) -> None:
    code = await mint(app)
    clock.advance(15 * 60 * 1000)
    assert body(await post_activate(app, activation(code)))["code"] == "invalid_code"


async def test_code_is_single_use(app: App) -> None:
    code = await mint(app)
    assert (await post_activate(app, activation(code))).status == 201
    response = await post_activate(app, activation(code, installation_id="ins_2"))
    assert (response.status, body(response)["code"]) == (401, "invalid_code")


async def test_code_of_the_other_kind_is_401(app: App, db: SqliteDatabase) -> None:
    await install(app)
    rotate_code = await mint(app, "ins_1")
    response = await post_activate(app, activation(rotate_code, installation_id="ins_2"))
    assert body(response)["code"] == "invalid_code"
    activate_code = await mint(app)
    response = await post_activate(app, activation(activate_code, action="rotate"))
    assert body(response)["code"] == "invalid_code"
    assert await count(db, "activation_codes", "used_at IS NULL") == 2


async def test_rotation_code_bound_to_another_installation_is_401(app: App) -> None:
    await install(app, "ins_1")
    await install(app, "ins_2")
    code = await mint(app, "ins_1")
    response = await post_activate(
        app, activation(code, action="rotate", installation_id="ins_2", site_id=None, base_url=None)
    )
    assert body(response)["code"] == "invalid_code"


async def test_activate_existing_installation_is_409_and_keeps_the_code(
    app: App, db: SqliteDatabase
) -> None:
    await install(app)
    code = await mint(app)
    response = await post_activate(app, activation(code))
    assert (response.status, body(response)["code"]) == (409, "installation_exists")
    assert await count(db, "activation_codes", "used_at IS NULL") == 1


async def test_rotate_unknown_installation_is_404(app: App, db: SqliteDatabase) -> None:
    await install(app, "ins_1")
    code = await mint(app, "ins_1")
    await db.prepare(
        "UPDATE activation_codes SET installation_id = 'ins_9' WHERE kind = 'rotate'"
    ).run()
    response = await post_activate(app, activation(code, action="rotate", installation_id="ins_9"))
    assert (response.status, body(response)["code"]) == (404, "installation_not_found")


@pytest.mark.parametrize("change", [{"site_id": "site_2"}, {"base_url": "https://other.example"}])
async def test_rotate_with_a_different_site_or_base_url_is_409(
    app: App, db: SqliteDatabase, change: dict[str, str]
) -> None:
    await install(app)
    code = await mint(app, "ins_1")
    response = await post_activate(app, activation(code, action="rotate", **change))
    assert (response.status, body(response)["code"]) == (409, "installation_mismatch")
    assert await count(db, "activation_codes", "used_at IS NULL") == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://cms.example",
        "https://user:pw@cms.example",
        "https://cms.example?x=1",
        "https://cms.example#frag",
        "https://cms.example/",
        "https://cms.example/a/",
        "ftp://cms.example",
        "https://",
        "cms.example",
        "https://cms.example:99999",
        "https://cms .example",
        "http://localhost:8787",
        # No HTTP client can use these (issue 12): control, invisible and wide characters,
        # an empty or zero port, an empty label, labels that are not IDNA.
        "https://cms.example\x7f",
        "https://ex\u200bample.com",
        "https://cms.example\u3000",
        "https://bücher.example",
        "https://cms.example:",
        "https://cms.example:0",
        "https://cms.example:+443",
        "https://a..b",
        "https://cms.example.",
        "https://-cms.example",
        "https://xn--zz.example",
        "https://ab--c.example",
        "https://cms.example/a%zz",
        # Addresses of the plugin's own network (SSRF): IP literals in any spelling, localhost.
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]:22",
        "https://10.0.0.7",
        "https://[fe80::1%25eth0]",
        "https://2130706433",
        "https://0x7f.1",
        "https://127.1",
        "https://localhost",
        "https://cms.localhost:8443",
        # Names that resolve only inside a network (issue 17): one label (found through the
        # resolver's search domains, or /etc/hosts), special-use and private-use suffixes
        # (RFC 6761, 6762, 8375, 9476, ICANN's .internal) and names networks use in-house,
        # and a last label of digits (which a browser reads as an IPv4 address).
        "https://intranet",
        "https://vm:41853",
        "https://xn--bcher-kva",
        "https://cms.local",
        "https://nas.home.arpa",
        "https://1.0.0.10.in-addr.arpa",
        "https://cms.internal",
        "https://wiki.intranet",
        "https://printer.lan",
        "https://cms.home",
        "https://cms.corp",
        "https://cms.private",
        "https://cms.localdomain",
        "https://cms.test",
        "https://cms.invalid",
        "https://cms.alt",
        "https://cms.onion",
        "https://CMS.Internal:8443/dee-wan",
        "https://cms.123",
    ],
)
async def test_refused_base_urls_are_422_and_consume_nothing(
    app: App, db: SqliteDatabase, url: str
) -> None:
    response = await post_activate(app, activation(await mint(app), base_url=url))
    assert (response.status, body(response)["code"]) == (422, "invalid_base_url")
    assert await count(db, "installations") == 0
    assert await count(db, "activation_codes", "used_at IS NULL") == 1


@pytest.mark.parametrize(
    "url",
    [
        "https://cms.example",
        "https://cms.example:8443/dee-wan",
        "https://CMS.example/sub/path",
        "https://xn--bcher-kva.example",
        "https://cms.example:65535/a%20b",
        "https://dee-wan.example.com",
        # A special-use word is refused as the last label only.
        "https://local.cms.example.org",
        "https://internal.example.net:8443",
        "https://test.example.com",
        "https://cms.localhost.example.com",
        "https://cms.co.uk",
        "https://cms.123.example",
    ],
)
async def test_accepted_https_base_urls(app: App, url: str) -> None:
    assert (await post_activate(app, activation(await mint(app), base_url=url))).status == 201


async def test_http_only_in_development_for_listed_exact_origins(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    dev = make_app(
        db,
        clock,
        env=base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS="http://localhost:8787"),
    )
    for url, status in [
        ("http://localhost:8788", 422),
        ("http://127.0.0.1:8787", 422),
        ("http://localhost:8787", 201),
    ]:
        response = await post_activate(dev, activation(await mint(dev), base_url=url))
        assert response.status == status, url
    prod = make_app(db, clock, env=base_env(DEE_WAN_DEV_ORIGINS="http://localhost:8787"))
    response = await post_activate(
        prod,
        activation(await mint(prod), installation_id="ins_2", base_url="http://localhost:8787"),
    )
    assert response.status == 422


async def test_internal_names_only_as_exact_development_origins(runtime: Runtime) -> None:
    """A single label or an internal suffix is accepted only as a listed development origin.
    A refused activation consumes nothing: its code activates after, once."""
    origins = "https://vm:41853,https://cms.internal,http://intranet:8080"
    cases = [
        ("https://vm:41853", 201),
        ("https://cms.internal/core", 201),
        ("http://intranet:8080", 201),
        ("https://vm:41854", 422),
        ("https://intranet", 422),
    ]
    async with runtime.http() as http:

        async def activate(url: str, code: str | None = None) -> httpx.Response:
            if code is None:
                minted = await http.post("/admin/activation-codes", headers=runtime.operator)
                code = minted.json()["code"]
            runtime.installed.append(f"ins_{secrets.token_hex(6)}")
            payload = activation(code, installation_id=runtime.installed[-1], base_url=url)
            return await http.post("/dee-wan/activate", json=payload)

        for environment in ("development", "production"):
            with runtime.vars(ENVIRONMENT=environment, DEE_WAN_DEV_ORIGINS=origins):
                for url, status in cases:
                    answer = await activate(url)
                    expected = status if environment == "development" else 422
                    assert answer.status_code == expected, (environment, url, answer.text)
                    assert expected == 201 or answer.json()["code"] == "invalid_base_url"
        minted = await http.post("/admin/activation-codes", headers=runtime.operator)
        code = minted.json()["code"]
        assert (await activate("https://intranet", code)).status_code == 422
        assert (await activate("https://cms.example", code)).status_code == 201
        again = await activate("https://cms.example", code)
        assert (again.status_code, again.json()["code"]) == (401, "invalid_code")


async def test_refused_base_url_says_why(app: App) -> None:
    cases = {
        "https://vm:41853": "single label",
        "https://cms.home.arpa": "home.arpa",
        "https://cms.local": ".local",
    }
    for url, said in cases.items():
        response = await post_activate(app, activation(await mint(app), base_url=url))
        assert said in body(response)["message"], (url, body(response))


async def test_ip_literals_only_as_exact_development_origins(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    origins = "http://127.0.0.1:9000,https://10.0.0.7:8443,https://[::1]:8443"
    dev = make_app(db, clock, env=base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=origins))
    prod = make_app(db, clock, env=base_env(DEE_WAN_DEV_ORIGINS=origins))
    cases = [
        ("http://127.0.0.1:9000", 201),
        ("https://10.0.0.7:8443/core", 201),
        ("https://[::1]:8443", 201),
        ("https://10.0.0.7", 422),
        ("http://127.0.0.1:9001", 422),
    ]
    for index, (url, status) in enumerate(cases):
        response = await post_activate(
            dev, activation(await mint(dev), installation_id=f"ins_d{index}", base_url=url)
        )
        assert response.status == status, url
        response = await post_activate(
            prod, activation(await mint(prod), installation_id=f"ins_p{index}", base_url=url)
        )
        assert response.status == 422, url


def test_every_accepted_base_url_means_the_same_host_to_httpx() -> None:
    """What activation accepts, the CPython client reads with the same host and port."""
    import httpx
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from scheduling.config import Configuration
    from scheduling.domain.addresses import base_url_problem

    config = Configuration.from_mapping(base_env())
    label = st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,10}[a-zA-Z0-9])?", fullmatch=True)
    noise = st.text(st.sampled_from("aZ09-._~:%[]@/\\?#\x7f\u200b\u3000é "), max_size=6)

    @settings(derandomize=True, max_examples=300, deadline=None, database=None)
    @given(
        st.lists(label | noise, min_size=1, max_size=4),
        st.none() | st.text("0123456789:+", max_size=6),
        st.sampled_from(["", "/dee-wan", "/a%20b", "/x/"]) | noise.map(lambda text: "/" + text),
    )
    def check(labels: list[str], given_port: str | None, path: str) -> None:
        url = (
            "https://"
            + ".".join(labels)
            + (f":{given_port}" if given_port is not None else "")
            + path
        )
        if base_url_problem(url, config) is not None:
            return
        # Read plainly: the authority runs to the first "/", the port follows the ":".
        host, _, port = url.removeprefix("https://").split("/", 1)[0].partition(":")
        parsed = httpx.URL(url + "/api/plugins/v1/launch/exchange")
        assert parsed.host == host.lower()
        assert (parsed.port or 443) == (int(port) if port else 443)

    check()


async def test_code_taken_between_check_and_write_consumes_nothing_twice(
    app: App, db: SqliteDatabase
) -> None:
    from scheduling.repository import installations

    code = await mint(app)
    code_hash = await app.services.crypto.sha256_hex(code)
    first = await installations.activate(
        db,
        code_hash=code_hash,
        marker="m1",
        installation_id="ins_a",
        site_id="s",
        base_url="https://a",
        token_sealed="x",
        now=1,
    )
    second = await installations.activate(
        db,
        code_hash=code_hash,
        marker="m2",
        installation_id="ins_b",
        site_id="s",
        base_url="https://b",
        token_sealed="x",
        now=1,
    )
    assert (first, second) == (True, False)
    assert await count(db, "installations") == 1


# -- delete-data -------------------------------------------------------------


async def _add_schedule(db: SqliteDatabase, installation_id: str, sid: str, status: str) -> None:
    running = status == "running"
    waiting = status in ("pending", "retrying")
    await (
        db.prepare(
            "INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,"
            " workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,"
            " next_attempt_at, lease_token, lease_until, requested_by, requested_by_name,"
            " created_at, updated_at)"
            " VALUES (?, ?, ?, 'publish', 'published', 'v', 1, 1, ?, 0, 'UTC', '2026-07-01T09:00',"
            " ?, ?, ?, ?, 'usr_1', 'Ada', 0, 0)"
        )
        .bind(
            sid,
            installation_id,
            f"cnt_{sid}",
            f"k:{sid}",
            status,
            0 if waiting else None,
            "lease" if running else None,
            0 if running else None,
        )
        .run()
    )
    await (
        db.prepare(
            "INSERT INTO schedule_attempts (schedule_id, attempt, started_at) VALUES (?, 1, 0)"
        )
        .bind(sid)
        .run()
    )


async def test_delete_data_removes_everything_of_one_installation(
    app: App, db: SqliteDatabase
) -> None:
    await install(app, "ins_1")
    await install(app, "ins_2")
    await mint(app, "ins_1")
    await mint(app, "ins_2")
    for iid in ("ins_1", "ins_2"):
        await _add_schedule(db, iid, f"{iid}_a", "completed")
        await _add_schedule(db, iid, f"{iid}_b", "pending")
        await (
            db.prepare(
                "INSERT INTO sessions (id_hash, installation_id, csrf_token, person_id,"
                " person_name, context_kind, content_id, content_primary_id, delegation_sealed,"
                " delegation_expires_at, created_at, expires_at)"
                " VALUES (?, ?, 'csrf', 'usr_1', 'Ada', 'manage', NULL, NULL, 'sealed', 0, 0, 0)"
            )
            .bind(f"hash_{iid}", iid)
            .run()
        )
    response = await call(app, "POST", "/admin/installations/ins_1/delete-data", headers=OPERATOR)
    assert (response.status, body(response)["code"]) == (200, "deleted")
    for table, column in [
        ("installations", "id"),
        ("schedules", "installation_id"),
        ("sessions", "installation_id"),
        ("activation_codes", "installation_id"),
    ]:
        assert await count(db, table, f"{column} = 'ins_1'") == 0, table
        assert await count(db, table, f"{column} = 'ins_2'") >= 1, table
    assert await count(db, "schedule_attempts", "schedule_id LIKE 'ins_1%'") == 0
    assert await count(db, "schedule_attempts", "schedule_id LIKE 'ins_2%'") == 2


async def test_delete_data_refused_while_a_schedule_runs(app: App, db: SqliteDatabase) -> None:
    await install(app)
    await _add_schedule(db, "ins_1", "s_run", "running")
    response = await call(app, "POST", "/admin/installations/ins_1/delete-data", headers=OPERATOR)
    assert (response.status, body(response)["code"]) == (409, "execution_in_progress")
    assert await count(db, "schedules") == 1
    assert await count(db, "installations") == 1


async def test_delete_data_batch_rechecks_running(app: App, db: SqliteDatabase) -> None:
    from scheduling.repository import installations

    await install(app)
    await _add_schedule(db, "ins_1", "s_run", "running")
    assert await installations.delete_all_data(db, "ins_1") is False
    assert await count(db, "schedule_attempts") == 1


async def test_delete_data_unknown_installation_is_404_and_needs_operator(app: App) -> None:
    response = await call(app, "POST", "/admin/installations/ins_x/delete-data", headers=OPERATOR)
    assert (response.status, body(response)["code"]) == (404, "installation_not_found")
    response = await call(app, "POST", "/admin/installations/ins_x/delete-data")
    assert response.status == 401


@pytest.mark.parametrize("bad_key", ["not base64 at all", "c2hvcnQ=", None])
async def test_misconfigured_token_key_only_fails_what_needs_it(
    runtime: Runtime, bad_key: str | None
) -> None:
    async with runtime.http() as http:
        with runtime.vars(TOKEN_KEY=bad_key):
            assert (await http.get("/dee-wan/manifest.json")).status_code == 200
            minted = await http.post("/admin/activation-codes", headers=runtime.operator)
            assert (minted.status_code, minted.json()) == (
                500,
                {"code": "misconfigured", "message": "TOKEN_KEY is not configured correctly"},
            )
            activated = await http.post("/dee-wan/activate", json=activation("dwa_" + "A" * 43))
            assert (activated.status_code, activated.json()["code"]) == (500, "misconfigured")
            # Routes that do not touch TOKEN_KEY keep working.
            path = "/admin/installations/ins_nobody/delete-data"
            deleted = await http.post(path, headers=runtime.operator)
            assert (deleted.status_code, deleted.json()["code"]) == (404, "installation_not_found")
            await runtime.tick(runtime.minute_ahead())
        assert not bad_key or bad_key not in runtime.log_text()
        # Restored: the app is rebuilt with the good key.
        again = await http.post("/admin/activation-codes", headers=runtime.operator)
        assert again.status_code == 201


async def test_expired_codes_are_removed_when_the_next_is_minted(
    app: App, db: SqliteDatabase, clock: FakeClock
) -> None:
    await mint(app)
    clock.advance(15 * 60 * 1000)
    await mint(app)
    assert await count(db, "activation_codes") == 1
