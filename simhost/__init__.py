"""simhost package."""
