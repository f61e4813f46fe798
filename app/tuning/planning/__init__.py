"""Plan a preset: the presets (TOML data), where each knob is written, and the plan itself."""
