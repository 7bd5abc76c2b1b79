"""``flux.subprocess``: processes run by a broker's ``rexec`` service outside any job,
as flux-core's module gives them to a script: started in the background
(``rexec_bg``), signalled (``kill``), waited for (``wait``, a waitable one) and
listed (``list``), each by pid or by label, on any rank (``nodeid``).

The requests are pflux's ``rexec`` messages; only the instance owner may send them,
so nothing is signed (``sign=True`` is refused as flux-core's is without
flux-security). pflux's server keeps no output of a background process:
``SubprocessWaitRPC.get_output()`` is empty.
"""

from __future__ import annotations

import builtins
import os
from dataclasses import dataclass

from flux.constants import FLUX_NODEID_ANY
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux

#: the flag of a waitable process (RFC 42's)
SUBPROCESS_REXEC_WAITABLE = 16


def _unsigned(sign: bool | None) -> None:
    """Requests go unsigned: asking for a signature is refused, as without flux-security."""
    if sign:
        raise OSError("flux-security is not available")


def _service(service: str) -> str:
    if service != "rexec":
        raise OSError(f"{service}: only the rexec service is provided by this instance")
    return service


def command_create(
    command: builtins.list[str],
    label: str | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    opts: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An RFC 42 command object: ``cmdline``, ``cwd`` (default this one), ``env``
    (default this environment), ``opts``, ``channels`` and ``label`` when given."""
    command_object: dict[str, Any] = {
        "cmdline": [str(arg) for arg in command],
        "cwd": os.getcwd() if cwd is None else cwd,
        "env": dict(os.environ) if env is None else dict(env),
        "opts": {} if opts is None else dict(opts),
        "channels": [],
    }
    if label is not None:
        command_object["label"] = label
    return command_object


class SubprocessBackgroundRexecRPC(RPC):
    """What ``rexec_bg`` returns: ``get_pid()`` once started, ``get_rank()``."""

    def __init__(self, handle: Flux, *args: Any, **kwargs: Any) -> None:
        nodeid = kwargs.get("nodeid", FLUX_NODEID_ANY)
        self.__nodeid = handle.get_rank() if nodeid == FLUX_NODEID_ANY else int(nodeid)
        super().__init__(handle, *args, **kwargs)

    def get_pid(self) -> int:
        """The remote process's pid."""
        return int(self.get()["pid"])

    def get_rank(self) -> int:
        """The rank it runs on."""
        return self.__nodeid


def rexec_bg(
    handle: Flux,
    command: builtins.list[str],
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    label: str | None = None,
    waitable: bool = False,
    service: str = "rexec",
    nodeid: int = FLUX_NODEID_ANY,
    sign: bool | None = None,
) -> SubprocessBackgroundRexecRPC:
    """Start ``command`` in the background on rank ``nodeid`` (``waitable``: kept once
    ended until ``wait`` takes its status). OSError if it cannot start."""
    _unsigned(sign)
    cmd = command_create(command, label=label, cwd=cwd, env=env)
    payload: dict[str, Any] = {
        "cmd": cmd["cmdline"],
        "env": cmd["env"],
        "cwd": cmd["cwd"],
        "bg": True,
        "waitable": bool(waitable),
    }
    if label is not None:
        payload["label"] = label
    topic = f"{_service(service)}.exec"
    return SubprocessBackgroundRexecRPC(handle, topic, payload, nodeid=int(nodeid))


def _target(pid: int | None, label: str | None) -> dict[str, Any]:
    if pid is None and label is None:
        raise ValueError("at least one of pid or label must be specified")
    if pid is not None and label is not None:
        raise ValueError("only one of pid or label may be specified")
    return {"pid": int(pid)} if pid is not None else {"pid": -1, "label": label}


def kill(
    handle: Flux,
    signum: int = 15,
    pid: int | None = None,
    label: str | None = None,
    service: str = "rexec",
    nodeid: int = FLUX_NODEID_ANY,
    sign: bool | None = None,
) -> RPC:
    """Send ``signum`` to the process ``pid`` or ``label`` names."""
    target = _target(pid, label)
    _unsigned(sign)
    payload = {**target, "signum": int(signum)}
    return handle.rpc(f"{_service(service)}.kill", payload, nodeid=int(nodeid))


class SubprocessWaitRPC(RPC):
    """What ``wait`` returns: the ended process's wait status."""

    def get_status(self) -> int:
        """The wait status (``os.WIFEXITED``, ``os.WEXITSTATUS``... read it)."""
        return int(self.get()["status"])

    def get_output(self) -> builtins.list[dict[str, Any]]:
        """The output the server kept: none, with pflux's."""
        output: builtins.list[dict[str, Any]] = self.get().get("output", [])
        return output

    @property
    def stdout(self) -> bytes:
        """The standard output kept (none)."""
        return self._stream_bytes("stdout")

    @property
    def stderr(self) -> bytes:
        """The standard error kept (none)."""
        return self._stream_bytes("stderr")

    def _stream_bytes(self, stream: str) -> bytes:
        import base64

        data = b""
        for record in self.get_output():
            if record.get("stream") == stream and record.get("data") is not None:
                text = record["data"]
                if record.get("encoding") == "base64":
                    data += base64.b64decode(text)
                else:
                    data += text.encode("utf-8", errors="surrogateescape")
        return data


def wait(
    handle: Flux,
    pid: int | None = None,
    label: str | None = None,
    service: str = "rexec",
    nodeid: int = FLUX_NODEID_ANY,
    sign: bool | None = None,
) -> SubprocessWaitRPC:
    """Wait for the waitable process ``pid`` or ``label`` names to end."""
    target = _target(pid, label)
    _unsigned(sign)
    return SubprocessWaitRPC(handle, f"{_service(service)}.wait", target, nodeid=int(nodeid))


@dataclass
class Subprocess:
    """One process of ``rexec.list``: ``state`` ``R`` (running) or ``Z`` (ended,
    waitable, not yet waited for); no label reads ``-``."""

    pid: int
    rank: int
    state: str
    label: str
    cmd: str
    bg: bool = False
    waitable: bool = False
    attached: bool = False

    def __post_init__(self) -> None:
        if not self.label:
            self.label = "-"


class SubprocessListRPC(RPC):
    """What ``list`` returns."""

    def get_processes(self) -> builtins.list[Subprocess]:
        """A ``Subprocess`` for each process of the rank."""
        reply = self.get()
        return [Subprocess(**proc, rank=reply["rank"]) for proc in reply["procs"]]


def list(
    handle: Flux,
    service: str = "rexec",
    nodeid: int = FLUX_NODEID_ANY,
    sign: bool | None = None,
) -> SubprocessListRPC:
    """The processes of rank ``nodeid``'s service."""
    _unsigned(sign)
    return SubprocessListRPC(handle, f"{_service(service)}.list", {}, nodeid=int(nodeid))


__all__ = [
    "SUBPROCESS_REXEC_WAITABLE",
    "Subprocess",
    "SubprocessBackgroundRexecRPC",
    "SubprocessListRPC",
    "SubprocessWaitRPC",
    "command_create",
    "kill",
    "list",
    "rexec_bg",
    "wait",
]
