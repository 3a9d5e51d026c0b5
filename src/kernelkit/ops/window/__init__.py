"""Sliding-window ops: 2-D filters, Gaussian blur, Sobel, box and median filters, pooling, depthwise convolution."""
