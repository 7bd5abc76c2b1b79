"""``flux.abc``: the base classes flux-core's consumers share."""

from flux.abc.journal import JournalConsumerBase, JournalEventBase

__all__ = ["JournalConsumerBase", "JournalEventBase"]
