"""Tests of the service package (the CLI)."""
