"""job-info: read access to a job's KVS data, the proxy RFC 16 describes for guests.

``service`` answers ``lookup`` and ``eventlog-watch`` and checks ownership;
``watch`` is one eventlog-watch stream.
"""
