"""Processes started on ranks in the background (``pflux exec --bg``, ``pflux sproc``):
the request methods both clients share (``pflux.api.exchange``). A process is named by
its pid or by its label; ``rank`` -1 is the broker the client talks to."""

from __future__ import annotations

from pflux.api.exchange import Call, Exchange, ask
from pflux.errors import RPCError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


def _target(process: int | str) -> dict[str, Any]:
    return {"pid": process} if isinstance(process, int) else {"pid": -1, "label": process}


def rexec_background(
    ranks: Sequence[int],
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
    waitable: bool = False,
    label: str | None = None,
) -> Exchange[list[int | RPCError]]:
    """Start ``command`` on each of ``ranks``, left to run (the owner only): each rank's
    pid, or why it did not start; ``waitable``: kept once ended until ``rexec_wait``."""
    payload: dict[str, Any] = {
        "cmd": list(command),
        "env": dict(env),
        "cwd": cwd,
        "bg": True,
        "waitable": waitable,
    }
    if label is not None:
        payload["label"] = label
    calls = [Call("rexec.exec", payload, nodeid=rank, tolerant=True) for rank in ranks]
    answers = yield calls
    return [a if isinstance(a, RPCError) else int(a["pid"]) for a in answers]


def rexec_kill(process: int | str, signum: int, *, rank: int = -1) -> Exchange[None]:
    """Send ``signum`` to a background process of ``rank``'s."""
    yield from ask("rexec.kill", {**_target(process), "signum": signum}, nodeid=rank)


def rexec_wait(process: int | str, *, rank: int = -1) -> Exchange[int]:
    """A waitable background process's wait status, once it has ended."""
    reply = yield from ask("rexec.wait", _target(process), wait=True, nodeid=rank)
    return int(reply["status"])


def rexec_list(*, rank: int = -1) -> Exchange[dict[str, Any]]:
    """``rank``'s background processes: ``{rank, procs}``."""
    listed: dict[str, Any] = yield from ask("rexec.list", {}, nodeid=rank)
    return listed
