"""Tests of backend.data."""
