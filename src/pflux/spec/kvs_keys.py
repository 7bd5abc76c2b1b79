"""RFC 16's key scheme: what a valid key looks like and where a job's data lives.

A key is a dotted path (``job.0000.0004.b200.0000.eventlog``) whose components
are non-empty and hold no whitespace or control characters. Every service that
reads or writes a job's keys spells them with ``job_key``; the KVS itself checks
keys and maps namespaces (``pflux.kvs.keys``).
"""

from __future__ import annotations

import re

#: one key component, as a regular expression
COMPONENT = r"[^\s.\x00-\x1f\x7f]+"
#: a valid key, for callers that check many (``KEY_PATTERN.fullmatch(key)``)
KEY_PATTERN = re.compile(rf"{COMPONENT}(?:\.{COMPONENT})*")
#: the scheduler's resource eventlog (flux-core's key), which ``resource eventlog`` reads
RESOURCE_EVENTLOG = "resource.eventlog"
_JOB_KEY = re.compile(r"job\.([0-9a-f]{4})\.([0-9a-f]{4})\.([0-9a-f]{4})\.([0-9a-f]{4})(?:\.(.+))?")


def job_key(jobid: int, *path: str) -> str:
    """``job.<kvs encoding of the FLUID>[.path...]``: where RFC 16 keeps a job's data.

    >>> job_key(6787342413402046, "eventlog")
    'job.0018.1d0d.4d85.0fbe.eventlog'
    """
    if type(jobid) is not int or not 0 <= jobid < 1 << 64:
        from pflux.spec.fluid import JobID

        JobID(jobid)  # raises the JobIDError that says why
    h = f"{jobid:016x}"  # the kvs encoding, written out: this is on every job's hot path
    base = f"job.{h[:4]}.{h[4:8]}.{h[8:12]}.{h[12:]}"
    return ".".join((base, *path)) if path else base


def job_id_from_key(key: str, *path: str) -> int | None:
    """The job id of ``job_key(id, *path)``, or None if ``key`` is not such a key.

    >>> job_id_from_key("job.0018.1d0d.4d85.0fbe.eventlog", "eventlog")
    6787342413402046
    """
    m = _JOB_KEY.fullmatch(key)
    if m is None or (m[5] or "") != ".".join(path):
        return None
    return int(m[1] + m[2] + m[3] + m[4], 16)
