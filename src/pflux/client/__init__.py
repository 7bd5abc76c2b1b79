"""Connections to a running instance: a blocking handle (CLI, job shell) and an asyncio one.

This is where what a socket does becomes pflux's errors: a failed connect or a
peer that is not an instance is NoInstanceError, bytes that are not a message
ProtocolError, an error response or a lost connection RPCError, no answer in
time RPCTimeout (all in pflux.errors).
"""
