"""The public jobspec builder: ``pflux.Jobspec.from_command(["app"], num_tasks=2)``.

A Jobspec is the RFC 25 document itself (a dict), so it is submitted, dumped or
edited as it is; the class adds flux's ``JobspecV1`` constructor and setters
over ``pflux.spec.builder``, which holds the rules and their messages.
"""

from __future__ import annotations

import os

# the class collections.abc re-exports, without the collections package (a command
# that loads it pays for OrderedDict, Counter, ChainMap...)
from _collections_abc import Mapping

from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Unpack

    from pflux.api.options import BuilderOptions
else:
    Any = object  # what run-time subscripts take: only the type checker reads it


class Jobspec(dict[str, Any]):
    """An RFC 25 jobspec under construction; ``Jobspec(mapping)`` takes a ready one."""

    @classmethod
    def from_command(cls, command: Sequence[str], **options: Unpack[BuilderOptions]) -> Jobspec:
        """The version 1 jobspec running ``command`` as ``num_tasks`` tasks.

        As ``pflux submit``, the job gets the caller's environment and working
        directory unless ``environment`` / ``cwd`` are given; ``duration`` is in
        seconds (None: no limit). A bad count or option raises JobspecError.
        """
        from pflux.spec.builder import from_command

        if options.get("environment") is None:
            options["environment"] = dict(os.environ)
        if options.get("cwd") is None:
            options["cwd"] = os.getcwd()
        return cls(from_command(list(command), **options))

    def setattr(self, key: str, value: Any) -> Jobspec:
        """Set attribute ``key`` as ``--setattr`` does (``system.`` unless ``user.``
        or ``attributes.``); returns the jobspec, so calls chain."""
        from pflux.spec.builder import set_attr

        set_attr(self, key, value)
        return self

    def setattr_shell_option(self, key: str, value: Any) -> Jobspec:
        """Set job shell option ``key`` (dotted) as ``-o key=value`` does; returns the jobspec."""
        from pflux.spec.builder import set_shell_option

        set_shell_option(self, key, value)
        return self

    def dumps(self) -> str:
        """The jobspec as JSON text."""
        import json

        return json.dumps(self)


def jobspec_of(job: Mapping[str, Any] | Sequence[str], **options: Any) -> dict[str, Any]:
    """A jobspec from a jobspec mapping, or from a command line and builder options
    (those of ``Jobspec.from_command``).

    A command gets the caller's environment and working directory, as `pflux submit` does.
    """
    if isinstance(job, Mapping):
        if options:
            raise PfluxError("builder options apply to a command, not to a ready jobspec")
        return dict(job)
    from pflux.spec.builder import from_command

    options.setdefault("environment", dict(os.environ))
    options.setdefault("cwd", os.getcwd())
    return from_command(list(job), **options)
