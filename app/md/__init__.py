"""md's types: what the kernel says about an array and its sync, with no I/O and no imports."""
