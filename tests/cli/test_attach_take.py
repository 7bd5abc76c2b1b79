"""``job attach``'s loop takes what arrived while it acted on an item.

Acting on an item may send a request (a terminal's size) whose wait reads
the connection: the stream's items read then are queued on the client and
the connection is not readable for them again, so the loop must take them
before it selects, or the job's output waits for the next message (which,
at an interactive shell's prompt, never comes).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from pflux.cli.job_attach import _take


class _Follow:
    """Items queued on a client as ``LogFollow.poll`` hands them out."""

    def __init__(self) -> None:
        self.queued: deque[tuple[int, Any]] = deque()

    def poll(self) -> list[tuple[int, Any]]:
        items = list(self.queued)
        self.queued.clear()
        return items


class _State:
    """Records items; the first one makes a request whose wait brings two more."""

    def __init__(self, follow: _Follow) -> None:
        self.follow = follow
        self.seen: list[Any] = []

    def on(self, log: int, item: Any) -> None:
        if not self.seen:
            self.follow.queued.extend([(1, "output so far"), (1, "prompt")])
        self.seen.append(item)


def test_what_arrives_while_an_item_is_acted_on_is_taken_at_once() -> None:
    follow = _Follow()
    follow.queued.append((0, "start"))
    state = _State(follow)
    _take(follow, state)  # type: ignore[arg-type]
    assert state.seen == ["start", "output so far", "prompt"]
    assert not follow.queued
