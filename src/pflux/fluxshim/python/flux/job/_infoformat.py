"""``flux.job.info.JobInfoFormat``: a ``flux jobs`` format over ``JobInfo`` objects.

Kept apart from ``flux.job.info`` so that ``JobInfo`` does not load ``flux.util``.
"""

from __future__ import annotations

from string import Formatter

from _pfluxcore import jobinfo as _jobinfo

from flux.util import OutputFormat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

#: every field's heading (flux-core's), shared with pflux's ``jobs``
HEADINGS: dict[str, str] = dict(_jobinfo.HEADINGS)


class JobInfoFormat(OutputFormat):
    """A format of ``JobInfo`` fields (``{id.f58:>12} {name}``) with ``flux jobs``'
    headings; an unknown field is a ValueError naming it."""

    headings = HEADINGS

    def __init__(
        self, fmt: str, headings: Mapping[str, str] | None = None, prepend: str | None = None
    ) -> None:
        table = dict(self.headings if headings is None else headings)
        for _, field, _, _ in Formatter().parse(fmt):
            if field and field not in table:
                heading = _jobinfo.heading(field)
                if heading is not None:
                    table[field] = heading
        super().__init__(fmt, headings=table, prepend=prepend)
