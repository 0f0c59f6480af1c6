"""The layering of ARCHITECTURE.md section 1, and the public surface, as tests.

- every module of vecjac/_src/ lies in a layer folder, and imports only its own layer and
  the layers below (core < transforms < ops < composites < api, numpy); the facades at the
  top of vecjac/ import from vecjac/_src/, and nothing in vecjac/_src/ imports a facade;
- no import cycle, and no import inside a function (the way cycles used to be dodged);
- late binding through the registry's `lib` only where an import cannot be: the name's
  module is in a higher layer, or importing it would close a cycle. The graph of imports
  plus `lib` references has exactly the cycles pinned below (mutually recursive rules);
  a new one fails;
- dir(vj), vj.math, vj.nn, vj.linalg, vj.signal, vj.autodiff, vj.debugging are pinned: a name added
  or removed here is a decision, not an accident.
"""
import ast
import importlib.util
import pathlib

import pytest

import vecjac as vj
from vecjac._src.core.registry import lib

ROOT = pathlib.Path(vj.__file__).parent
LAYERS = {"core": 0, "transforms": 1, "ops": 2, "composites": 3, "api": 4, "numpy": 4}
FACADE = 5
# modules of vecjac/_src/ outside a layer folder, and the layer they belong to
LOOSE = {"vecjac._src": 0, "vecjac._src.all_ops": LAYERS["composites"]}


def _module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
TREES = {m: ast.parse(p.read_text()) for m, p in MODULES.items()}


def layer(module):
    parts = module.split(".")
    if parts[:2] != ["vecjac", "_src"]:
        return FACADE
    if module in LOOSE:
        return LOOSE[module]
    return LAYERS.get(parts[2])


def _imports(tree):
    deps = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError("relative import: vecjac imports by absolute names")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vecjac"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                deps.add(sub if sub in MODULES else node.module)
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name.startswith("vecjac")}
    return deps


GRAPH = {m: _imports(t) - {m} for m, t in TREES.items()}


