"""The job shell: one process per running job that launches its tasks and reports back.

job-exec plans each job's shell (``pflux.exec.plan``) and asks its launcher
(``pflux.shell.launcher``) for one; the shell, forked ahead of need, starts the
tasks on the cores and GPUs in R, relays their output and its events to
job-exec (keeping them until they are committed, and spooling them while no
job-exec is there), feeds the tasks' stdin, passes signals on, and reports
flux's status; then it waits for a later job. job-exec turns what it relays
into RFC 32 responses and the guest namespace's eventlogs.

Modules: ``launcher`` (the process that forks the shells and relays for them),
``serve`` (a shell's life, job after job), ``job`` (one job's
``Shell``), ``start`` (starting its tasks), ``rejoin`` (when job-exec or the
launcher goes away, and another comes), ``acklog`` (its records until acknowledged, and its spool),
``stdin`` (feeding the tasks' stdin), ``context`` (what the launcher gives
every shell), ``lines`` (line buffering and labels), ``tasks`` (spawning and
signalling processes), ``pmi`` and ``pmiwire`` (the PMI-1 server).
"""
