"""Request checks several services share that a payload's type cannot state.

A malformed payload is refused by its type in ``pflux.protocol`` (EPROTO,
naming the field); what is left here depends on who asks: an urgency above
the default is the instance owner's (job-ingest and the job manager).
"""

from __future__ import annotations

import errno

from pflux.errors import RPCError
from pflux.spec.states import URGENCY_DEFAULT

GUEST_URGENCY_MAX = URGENCY_DEFAULT


def check_urgency(urgency: int, *, owner: bool) -> int:
    """``urgency`` (in range, as its type checked) if the requester may set it: guests up
    to the default, the owner any."""
    if urgency > GUEST_URGENCY_MAX and not owner:
        raise RPCError(
            errno.EPERM, f"urgency: only the instance owner may set more than {GUEST_URGENCY_MAX}"
        )
    return urgency
