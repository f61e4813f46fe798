"""Reading the kernel: the only code that opens /proc and /sys, and pure parsers of its text."""
