"""JAX references for tests/conformance/test_against_jax*.py: `jax_run(fn, *args)`, fn
jitted once and compiled with XLA's cheapest settings.

JAX's eager mode compiles every primitive for every new shape (a Hessian of a small
function: 1-3 s, nearly all of it compilation); one jitted function per case compiled
without optimizations is several times faster, and compilation, not running, is still
most of JAX's time. The test modules import this after `pytest.importorskip("jax")`.
"""
import jax
import numpy as np

_FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True,
                 "xla_cpu_use_fusion_emitters": False, "xla_cpu_parallel_codegen_split_count": 1}


def jax_run(fn, *args):
    """jax.jit(fn)(*args) as NumPy arrays, compiled with _FAST_COMPILE where the installed
    XLA knows those options."""
    lowered = jax.jit(fn).lower(*args)
    try:
        compiled = lowered.compile(_FAST_COMPILE)
    except Exception:  # noqa: BLE001  (an XLA without one of the options)
        compiled = lowered.compile()
    return jax.tree_util.tree_map(np.asarray, compiled(*args))
