"""The scheduler (RFC 27): a resource pool, a queue policy, and the ``sched`` service.

``pool`` and ``policy`` are pure (no I/O) so they can be tested and simulated
on their own; ``service`` is the broker service that speaks the protocol,
writes R to the KVS and answers the job manager.
"""
