"""Checks that behaviour holds: the behaviour digest of one checkout against another, and the
runtime on aarch64 under emulation against x86."""
