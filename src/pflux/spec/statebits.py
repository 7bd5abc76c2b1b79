"""RFC 21's numbers as plain ints: the job states' bits and names, urgency bounds and
submit flags.

What a client sends and prints needs only the numbers: ``State`` (``states.py``), an
``enum.IntFlag``, costs a short command a fifth of its instructions to import (enum,
functools and the flag's class). ``states`` builds on these.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

NEW: Final = 1
DEPEND: Final = 2
PRIORITY: Final = 4
SCHED: Final = 8
RUN: Final = 16
CLEANUP: Final = 32
INACTIVE: Final = 64
# virtual states
PENDING: Final = DEPEND | PRIORITY | SCHED
RUNNING: Final = RUN | CLEANUP
ACTIVE: Final = PENDING | RUNNING

#: each state's name and the one letter ``pflux jobs`` prints
NAMES: Final[dict[int, str]] = {
    NEW: "NEW",
    DEPEND: "DEPEND",
    PRIORITY: "PRIORITY",
    SCHED: "SCHED",
    RUN: "RUN",
    CLEANUP: "CLEANUP",
    INACTIVE: "INACTIVE",
}
LETTERS: Final[dict[int, str]] = {
    NEW: "N",
    DEPEND: "D",
    PRIORITY: "P",
    SCHED: "S",
    RUN: "R",
    CLEANUP: "C",
    INACTIVE: "I",
}

URGENCY_MIN: Final = 0
URGENCY_DEFAULT: Final = 16
URGENCY_MAX: Final = 31
URGENCY_HOLD: Final = URGENCY_MIN
URGENCY_EXPEDITE: Final = URGENCY_MAX

FLAG_DEBUG: Final = 1  # submit flags (RFC 21 "flags": 1=debug)
FLAG_WAITABLE: Final = 2
