"""Neural network ops: cases from TensorFlow's pfor test-suite (sources and differences:
tests/conformance/tf_pfor_support.py), vectorized by vecjac and checked against the loop."""
import dataclasses
from typing import Callable

import pytest

import vecjac as vj
from tests.conformance.tf_pfor_support import (BOOLS, Case, assert_pfor_matches_loop, at,
                                               class_ids, draw, half_sum_of_squares, over_rows,
                                               params, persistent_tape, stacked)

# == neural network ops ====================================================================
STRIDE_2_VALID = dict(strides=[1, 2, 2, 1], padding="VALID", data_format="NHWC")


def seeded_gradient(forward, wrt, seed):
    """d forward(wrt) / d wrt under `seed`: what TF's backprop kernels compute."""
    with vj.GradientTape() as tape:
        tape.watch(wrt)
        out = forward(wrt)
    return tape.gradient(out, wrt, output_gradients=seed)


def conv_input_gradient():
    kernel, seeds = draw([3, 3, 3, 7]), draw([3, 2, 5, 5, 7])
    return lambda i: seeded_gradient(lambda x: vj.nn.conv2d(x, kernel, **STRIDE_2_VALID),
                                     vj.zeros([2, 12, 12, 3]), vj.gather(seeds, i))


def conv_filter_gradient():
    images, seeds = draw([3, 2, 12, 12, 3]), draw([3, 2, 5, 5, 7])

    def body(i):
        # the varying images and the first ones, under the varying seed
        return [seeded_gradient(lambda k: vj.nn.conv2d(x, k, **STRIDE_2_VALID),
                                vj.zeros([3, 3, 3, 7]), vj.gather(seeds, i))
                for x in (vj.gather(images, i), vj.gather(images, 0))]
    return body


def depthwise_input_gradient():
    kernels, seeds = draw([3, 3, 3, 3, 2]), draw([3, 2, 5, 5, 6])

    def body(i):
        kernel = vj.gather(kernels, i)
        return seeded_gradient(lambda x: vj.nn.depthwise_conv2d(x, kernel, **STRIDE_2_VALID),
                               vj.zeros([2, 12, 12, 3]), vj.gather(seeds, i))
    return body


def depthwise_filter_gradient():
    images, seeds = draw([3, 2, 12, 12, 3]), draw([3, 2, 5, 5, 6])

    def body(i):
        image = vj.gather(images, i)
        return seeded_gradient(lambda k: vj.nn.depthwise_conv2d(image, k, **STRIDE_2_VALID),
                               vj.zeros([3, 3, 3, 2]), vj.gather(seeds, i))
    return body


def sparse_cross_entropy():
    logits, labels = draw([3, 2, 4]), class_ids([3, 2], 4)
    return lambda i: vj.nn.sparse_softmax_cross_entropy_with_logits(
        labels=vj.gather(labels, i), logits=vj.gather(logits, i))


def on_default_first_and_last_axis(op):
    return lambda r: (op(r), op(r, axis=0), op(r, axis=-1))


NN_CASES = [
    Case("conv2d", over_rows(lambda r, kernel: vj.nn.conv2d(r, kernel, **STRIDE_2_VALID),
                             [3, 2, 12, 12, 3], fixed=[[3, 3, 3, 7]])),
    Case("conv2d_input_gradient", conv_input_gradient),
    Case("conv2d_filter_gradient", conv_filter_gradient),
    Case("depthwise_conv2d", over_rows(
        lambda r, kernel: vj.nn.depthwise_conv2d(r, kernel, **STRIDE_2_VALID),
        [3, 2, 12, 12, 3], [3, 3, 3, 3, 2])),
    Case("depthwise_conv2d_input_gradient", depthwise_input_gradient),
    Case("depthwise_conv2d_filter_gradient", depthwise_filter_gradient),
    Case("log_softmax", over_rows(on_default_first_and_last_axis(vj.nn.log_softmax), [3, 2, 4])),
    Case("softmax", over_rows(on_default_first_and_last_axis(vj.nn.softmax), [3, 2, 4])),
    Case("sparse_softmax_cross_entropy", sparse_cross_entropy),
    Case("adjust_contrast",
         over_rows(lambda im: vj.image.adjust_contrast(im, 2.0), [3, 2, 4, 4, 3])),
    Case("adjust_hue", over_rows(lambda im: vj.image.adjust_hue(im, 0.25), [3, 2, 4, 4, 3])),
    Case("adjust_saturation",
         over_rows(lambda im: vj.image.adjust_saturation(im, 0.1), [3, 2, 4, 4, 3])),
]


