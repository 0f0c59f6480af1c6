"""Errors name the function the user called (issue 25, item 11): vj.hessian's MemoryError
says "hessian", not the "jacobian" it is built from; a 0-d Tensor refuses iteration at
once (as NumPy's 0-d arrays do: isinstance(x, Iterable) is True for both, since Python's
check reads the class)."""
import numpy as np
import pytest

import vecjac as vj


@pytest.mark.parametrize("name,make", [
    ("hessian", lambda: vj.hessian(lambda x: vj.reduce_sum(x ** 3))),
    ("jacrev", lambda: vj.jacrev(lambda x: x * 2.0)),
    ("jacobian", lambda: vj.jacobian(lambda x: x * 2.0, mode="rev")),
])
def test_a_result_that_cannot_fit_names_the_function(name, make):
    # 400,000^2 float64 values are 1.2 TB: refused before any work
    with pytest.raises(MemoryError, match=rf"^{name}: the dense result has shape"):
        make()(np.zeros(400_000))


def test_iterating_a_scalar_tensor_fails_at_once():
    with pytest.raises(TypeError, match="scalar"):
        iter(vj.constant(1.0))


@pytest.mark.parametrize("transform,name", [(vj.jacobian, "jacobian"), (vj.jacfwd, "jacfwd"),
                                            (vj.jacrev, "jacrev"), (vj.hessian, "hessian"),
                                            (vj.grad, "grad"), (vj.batch_jacobian,
                                                                "batch_jacobian")])
def test_transformed_functions_are_named_after_what_they_compute(transform, name):
    def residual(x):
        return vj.reduce_sum(x * x)
    assert f"<function {name}(residual) at" in repr(transform(residual))


def test_progress_without_tqdm_says_so(monkeypatch):
    from vecjac._src.core import progress
    monkeypatch.setattr(progress, "_tqdm", lambda: None)
    vj.set_memory_budget(2 ** 16)  # chunks, so that a bar would be shown
    try:
        with pytest.warns(RuntimeWarning, match="pip install tqdm"):
            vj.jacobian(lambda x: vj.tanh(x) * 2.0, mode="rev", progress=True)(np.ones(300))
    finally:
        vj.set_memory_budget(None)
