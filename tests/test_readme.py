"""The README's Python examples run and give what they say (shapes, values)."""
import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_examples_run_and_shapes_hold():
    namespace = {}
    blocks = _blocks()
    assert len(blocks) >= 2
    exec(compile(blocks[0], "README block 1", "exec"), namespace)
    assert namespace["grad"].shape == (5, 3) and namespace["jac"].shape == (4, 3, 5, 3)
    # the Jacobian summed over the target is the gradient of the sum (an independent check)
    y, w = namespace["y"], namespace["w"]
    with namespace["vj"].GradientTape() as tape:
        s = namespace["vj"].reduce_sum(namespace["vj"].tanh(namespace["x"] @ w))
    np.testing.assert_allclose(namespace["jac"].numpy().sum(axis=(0, 1)),
                               tape.gradient(s, w).numpy(), rtol=1e-12)
    assert y.shape == (4, 3)
    exec(compile(blocks[1], "README block 2", "exec"), namespace)
    a = np.ones((4, 5))
    w0 = namespace["w0"]
    np.testing.assert_allclose(namespace["g"].numpy(), 2 * a.T @ (a @ w0), rtol=1e-12)
    np.testing.assert_allclose(namespace["h"].numpy(), 2 * a.T @ a, rtol=1e-12)
    np.testing.assert_allclose(namespace["hv"].numpy(), 2 * a.T @ a @ np.ones(5), rtol=1e-12)
    exec(compile(blocks[2], "README block 3", "exec"), namespace)
    p = np.array([0.7, 1.0])
    np.testing.assert_allclose(namespace["j2"].numpy(), [[np.cos(p[0]) * p[1], np.sin(p[0])],
                                                         [0.0, 2 * p[1]]], rtol=1e-12)
    assert namespace["jac"].experimental_get_tracing_count() == 1


def test_readme_fft_example():
    """The FFTs section's example: the gradient against central differences."""
    block = next(b for b in _blocks() if "def smoothness" in b)
    namespace = {}
    exec(compile(block, "README FFTs block", "exec"), namespace)
    u, g, f = namespace["u"], namespace["g"].numpy(), namespace["smoothness"]
    assert g.shape == (64, 64) and g.dtype == np.float64
    for k in [(0, 0), (3, 17), (63, 40)]:
        e = np.zeros_like(u)
        e[k] = 1e-6
        fd = (f(namespace["vj"].constant(u + e)).numpy()
              - f(namespace["vj"].constant(u - e)).numpy()) / 2e-6
        np.testing.assert_allclose(g[k], fd, rtol=1e-6, atol=1e-9)


def test_readme_indexed_update_example():
    """The `x.at[idx]` section's right-hand side: its Jacobian against the closed form,
    and the values against the NumPy in-place code it was ported from."""
    block = next(b for b in _blocks() if ".at[" in b)
    namespace = {}
    exec(compile(block, "README x.at block", "exec"), namespace)
    k = 0.5
    np.testing.assert_allclose(namespace["J"].numpy(), [[-k, 0, 0], [k, -k, 0], [0, k, -k]],
                               rtol=1e-15)
    y = np.array([0.3, -1.0, 2.0])
    f = np.zeros_like(y)
    f[0] = -k * y[0]
    f[1:] = k * y[:-1]
    f[1:] -= k * y[1:]
    np.testing.assert_array_equal(namespace["rhs"](0.0, namespace["vj"].constant(y)).numpy(), f)
