"""The job shell: one process per job that launches its tasks and reports back.

job-exec asks its shell launcher (``pflux.exec.launcher``) to fork a shell for
each job; the shell connects to the broker with the blocking client, starts the
tasks the jobspec asks for on the cores and GPUs in R, captures their output
into the job's guest KVS namespace (RFC 24), forwards signals, and reports the
largest task wait status to job-exec.

Modules: ``layout`` (pure: which task runs where), ``output`` (RFC 24 output
events, file redirection), ``tasks`` (spawning and signalling processes),
``main`` (the shell's event loop).
"""
