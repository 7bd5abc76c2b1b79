"""Numbers on job-list's wire, as flux-core has them, so masks and filters mean the same.

The result itself is the job manager's to decide (``Job.result``); this is only
its encoding. Shared by job-list, its request types and ``pflux jobs``, and cheap
to import.
"""

from __future__ import annotations

from pflux.spec.results import CANCELED, COMPLETED, FAILED, TIMEOUT

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

USERID_ANY: Final = 4294967295  # FLUX_USERID_UNKNOWN: every user, in a userid filter

RESULT_COMPLETED: Final = 1
RESULT_FAILED: Final = 2
RESULT_CANCELED: Final = 4
RESULT_TIMEOUT: Final = 8

CODES: Final[dict[str, int]] = {
    COMPLETED: RESULT_COMPLETED,
    FAILED: RESULT_FAILED,
    CANCELED: RESULT_CANCELED,
    TIMEOUT: RESULT_TIMEOUT,
}
NAMES: Final[dict[int, str]] = {code: name for name, code in CODES.items()}
ABBREVIATIONS: Final[dict[int, str]] = {
    RESULT_COMPLETED: "CD",
    RESULT_FAILED: "F",
    RESULT_CANCELED: "CA",
    RESULT_TIMEOUT: "TO",
}
