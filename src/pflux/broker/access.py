"""Who besides the instance owner may connect: the ``[access]`` table (flux-config-access(5)).

Root is refused by an instance of another user's unless ``allow-root-owner =
true``; it is then the owner in every way, its requests carrying the owner's
userid, so a job it submits is recorded as the owner's: the uid it runs as.
``allow-guest-user = true`` needs a multi-user instance, which pflux does not
support yet, so it is refused rather than ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pflux.errors import ConfigError

__all__ = ["CONFIG_KEYS", "allow_root_owner"]

CONFIG_KEYS: Final = ("allow-guest-user", "allow-root-owner")


def allow_root_owner(config: Mapping[str, Any]) -> bool:
    """``[access] allow-root-owner`` (default false); ConfigError for a bad table."""
    table = config.get("access", {})
    if not isinstance(table, dict):
        raise ConfigError("access", None, f"must be a table, got {table!r}")
    for key in CONFIG_KEYS:
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise ConfigError("access", key, f"must be true or false, got {value!r}")
    if table.get("allow-guest-user", False):
        raise ConfigError(
            "access",
            "allow-guest-user",
            "not supported yet: an instance serves its owner only (set it false or leave it out)",
        )
    return bool(table.get("allow-root-owner", False))
