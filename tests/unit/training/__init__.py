"""Tests of backend.training."""
