"""The eight benchmark workloads of issue 5, each as NumPy data plus one function per system.

A workload builds its data once (float64) and exposes `systems()`: a dict name -> a
zero-argument callable returning the result as a NumPy array. Systems whose library is
not installed are left out. `numpy` is the hand-written analytic Jacobian (the floor).
`vecjac_function` is vj.function of the same computation with the differentiated value
as its argument (as jax.jit's), so that nothing is folded into constants: `vjf()` gives
the Python function and its arguments.
"""
import numpy as np

import vecjac as vj


def _try(name):
    try:
        return __import__(name)
    except Exception:
        return None


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _elu_np(z):
    return np.where(z > 0, z, np.expm1(np.minimum(z, 0)))


def _elu_grad_np(z):
    return np.where(z > 0, 1.0, np.exp(np.minimum(z, 0)))


class Workload:
    name = ""

    def systems(self):
        out = {}
        for system in ("vecjac", "vecjac_function", "vecjac_fwd", "vecjac_loop", "numpy",
                       "jax", "jax_jit", "torch_func", "tf_eager", "tf_function", "autograd"):
            builder = getattr(self, system, None)
            if builder is None:
                continue
            try:
                fn = builder()
            except ImportError:
                continue
            if fn is not None:
                out[system] = fn
        return out

    # vecjac: pfor and loop share one builder taking use_pfor
    def vecjac(self):
        return lambda: np.asarray(self.vj(True))

    def vecjac_loop(self):
        return None if not hasattr(self, "vj") else (lambda: np.asarray(self.vj(False)))

    def vecjac_function(self):
        if not hasattr(self, "vjf"):
            return None
        fn, args = self.vjf()
        f = vj.function(fn)
        return lambda: f(*args).numpy()

    # compiled variants of the eager builders: jax(jit=True), tf_eager(function=True)
    def jax_jit(self):
        jax = getattr(self, "jax", None)
        return None if jax is None else jax(jit=True)

    def tf_function(self):
        eager = getattr(self, "tf_eager", None)
        return None if eager is None else eager(function=True)


def _jax():
    jax = _try("jax")
    if jax is None:
        raise ImportError
    jax.config.update("jax_enable_x64", True)
    return jax


def _torch():
    torch = _try("torch")
    if torch is None:
        raise ImportError
    return torch


def _tf():
    tf = _try("tensorflow")
    if tf is None:
        raise ImportError
    return tf


def _autograd():
    ag = _try("autograd")
    if ag is None:
        raise ImportError
    import autograd.numpy as anp
    return ag, anp


# 1 ------------------------------------------------------------------------------------
class SigmoidScalarSource(Workload):
    name = "1 sigmoid(x+d), 201 pts, d/dd"

    def __init__(self, rng):
        self.x = np.linspace(-10.0, 10.0, 201)
        self.d = 0.0

    def vj(self, use_pfor):
        x, d = vj.constant(self.x), vj.Variable(self.d)
        with vj.GradientTape(persistent=not use_pfor) as tape:
            y = vj.nn.sigmoid(x + d)
        return tape.jacobian(y, d, experimental_use_pfor=use_pfor)

    def vjf(self):
        x = vj.constant(self.x)

        def run(d):
            with vj.GradientTape() as tape:
                tape.watch(d)
                y = vj.nn.sigmoid(x + d)
            return tape.jacobian(y, d)
        return run, (np.asarray(self.d),)

    def numpy(self):
        def f():
            s = _sigmoid(self.x + self.d)
            return s * (1 - s)
        return f

    def jax(self, jit=False):
        jax = _jax()
        x = jax.numpy.asarray(self.x)
        g = jax.jacrev(lambda d: jax.nn.sigmoid(x + d))
        g = jax.jit(g) if jit else g
        return lambda: np.asarray(g(self.d))

    def torch_func(self):
        torch = _torch()
        x = torch.tensor(self.x)
        g = torch.func.jacrev(lambda d: torch.sigmoid(x + d))
        return lambda: g(torch.tensor(self.d)).numpy()

    def tf_eager(self, function=False):
        tf = _tf()
        x = tf.constant(self.x)
        d = tf.Variable(self.d, dtype=tf.float64)

        def run():
            with tf.GradientTape() as tape:
                y = tf.nn.sigmoid(x + d)
            return tape.jacobian(y, d)
        run = tf.function(run) if function else run
        return lambda: run().numpy()

    def autograd(self):
        ag, anp = _autograd()
        g = ag.jacobian(lambda d: 1 / (1 + anp.exp(-(self.x + d))))
        return lambda: np.asarray(g(self.d))


