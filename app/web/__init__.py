"""The web layer: dependencies, security, templating, view models and thin routers."""
