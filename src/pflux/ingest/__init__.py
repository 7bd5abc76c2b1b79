"""job-ingest: accepts jobs (RFC 16, RFC 21).

``service`` validates a jobspec, assigns a FLUID and commits the job's first
keys in batches; ``sign`` wraps the jobspec as J under the ``none`` mechanism.
"""
