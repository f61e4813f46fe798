"""Plan a change before it starts: add a disk, or replace one, on a classic RAID5/6 or
an SHR pool as the sampler read it; which md arrays rebuild, grow or are created, in what order,
how long each takes from this box's own history, and the usable capacity before and after.

Pure models: no I/O. The web's join hands in the arrays and the history figures.
"""
