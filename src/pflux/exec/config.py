"""job-exec's settings: the ``[exec]`` table, and where its jobs' temporary directories go."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import stat
import tempfile
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from pflux.broker.config import ConfigError
from pflux.errors import DurationError
from pflux.safefs.replace import replace_file
from pflux.safefs.shared import unsafe_parent
from pflux.spec import duration

if TYPE_CHECKING:
    from pflux.broker.router import Broker

__all__ = [
    "DEFAULT_KILL_TIMEOUT",
    "DEFAULT_REJOIN_TIMEOUT",
    "config_seconds",
    "config_signal",
    "imp_socket",
    "is_int",
    "job_rundir",
    "rejoin_timeout",
]

log = logging.getLogger("pflux.job-exec")

DEFAULT_KILL_TIMEOUT: Final = 5.0
DEFAULT_REJOIN_TIMEOUT: Final = 300.0
RUNDIR_RECORD: Final = "rundir"  # in the exec directory: the jobs' directory's name


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def job_rundir(broker: Broker, state_dir: str, *, fresh: bool) -> str:
    """The instance's directory for its jobs' FLUX_JOB_TMPDIR; ``fresh``: emptied first.

    Its parent is often shared (/dev/shm), so it is made by mkdtemp, a name no
    other user can guess or take first, and its name is kept in the state
    directory (``exec/rundir``): a restart after a crash finds what the earlier
    run left and removes it, unless its jobs still run. A recorded directory is
    used again only if it is still a real directory of this user's, mode 0700.
    """
    record = os.path.join(state_dir, "exec", RUNDIR_RECORD)
    path = _recorded(record)
    if path is not None:
        if fresh:
            _empty(path)
        return path
    path = tempfile.mkdtemp(prefix="pflux-jobs-", dir=_run_parent(broker))
    replace_file(record, path.encode())
    return path


def _recorded(record: str) -> str | None:
    """The directory ``record`` names, if it is still this user's own, else None."""
    try:
        with open(record, encoding="utf-8") as file:
            path = file.read()
        st = os.lstat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
        why = unsafe_parent(os.path.dirname(path))
        if not why:
            return path
        log.warning("%s: not used: %s", path, why)
        return None
    log.warning("%s: not a directory of uid %d's, mode 0700: not used", path, os.geteuid())
    return None


def _empty(path: str) -> None:
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _run_parent(broker: Broker) -> str:
    """Where the jobs' temporary directories go: the broker's rundir, else a tmpfs if any.

    A tmpfs, because creating and removing a directory for every job on a
    disk-backed /tmp costs about a millisecond here (ext4), a tmpfs 10 us;
    flux-core puts them in the broker's rundir, also usually a tmpfs.
    """
    rundir = broker.attrs.get("rundir")
    if rundir:
        return rundir
    for candidate in (os.environ.get("XDG_RUNTIME_DIR") or "", "/dev/shm"):
        usable = candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK)
        # not another user's runtime directory (root's, through su), where they could swap ours
        if usable and not unsafe_parent(candidate):
            return candidate
    return tempfile.gettempdir()


def config_seconds(conf: dict[str, Any], key: str, default: float, *, zero: bool = False) -> float:
    """``[exec] key`` in seconds (a number or an RFC 23 duration): more than 0, or 0 too
    where ``zero`` allows it, and finite."""
    value = conf.get(key, default)
    try:
        if isinstance(value, str):
            seconds = duration.parse(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        else:
            raise DurationError(f"not a duration: {value!r}")
    except DurationError as exc:
        raise ConfigError("exec", key, str(exc)) from None
    if zero and seconds == 0:
        return 0.0
    if not 0 < seconds < float("inf"):
        least = "0 or more" if zero else "more than 0"
        raise ConfigError("exec", key, f"must be {least} and finite, not {value!r}")
    return seconds


def config_signal(conf: dict[str, Any], key: str, default: int) -> int:
    value = conf.get(key, default)
    if is_int(value) and 0 < value < signal.NSIG:
        return int(value)
    if isinstance(value, str):
        name = value.upper() if value.upper().startswith("SIG") else "SIG" + value.upper()
        member = getattr(signal.Signals, name, None)
        if member is not None:
            return int(member)
    raise ConfigError("exec", key, f"not a signal: {value!r}")


def rejoin_timeout(broker: Broker) -> float:
    """``[exec] rejoin-timeout``: how long the shells of a launcher that died with its
    broker wait for a restarted instance to take them over, before they kill their tasks.

    0 (as for a temporary instance, which nothing restarts): they end their tasks at once.
    """
    conf = broker.config.get("exec", {})
    if not isinstance(conf, dict):
        raise ConfigError("exec", None, f"must be a table, got {conf!r}")
    seconds = config_seconds(conf, "rejoin-timeout", DEFAULT_REJOIN_TIMEOUT, zero=True)
    return 0.0 if broker.attrs.get("state-dir-temporary") == "1" else seconds


def imp_socket(broker: Broker) -> str | None:
    """``[exec] imp``: the privileged helper's socket (``pflux.imp``), through which a
    guest's job runs as its submitter; None: guests' jobs are refused (``GUEST_NOTE``).

    flux-core's ``[exec] imp`` names the helper's program, run per job; pflux's helper
    is a daemon, so this names where it listens.
    """
    conf = broker.config.get("exec", {})
    if not isinstance(conf, dict):
        raise ConfigError("exec", None, f"must be a table, got {conf!r}")
    path = conf.get("imp")
    if path is None:
        return None
    if not isinstance(path, str) or not os.path.isabs(path):
        raise ConfigError(
            "exec", "imp", f"must be the helper's socket, an absolute path, not {path!r}"
        )
    return path
