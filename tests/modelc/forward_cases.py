"""One-line forwards written as a user writes them on numpy arrays: ndarray methods and
properties, every index form, the operators, numpy ufuncs and functions.

``CASES`` maps a name to a ``Case``; ``test_trace_forward.py`` traces and compiles each one
and compares it with eager numpy on every kernel provider and the interpreter, at two sizes
of its symbolic dim. ``STEPS`` are the shape-generic ones that ``test_random_programs.py``
draws from (any (batch, S, D) input), ``SYMBOLIC_STEPS`` those that also leave a symbolic
S alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RNG = np.random.default_rng(20)
W = RNG.standard_normal((8, 5)).astype(np.float32)
W6 = RNG.standard_normal((3, 6)).astype(np.float32)
W64 = RNG.standard_normal((8, 3))
B8 = RNG.standard_normal(8).astype(np.float32)
MASK8 = np.array([True, False, True, True, False, False, True, True])
MASK68 = RNG.standard_normal((6, 8)) > 0.3
TIES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3.49, -2.5, 4.5], np.float32)
BATCH = {0: ("batch", 1, 4)}


@dataclass(frozen=True)
class Case:
    """``fn`` applied to ``shape`` float32 inputs (for ``int64``, ints below the last axis's
    length, so they index any axis of that size), whose
    ``dynamic`` axes are symbolic and run at ``sizes`` (the first symbolic axis)."""

    fn: Callable[..., Any]
    shape: tuple[int, ...] = (2, 6, 8)
    dynamic: dict[int, tuple[str, int, int]] = field(default_factory=lambda: dict(BATCH))
    sizes: tuple[int, ...] = (1, 3)
    dtype: str = "float32"

    def inputs(self, size: int | None = None, seed: int = 0) -> np.ndarray:
        shape = list(self.shape)
        if size is not None and self.dynamic:
            shape[min(self.dynamic)] = size
        rng = np.random.default_rng(seed)
        if self.dtype == "int64":
            return rng.integers(0, shape[-1], shape).astype(np.int64)
        return rng.standard_normal(shape).astype(np.float32)


def _pos(h: Any) -> Any:
    return abs(h) + 0.5


def _nonfinite(h: Any) -> Any:
    """1 where NaN, 2 where infinite, 4 where finite: sqrt of a negative is NaN, 1 / False
    is infinite."""
    with np.errstate(all="ignore"):
        y = np.sqrt(h) + 1 / (h > 0.5)
        return (np.isnan(y).astype(np.float32) + np.isinf(y) * np.float32(2)
                + np.isfinite(y) * np.float32(4))


def _fixed(fn: Callable[..., Any], shape: tuple[int, ...] = (2, 6, 8)) -> Case:
    return Case(fn, shape, {}, (shape[0],))


def _seq(fn: Callable[..., Any]) -> Case:
    """(2, seq, 8) with seq in [3, 10], run at 3 and 9."""
    return Case(fn, (2, 5, 8), {1: ("seq", 3, 10)}, (3, 9))


METHODS: dict[str, Case] = {
    "sum_all": Case(lambda h: h.sum()),
    "sum_last": Case(lambda h: h.sum(axis=-1)),
    "sum_keepdims": Case(lambda h: h.sum(1, keepdims=True)),
    "sum_non_adjacent": Case(lambda h: h.sum(axis=(0, 2))),
    "sum_bool": Case(lambda h: (h > 0).sum(-1).astype(np.float32)),
    "mean_last": Case(lambda h: h.mean(-1)),
    "mean_axes": Case(lambda h: h.mean(axis=(1, 2))),
    "mean_seq": _seq(lambda h: h.mean(1)),
    "max_axis": Case(lambda h: h.max(axis=1)),
    "max_all": Case(lambda h: h.max()),
    "reduce_options": Case(lambda h: h.sum(-1, initial=1.5) + h.max(-1, initial=0.2)
                           + h.min(axis=-1, initial=-0.3) + h.mean(-1, dtype=np.float32)
                           + h.sum(axis=-1, where=h > 0)),
    "min_keepdims": Case(lambda h: h.min(-1, keepdims=True)),
    "min_non_adjacent": Case(lambda h: h.min(axis=(0, 2))),
    "prod_last": Case(lambda h: (h * 0.5 + 1).prod(axis=-1)),
    "prod_two_axes": _fixed(lambda h: (h * 0.2 + 1).prod(axis=(0, 2))),
    "argmax_last": Case(lambda h: h.argmax(-1)),
    "argmax_keepdims": Case(lambda h: h.argmax(axis=1, keepdims=True)),
    "argmax_flat": Case(lambda h: h[0].argmax()),
    "argmin_axis": Case(lambda h: h.argmin(axis=1)),
    "var_std": Case(lambda h: h.var(-1) + h.std(axis=-1, ddof=1)),
    "any_all": Case(lambda h: (h > 1).any(-1).astype(np.float32)
                    - (h > -1).all(axis=-1).astype(np.float32)),
    "reshape_batch": Case(lambda h: h.reshape(h.shape[0], -1)),
    "reshape_tuple": Case(lambda h: h.reshape((-1, 12, 4))),
    "reshape_static_dims": Case(lambda h: h.reshape(h.shape[0], h.shape[1] * h.shape[2])),
    "transpose_axes": Case(lambda h: h.transpose(0, 2, 1)),
    "transpose_tuple": Case(lambda h: h.transpose((1, 0, 2))),
    "transpose_reverse": Case(lambda h: h.transpose()),
    "T": Case(lambda h: h.T),
    "T_seq": _seq(lambda h: h.T),
    "flatten": Case(lambda h: h[0].flatten()),
    "ravel": _fixed(lambda h: h.ravel()),
    "squeeze_axis": Case(lambda h: h[:, :1].squeeze(1)),
    "squeeze_all": Case(lambda h: h[:, :1, None].squeeze(), dynamic={0: ("batch", 2, 4)},
                        sizes=(2, 4)),
    "swapaxes": Case(lambda h: h.swapaxes(1, 2)),
    "astype_same": Case(lambda h: h.astype(np.float32) * 2),
    "astype_int64": Case(lambda h: (h * 4).astype(np.int64)),
    "astype_from_bool": Case(lambda h: (h > 0).astype(np.float32)),
    "astype_float64_bool": Case(lambda h: h.astype(float) * h.astype(bool)
                                + (h > 0).mean(-1, keepdims=True) + h.sum(-1, dtype=np.float64)
                                [..., None]),
    "clip": Case(lambda h: h.clip(-0.5, 0.5)),
    "clip_max_only": Case(lambda h: h.clip(max=0.2)),
    "dot": Case(lambda h: h.dot(W)),
    "copy": Case(lambda h: h.copy() + 1),
    "round": Case(lambda h: (h * 3).round() + (h * 0 + TIES).round()),
    "repeat": Case(lambda h: h.repeat(2, axis=-1)),
    "cumsum": Case(lambda h: h.cumsum(-1) + h.cumsum(axis=1).swapaxes(1, 1)),
    "repeat_counts": Case(lambda h: h.repeat([1, 0, 2, 1, 1, 3], axis=1)),
    "properties": Case(lambda h: h * h.ndim + h[0].size + float(h.dtype == np.float32)),
    "iterate_fixed_axis": Case(lambda h: sum(row for row in h[0])),
    "len": Case(lambda h: h * len(h[0])),
}

INDEXING: dict[str, Case] = {
    "int_cls": Case(lambda h: h[:, 0]),
    "int_negative": Case(lambda h: h[:, -1]),
    "int_symbolic_axis": Case(lambda h: h[0]),
    "int_two": Case(lambda h: h[:, 2, 5]),
    "int_seq_front": _seq(lambda h: h[:, 2]),
    "slice": Case(lambda h: h[:, 1:4]),
    "slice_step": Case(lambda h: h[:, ::2]),
    "slice_negative_step": Case(lambda h: h[:, ::-1]),
    "slice_negative_bounds": Case(lambda h: h[:, 4:0:-2, -3:]),
    "slice_last_axis_step": Case(lambda h: h[:, :, 1::3]),
    "slice_seq_window": _seq(lambda h: h[:, 1:3]),
    "slice_numpy_ints": _seq(lambda h: h[:, np.int64(0):np.int32(2), ::np.int64(-1)]),
    "slice_seq_whole": _seq(lambda h: h[:, :h.shape[1]] + h[:, :]),
    "none": Case(lambda h: h[:, None]),
    "none_front_and_back": Case(lambda h: h[None, ..., None]),
    "ellipsis_int": Case(lambda h: h[..., 0]),
    "ellipsis_slice": Case(lambda h: h[..., 1:3]),
    "gather_list": Case(lambda h: h[:, [3, 0, 2]]),
    "gather_symbolic_axis": _seq(lambda h: h[:, [2, 0]]),
    "gather_2d_index": Case(lambda h: h[0][np.array([[1, 4], [0, 5]])]),
    "gather_fixed_axis1": _fixed(lambda h: h[:, [3, 0, -1, 3]]),
    "gather_fixed_last": _fixed(lambda h: h[..., np.array([7, 1])]),
    "gather_non_adjacent": _fixed(lambda h: h[0, :, [1, 2]]),
    "gather_adjacent_int": _fixed(lambda h: h[:, 0, [1, 2]]),
    "bool_tensor": Case(lambda h: np.where((h > 0)[:, ::-1][:, 1, None], h, -h)),
    "mask_last": Case(lambda h: h[..., MASK8]),
    "mask_two_axes": Case(lambda h: h[:, MASK68]),
    "traced_index": _fixed(lambda h: h[1][np.minimum(abs(h[0, 0]) * 2, 5).astype(np.int64)]),
    "traced_index_rows": Case(lambda ids: ids.astype(np.float32)[ids], (6, 6), {}, (6,),
                              "int64"),
    "take_constant_ids": Case(lambda h: np.take(h, [2, 0], axis=-1)),
}

OPERATORS: dict[str, Case] = {
    "add_sub_scalars": Case(lambda h: 1 + h - 2.5),
    "rsub_rdiv": Case(lambda h: 1 - h + 2 / _pos(h)),
    "mul_div": Case(lambda h: h * 3 / 4),
    "arrays_broadcast": Case(lambda h: B8 + h * B8 - h / (abs(B8) + 1) - B8),
    "traced_operands": Case(lambda h: h * h - h / _pos(h)),
    "floordiv_mod": Case(lambda h: h // 0.25 + h % 0.7),
    "rfloordiv_rmod": Case(lambda h: 3.0 // _pos(h) + 2.0 % _pos(h)),
    "pow": Case(lambda h: h ** 2 + h ** 3 + _pos(h) ** 0.5),
    "rpow": Case(lambda h: 2 ** h + 1.5 ** (h * 0.5) + np.float32(3) ** h),
    "matmul": Case(lambda h: h @ W),
    "rmatmul": Case(lambda h: W6 @ h),
    "matmul_float64_weight": Case(lambda h: h @ W64 + np.einsum("bsd,de->bse", h, W64)
                                  + np.dot(h, W64) + (W64.T @ h.transpose(0, 2, 1)).swapaxes(1, 2)),
    "matmul_vectors": Case(lambda h: (h[0, 0] @ W).sum() + h @ B8 + (h[0, 0] @ B8)
                           + B8 @ h.transpose(0, 2, 1)),
    "matmul_traced": Case(lambda h: h @ h.transpose(0, 2, 1)),
    "neg_pos_abs": Case(lambda h: -h + (+h) * abs(h)),
    "compare": Case(lambda h: (h > 0).astype(np.float32) + (h >= 0.5) * h
                    + (h < B8) * B8 - h * (h <= h * 0.5)),
    "compare_eq_ne": Case(lambda h: np.where(h == h, h, 0) + np.where(h != 0.5, h, 0)),
    "compare_reflected": Case(lambda h: np.where(0 < h, h, 0.0) + np.where(B8 >= h, h, B8)),
    "and_or_xor_invert": Case(lambda h: ((h > 0) & (h < 1) | ~(h > -1) ^ (h > 2))
                              .astype(np.float32)),
    "promotion": Case(lambda h: h * np.ones(8) + (h > 0).sum(-1, keepdims=True) * h
                      + h.argmax(-1)[..., None] * 0.5 + (h > 0) / 2),
    "bool_with_constant": Case(lambda h: ((h > 0) & MASK8).astype(np.float32)),
}

NUMPY: dict[str, Case] = {
    "ufunc_arithmetic": Case(lambda h: np.subtract(np.add(h, 1), np.multiply(h, 2))
                             + np.divide(1.0, _pos(h))),
    "ufunc_power": Case(lambda h: np.power(h, 2) + np.square(h) + np.reciprocal(_pos(h))),
    "ufunc_sign": Case(lambda h: np.negative(h) + np.positive(h) * np.absolute(h)
                       + np.abs(h) + np.sign(h)),
    "exp_log_sqrt_tanh": Case(lambda h: np.exp(h * 0.5) + np.log(_pos(h)) + np.sqrt(abs(h))
                              + np.tanh(h)),
    "log1p_expm1_hypot": Case(lambda h: np.log1p(abs(h)) + np.expm1(h) + np.hypot(h, B8)),
    "exp2_log2_log10": Case(lambda h: np.exp2(h) + np.log2(_pos(h)) + np.log10(_pos(h))),
    "maximum_minimum": Case(lambda h: np.maximum(h, 0) + np.minimum(h, B8)),
    "floor_ceil": Case(lambda h: np.floor(h * 3) + np.ceil(h * 3) + np.floor_divide(h, 0.3)
                       + np.remainder(h, 0.3)),
    "logical": Case(lambda h: np.where(np.logical_or(np.logical_and(h > 0, h < 1),
                                                     np.logical_not(h > -1)), h, -h)
                    + np.logical_xor(h > 0, B8 > 0) * h),
    "rint_round": Case(lambda h: np.rint(h * 2) + np.round(h * 0 + TIES) + np.around(h)),
    "isnan_isinf_isfinite": Case(_nonfinite),
    "ufunc_by_primitive_name": Case(lambda h: np.sin(h) + np.cos(h)),
    "np_matmul": Case(lambda h: np.matmul(h, W)),
    "ufunc_reduce": Case(lambda h: np.add.reduce(h, axis=1) + np.maximum.reduce(h, axis=1)),
    "ufunc_on_constant_left": Case(lambda h: np.maximum(B8, h) - np.add(B8, h)),
    "concatenate": Case(lambda h: np.concatenate([h, np.tanh(h)], axis=-1)),
    "concatenate_axis1": Case(lambda h: np.concatenate((h[:, :2], h, h[:, -1:]), axis=1)),
    "concatenate_none": _fixed(lambda h: np.concatenate([h, h[0]], axis=None)),
    "stack": Case(lambda h: np.stack([h, -h], axis=1)),
    "concatenate_float64_constant": _fixed(lambda h: np.concatenate([h, np.ones((2, 6, 2))],
                                                                    axis=-1)),
    "stack_last": Case(lambda h: np.stack([h, h * 2, h * 3], axis=-1)),
    "where": Case(lambda h: np.where(h > 0, h, 0)),
    "where_scalars": Case(lambda h: np.where(h > 0.5, 1.0, -1.0)),
    "where_nonbool": Case(lambda h: np.where(np.floor(h), h, 0.25)),
    "where_constant_condition": Case(lambda h: np.where(MASK8, h, B8)),
    "einsum_linear": Case(lambda h: np.einsum("bsd,de->bse", h, W)),
    "einsum_gram": Case(lambda h: np.einsum("bsd,btd->bst", h, h)),
    "einsum_permute": Case(lambda h: np.einsum("bsd->dbs", h)),
    "einsum_sum": Case(lambda h: np.einsum("bsd->bd", h)),
    "einsum_vector": Case(lambda h: np.einsum("bsd,d->bs", h, B8)),
    "einsum_elementwise": Case(lambda h: np.einsum("bsd,bsd->bs", h, h)),
    "einsum_outer": Case(lambda h: np.einsum("bs,d->bsd", h[..., 0], B8)),
    "einsum_implicit": Case(lambda h: np.einsum("bsd,de", h, W)),
    "einsum_three": Case(lambda h: np.einsum("bsd,de,ef->bsf", h, W, W.T)),
    "einsum_ellipsis": Case(lambda h: np.einsum("...qd,...kd->...qk", h, h)
                            + np.einsum("...d,de->...e", h, W) @ W.T[:, :6]),
    "einsum_ellipsis_broadcast": Case(lambda h: np.einsum("...ij,...jk", h[:, None],
                                                         h[:1].transpose(0, 2, 1)[:, None])
                                      [:, 0]),
    "einsum_seq": _seq(lambda h: np.einsum("bsd,btd->bst", h, h)),
    "expand_dims": Case(lambda h: np.expand_dims(h, 1) + np.expand_dims(h, (0, -1))[0, ..., 0]
                        [:, None]),
    "squeeze": Case(lambda h: np.squeeze(h[:, :, :1], axis=-1)),
    "transpose": Case(lambda h: np.transpose(h, (2, 0, 1))),
    "moveaxis": Case(lambda h: np.moveaxis(h, 0, -1)),
    "swapaxes": Case(lambda h: np.swapaxes(h, 0, 1)),
    "reshape": Case(lambda h: np.reshape(h, (-1, 4, 12))),
    "ravel": _fixed(lambda h: np.ravel(h)),
    "sum_mean": Case(lambda h: np.sum(h, axis=1) + np.mean(h, axis=-2)),
    "max_min": Case(lambda h: np.max(h, axis=-1) + np.amax(h, -1) - np.min(h, axis=-1)
                    - np.amin(h, -1)),
    "prod_var_std": Case(lambda h: np.prod(h * 0.1 + 1, axis=-1) + np.var(h, axis=-1)
                         + np.std(h, -1)),
    "argmax_argmin": Case(lambda h: np.argmax(h, axis=-1).astype(np.float32)
                          - np.argmin(h, axis=-1).astype(np.float32)),
    "clip": Case(lambda h: np.clip(h, -1, 0.5)),
    "dot": Case(lambda h: np.dot(h, W)),
    "take": Case(lambda h: np.take(h, [5, 1], axis=1)),
    "split": Case(lambda h: np.split(h, 2, axis=-1)[1] + np.split(h, [3], axis=-1)[1][..., :4]),
    "pad": Case(lambda h: np.pad(h, ((0, 0), (1, 2), (0, 0)))),
    "pad_value": Case(lambda h: np.pad(h, ((0, 0), (1, 1), (2, 0)), constant_values=1.5)),
    "pad_modes": Case(lambda h: np.pad(h, ((0, 0), (0, 0), (2, 1)), mode="reflect")
                      + np.pad(h, ((0, 0), (0, 0), (2, 1)), mode="edge")
                      + np.pad(h, ((0, 0), (0, 0), (2, 1)), mode="wrap")),
    "linalg_norm": Case(lambda h: h / np.linalg.norm(h, axis=-1, keepdims=True)
                        + np.linalg.norm(h, 1, axis=1)[:, None] + np.linalg.norm(h, np.inf, -1)
                        [..., None]),
    "linalg_norm_all": _fixed(lambda h: np.linalg.norm(h)),
    "repeat": Case(lambda h: np.repeat(h, 3, axis=1)),
    "tril_triu": Case(lambda h: np.tril(h) + np.triu(h, 2) - np.tril(h, -1)),
    "cumsum": Case(lambda h: np.cumsum(h, axis=1)),
    "cumsum_flat": _fixed(lambda h: np.cumsum(h[0])),
    "broadcast_to": Case(lambda h: np.broadcast_to(h[:, :1], h.shape) + h),
    "tile": Case(lambda h: np.tile(h, (1, 2, 3))[:, 5:11, 3:11] + np.tile(h[0], 1)),
    "flip": Case(lambda h: np.flip(h, axis=-1) + np.flip(h, (1, 2))),
    "like": Case(lambda h: h[0] + np.ones_like(h[0]) + np.zeros_like(h[0])
                 + np.full_like(h[0], 2.5)),
    "like_symbolic": Case(lambda h: np.concatenate([h, np.ones_like(h[..., :2])], axis=-1)
                          [..., 2:] + np.full_like(h, 0.5) + np.zeros_like(h)),
    "shape_ndim_size": Case(lambda h: h * np.ndim(h) + np.size(h[0]) + np.shape(h)[1]),
    "any_all": Case(lambda h: np.any(h > 1, axis=-1) * h[..., 0] + np.all(h > -1, axis=-1)),
}

CASES: dict[str, Case] = {**{f"method_{k}": v for k, v in METHODS.items()},
                          **{f"index_{k}": v for k, v in INDEXING.items()},
                          **{f"op_{k}": v for k, v in OPERATORS.items()},
                          **{f"np_{k}": v for k, v in NUMPY.items()}}

SYMBOLIC_STEPS: dict[str, Callable[[Any], Any]] = {
    "np_tanh": np.tanh,
    "np_where_relu": lambda h: np.where(h > 0, h, 0),
    "abs_ratio": lambda h: h / (abs(h) + 1),
    "mean_keepdims": lambda h: h - h.mean(-1, keepdims=True),
    "max_keepdims": lambda h: h - h.max(axis=1, keepdims=True),
    "sum_two_axes": lambda h: h * 0.1 + h.sum(axis=(1, 2), keepdims=True) * 0.01,
    "clip": lambda h: h.clip(-1, 1),
    "maximum": lambda h: np.maximum(h, 0.1),
    "swapaxes": lambda h: h.swapaxes(1, 2),
    "T_T": lambda h: h.T.transpose(2, 1, 0),
    "einsum_gram": lambda h: np.einsum("bsd,btd->bst", h, h) * 0.3,
    "var": lambda h: h.var(-1, keepdims=True) + h,
}
STEPS: dict[str, Callable[[Any], Any]] = {
    **SYMBOLIC_STEPS,
    "reverse_rows": lambda h: h[:, ::-1],
    "every_other_column": lambda h: h[:, :, ::2],
    "concat_neg": lambda h: np.concatenate([h, -h], axis=-1),
    "stack_flat": lambda h: np.stack([h, h * 2], axis=1).reshape(h.shape[0], -1, h.shape[2]),
    "gather_ends": lambda h: h[..., [0, -1]],
    "none_squeeze": lambda h: h[:, None].squeeze(1) + 1,
}
