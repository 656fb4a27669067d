"""Logger destinations of a run (besides Composer's own)."""
