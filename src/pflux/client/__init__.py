"""Connections to a running instance: a blocking handle (CLI, job shell) and an asyncio one."""