# 2 ------------------------------------------------------------------------------------
class DenseReluKernel(Workload):
    name = "2 relu(xW+b) 7x5->10, d/dW"

    def __init__(self, rng):
        self.x = rng.standard_normal((7, 5))
        self.w = rng.standard_normal((5, 10))
        self.b = rng.standard_normal(10) * 0.1

    def vj(self, use_pfor):
        w = vj.Variable(self.w)
        with vj.GradientTape(persistent=not use_pfor) as tape:
            y = vj.nn.relu(vj.constant(self.x) @ w + self.b)
        return tape.jacobian(y, w, experimental_use_pfor=use_pfor)

    def vjf(self):
        x, b = vj.constant(self.x), vj.constant(self.b)

        def run(w):
            with vj.GradientTape() as tape:
                tape.watch(w)
                y = vj.nn.relu(x @ w + b)
            return tape.jacobian(y, w)
        return run, (self.w,)

    def numpy(self):
        def f():
            mask = (self.x @ self.w + self.b) > 0
            return np.einsum("ik,ij,kl->ikjl", mask, self.x, np.eye(10))
        return f

    def jax(self, jit=False):
        jax = _jax()
        g = jax.jacrev(lambda w: jax.nn.relu(self.x @ w + self.b))
        g = jax.jit(g) if jit else g
        return lambda: np.asarray(g(self.w))

    def torch_func(self):
        torch = _torch()
        x, b = torch.tensor(self.x), torch.tensor(self.b)
        g = torch.func.jacrev(lambda w: torch.relu(x @ w + b))
        return lambda: g(torch.tensor(self.w)).numpy()

    def tf_eager(self, function=False):
        tf = _tf()
        x, b = tf.constant(self.x), tf.constant(self.b)
        w = tf.Variable(self.w)

        def run():
            with tf.GradientTape() as tape:
                y = tf.nn.relu(x @ w + b)
            return tape.jacobian(y, w)
        run = tf.function(run) if function else run
        return lambda: run().numpy()

    def autograd(self):
        ag, anp = _autograd()
        g = ag.jacobian(lambda w: anp.maximum(anp.dot(self.x, w) + self.b, 0.0))
        return lambda: np.asarray(g(self.w))


# 3 ------------------------------------------------------------------------------------
class TwoLayerReluHessian(Workload):
    name = "3 Hessian mean(relu MLP^2) W1 5x8"

    def __init__(self, rng):
        self.x = rng.standard_normal((7, 5))
        self.w1 = rng.standard_normal((5, 8)) * 0.5
        self.b1 = rng.standard_normal(8) * 0.1
        self.w2 = rng.standard_normal((8, 6)) * 0.5
        self.b2 = rng.standard_normal(6) * 0.1

    def vj(self, use_pfor):
        w1 = vj.Variable(self.w1)
        with vj.GradientTape(persistent=not use_pfor) as t2:
            with vj.GradientTape() as t1:
                h = vj.nn.relu(vj.nn.relu(vj.constant(self.x) @ w1 + self.b1) @ self.w2 + self.b2)
                loss = vj.reduce_mean(h ** 2)
            g = t1.gradient(loss, w1)
        return t2.jacobian(g, w1, experimental_use_pfor=use_pfor)

    def vjf(self):
        x, b1, w2, b2 = (vj.constant(a) for a in (self.x, self.b1, self.w2, self.b2))

        def run(w1):
            with vj.GradientTape() as t2:
                t2.watch(w1)
                with vj.GradientTape() as t1:
                    t1.watch(w1)
                    h = vj.nn.relu(vj.nn.relu(x @ w1 + b1) @ w2 + b2)
                    loss = vj.reduce_mean(h ** 2)
                g = t1.gradient(loss, w1)
            return t2.jacobian(g, w1)
        return run, (self.w1,)

    def numpy(self):
        def f():
            m1 = (self.x @ self.w1 + self.b1) > 0
            h1 = np.where(m1, self.x @ self.w1 + self.b1, 0)
            m2 = (h1 @ self.w2 + self.b2) > 0
            n = m2.size
            return (2 / n) * np.einsum("ij,il,ip,iq,ik,pk,qk->jplq", self.x, self.x, m1, m1,
                                       m2, self.w2, self.w2, optimize=True)
        return f

    def _loss(self, np_, relu):
        return lambda w1: np_.mean(relu(relu(self.x @ w1 + self.b1) @ self.w2 + self.b2) ** 2)

    def jax(self, jit=False):
        jax = _jax()
        h = jax.hessian(self._loss(jax.numpy, jax.nn.relu))
        h = jax.jit(h) if jit else h
        return lambda: np.asarray(h(self.w1))

    def torch_func(self):
        torch = _torch()
        x, b1, w2, b2 = (torch.tensor(a) for a in (self.x, self.b1, self.w2, self.b2))
        h = torch.func.hessian(lambda w1: torch.mean(torch.relu(torch.relu(x @ w1 + b1) @ w2 + b2) ** 2))
        return lambda: h(torch.tensor(self.w1)).numpy()

    def tf_eager(self, function=False):
        tf = _tf()
        x, b1, w2, b2 = (tf.constant(a) for a in (self.x, self.b1, self.w2, self.b2))
        w1 = tf.Variable(self.w1)

        def run():
            with tf.GradientTape() as t2:
                with tf.GradientTape() as t1:
                    loss = tf.reduce_mean(tf.nn.relu(tf.nn.relu(x @ w1 + b1) @ w2 + b2) ** 2)
                g = t1.gradient(loss, w1)
            return t2.jacobian(g, w1)
        run = tf.function(run) if function else run
        return lambda: run().numpy()

    def autograd(self):
        ag, anp = _autograd()
        h = ag.hessian(lambda w1: anp.mean(anp.maximum(anp.dot(anp.maximum(
            anp.dot(self.x, w1) + self.b1, 0.0), self.w2) + self.b2, 0.0) ** 2))
        return lambda: np.asarray(h(self.w1))


