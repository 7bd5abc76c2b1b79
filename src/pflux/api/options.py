"""The options of ``Jobspec.from_command`` as a type: ``Client.submit`` takes them with a
command. A module of its own, as ``typing`` is loaded only by those who use it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

__all__ = ["BuilderOptions"]


class BuilderOptions(TypedDict, total=False):
    """The options of ``Jobspec.from_command``, which ``Client.submit`` takes with a command."""

    num_tasks: int
    cores_per_task: int
    gpus_per_task: int | None
    num_nodes: int | None
    exclusive: bool
    duration: float | None
    environment: Mapping[str, str] | None
    cwd: str | None
    name: str | None
    input: str | None
    output: str | None
    error: str | None
    label_io: bool
    unbuffered: bool
    queue: str | None
    bank: str | None
