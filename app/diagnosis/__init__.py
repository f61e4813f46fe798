"""Why is a sync slow: cheap kernel reads, pure rules with their thresholds, hysteresis."""
