"""pflux: a job manager implementing the Flux framework's job-management RFCs.

The public API is re-exported here; everything else is internal.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
