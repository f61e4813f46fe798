-- When the wall clock steps (NTP on a NAS that booted with a wrong clock).
-- Each sample's monotonic time: seconds of the host's CLOCK_MONOTONIC when the kernel was read.
-- Only differences within one boot mean anything; NULL for samples taken before.
ALTER TABLE samples ADD COLUMN mono REAL;
-- The last window a schedule closed (unix seconds of its start): a clock stepped back into it
-- neither applies its preset again nor reverts it a second time.
ALTER TABLE schedules ADD COLUMN closed_window REAL;
