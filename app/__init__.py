"""mdboost: watch, forecast and safely speed up Linux md RAID rebuilds and reshapes."""
