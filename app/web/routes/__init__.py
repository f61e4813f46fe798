"""Thin routers, one per area of the API and the page; none imports another."""
