"""Fixtures of the multi-user tests: the other local users (``support.users``), and a
MUNGE daemon for a guest's signed submissions (``support.munge``)."""

from __future__ import annotations

from support.munge import munged
from support.users import User, other_users

__all__ = ["User", "munged", "other_users"]
