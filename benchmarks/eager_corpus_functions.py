"""A dozen classic optimization test functions in plain NumPy, for benchmarks/eager_corpus.py
when no SciPy source tree is at hand.

Written here from their published formulas (facts, not code): M. Jamil and X.-S. Yang, "A
literature survey of benchmark functions for global optimization problems", Int. J.
Mathematical Modelling and Numerical Optimisation 4(2), 150-194, 2013 (arXiv:1308.4008),
the survey SciPy's go_benchmark_functions cite too; the function numbers below are that
paper's. The piecewise-constant ones (Step, Step 2, Plateau, Gear) are the corpus's worst
case for eager overhead: every op has a zero derivative.

The code is written as users write it (`import numpy as np`, element indexing, Python
arithmetic), and the runner loads this source three times: with numpy bound to NumPy
(called on vecjac Tensors), to autograd.numpy and to jax.numpy. Each entry of FUNCTIONS:
(name, function of x, lower bound, upper bound, dimension).
"""
import numpy as np


def ackley(x):  # (1) Ackley 1
    n = x.shape[0]
    return (-20.0 * np.exp(-0.2 * np.sqrt(np.sum(x ** 2) / n))
            - np.exp(np.sum(np.cos(2.0 * np.pi * x)) / n) + 20.0 + np.e)


def alpine1(x):  # (6) Alpine 1
    return np.sum(np.abs(x * np.sin(x) + 0.1 * x))


def booth(x):  # (25) Booth
    return (x[0] + 2 * x[1] - 7) ** 2 + (2 * x[0] + x[1] - 5) ** 2


def gear(x):  # (56) Gear: piecewise constant
    return (1.0 / 6.931 - np.floor(x[0]) * np.floor(x[1])
            / (np.floor(x[2]) * np.floor(x[3]))) ** 2


def griewank(x):  # (59) Griewank
    i = np.arange(1.0, x.shape[0] + 1.0)
    return np.sum(x ** 2) / 4000.0 - np.prod(np.cos(x / np.sqrt(i))) + 1.0


def michalewicz(x):  # (Michalewicz, m = 10)
    i = np.arange(1.0, x.shape[0] + 1.0)
    return -np.sum(np.sin(x) * np.sin(i * x ** 2 / np.pi) ** 20)


def plateau(x):  # (Plateau, as SciPy's go_benchmark_functions state it): piecewise constant
    return 30.0 + np.sum(np.floor(np.abs(x)))


def rastrigin(x):  # (Rastrigin)
    return 10.0 * x.shape[0] + np.sum(x ** 2 - 10.0 * np.cos(2.0 * np.pi * x))


def rosenbrock(x):  # (105) Rosenbrock
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (x[:-1] - 1.0) ** 2)


def salomon(x):  # (110) Salomon
    r = np.sqrt(np.sum(x ** 2))
    return 1.0 - np.cos(2.0 * np.pi * r) + 0.1 * r


def six_hump_camel(x):  # (30) Camel, six hump: scalar arithmetic on x[0], x[1]
    a, b = x[0], x[1]
    return (4.0 - 2.1 * a ** 2 + a ** 4 / 3.0) * a ** 2 + a * b + (4.0 * b ** 2 - 4.0) * b ** 2


def step(x):  # (138) Step: piecewise constant
    return np.sum(np.floor(np.abs(x)))


def step2(x):  # (139) Step 2: piecewise constant
    return np.sum((np.floor(x) + 0.5) ** 2)


def styblinski_tang(x):  # (144) Styblinski-Tang
    return 0.5 * np.sum(x ** 4 - 16.0 * x ** 2 + 5.0 * x)


def zakharov(x):  # (172) Zakharov: a Python loop over elements
    s = 0.0
    for k in range(x.shape[0]):
        s = s + 0.5 * (k + 1) * x[k]
    return np.sum(x ** 2) + s ** 2 + s ** 4


FUNCTIONS = [
    ("Ackley", ackley, -32.0, 32.0, 2),
    ("Alpine1", alpine1, -10.0, 10.0, 2),
    ("Booth", booth, -10.0, 10.0, 2),
    ("Gear", gear, 12.0, 60.0, 4),
    ("Griewank", griewank, -100.0, 100.0, 2),
    ("Michalewicz", michalewicz, 0.0, np.pi, 2),
    ("Plateau", plateau, -5.12, 5.12, 2),
    ("Rastrigin", rastrigin, -5.12, 5.12, 2),
    ("Rosenbrock", rosenbrock, -5.0, 10.0, 2),
    ("Salomon", salomon, -100.0, 100.0, 2),
    ("SixHumpCamel", six_hump_camel, -5.0, 5.0, 2),
    ("Step", step, -100.0, 100.0, 2),
    ("Step2", step2, -100.0, 100.0, 2),
    ("StyblinskiTang", styblinski_tang, -5.0, 5.0, 2),
    ("Zakharov", zakharov, -5.0, 10.0, 2),
]
