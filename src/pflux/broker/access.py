"""Who besides the instance owner may connect: the ``[access]`` table (flux-config-access(5)).

Root is refused by an instance of another user's unless ``allow-root-owner =
true``; it is then the owner in every way, its requests carrying the owner's
userid, so a job it submits is recorded as the owner's: the uid it runs as.
``allow-guest-user = true`` lets any other local user connect as a guest: its
requests carry its own userid and the user role only, and each service serves
a guest only what its handlers allow (``pflux.broker.router.method``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from pflux.errors import ConfigError

__all__ = ["CONFIG_KEYS", "Access", "access"]

CONFIG_KEYS: Final = ("allow-guest-user", "allow-root-owner")


class Access(NamedTuple):
    """The ``[access]`` table, checked."""

    root_owner: bool = False  # root connects, as the owner
    guest_user: bool = False  # any other local user connects, as a guest


def access(config: Mapping[str, Any]) -> Access:
    """``[access]`` (both keys false by default); ConfigError for a bad table."""
    table = config.get("access", {})
    if not isinstance(table, dict):
        raise ConfigError("access", None, f"must be a table, got {table!r}")
    for key in CONFIG_KEYS:
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise ConfigError("access", key, f"must be true or false, got {value!r}")
    return Access(table.get("allow-root-owner", False), table.get("allow-guest-user", False))
