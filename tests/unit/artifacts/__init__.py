"""Tests of backend.artifacts."""
