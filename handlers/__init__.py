"""handlers package."""
