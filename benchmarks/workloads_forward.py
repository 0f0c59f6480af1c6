"""The forward-mode workloads of issue 11, in the format of workloads.py.

9  tall Jacobian R^8 -> R^4000, tanh(A p) * sin(B p): few inputs, many outputs
10 ODE sensitivity: RK4 Lotka-Volterra, 100 steps, d(trajectory of 200 values)/d(4 params)
11 HVP of a logistic loss, d = 2000, n = 5000
12 Hessian of an MLP loss, 240 weights

`vecjac` is vecjac's default call for the task (vj.jacobian, mode "auto", for 9 and 10);
`vecjac_fwd` / `vecjac_rev` force a mode where both apply. `numpy` is hand-written
NumPy (the analytic Jacobian, or hand-coded forward sensitivities).
"""
import numpy as np

import vecjac as vj
from workloads import Workload, _autograd, _jax, _torch, _try  # noqa: F401


# 9 ------------------------------------------------------------------------------------
class TallJacobian(Workload):
    name = "9 tall J R^8->R^4000"

    def __init__(self, rng, m=4000, n=8):
        self.A = rng.standard_normal((m, n)) / np.sqrt(n)
        self.B = rng.standard_normal((m, n)) / np.sqrt(n)
        self.p = rng.standard_normal(n)
        A, B = vj.constant(self.A), vj.constant(self.B)
        self.f = lambda p: vj.tanh(A @ p) * vj.sin(B @ p)
        self.jac = vj.jacobian(self.f)
        self.jac_fwd = vj.jacfwd(self.f)

    def vecjac(self):
        return lambda: self.jac(self.p).numpy()

    def vecjac_fwd(self):
        return lambda: self.jac_fwd(self.p).numpy()

    def vjf(self):
        return self.jac, (self.p,)

    def numpy(self):
        def f():
            u, v = self.A @ self.p, self.B @ self.p
            t, s = np.tanh(u), np.sin(v)
            return ((1 - t * t) * s)[:, None] * self.A + (t * np.cos(v))[:, None] * self.B
        return f

    def jax(self, jit=False):
        jax = _jax()
        jnp = jax.numpy
        A, B = jnp.asarray(self.A), jnp.asarray(self.B)
        g = jax.jacfwd(lambda p: jnp.tanh(A @ p) * jnp.sin(B @ p))
        g = jax.jit(g) if jit else g
        return lambda: np.asarray(g(self.p))

    def torch_func(self):
        torch = _torch()
        A, B = torch.tensor(self.A), torch.tensor(self.B)
        g = torch.func.jacfwd(lambda p: torch.tanh(A @ p) * torch.sin(B @ p))
        return lambda: g(torch.tensor(self.p)).numpy()


