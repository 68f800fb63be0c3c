"""The bottom layer: checks and conversions every other folder shares (imports no other folder)."""
