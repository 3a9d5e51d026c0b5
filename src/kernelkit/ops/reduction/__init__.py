"""Reductions: whole-tensor and along-a-dim reductions, and the row ops (softmax, layer_norm, rms_norm)."""
