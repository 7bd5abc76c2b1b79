"""Helpers shared by the test suite: a live instance and ways to drive the CLI against it."""
