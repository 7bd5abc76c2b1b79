"""The job manager (RFC 21): event-sourced jobs, driven through their states by plugins,
the scheduler (RFC 27) and the execution service (RFC 32)."""
