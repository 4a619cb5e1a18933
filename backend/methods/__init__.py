"""Adaptation methods: one file each (Config + build), registered in ``registry``."""
