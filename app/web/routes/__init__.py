"""Thin routers, one APIRouter per area of the API and the page; none imports another."""
