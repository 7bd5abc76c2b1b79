"""The wire protocol, used by both ends: a leaf that imports nothing of pflux's but
``pflux.errors`` and ``pflux.spec``, so the broker, the client and every service
may import it and none need import another.

``message`` is a message and its wire encoding (the codec both the broker and the
client speak); ``uri`` is how a client addresses an instance (its socket's URI, and
how long to wait for it). Both stay cheap to import: a client loads them on every
command.

Each request and response a service checks is a msgspec ``Struct``; ``decode``
turns the dict the connector decoded into one with strict conversion, and
refuses a payload that does not fit with a message naming the field and the
rule (``sched.alloc: jobspec: expected object``): ``errno.EPROTO`` for a wrong
shape, ``errno.EINVAL`` for a value its type rules out, the same for every
topic.  msgspec was chosen by ``bench/bench_protocol.py`` (the README's
libraries table).  Fields that carry another RFC's document (a jobspec, R)
are checked to be objects only: their own libraries in ``pflux.spec`` read
them.  Today the RFC 27 messages (``pflux.protocol.sched``) and the RFC 32
ones (``pflux.protocol.exec``) live here, and the requests job-list, job-info,
the KVS and the broker serve (``joblist``, ``info``, ``kvs``, ``broker``).
What job-exec and the processes it runs share, the job shell launcher and its
shells, is here too, typing-free since every shell imports it: their records
and a job's description (``shellwire``) and the journal of shell sessions
(``shelljournal``).
"""