# 4, 5 ---------------------------------------------------------------------------------
class EluBatchJacobian(Workload):
    def __init__(self, rng, batch, sizes):
        self.name = f"{4 if batch < 100 else 5} batch_jacobian elu {batch}x{sizes[0]}->{sizes[1]}->{sizes[2]}"
        self.x = rng.standard_normal((batch, sizes[0]))
        self.w1 = rng.standard_normal(sizes[:2]) / np.sqrt(sizes[0])
        self.b1 = rng.standard_normal(sizes[1]) * 0.1
        self.w2 = rng.standard_normal(sizes[1:]) / np.sqrt(sizes[1])
        self.b2 = rng.standard_normal(sizes[2]) * 0.1

    def vj(self, use_pfor):
        x = vj.constant(self.x)
        with vj.GradientTape(persistent=not use_pfor) as tape:
            tape.watch(x)
            y = vj.nn.elu(vj.nn.elu(x @ self.w1 + self.b1) @ self.w2 + self.b2)
        return tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor)

    def vjf(self):
        w1, b1, w2, b2 = (vj.constant(a) for a in (self.w1, self.b1, self.w2, self.b2))

        def run(x):
            with vj.GradientTape() as tape:
                tape.watch(x)
                y = vj.nn.elu(vj.nn.elu(x @ w1 + b1) @ w2 + b2)
            return tape.batch_jacobian(y, x)
        return run, (self.x,)

    def numpy(self):
        def f():
            z1 = self.x @ self.w1 + self.b1
            z2 = _elu_np(z1) @ self.w2 + self.b2
            return np.einsum("bk,jk,bj,ij->bki", _elu_grad_np(z2), self.w2, _elu_grad_np(z1),
                             self.w1, optimize=True)
        return f

    def jax(self, jit=False):
        jax = _jax()
        jnp = jax.numpy
        single = lambda x: jax.nn.elu(jax.nn.elu(x @ self.w1 + self.b1) @ self.w2 + self.b2)  # noqa: E731
        g = jax.vmap(jax.jacrev(single))
        g = jax.jit(g) if jit else g
        return lambda: np.asarray(g(jnp.asarray(self.x)))

    def torch_func(self):
        torch = _torch()
        w1, b1, w2, b2 = (torch.tensor(a) for a in (self.w1, self.b1, self.w2, self.b2))
        elu = torch.nn.functional.elu
        g = torch.func.vmap(torch.func.jacrev(lambda x: elu(elu(x @ w1 + b1) @ w2 + b2)))
        return lambda: g(torch.tensor(self.x)).numpy()

    def tf_eager(self, function=False):
        tf = _tf()
        x = tf.constant(self.x)
        w1, b1, w2, b2 = (tf.constant(a) for a in (self.w1, self.b1, self.w2, self.b2))

        def run():
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.nn.elu(tf.nn.elu(x @ w1 + b1) @ w2 + b2)
            return tape.batch_jacobian(y, x)
        run = tf.function(run) if function else run
        return lambda: run().numpy()

    def autograd(self):
        ag, anp = _autograd()

        def elu(z):
            return anp.where(z > 0, z, anp.exp(anp.minimum(z, 0)) - 1)

        # no vmap in autograd: the full Jacobian, then its per-example diagonal
        g = ag.jacobian(lambda x: elu(anp.dot(elu(anp.dot(x, self.w1) + self.b1), self.w2) + self.b2))
        return lambda: np.einsum("bxby->bxy", g(self.x))