def _lib_references(tree):
    """(name, line) of every `lib.<name>` in a module."""
    return [(n.attr, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "lib"
            and n.attr not in ("publish", "apply")]


def _defining_module(name):
    obj = getattr(lib, name)
    if hasattr(obj, "forward") and not isinstance(obj, type):  # an op block (an instance)
        return type(obj).__module__
    return getattr(obj, "__module__", None)


def _reaches(graph, a, b):
    seen, todo = {a}, [a]
    while todo:
        for d in graph.get(todo.pop(), ()):
            if d == b:
                return True
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return False


def test_every_module_of_src_lies_in_a_layer():
    loose = [m for m in MODULES if layer(m) is None]
    assert not loose, f"modules outside the layer folders {sorted(LAYERS)}: {loose}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) != FACADE))
def test_imports_point_down(module):
    up = {d for d in GRAPH[module] if layer(d) > layer(module)}
    assert not up, f"{module} (layer {layer(module)}) imports higher layers: {sorted(up)}"


def test_api_and_numpy_protocols_do_not_import_each_other():
    mixed = [(m, d) for m in MODULES for d in GRAPH[m] if layer(m) == layer(d) == 4
             and m.split(".")[2] != d.split(".")[2]]
    assert not mixed, mixed


def test_no_import_inside_functions():
    inner = [f"{m}:{n.lineno}" for m, t in TREES.items() for f in ast.walk(t)
             if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert inner == [], ("imports inside functions (import at module level; reach later "
                         f"ops through vecjac._src.core.registry.lib): {inner}")


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert not _cycles(GRAPH), f"import cycles: {_cycles(GRAPH)}"


LIB_EDGES = {m: {(n, line, _defining_module(n)) for n, line in _lib_references(t)}
             for m, t in TREES.items()}


@pytest.mark.parametrize("module", sorted(m for m in LIB_EDGES if LIB_EDGES[m]))
def test_lib_only_where_an_import_cannot_be(module):
    importable = sorted((name, line) for name, line, target in LIB_EDGES[module]
                        if target is not None and target != module
                        and layer(target) <= layer(module) and not _reaches(GRAPH, target, module))
    assert not importable, (f"{module}: lib.<name> where `from <module> import <name>` "
                            f"would do (no cycle, not a higher layer): {importable}")
    unknown = sorted(name for name, _, target in LIB_EDGES[module] if target is None)
    assert not unknown, f"{module}: lib holds {unknown}, which is no function or op"


# The cycles of imports plus lib references, each a set of mutually recursive rules:
# - the primitive families that every rule uses (sum, broadcast, cast, where, gather ...)
#   and the rule families that their blocks name (forward.rules, pfor.converters,
#   pfor.structured, pfor.banded, the element-wise unary family's base), whose rules build ops of
#   those families (prod's gradient scans with cumprod, whose gradient sums);
#   core.dispatch's public convert_to_tensor stacks nested lists of Tensors (lib.stack);
# - the determinant's gradient (the adjugate) and the adjugate's rules (svd, det).
KNOWN_CYCLES = [
    {"core.arguments", "core.dispatch", "ops.array.creation", "ops.array.dynamic_slice",
     "ops.array.indexing", "ops.array.onehot", "ops.array.shaping",
     "ops.elementwise.arithmetic", "ops.elementwise.complex_parts",  # conj in rules
     "ops.elementwise.family", "ops.elementwise.logic",
     "ops.elementwise.unary", "ops.elementwise.unbroadcast",  # broadcast_to's gradient
     "ops.linalg.products", "ops.reduce.cumulative",
     "ops.reduce.reductions", "transforms.forward.rules", "transforms.pfor.banded",
     "transforms.pfor.converters", "transforms.pfor.structured"},
    {"ops.linalg.adjugate", "ops.linalg.decomposition", "ops.linalg.diag_band",
     "ops.linalg.matrix"},
]


def test_imports_plus_lib_references_have_no_new_cycle():
    graph = {m: set(GRAPH[m]) | {t for _, _, t in LIB_EDGES[m] if t in MODULES and t != m}
             for m in MODULES}
    known = [{f"vecjac._src.{m}" for m in c} for c in KNOWN_CYCLES]
    new = [sorted(c) for c in _cycles(graph) if not any(c <= k for k in known)]
    assert not new, f"new cycles through lib (make one side an import or a rule body): {new}"


# -- the public surface --------------------------------------------------------------------
PUBLIC_VJ = """
debugging
batch_to_space space_to_batch space_to_batch_nd
foldl foldr scan switch_case
GradientTape InteractingExamplesWarning Module NotDifferentiableWarning RegisterGradient
TensorSpec
Tensor UnconnectedGradients Variable abs acos acosh add add_n argmax argmin argsort asin asinh atan
atan2 atanh autodiff batch_jacobian batch_normalization bias_add bool boolean_mask broadcast_to cast ceil clip_by_norm
clip_by_value complex complex128 complex64 concat cond constant conversion_policy convert_to_tensor cos
cosh cumprod
cumsum custom_gradient dask defop divide einsum elu ensure_shape equal erf erfc exp expand_dims expm1 eye
fill flat_hessian float16 float32 float64 floor floordiv floormod function gather gather_nd gelu grad
greater greater_equal hessian hessian_sparsity hvp identity identity_n image int16 int32 int64 int8 is_finite is_inf
is_nan is_tensor jacfwd jacobian jacobian_sparsity jacrev jvp l2_normalize layers leaky_relu less less_equal linalg linearize linspace log
log1p log_softmax logical_and logical_not logical_or logical_xor math matmul
matrix_transpose maximum minimum moments multiply negative nest newton_step nn norm not_equal
one_hot ones ones_like pad pow random range rank recompute_grad reciprocal reduce_all
reduce_any
reduce_euclidean_norm reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod
reduce_std reduce_sum reduce_variance relu relu6 reshape reverse roll round rsqrt scalar_mul scipy
searchsorted selu set_conversion_policy set_memory_budget shape shape_n signal
sigmoid sigmoid_cross_entropy_with_logits sign silu sin sinh size slice softmax sort
softmax_cross_entropy_with_logits softplus softsign sparse_hessian sparse_jacobian split sqrt
square squared_difference
squeeze stack stop_gradient strided_slice subtract swish tan tanh tensor_scatter_nd_add
tensor_scatter_nd_update tensordot testing tile transpose truediv uint8 unflatten_like unstack
value_and_grad vectorize vectorized_map vjp where while_loop xdivy xlogy zeros zeros_like
""".split()


def _public(namespace):
    return sorted(n for n in dir(namespace) if not n.startswith("_"))


def _dask_extra_installed():
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("dask", "cloudpickle"))
    except (ImportError, ValueError):
        return False


def test_public_surface_of_vj_is_pinned():
    names = _public(vj)
    # vj.dask is listed only with its extra installed (without it, vj.dask raises
    # AttributeError naming the extra, so that inspect.getmembers(vj) works)
    pinned = sorted(set(PUBLIC_VJ) - (set() if _dask_extra_installed() else {"dask"}))
    assert names == pinned, (f"added: {sorted(set(names) - set(pinned))}, "
                             f"removed: {sorted(set(pinned) - set(names))}")


PUBLIC_LINALG = """
cross
set_diag tensor_diag tensor_diag_part
band_part cholesky clip_by_norm clip_by_value det diag diag_part eig eigh eigvals eigvalsh inv l2_normalize
logdet
lstsq matmul matrix_transpose matvec norm pinv qr slogdet solve svd trace triangular_solve
""".split()

PUBLIC_MATH = """
approximate_equal bucketize cross
sparse_segment_mean sparse_segment_sqrt_n sparse_segment_sum
abs accumulate_n acos acosh add add_n angle argmax argmin asin asinh atan atan2 atanh
bessel_i0 bessel_i0e bessel_i1 bessel_i1e betainc bincount cast ceil clip_by_norm
clip_by_value complex conj cos cosh count_nonzero cumprod cumsum cumulative_logsumexp digamma
divide divide_no_nan einsum equal erf erfc erfcinv erfinv exp expm1 floor floor_div
floordiv floormod greater greater_equal igamma igammac imag in_top_k invert_permutation
is_finite is_inf is_nan is_non_decreasing is_strictly_increasing l2_normalize lbeta
less less_equal lgamma log log1p log_sigmoid log_softmax logical_and logical_not
logical_or logical_xor matmul matrix_transpose maximum minimum mod multiply
multiply_no_nan ndtri negative norm not_equal polygamma polyval pow real realdiv
reciprocal reciprocal_no_nan reduce_all reduce_any reduce_euclidean_norm
reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_std reduce_sum
reduce_variance rint round rsqrt scalar_mul segment_max segment_mean segment_min
segment_prod segment_sum sigmoid sign sin sinh softmax softplus softsign sqrt square
squared_difference subtract tan tanh tensordot top_k truediv unsorted_segment_max
unsorted_segment_mean unsorted_segment_min unsorted_segment_prod
unsorted_segment_sqrt_n unsorted_segment_sum where xdivy xlog1py xlogy
""".split()

PUBLIC_NN = """
depth_to_space space_to_batch space_to_depth
depthwise_conv2d fused_batch_norm sparse_softmax_cross_entropy_with_logits
avg_pool avg_pool1d avg_pool2d avg_pool3d conv1d conv2d conv3d convolution max_pool
max_pool1d max_pool2d max_pool3d
batch_normalization bias_add elu gelu leaky_relu log_softmax moments relu relu6 selu sigmoid
sigmoid_cross_entropy_with_logits silu softmax softmax_cross_entropy_with_logits softplus
softsign swish top_k
""".split()


PUBLIC_SIGNAL = """
fft fft2d fft3d fftnd fftshift ifft ifft2d ifft3d ifftnd ifftshift irfft irfft2d irfft3d
irfftnd rfft rfft2d rfft3d rfftnd
""".split()


@pytest.mark.parametrize("namespace,pinned", [("linalg", PUBLIC_LINALG), ("math", PUBLIC_MATH),
                                              ("nn", PUBLIC_NN), ("signal", PUBLIC_SIGNAL)])
def test_public_surface_of_namespaces_is_pinned(namespace, pinned):
    names = _public(getattr(vj, namespace))
    assert names == sorted(pinned), (f"vj.{namespace} added: "
                                     f"{sorted(set(names) - set(pinned))}, removed: "
                                     f"{sorted(set(pinned) - set(names))}")


def test_no_internal_module_is_public():
    modules = {n for n in _public(vj) if n != "dask" and type(getattr(vj, n)).__name__ == "module"}
    assert modules == {"autodiff", "debugging", "image", "layers", "linalg", "math", "nest",
                       "nn", "random", "scipy", "signal", "testing", "vectorize"}


def test_autodiff_namespace():
    assert _public(vj.autodiff) == ["ForwardAccumulator", "GradientTape"]
    assert vj.autodiff.GradientTape is vj.GradientTape


def test_debugging_namespace():
    assert _public(vj.debugging) == ["check_numerics"]
