"""One module per tab; each exposes ``build_<name>_tab(endpoints, ...)``."""
