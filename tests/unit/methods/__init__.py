"""Tests of backend.methods."""
