"""The helper's configuration: a TOML file (``/etc/pflux/imp.toml``), every key checked.

Keys (all optional but ``allowed-users``)::

    socket = "/run/pflux-imp/sock"      # where the helper listens
    allowed-users = ["pflux"]           # the instance accounts that may ask (names or uids)
    allowed-mechanisms = ["munge"]      # J's signing mechanisms it accepts
    max-ttl = 0                         # seconds J stays valid after signing (0: no limit)
    job-tmpdir = "/dev/shm"             # where a guest's FLUX_JOB_TMPDIR is made
    python = "/opt/pflux/bin/python"    # the instance's interpreter (default: the helper's)

``job-tmpdir`` is by default a tmpfs, ``/dev/shm`` (else ``/tmp`` where there is
none), as the owner's jobs' are (``pflux.exec.config``): making and removing a
directory for every job costs microseconds there and a millisecond or more on a
disk-backed ``/tmp``, in every guest's job's time.

``python`` is the interpreter the flux shim's commands run in a job
(``PFLUX_PYTHON``): the instance sets it to its own, and the helper accepts no
other, so that an instance account cannot have a guest's ``flux`` run a program
of its choosing.

An unknown key, or a value of the wrong kind, is refused with its name.
"""

from __future__ import annotations

import os
import pwd
import sys
import tomllib
from dataclasses import dataclass
from typing import Any, Final

from pflux.errors import PfluxError

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_SOCKET",
    "DEFAULT_TMPDIR",
    "ImpConfig",
    "ImpConfigError",
    "load",
    "parse",
]

DEFAULT_CONFIG: Final = "/etc/pflux/imp.toml"
DEFAULT_SOCKET: Final = "/run/pflux-imp/sock"
DEFAULT_TMPDIR: Final = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
MECHANISMS: Final = ("munge", "none")
_KEYS: Final = (
    "socket",
    "allowed-users",
    "allowed-mechanisms",
    "max-ttl",
    "job-tmpdir",
    "python",
)


class ImpConfigError(PfluxError):
    """The configuration is unusable: the message names the file, the key and the rule."""


@dataclass(frozen=True)
class ImpConfig:
    socket: str
    allowed_users: frozenset[int]  # uids
    allowed_mechanisms: tuple[str, ...]
    max_ttl: float | None  # None: J does not expire
    job_tmpdir: str
    python: str  # the interpreter the flux shim runs in a job


def load(path: str) -> ImpConfig:
    """Read and check the file at ``path``."""
    try:
        with open(path, "rb") as file:
            table = tomllib.load(file)
    except OSError as exc:
        raise ImpConfigError(f"{path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ImpConfigError(f"{path}: not TOML: {exc}") from None
    return parse(table, path)


def parse(table: dict[str, Any], where: str = "imp.toml") -> ImpConfig:
    """Check a parsed table; ImpConfigError naming the first bad key."""
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ImpConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")

    def fail(key: str, rule: str) -> ImpConfigError:
        return ImpConfigError(f"{where}: {key}: {rule}, not {table[key]!r}")

    socket = table.get("socket", DEFAULT_SOCKET)
    if not isinstance(socket, str) or not os.path.isabs(socket):
        raise fail("socket", "must be an absolute path")
    if "allowed-users" not in table:
        raise ImpConfigError(f"{where}: allowed-users: must name the instance accounts")
    users = table["allowed-users"]
    if not isinstance(users, list) or not users:
        raise fail("allowed-users", "must be a list of user names or uids")
    uids = frozenset(_uid(where, user) for user in users)
    if 0 in uids:
        raise fail("allowed-users", "must not name root: an instance runs as an account of its own")
    mechanisms = table.get("allowed-mechanisms", ["munge"])
    ok = isinstance(mechanisms, list) and mechanisms
    if not ok or not all(m in MECHANISMS for m in mechanisms):
        raise fail("allowed-mechanisms", f"must be a list of {', '.join(MECHANISMS)}")
    ttl = table.get("max-ttl", 0)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 <= ttl < float("inf"):
        raise fail("max-ttl", "must be a number of seconds, 0 or more (0: no limit)")
    tmpdir = table.get("job-tmpdir", DEFAULT_TMPDIR)
    if not isinstance(tmpdir, str) or not os.path.isabs(tmpdir):
        raise fail("job-tmpdir", "must be an absolute path")
    python = table.get("python", sys.executable)
    if not isinstance(python, str) or not os.path.isabs(python):
        raise fail("python", "must be an absolute path")
    return ImpConfig(socket, uids, tuple(mechanisms), float(ttl) or None, tmpdir, python)


def _uid(where: str, user: object) -> int:
    if isinstance(user, int) and not isinstance(user, bool) and user >= 0:
        return user
    if isinstance(user, str):
        try:
            return pwd.getpwnam(user).pw_uid
        except KeyError:
            raise ImpConfigError(f"{where}: allowed-users: no such user {user!r}") from None
    raise ImpConfigError(f"{where}: allowed-users: {user!r} is not a user name or uid")
