"""flatten / pack_sequence_as / map_structure for nests.

A nest is a leaf or a node holding nests: lists and tuples (namedtuples too), dicts (any
dict subclass: OrderedDict, defaultdict, Counter ...) and dataclass instances. Dicts are
traversed in sorted-key order, like tf.nest, so that two dicts with the same keys flatten
alike whatever their insertion order; a dataclass in the order of its fields. Packing
rebuilds each node with its own type (a defaultdict keeps its default_factory, a
dataclass instance is copied with its fields replaced, without running its __init__).
"""
import copy
import dataclasses

_dataclass_types = {}  # type -> whether its instances are dataclass instances (leaves are
# checked on every flatten: one dict lookup instead of an attribute search per leaf)


_node_types = {}  # type -> whether its instances are nodes (one lookup for most calls)


def is_nested(x):
    """True for a node of a nest (list, tuple, dict, dataclass instance); False for a leaf."""
    kind = type(x)
    known = _node_types.get(kind)
    if known is None:
        known = _node_types[kind] = isinstance(x, (list, tuple, dict)) or \
            is_dataclass_instance(x)
    return known


def is_dataclass_instance(x):
    kind = type(x)
    known = _dataclass_types.get(kind)
    if known is None:
        # a dataclass itself (a class object) has type `type`, which has no such field
        known = _dataclass_types[kind] = hasattr(kind, "__dataclass_fields__")
    return known


def fields(x):
    """Field names of a dataclass instance, in definition order (its children's order)."""
    return [f.name for f in dataclasses.fields(x)]


def _children(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted(x, key=_sort_key)]
    if isinstance(x, (list, tuple)):
        return list(x)
    return [getattr(x, name) for name in fields(x)]


def _sort_key(k):
    return (type(k).__name__, k) if not isinstance(k, str) else ("str", k)


def flatten(structure):
    """Leaves of a nest, depth first. None is a leaf."""
    kind = type(structure)
    if kind is list or kind is tuple:  # a flat list of leaves: every transform's sources
        for c in structure:
            if _node_types.get(type(c)) is not False and is_nested(c):
                break
        else:
            return list(structure)
    elif not is_nested(structure):
        return [structure]
    out = []
    _flatten_into(structure, out)
    return out


# Module-level recursion, not nested closures: a closure that calls itself is a reference
# cycle, which kept every flattened list (and the tensors in it) alive until the garbage
# collector ran: large Jacobians piled up and the allocator kept faulting fresh pages.
def _flatten_into(x, out):
    if is_nested(x):
        for c in _children(x):
            _flatten_into(c, out)
    else:
        out.append(x)


def _build(s, leaves):
    if isinstance(s, dict):
        built = {k: _build(s[k], leaves) for k in sorted(s, key=_sort_key)}
        ordered = {k: built[k] for k in s}  # the node keeps its own key order
        if type(s) is dict:
            return ordered
        if hasattr(s, "default_factory"):  # defaultdict: the factory comes first
            return type(s)(s.default_factory, ordered)
        return type(s)(ordered)
    if isinstance(s, tuple) and hasattr(s, "_fields"):  # namedtuple
        return type(s)(*[_build(c, leaves) for c in s])
    if isinstance(s, (list, tuple)):
        return type(s)(_build(c, leaves) for c in s)
    if is_dataclass_instance(s):
        # a copy with the fields replaced: __init__ / __post_init__ would see Tensors (or
        # gradients) where they expect the user's values, and frozen classes refuse setattr
        new = copy.copy(s)
        for name in fields(s):
            object.__setattr__(new, name, _build(getattr(s, name), leaves))
        return new
    return next(leaves)


def pack_sequence_as(structure, flat):
    """The nest of `structure` with leaves taken in order from `flat`."""
    flat = list(flat)
    if not is_nested(structure):  # a single leaf: the common case of every transform
        if len(flat) != 1:
            raise ValueError(f"pack_sequence_as: structure has 1 leaf, got {len(flat)} values")
        return flat[0]
    kind = type(structure)
    if (kind is list or kind is tuple) and len(flat) == len(structure) and \
            not any([is_nested(c) for c in structure]):
        return kind(flat)  # a flat list or tuple of leaves: the common case of results
    n = len(flatten(structure))
    if len(flat) != n:
        raise ValueError(f"pack_sequence_as: structure has {n} leaves, got {len(flat)} values")
    return _build(structure, iter(flat))


def map_structure(fn, *structures):
    if len(structures) == 1 and not is_nested(structures[0]):
        return fn(structures[0])
    flats = [flatten(s) for s in structures]
    n = len(flats[0])
    if any(len(f) != n for f in flats):
        raise ValueError("map_structure: structures do not have the same number of leaves")
    return pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats)])


def same_structure(a, b):
    """True when a and b are nests of the same shape: dicts (of any dict type) with the
    same keys, sequences of the same length, dataclass instances of the same class, each
    holding nests of the same structure; leaves match leaves."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b)
                and all(same_structure(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))
                and len(a) == len(b) and all(same_structure(x, y) for x, y in zip(a, b)))
    if is_dataclass_instance(a) or is_dataclass_instance(b):
        return type(a) is type(b) and all(same_structure(x, y) for x, y in
                                          zip(_children(a), _children(b)))
    return True

