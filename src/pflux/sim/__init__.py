"""Simulation: a trace of jobs replayed in simulated time by a live instance.

``trace`` reads a trace and builds each job's jobspec; ``run`` decides how a
job runs in simulated time; ``service`` is the simulator, an RFC 32
execution service that overrides job-exec, submits the trace's jobs and
moves the scheduler's clock on (``pflux.sched.clock``); ``replay`` computes
the same schedule offline from the scheduler's own pool and policy, with no
instance, to check the simulator against.
"""