# 6 ------------------------------------------------------------------------------------
class TanhMLP(Workload):
    name = "6 J tanh(W2 tanh(W1 x)) 512"

    def __init__(self, rng, n=512):
        self.x = rng.standard_normal(n)
        self.w1 = rng.standard_normal((n, n)) / np.sqrt(n)
        self.w2 = rng.standard_normal((n, n)) / np.sqrt(n)

    def vj(self, use_pfor):
        x = vj.constant(self.x)
        with vj.GradientTape(persistent=not use_pfor) as tape:
            tape.watch(x)
            y = vj.tanh(vj.linalg.matvec(self.w2, vj.tanh(vj.linalg.matvec(self.w1, x))))
        return tape.jacobian(y, x, experimental_use_pfor=use_pfor)

    def vjf(self):
        w1, w2 = vj.constant(self.w1), vj.constant(self.w2)

        def run(x):
            with vj.GradientTape() as tape:
                tape.watch(x)
                y = vj.tanh(vj.linalg.matvec(w2, vj.tanh(vj.linalg.matvec(w1, x))))
            return tape.jacobian(y, x)
        return run, (self.x,)

    def numpy(self):
        def f():
            h = np.tanh(self.w1 @ self.x)
            y = np.tanh(self.w2 @ h)
            return ((1 - y * y)[:, None] * self.w2) @ ((1 - h * h)[:, None] * self.w1)
        return f

    def jax(self, jit=False):
        jax = _jax()
        jnp = jax.numpy
        g = jax.jacrev(lambda x: jnp.tanh(self.w2 @ jnp.tanh(self.w1 @ x)))
        g = jax.jit(g) if jit else g
        return lambda: np.asarray(g(self.x))

    def torch_func(self):
        torch = _torch()
        w1, w2 = torch.tensor(self.w1), torch.tensor(self.w2)
        g = torch.func.jacrev(lambda x: torch.tanh(w2 @ torch.tanh(w1 @ x)))
        return lambda: g(torch.tensor(self.x)).numpy()

    def tf_eager(self, function=False):
        tf = _tf()
        w1, w2 = tf.constant(self.w1), tf.constant(self.w2)
        x = tf.constant(self.x)

        def run():
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.tanh(tf.linalg.matvec(w2, tf.tanh(tf.linalg.matvec(w1, x))))
            return tape.jacobian(y, x)
        run = tf.function(run) if function else run
        return lambda: run().numpy()

    def autograd(self):
        ag, anp = _autograd()
        g = ag.jacobian(lambda x: anp.tanh(anp.dot(self.w2, anp.tanh(anp.dot(self.w1, x)))))
        return lambda: np.asarray(g(self.x))


