"""TF's tf.nn.sparse_softmax_cross_entropy_with_logits, in vj.nn: the softmax cross
entropy of integer class labels, -log_softmax(logits)[..., labels].

A composite of two op blocks: LogSoftmax (stable: it shifts by the maximum) and a gather
with batch_dims = rank(labels) that picks each example's entry. Their rules give the
gradient with respect to logits (softmax - one_hot(labels)), forward mode, every higher
order and pfor (loop-variant labels become one more batch dimension of the gather), so
no rule of its own is needed. Picking the entry, rather than summing one_hot(labels) *
log_softmax, keeps a -inf logit of another class from turning the loss into 0 * -inf =
NaN. Labels are class indices and carry no derivative.

Labels outside [0, num_classes) raise ValueError before any work is done: TF's CPU
kernel raises InvalidArgumentError (its GPU kernel returns NaN).
"""
import functools

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import lib
from vecjac._src.ops.array.indexing import GatherV2
from vecjac._src.ops.nn.activations import LogSoftmax, _float_input
from vecjac._src.ops.reduce.reductions import reduce_sum

__all__ = ["sparse_softmax_cross_entropy_with_logits"]

_LABEL_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))  # TF's Tlabels


def _labels_in_range(num_classes, v):
    return not v.size or bool(v.min() >= 0 and v.max() < num_classes)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """-log(softmax(logits)[..., labels]): one loss per example (TF2's
    tf.nn.sparse_softmax_cross_entropy_with_logits).

    labels: int32 / int64 class indices in [0, num_classes), of shape logits.shape[:-1];
    logits: floats of shape labels.shape + (num_classes,). Output: labels.shape, the
    dtype of logits. Differentiable in logits (the gradient is softmax(logits) -
    one_hot(labels)); labels are not differentiable.

    >>> logits = vj.constant([[2.0, -5.0, 0.5, -0.1], [0.0, 0.0, 1.9, 1.4],
    ...                       [-100.0, 100.0, -100.0, -100.0]], dtype=vj.float32)
    >>> vj.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 3, 1],
    ...                                               logits=logits).numpy().round(5)
    array([0.29751, 1.14483, 0.     ], dtype=float32)
    """
    fn = "sparse_softmax_cross_entropy_with_logits"
    if labels is None or logits is None:
        raise ValueError(f"{fn}: both labels and logits are required (labels=..., "
                         f"logits=...), got labels={labels!r:.40}, logits={logits!r:.40}")
    x = _float_input(logits, fn, "logits")
    if x.ndim == 0:
        raise ValueError(f"{fn}: logits must have rank >= 1 (..., num_classes), got a scalar")
    z = to_input(labels, (), fn, "labels")
    if z.dtype not in _LABEL_DTYPES:
        raise TypeError(f"{fn}: labels must be int32 or int64 class indices, got dtype "
                        f"{z.dtype}")
    if z.ndim != x.ndim - 1:
        raise ValueError(f"{fn}: labels must have rank {x.ndim - 1} (the rank of logits "
                         f"minus one), got labels shape {z.shape} for logits shape {x.shape}")
    if z.shape != x.shape[:-1]:
        raise ValueError(f"{fn}: labels shape {z.shape} must equal logits shape without "
                         f"its last (class) axis, {x.shape[:-1]} (logits shape {x.shape})")
    num_classes = x.shape[-1]
    value_read(z, "internal", functools.partial(_labels_in_range, num_classes))
    v = np.asarray(z._value)  # every iteration's labels inside pfor
    if not _labels_in_range(num_classes, v):
        bad = v[(v < 0) | (v >= num_classes)].reshape(-1)[0]
        raise ValueError(f"{fn}: labels has {bad}, outside the valid range [0, "
                         f"{num_classes}) of the {num_classes} classes of logits (shape "
                         f"{x.shape})")
    axis = x.ndim - 1
    if num_classes == 0:  # then no example (checked above): an empty loss, still connected
        return reduce_sum(x, axis=axis)
    log_probs = apply(LogSoftmax, x, axis=axis)
    # 0 - x, not -x: a certain class (log-probability 0.0) costs +0.0 as in TF, not -0.0
    return 0 - apply(GatherV2, log_probs, z, axis=axis, batch_dims=z.ndim)


lib.publish(globals(), __all__)
