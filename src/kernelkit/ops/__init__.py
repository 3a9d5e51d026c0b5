"""The operator families; importing this registers every ladder."""
from .gelu import gelu

__all__ = ["gelu"]
