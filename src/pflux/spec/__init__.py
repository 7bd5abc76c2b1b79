"""Pure, I/O-free libraries, one module per specification.

jobspec (RFC 25), builder (jobspec from a command line), dependency (RFC 26 URIs),
duration (Flux Standard Duration), fluid (RFC 19), eventlog (RFC 18), idset (RFC 22),
hostlist, resource (RFC 20).
"""
