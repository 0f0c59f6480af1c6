"""Jacobians as Dask arrays: row blocks (or batch chunks) are tasks of a Dask graph, and
each task runs vecjac's own pfor over its block (issue 14; ARCHITECTURE.md 6).

The implementation and its notes: vecjac/_src/api/dask.py."""
from vecjac._src.api.dask import ROW_BLOCK_BYTES, batch_jacobian, jacobian  # noqa: F401

__all__ = ['jacobian', 'batch_jacobian', 'ROW_BLOCK_BYTES']
