"""The plugin's `.dev.vars` (the file `wrangler dev` reads): made once, never rewritten.

It is made with fresh random secrets when it is missing. The variables that
depend on the ports are given to the plugin through its environment, which
wins over the file; so the file from another run, on other ports, still fits.
`DEE_WAN_DEV_ORIGINS` keeps what the file (or the environment) lists beside the
local Dee Wan's origin, so a developer's own receiver can be an endpoint.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from scheduling.runtimes.cpython.server import load_vars
from scripts.devstack.errors import DevStackError

HOW_TO_FIX = {
    "ADMIN_SECRET": "16 characters or more",
    "TOKEN_KEY": "base64 of 32 random bytes, e.g. `openssl rand -base64 32`",
}


def ensure_vars(path: Path, plugin_origin: str, core_origin: str) -> bool:
    """Write the file with fresh secrets (mode 0600) if it is missing. True if written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = {
        "ENVIRONMENT": "development",
        "PUBLIC_ORIGIN": plugin_origin,
        "DEE_WAN_DEV_ORIGINS": core_origin,
        "ADMIN_SECRET": secrets.token_urlsafe(32),
        "TOKEN_KEY": base64.b64encode(os.urandom(32)).decode(),
    }
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write("".join(f"{k}={v}\n" for k, v in lines.items()))
    return True


def dev_origins(path: Path, core_origin: str) -> str:
    """DEE_WAN_DEV_ORIGINS for the plugin: the local Dee Wan's origin, then those the
    environment or the file lists (a developer's own receiver of notifications), once each."""
    try:
        listed = load_vars(path, os.environ).get("DEE_WAN_DEV_ORIGINS", "")
    except (OSError, ValueError):
        listed = ""  # read_admin_secret says what is wrong with the file
    origins = [core_origin, *(o.strip() for o in listed.split(",") if o.strip())]
    return ",".join(dict.fromkeys(origins))


def read_admin_secret(path: Path) -> str:
    """ADMIN_SECRET as the plugin will see it (the environment wins over the file)."""
    try:
        values = load_vars(path, os.environ)
    except OSError as exc:
        raise DevStackError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:  # "line N: expected KEY=VALUE", never a value
        raise DevStackError(f"{path}: {exc}") from None
    for name, fix in HOW_TO_FIX.items():
        if not values.get(name):
            raise DevStackError(
                f"{name} is missing from {path}: add it ({fix}), "
                "or delete the file to have a new one made with fresh secrets"
            )
    return values["ADMIN_SECRET"]
