"""The layering of ARCHITECTURE.md section 1, and the public surface, as tests.

- imports point down: no import cycle among vecjac's modules, and no import inside a
  function (the way cycles used to be dodged);
- the core imports neither the op library nor a transform; transforms import no
  concrete op (they reach ops through the registry's `lib`); the op library imports the
  core and the generic rule families, never a transform's internals;
- dir(vj), vj.math, vj.nn, vj.linalg, vj.autodiff, vj.debugging are pinned: a name added
  or removed here is a decision, not an accident.
"""
import ast
import pathlib

import pytest

import vecjac as vj

ROOT = pathlib.Path(vj.__file__).parent


def _module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph():
    """{module: set of vecjac modules it imports at module level}."""
    graph, inner = {}, []
    for path in sorted(ROOT.rglob("*.py")):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner += [f"{name}:{n.lineno}" for n in ast.walk(node)
                          if isinstance(n, (ast.Import, ast.ImportFrom))]
        deps = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    is_module = (ROOT.parent / sub.replace(".", "/")).with_suffix(".py").exists() \
                        or (ROOT.parent / sub.replace(".", "/")).is_dir()
                    deps.add(sub if is_module else target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("vecjac")}
        graph[name] = {d for d in deps if d != name}
    return graph, inner


GRAPH, INNER_IMPORTS = _graph()


def test_no_import_inside_functions():
    assert INNER_IMPORTS == [], ("imports inside functions (import at module level; "
                                 f"reach later ops through vecjac._registry.lib): {INNER_IMPORTS}")


def test_no_import_cycle():
    state, cycle = {}, []

    def visit(m, path):
        state[m] = "open"
        for d in sorted(GRAPH.get(m, ())):
            if state.get(d) == "open":
                cycle.append(path[path.index(d):] + [d] if d in path else path + [d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = "done"
    for m in sorted(GRAPH):
        if m not in state:
            visit(m, [m])
    assert not cycle, f"import cycles: {cycle[:3]}"


CORE = {"vecjac._tensor", "vecjac._tensor_spec", "vecjac._context", "vecjac._registry", "vecjac._dispatch",
        "vecjac._shapes", "vecjac._samples", "vecjac._errors", "vecjac._variables",
        "vecjac.nest", "vecjac._unconnected", "vecjac._progress"}
TRANSFORMS = {"vecjac._tape", "vecjac._jacobians", "vecjac._forward", "vecjac._gradients",
              "vecjac._capture", "vecjac._plan", "vecjac._fusion", "vecjac._chains"} | \
    {m for m in GRAPH if m.startswith("vecjac.vectorize")}


def _imports_of(module):
    """Every vecjac module `module` reaches by imports (transitively)."""
    seen, todo = set(), [module]
    while todo:
        for d in GRAPH.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


@pytest.mark.parametrize("module", sorted(CORE & set(GRAPH)))
def test_core_imports_only_core(module):
    outside = {d for d in GRAPH[module] if d.startswith("vecjac") and d not in CORE}
    assert not outside, f"{module} (core) imports {outside}"


def test_tensor_imports_no_op():
    assert not any(d.startswith("vecjac.ops") for d in _imports_of("vecjac._tensor"))


@pytest.mark.parametrize("module", sorted(TRANSFORMS & set(GRAPH)))
def test_transforms_import_no_concrete_op(module):
    ops = {d for d in _imports_of(module) if d.startswith("vecjac.ops")}
    assert not ops, f"{module} (a transform) imports op modules {ops}: use vecjac._registry.lib"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("vecjac.ops")))
def test_op_library_imports_no_transform_internals(module):
    allowed = {"vecjac.vectorize.converters", "vecjac.vectorize.structured",
               "vecjac.vectorize.stacked", "vecjac._jvp_rules"}
    bad = {d for d in GRAPH[module] if (d in TRANSFORMS or d.startswith("vecjac.vectorize"))
           and d not in allowed}
    assert not bad, f"{module} imports transform internals {bad}"


