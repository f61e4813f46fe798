"""A tuning session: apply a plan, revert it, end it by itself (policy), resume it at start-up."""