@pytest.mark.parametrize("case", params(NN_CASES))
def test_nn_case_vectorizes(case):
    case.assert_vectorizes()


@dataclasses.dataclass(frozen=True)
class Pool:
    op: Callable
    input_shape: list
    window: list
    strides: list
    data_format: str
    second_order: bool  # also the gradient of the gradient with respect to its seed


POOLS = {
    "avg_pool": Pool(vj.nn.avg_pool, [3, 2, 12, 12, 3], [1, 3, 3, 1], [1, 2, 2, 1], "NHWC",
                     False),
    "avg_pool3d": Pool(vj.nn.avg_pool3d, [5, 3, 7, 6, 6, 5], [1, 2, 2, 2, 1], [1, 2, 2, 2, 1],
                       "NDHWC", False),
    "max_pool": Pool(vj.nn.max_pool, [3, 2, 12, 12, 3], [1, 3, 3, 1], [1, 2, 2, 1], "NHWC",
                     True),
    "max_pool3d": Pool(vj.nn.max_pool3d, [3, 3, 2, 12, 12, 3], [1, 1, 3, 3, 1],
                       [1, 1, 2, 2, 1], "NDHWC", True),
}


@pytest.mark.parametrize("name", list(POOLS))
def test_pooling_and_its_gradients_vectorize(name):
    pool = POOLS[name]
    x = draw(pool.input_shape)
    tape = persistent_tape(x)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            pooled = pool.op(row, pool.window, strides=pool.strides, padding="VALID",
                             data_format=pool.data_format)
            if not pool.second_order:
                return pooled, tape.gradient(half_sum_of_squares(pooled), row)
            ones = vj.ones_like(pooled)
            tape.watch(ones)
            # the l2 loss gradient under a seed of ones (TF), written with a seed of the right
            # shape (see the module docstring)
            grad = tape.gradient(pooled, row, output_gradients=pooled * ones)
        return pooled, grad, tape.gradient(grad, ones)
    assert_pfor_matches_loop(body, 3)


@pytest.mark.parametrize("training", BOOLS, ids=["training", "inference"])
def test_fused_batch_norm_and_its_gradients_vectorize(training):
    x, scale, offset = draw([3, 1, 5, 5, 2]), draw([2]), draw([2])
    mean, variance = (None, None) if training else (draw([2]), draw([2]))
    tape = persistent_tape(x, scale, offset)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            results = list(vj.nn.fused_batch_norm(
                row, scale, offset, mean=mean, variance=variance, epsilon=0.01,
                data_format="NHWC", is_training=training))
            if not training:  # TF compares only the normalized values in inference
                results[1:3] = [vj.constant(0.0), vj.constant(0.0)]
            loss = half_sum_of_squares(results[0])
        if not training:
            return results + [vj.constant(0.0)] * 3
        return results + tape.gradient(loss, [row, scale, offset])
    assert_pfor_matches_loop(body, 3)


def test_softmax_cross_entropy_and_its_gradient_vectorize():
    logits, weights = draw([3, 2, 4]), draw([3, 2, 4])
    labels = weights / vj.reduce_sum(weights, axis=[2], keepdims=True)  # distributions
    tape = persistent_tape(logits)

    def body(i):
        with tape:
            row = vj.gather(logits, i)
            per_example = vj.nn.softmax_cross_entropy_with_logits(labels=vj.gather(labels, i),
                                                                  logits=row)
            total = vj.reduce_sum(per_example)
        return per_example, tape.gradient(total, row)
    assert_pfor_matches_loop(body, 3)


@pytest.mark.parametrize("value_varies, bias_varies", [(True, True), (True, False),
                                                       (False, True)],
                         ids=["both_vary", "value_varies", "bias_varies"])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_bias_add_and_its_gradient_vectorize(data_format, value_varies, bias_varies):
    value = draw(stacked((3, 4, 5, 6), value_varies))
    bias = draw(stacked((4 if data_format == "NCHW" else 6,), bias_varies))  # the channels
    tape = persistent_tape(bias)

    def body(i):
        with tape:
            biased = vj.nn.bias_add(at(value, i, value_varies), at(bias, i, bias_varies),
                                    data_format=data_format)
            loss = vj.reduce_sum(biased * biased)
        return biased, tape.gradient(loss, bias)
    assert_pfor_matches_loop(body, 2)