# -- the public surface --------------------------------------------------------------------
PUBLIC_VJ = """
debugging
batch_to_space space_to_batch space_to_batch_nd
foldl foldr scan switch_case
GradientTape InteractingExamplesWarning Module NotDifferentiableWarning RegisterGradient
TensorSpec
Tensor UnconnectedGradients Variable abs acos acosh add add_n argmax argmin argsort asin asinh atan
atan2 atanh autodiff batch_jacobian batch_normalization bias_add bool boolean_mask broadcast_to cast ceil clip_by_norm
clip_by_value complex128 complex64 concat cond constant conversion_policy convert_to_tensor cos
cosh cumprod
cumsum custom_gradient dask defop divide einsum elu ensure_shape equal erf erfc exp expand_dims expm1 eye
fill flat_hessian float16 float32 float64 floor floordiv floormod function gather gather_nd gelu grad
greater greater_equal hessian hessian_sparsity hvp identity identity_n image int16 int32 int64 int8 is_finite is_inf
is_nan is_tensor jacfwd jacobian jacobian_sparsity jacrev jvp l2_normalize layers leaky_relu less less_equal linalg linearize linspace log
log1p log_softmax logical_and logical_not logical_or logical_xor math matmul
matrix_transpose maximum minimum moments multiply negative nest newton_step nn norm not_equal
one_hot ones ones_like ops pad pow random range rank recompute_grad reciprocal reduce_all
reduce_any
reduce_euclidean_norm reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod
reduce_std reduce_sum reduce_variance relu relu6 reshape reverse roll round rsqrt scalar_mul scipy
searchsorted selu set_conversion_policy set_memory_budget shape shape_n
sigmoid sigmoid_cross_entropy_with_logits sign silu sin sinh size slice softmax sort
softmax_cross_entropy_with_logits softplus softsign sparse_hessian sparse_jacobian split sqrt
square squared_difference
squeeze stack stop_gradient strided_slice subtract swish tan tanh tensor_scatter_nd_add
tensor_scatter_nd_update tensordot testing tile transpose truediv uint8 unflatten_like unstack
value_and_grad vectorize vectorized_map vjp where while_loop xdivy xlogy zeros zeros_like
""".split()


def _public(namespace):
    return sorted(n for n in dir(namespace) if not n.startswith("_"))


def test_public_surface_of_vj_is_pinned():
    names = _public(vj)
    assert names == sorted(PUBLIC_VJ), (f"added: {sorted(set(names) - set(PUBLIC_VJ))}, "
                                        f"removed: {sorted(set(PUBLIC_VJ) - set(names))}")


PUBLIC_LINALG = """
cross
set_diag tensor_diag tensor_diag_part
band_part cholesky clip_by_norm clip_by_value det diag diag_part eigh eigvalsh inv l2_normalize logdet
lstsq matmul matrix_transpose matvec norm pinv qr slogdet solve svd trace triangular_solve
""".split()

PUBLIC_MATH = """
approximate_equal bucketize cross
sparse_segment_mean sparse_segment_sqrt_n sparse_segment_sum
abs accumulate_n acos acosh add add_n angle argmax argmin asin asinh atan atan2 atanh
bessel_i0 bessel_i0e bessel_i1 bessel_i1e betainc bincount cast ceil clip_by_norm
clip_by_value conj cos cosh count_nonzero cumprod cumsum cumulative_logsumexp digamma
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


@pytest.mark.parametrize("namespace,pinned", [("linalg", PUBLIC_LINALG), ("math", PUBLIC_MATH),
                                              ("nn", PUBLIC_NN)])
def test_public_surface_of_namespaces_is_pinned(namespace, pinned):
    names = _public(getattr(vj, namespace))
    assert names == sorted(pinned), (f"vj.{namespace} added: "
                                     f"{sorted(set(names) - set(pinned))}, removed: "
                                     f"{sorted(set(pinned) - set(names))}")


def test_no_internal_module_is_public():
    modules = {n for n in _public(vj) if n != "dask" and type(getattr(vj, n)).__name__ == "module"}
    assert modules == {"autodiff", "debugging", "image", "layers", "linalg", "math", "nest",
                       "nn", "ops", "random", "scipy", "testing", "vectorize"}


def test_autodiff_namespace():
    assert _public(vj.autodiff) == ["ForwardAccumulator", "GradientTape"]
    assert vj.autodiff.GradientTape is vj.GradientTape


def test_debugging_namespace():
    assert _public(vj.debugging) == ["check_numerics"]
