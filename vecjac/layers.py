"""Keras-like layers: Dense, BatchNormalization, Sequential (enough for the guides).

The implementation and its notes: vecjac/_src/api/layers.py."""
from vecjac._src.api.layers import BatchNormalization, Dense, Layer, Sequential  # noqa: F401

__all__ = ['Layer', 'Dense', 'BatchNormalization', 'Sequential']