# 10 -----------------------------------------------------------------------------------
class OdeSensitivity(Workload):
    """Lotka-Volterra x' = a x - b x y, y' = c x y - d y, RK4 with dt = 0.05."""
    name = "10 ODE sens. RK4 100 steps"

    def __init__(self, rng, steps=100, dt=0.05):
        self.p = np.array([1.1, 0.4, 0.1, 0.4])
        self.y0 = np.array([10.0, 5.0])
        self.steps, self.dt = steps, dt
        self.jac = vj.jacobian(self.trajectory)
        self.jac_fwd = vj.jacfwd(self.trajectory)

    def trajectory(self, p, np_=vj, stack=None):
        """The trajectory (steps, 2) as a user writes it: one RK4 step at a time."""
        stack = stack or vj.stack
        a, b, c, d = p[0], p[1], p[2], p[3]

        def rhs(y):
            x, z = y[0], y[1]
            return stack([a * x - b * x * z, c * x * z - d * z])
        y, dt, out = self.y0, self.dt, []
        for _ in range(self.steps):
            k1 = rhs(y)
            k2 = rhs(y + dt / 2 * k1)
            k3 = rhs(y + dt / 2 * k2)
            k4 = rhs(y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            out.append(y)
        return stack(out)

    def vecjac(self):
        return lambda: self.jac(self.p).numpy()

    def vecjac_fwd(self):
        return lambda: self.jac_fwd(self.p).numpy()

    def vjf(self):
        return self.jac, (self.p,)

    def numpy(self):
        """Hand-coded forward sensitivities: RK4 on (y, dy/dp) together."""
        def rhs(y, s, p):
            a, b, c, d = p
            x, z = y
            f = np.array([a * x - b * x * z, c * x * z - d * z])
            fy = np.array([[a - b * z, -b * x], [c * z, c * x - d]])
            fp = np.array([[x, -x * z, 0.0, 0.0], [0.0, 0.0, x * z, -z]])
            return f, fy @ s + fp

        def run():
            y, s, dt, out = self.y0.copy(), np.zeros((2, 4)), self.dt, []
            for _ in range(self.steps):
                k1, l1 = rhs(y, s, self.p)
                k2, l2 = rhs(y + dt / 2 * k1, s + dt / 2 * l1, self.p)
                k3, l3 = rhs(y + dt / 2 * k2, s + dt / 2 * l2, self.p)
                k4, l4 = rhs(y + dt * k3, s + dt * l3, self.p)
                y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
                s = s + dt / 6 * (l1 + 2 * l2 + 2 * l3 + l4)
                out.append(s)
            return np.stack(out)
        return run

    def jax(self, jit=False):
        jax = _jax()
        jnp = jax.numpy
        if not jit:
            g = jax.jacfwd(lambda p: self.trajectory(p, jnp, jnp.stack))
            return lambda: np.asarray(g(self.p))
        dt = self.dt

        def step(y, p):
            a, b, c, d = p

            def rhs(y):
                return jnp.stack([a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]])
            k1 = rhs(y)
            k2 = rhs(y + dt / 2 * k1)
            k3 = rhs(y + dt / 2 * k2)
            k4 = rhs(y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y, y

        def traj(p):
            return jax.lax.scan(lambda y, _: step(y, p), jnp.asarray(self.y0), None,
                                length=self.steps)[1]
        g = jax.jit(jax.jacfwd(traj))
        return lambda: np.asarray(g(self.p))

    def torch_func(self):
        torch = _torch()
        y0 = torch.tensor(self.y0)
        g = torch.func.jacfwd(lambda p: self._torch_traj(torch, p, y0))
        return lambda: g(torch.tensor(self.p)).numpy()

    def _torch_traj(self, torch, p, y0):
        a, b, c, d = p[0], p[1], p[2], p[3]

        def rhs(y):
            return torch.stack([a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]])
        y, dt, out = y0, self.dt, []
        for _ in range(self.steps):
            k1 = rhs(y)
            k2 = rhs(y + dt / 2 * k1)
            k3 = rhs(y + dt / 2 * k2)
            k4 = rhs(y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            out.append(y)
        return torch.stack(out)


# 11 -----------------------------------------------------------------------------------
class LogisticHvp(Workload):
    name = "11 HVP logistic d=2000"

    def __init__(self, rng, n=5000, d=2000):
        self.a = rng.standard_normal((n, d)) / np.sqrt(d)
        self.y = (rng.random(n) < 0.5).astype(float)
        self.w = rng.standard_normal(d) * 0.1
        self.v = rng.standard_normal(d)
        a, y = vj.constant(self.a), vj.constant(self.y)

        def loss(w):
            z = a @ w
            return vj.reduce_mean(vj.nn.softplus(z) - y * z)
        self.loss = loss

    def vecjac(self):
        return lambda: vj.hvp(self.loss, self.w, self.v).numpy()

    def vjf(self):
        return (lambda w, v: vj.hvp(self.loss, w, v)), (self.w, self.v)

    def numpy(self):
        def f():
            s = 1 / (1 + np.exp(-(self.a @ self.w)))
            return self.a.T @ (s * (1 - s) * (self.a @ self.v)) / len(s)
        return f

    def jax(self, jit=False):
        jax = _jax()
        jnp = jax.numpy
        a, y = jnp.asarray(self.a), jnp.asarray(self.y)

        def loss(w):
            z = a @ w
            return jnp.mean(jax.nn.softplus(z) - y * z)

        def hvp(w, v):
            return jax.jvp(jax.grad(loss), (w,), (v,))[1]
        hvp = jax.jit(hvp) if jit else hvp
        return lambda: np.asarray(hvp(self.w, self.v))

    def torch_func(self):
        torch = _torch()
        a, y = torch.tensor(self.a), torch.tensor(self.y)

        def loss(w):
            z = a @ w
            return torch.mean(torch.nn.functional.softplus(z) - y * z)
        w, v = torch.tensor(self.w), torch.tensor(self.v)
        return lambda: torch.func.jvp(torch.func.grad(loss), (w,), (v,))[1].numpy()


# 12 -----------------------------------------------------------------------------------
class MlpHessian(Workload):
    """Loss of a 4 -> 16 -> 8 -> 1 tanh MLP (80 + 136 + 24 = 240 weights, flat vector)."""
    name = "12 MLP Hessian 240 w"

    def __init__(self, rng, batch=64):
        self.x = rng.standard_normal((batch, 4))
        self.t = rng.standard_normal((batch, 1))
        self.w = rng.standard_normal(240) * 0.3
        x, t = vj.constant(self.x), vj.constant(self.t)
        self.hess = vj.hessian(lambda w: self.loss(w, x, t, vj))

    @staticmethod
    def loss(w, x, t, np_):
        w1, b1 = np_.reshape(w[:64], (4, 16)), w[64:80]
        w2, b2 = np_.reshape(w[80:208], (16, 8)), w[208:216]
        w3, b3 = np_.reshape(w[216:224], (8, 1)), w[224:225]
        h = np_.tanh(x @ w1 + b1)
        h = np_.tanh(h @ w2 + b2)
        y = h @ w3 + b3
        return np_.reduce_sum((y - t) ** 2) / len(t) + 1e-3 * np_.reduce_sum(w[225:] ** 2)

    def vecjac(self):
        return lambda: self.hess(self.w).numpy()

    def vjf(self):
        return self.hess, (self.w,)

    def jax(self, jit=False):
        jax = _jax()
        jnp = jax.numpy

        class np_:
            reshape, tanh = jnp.reshape, jnp.tanh
            reduce_sum = jnp.sum
        x, t = jnp.asarray(self.x), jnp.asarray(self.t)
        h = jax.hessian(lambda w: self.loss(w, x, t, np_))
        h = jax.jit(h) if jit else h
        return lambda: np.asarray(h(self.w))

    def torch_func(self):
        torch = _torch()

        class np_:
            reshape, tanh = torch.reshape, torch.tanh
            reduce_sum = torch.sum
        x, t = torch.tensor(self.x), torch.tensor(self.t)
        h = torch.func.hessian(lambda w: self.loss(w, x, t, np_))
        return lambda: h(torch.tensor(self.w)).numpy()


def forward_workloads(rng):
    return [TallJacobian(rng), OdeSensitivity(rng), LogisticHvp(rng), MlpHessian(rng)]
