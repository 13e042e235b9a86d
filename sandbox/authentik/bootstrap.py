"""What a fresh Authentik has before anyone calls the API: akadmin, its group, the bootstrap token.

Authentik applies these from a blueprint on every start, with "create if missing" semantics: an
existing object is left alone, a deleted one comes back. The emulator does the same.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sandbox.authentik.store import Store
from sandbox.authentik.writes import new_token_key

ADMIN_USERNAME = "akadmin"
ADMIN_GROUP = "authentik Admins"
BOOTSTRAP_TOKEN = "authentik-bootstrap-token"


def read_or_create_key(path: Path) -> str:
    """The bootstrap key from `path`; a new random one is written there (mode 0600) if absent."""
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = new_token_key()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(key + "\n")
        return key
    if not key:
        raise ValueError(f"{path} is empty: it must hold the bootstrap API token key")
    return key


def ensure_defaults(store: Store, key: str) -> None:
    with store.lock:
        admins = store.group_by_name(ADMIN_GROUP) or store.add_group(
            name=ADMIN_GROUP, is_superuser=True
        )
        admin = store.user_by_username(ADMIN_USERNAME)
        if admin is None:
            admin = store.add_user(
                username=ADMIN_USERNAME, name="authentik Default Admin", email="root@localhost"
            )
            store.add_member(admins, admin)
        token = store.token_by_identifier(BOOTSTRAP_TOKEN)
        if token is None:
            store.add_token(
                identifier=BOOTSTRAP_TOKEN,
                key=key,
                user=admin.pk,
                intent="api",
                expiring=False,
                expires=None,
            )
        elif token.key != key:
            # Like the real blueprint, an existing token is left alone; say so, or the caller
            # would only see 403s.
            print(
                f"warning: {BOOTSTRAP_TOKEN} exists with another key than the bootstrap file's; "
                "keeping the stored one",
                file=sys.stderr,
            )
        store.save()
