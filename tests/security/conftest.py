"""Fixtures of the multi-user tests: the other local users (``support.users``)."""

from __future__ import annotations

from support.users import User, other_users

__all__ = ["User", "other_users"]
