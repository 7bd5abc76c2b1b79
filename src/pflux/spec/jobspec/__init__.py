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

This package re-exports the public names its many callers use, each loading its
module on first use: a command that only validates (``run``, ``submit``) loads
neither the codec nor the view.
"""

from __future__ import annotations

from pflux.spec.lazy import lazy_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux.spec.jobspec.accept import validate
    from pflux.spec.jobspec.codec import Format, decode, dumps, dumps_yaml, loads
    from pflux.spec.jobspec.view import JobspecView, system_attributes

_CODEC = "pflux.spec.jobspec.codec"
_VIEW = "pflux.spec.jobspec.view"
# where each name is defined
_HOMES = {
    "Format": _CODEC,
    "JobspecView": _VIEW,
    "decode": _CODEC,
    "dumps": _CODEC,
    "dumps_yaml": _CODEC,
    "loads": _CODEC,
    "system_attributes": _VIEW,
    "validate": "pflux.spec.jobspec.accept",
}

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


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
