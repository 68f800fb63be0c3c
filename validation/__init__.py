"""Validation of hdpbn: agreement with references, calibration and the paper's experiments."""
