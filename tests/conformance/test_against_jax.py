"""Differential checks against JAX in float64: Jacobians and Hessians of the same
functions written once with vecjac and once with jax.numpy. Skipped where JAX is not
installed (it is not a dependency; `pip install -e ".[peers]"` installs it, as CI does).
JAX's side is one jitted function per case (jax_support.jax_run): in eager mode JAX
compiles every primitive anew, 1-3 s per Hessian, most of this file's time."""
import numpy as np
import pytest

import vecjac as vj

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
from tests.conformance.jax_support import jax_run  # noqa: E402  (needs jax)
jnp = jax.numpy

RNG = np.random.default_rng(3)
X = RNG.standard_normal(6)
M = RNG.standard_normal((6, 6)) / 3 + 2 * np.eye(6)

# name: (vecjac function, jax function, input)
CASES = {
    "softmax": (lambda x: vj.nn.softmax(x * 2.0), lambda x: jax.nn.softmax(x * 2.0), X),
    "log_softmax": (vj.nn.log_softmax, jax.nn.log_softmax, X),
    "logsumexp": (lambda x: vj.reduce_logsumexp(vj.reshape(x, (2, 3)), axis=1),
                  lambda x: jax.scipy.special.logsumexp(x.reshape(2, 3), axis=1), X),
    "cumsum/cumprod": (lambda x: vj.cumsum(x) * vj.cumprod(x * 0.5 + 1.0),
                       lambda x: jnp.cumsum(x) * jnp.cumprod(x * 0.5 + 1.0), X),
    "prod with a zero": (lambda x: vj.reduce_prod(x * vj.constant([1, 1, 0, 1, 1, 1.0])),
                         lambda x: jnp.prod(x * jnp.array([1, 1, 0, 1, 1, 1.0])), X),
    "einsum": (lambda x: vj.einsum("ij,j->i", vj.reshape(x, (2, 3)), x[:3]),
               lambda x: jnp.einsum("ij,j->i", x.reshape(2, 3), x[:3]), X),
    "solve": (lambda x: vj.linalg.solve(M, vj.reshape(x, (6, 1))),
              lambda x: jnp.linalg.solve(M, x.reshape(6, 1)), X),
    "matrix functions": (
        lambda x: vj.linalg.det(M + vj.linalg.diag(x)) * vj.linalg.inv(M + vj.linalg.diag(x)),
        lambda x: jnp.linalg.det(M + jnp.diag(x)) * jnp.linalg.inv(M + jnp.diag(x)), X),
    "cholesky": (lambda x: vj.linalg.cholesky(M @ M.T + vj.linalg.diag(x * x)),
                 lambda x: jnp.linalg.cholesky(M @ M.T + jnp.diag(x * x)), X),
    "slogdet": (lambda x: vj.linalg.slogdet(M + vj.linalg.diag(x))[1],
                lambda x: jnp.linalg.slogdet(M + jnp.diag(x))[1], X),
    "norm": (lambda x: vj.norm(x) * x, lambda x: jnp.linalg.norm(x) * x, X),
    "gather/indexing": (lambda x: vj.gather(x, [5, 0, 0, 3]) * x[1:5] + x[::-1][:4],
                        lambda x: x[jnp.array([5, 0, 0, 3])] * x[1:5] + x[::-1][:4], X),
    "where/maximum": (lambda x: vj.where(x > 0, vj.sin(x), x ** 2) + vj.maximum(x, 0.3),
                      lambda x: jnp.where(x > 0, jnp.sin(x), x ** 2) + jnp.maximum(x, 0.3), X),
    "activations": (lambda x: vj.nn.elu(x) + vj.nn.softplus(x) + vj.nn.gelu(x) + vj.nn.silu(x),
                    lambda x: jax.nn.elu(x) + jax.nn.softplus(x) + jax.nn.gelu(x, approximate=False)
                    + jax.nn.silu(x), X),
    "pad/tile/concat": (lambda x: vj.concat([vj.pad(x, [[1, 2]], mode="REFLECT"),
                                             vj.tile(x[:2], [3])], axis=0) * 1.5,
                        lambda x: jnp.concatenate([jnp.pad(x, (1, 2), mode="reflect"),
                                                   jnp.tile(x[:2], 3)]) * 1.5, X),
    "matmul chain": (lambda x: vj.tanh(M @ vj.tanh(M @ x)),
                     lambda x: jnp.tanh(M @ jnp.tanh(M @ x)), X),
    "Ax + x^3": (lambda x: vj.linalg.matvec(M, x) + x ** 3,
                 lambda x: M @ x + x ** 3, X),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jacobian_matches_jax(name):
    f_vj, f_jax, x = CASES[name]
    ours = vj.jacobian(f_vj)(x).numpy()
    theirs = jax_run(jax.jacrev(f_jax), x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_of_a_scalar_matches_jax(name):
    f_vj, f_jax, x = CASES[name]
    ours = vj.hessian(lambda v: vj.reduce_sum(f_vj(v) ** 2))(x).numpy()
    theirs = jax_run(jax.hessian(lambda v: jnp.sum(f_jax(v) ** 2)), x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)


def test_batch_jacobian_matches_vmap_jacrev():
    w1, w2 = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))
    xs = RNG.standard_normal((7, 4))
    x = vj.constant(xs)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.nn.elu(vj.tanh(x @ w1) @ w2)
    ours = tape.batch_jacobian(y, x).numpy()
    theirs = jax_run(jax.vmap(jax.jacrev(lambda v: jax.nn.elu(jnp.tanh(v @ w1) @ w2))), xs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
