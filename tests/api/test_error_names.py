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
