"""The privileged helper: a root daemon that runs a guest's job shell as the guest.

A system instance runs as an account of its own, and many users submit to it.
Their jobs must run as themselves, which the instance's account cannot do; this
helper can, and does so only for a job its user signed (RFC 15's J), whose
shell's description matches what J asks for (``pflux.imp.check``). A
compromised instance account can thus run nothing as another user that the
user did not ask for. ``docs/architecture.md``, "The privileged helper", has the
process, the trust and the protocol.
"""
