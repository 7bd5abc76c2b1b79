"""RFC 25 jobspec version 1: decode, validate, wrap and encode.

The judge is the walker (``walker``): one hand-written pass that checks RFC 25's
schema and prose and reports every problem with its path.  ``validate``
(``accept``) asks a flat, pathless check of the common shapes first, which may
only accept what the walker accepts, so the usual valid jobspec costs a quarter
of a walk.  Both were chosen over schema libraries by measurement
(``bench/compare_libraries.py``): faster than a compiled fastjsonschema check,
they report every problem (fastjsonschema stops at the first) in the user's
terms, which jsonschema's errors on ``oneOf`` branches are not.  ``codec``
decodes and encodes JSON and YAML; ``view`` is the read-only ``JobspecView``.

This package re-exports the public names its many callers use.
"""

from __future__ import annotations

from pflux.spec.jobspec.accept import validate
from pflux.spec.jobspec.codec import Format, decode, dumps, dumps_yaml, loads
from pflux.spec.jobspec.view import JobspecView, system_attributes

__all__ = [
    "Format",
    "JobspecView",
    "decode",
    "dumps",
    "dumps_yaml",
    "loads",
    "system_attributes",
    "validate",
]