# 7 ------------------------------------------------------------------------------------
class LogisticHessian(Workload):
    name = "7 Hessian logistic 1000x200"

    def __init__(self, rng, n=1000, d=200):
        self.a = rng.standard_normal((n, d))
        self.y = (rng.random(n) < 0.5).astype(float)
        self.w = rng.standard_normal(d) * 0.1

    def vj(self, use_pfor):
        w = vj.Variable(self.w)
        with vj.GradientTape(persistent=not use_pfor) as t2:
            with vj.GradientTape() as t1:
                logits = vj.linalg.matvec(self.a, w)
                loss = vj.reduce_mean(vj.nn.sigmoid_cross_entropy_with_logits(
                    labels=self.y, logits=logits))
            g = t1.gradient(loss, w)
        return t2.jacobian(g, w, experimental_use_pfor=use_pfor)

    def vjf(self):
        a, y = vj.constant(self.a), vj.constant(self.y)

        def run(w):
            with vj.GradientTape() as t2:
                t2.watch(w)
                with vj.GradientTape() as t1:
                    t1.watch(w)
                    loss = vj.reduce_mean(vj.nn.sigmoid_cross_entropy_with_logits(
                        labels=y, logits=vj.linalg.matvec(a, w)))
                g = t1.gradient(loss, w)
            return t2.jacobian(g, w)
        return run, (self.w,)

    def numpy(self):
        def f():
            s = _sigmoid(self.a @ self.w)
            return (self.a.T * (s * (1 - s) / len(s))) @ self.a
        return f

    def _loss(self, np_, log1p_exp):
        def loss(w):
            z = self.a @ w
            return np_.mean(log1p_exp(z) - self.y * z)
        return loss

    def jax(self, jit=False):
        jax = _jax()
        h = jax.hessian(self._loss(jax.numpy, lambda z: jax.numpy.logaddexp(0.0, z)))
        h = jax.jit(h) if jit else h
        return lambda: np.asarray(h(self.w))

    def torch_func(self):
        torch = _torch()
        a, y = torch.tensor(self.a), torch.tensor(self.y)
        h = torch.func.hessian(lambda w: torch.nn.functional.binary_cross_entropy_with_logits(a @ w, y))
        return lambda: h(torch.tensor(self.w)).numpy()

    def tf_eager(self, function=False):
        tf = _tf()
        a, y = tf.constant(self.a), tf.constant(self.y)
        w = tf.Variable(self.w)

        def run():
            with tf.GradientTape() as t2:
                with tf.GradientTape() as t1:
                    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                        labels=y, logits=tf.linalg.matvec(a, w)))
                g = t1.gradient(loss, w)
            return t2.jacobian(g, w)
        run = tf.function(run) if function else run
        return lambda: run().numpy()

    def autograd(self):
        ag, anp = _autograd()
        h = ag.hessian(self._loss(anp, lambda z: anp.logaddexp(0.0, z)))
        return lambda: np.asarray(h(self.w))


# 8 ------------------------------------------------------------------------------------
class NewtonSystem(Workload):
    name = "8 J of Ax+x^3-b, n=1000"

    def __init__(self, rng, n=1000):
        self.A = (np.diag(np.full(n, 4.0)) + np.diag(np.full(n - 1, -1.0), 1)
                  + np.diag(np.full(n - 1, -1.0), -1))
        self.b = rng.standard_normal(n)
        self.x = rng.standard_normal(n)

    def vj(self, use_pfor):
        x = vj.constant(self.x)
        with vj.GradientTape(persistent=not use_pfor) as tape:
            tape.watch(x)
            r = vj.linalg.matvec(self.A, x) + x ** 3 - self.b
        return tape.jacobian(r, x, experimental_use_pfor=use_pfor)

    def vjf(self):
        A, b = vj.constant(self.A), vj.constant(self.b)

        def run(x):
            with vj.GradientTape() as tape:
                tape.watch(x)
                r = vj.linalg.matvec(A, x) + x ** 3 - b
            return tape.jacobian(r, x)
        return run, (self.x,)

    def numpy(self):
        def f():
            j = self.A.copy()
            j[np.diag_indices_from(j)] += 3 * self.x ** 2
            return j
        return f

    def jax(self, jit=False):
        jax = _jax()
        g = jax.jacrev(lambda x: self.A @ x + x ** 3 - self.b)
        g = jax.jit(g) if jit else g
        return lambda: np.asarray(g(self.x))

    def torch_func(self):
        torch = _torch()
        A, b = torch.tensor(self.A), torch.tensor(self.b)
        g = torch.func.jacrev(lambda x: A @ x + x ** 3 - b)
        return lambda: g(torch.tensor(self.x)).numpy()

    def tf_eager(self, function=False):
        tf = _tf()
        A, b, x = tf.constant(self.A), tf.constant(self.b), tf.constant(self.x)

        def run():
            with tf.GradientTape() as tape:
                tape.watch(x)
                r = tf.linalg.matvec(A, x) + x ** 3 - b
            return tape.jacobian(r, x)
        run = tf.function(run) if function else run
        return lambda: run().numpy()

    def autograd(self):
        ag, anp = _autograd()
        g = ag.jacobian(lambda x: anp.dot(self.A, x) + x ** 3 - self.b)
        return lambda: np.asarray(g(self.x))


def all_workloads(rng):
    return [SigmoidScalarSource(rng), DenseReluKernel(rng), TwoLayerReluHessian(rng),
            EluBatchJacobian(rng, 7, (5, 8, 6)), EluBatchJacobian(rng, 256, (32, 64, 16)),
            TanhMLP(rng), LogisticHessian(rng), NewtonSystem(rng)]
