"""Rearrangements: ops that move elements without changing them (transpose, permute)."""
