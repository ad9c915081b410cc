"""``nn.Module`` against ``torch.nn.Module``: registration and attribute routing, traversal,
state dicts, hooks, train/eval, apply, dtype casts, lookup and repr."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from nn_parity import assert_close, copy_into, randomize

import nn

torch = pytest.importorskip("torch")


def _block(lib: Any) -> Any:
    """A ResNet basic block, built from the same code for both libraries."""

    class BasicBlock(lib.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.conv1 = lib.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = lib.BatchNorm2d(channels)
            self.relu = lib.ReLU()
            self.conv2 = lib.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = lib.BatchNorm2d(channels)
            self.downsample = lib.Sequential(lib.Conv2d(channels, channels, 1), lib.Identity())
            self.register_buffer("scale", lib_array(lib, [2.0]))
            self.register_buffer("cache", lib_array(lib, [0.0]), persistent=False)

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + self.downsample(x)) * self.scale

    return BasicBlock(4)


def lib_array(lib: Any, values: list[float]) -> Any:
    array = np.array(values, np.float32)
    return torch.from_numpy(array) if lib is torch.nn else array


class Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = self.a
        self.seq = nn.Sequential(self.a, nn.ReLU())


class TorchShared(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(2, 2)
        self.b = self.a
        self.seq = torch.nn.Sequential(self.a, torch.nn.ReLU())


def test_resnet_block_has_torch_keys_and_matches_in_eval_and_train() -> None:
    torch.manual_seed(0)
    theirs = randomize(_block(torch.nn)).eval()
    ours = _block(nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    copy_into(ours, theirs)
    x = np.random.default_rng(0).standard_normal((2, 4, 6, 6)).astype(np.float32)
    with torch.no_grad():
        assert_close(ours(x), theirs(torch.from_numpy(x)))
        ours.train(), theirs.train()
        assert_close(ours(x), theirs(torch.from_numpy(x)))
    assert ours.bn1.num_batches_tracked == theirs.bn1.num_batches_tracked.item() == 1
    assert_close(ours.bn1.running_mean, theirs.bn1.running_mean)


def test_traversal_yields_shared_modules_and_parameters_once_like_torch() -> None:
    ours, theirs = Shared(), TorchShared()
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_modules(remove_duplicate=False)] == \
        [n for n, _ in theirs.named_modules(remove_duplicate=False)]
    assert [n for n, _ in ours.named_parameters(prefix="m")] == \
        [n for n, _ in theirs.named_parameters(prefix="m")]
    assert [n for n, _ in ours.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in theirs.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert len(list(ours.parameters())) == len(list(theirs.parameters())) == 2
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert [n for n, _ in ours.seq.named_parameters(recurse=False)] == []


def test_buffers_persistent_and_not() -> None:
    torch_block, block = _block(torch.nn), _block(nn)
    assert [n for n, _ in block.named_buffers()] == [n for n, _ in torch_block.named_buffers()]
    assert "cache" not in block.state_dict() and "scale" in block.state_dict()
    assert len(list(block.buffers(recurse=False))) == 2


def test_setattr_routes_parameters_modules_buffers_and_rejects_wrong_types() -> None:
    m = nn.Module()
    m.w = nn.Parameter(np.zeros(2, np.float32))
    m.child = nn.Linear(1, 1)
    m.register_buffer("buf", np.zeros(1))
    m.plain = 3
    assert list(m._parameters) == ["w"] and list(m._modules) == ["child"]
    assert list(m._buffers) == ["buf"] and "plain" in m.__dict__
    m.buf = np.ones(1)
    assert m._buffers["buf"][0] == 1
    with pytest.raises(TypeError, match=r"cannot assign 'numpy.ndarray' as parameter 'w' "
                                        r"\(nn.Parameter or None expected\)"):
        m.w = np.zeros(2)
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'child' "
                                        r"\(nn.Module or None expected\)"):
        m.child = 3
    with pytest.raises(TypeError, match=r"cannot assign 'str' as buffer 'buf' "
                                        r"\(numpy.ndarray or None expected\)"):
        m.buf = "x"
    m.w = None
    assert m.w is None and "w" in m._parameters
    m.buf = nn.Parameter(np.zeros(1))  # a Parameter takes the name over, as in torch
    assert "buf" in m._parameters and "buf" not in m._buffers
    del m.child, m.buf
    assert "child" not in m._modules and not hasattr(m, "child")
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nothing'"):
        _ = m.nothing


def test_registration_errors_match_torch() -> None:
    m = nn.Module()
    m.x = 1
    cases: list[tuple[Any, type[Exception], str]] = [
        (lambda: m.register_parameter("x", None), KeyError, "attribute 'x' already exists"),
        (lambda: m.register_parameter("a.b", None), KeyError, r'contain "\.", got: a\.b'),
        (lambda: m.register_parameter("", None), KeyError, "be empty string"),
        (lambda: m.register_parameter(1, None), TypeError,
         "parameter name should be a string. Got int"),
        (lambda: m.register_parameter("p", np.zeros(1)), TypeError,
         r"cannot assign 'numpy.ndarray' object to parameter 'p' \(nn.Parameter or None"),
        (lambda: m.register_buffer("b", [1.0]), TypeError,
         "cannot assign 'list' object to buffer 'b'"),
        (lambda: m.add_module("c", 3), TypeError, "int is not a Module subclass"),
        (lambda: m.add_module("x", nn.ReLU()), KeyError, "attribute 'x' already exists"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()

    class Early(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(np.zeros(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before "
                                             r"Module.__init__\(\) call"):
        Early()
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required '
                                                  r'"forward" function'):
        nn.Module()(1)


def test_state_dict_prefix_keep_vars_and_sharing() -> None:
    lin = nn.Linear(2, 3)
    state = lin.state_dict(prefix="enc.")
    assert list(state) == ["enc.weight", "enc.bias"]
    assert type(state["enc.weight"]) is np.ndarray
    assert np.shares_memory(state["enc.weight"], lin.weight)
    assert isinstance(lin.state_dict(keep_vars=True)["weight"], nn.Parameter)


def test_load_state_dict_reports_every_bad_key_at_once_like_torch() -> None:
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    ours = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    bad = {k: v.numpy() for k, v in theirs.state_dict().items() if k != "1.running_var"}
    bad["0.weight"] = np.zeros((3, 5), np.float32)
    bad["2.weight"] = np.zeros(1, np.float32)
    torch_bad = {k: torch.from_numpy(np.asarray(v)) for k, v in bad.items()}
    with pytest.raises(RuntimeError) as theirs_error:
        theirs.load_state_dict(torch_bad)
    with pytest.raises(RuntimeError) as ours_error:
        ours.load_state_dict(bad)
    ours_text = str(ours_error.value)
    assert ours_text == str(theirs_error.value).replace("torch.Size([3, 5])", "(3, 5)") \
        .replace("torch.Size([3, 2])", "(3, 2)")
    assert 'Missing key(s) in state_dict: "1.running_var"' in ours_text
    assert 'Unexpected key(s) in state_dict: "2.weight"' in ours_text
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        ours.load_state_dict(bad, strict=False)
    del bad["0.weight"]
    result = ours.load_state_dict(bad, strict=False)
    expected = theirs.load_state_dict({k: v for k, v in torch_bad.items() if k != "0.weight"},
                                      strict=False)
    assert result == (expected.missing_keys, expected.unexpected_keys)
    assert result.missing_keys == ["0.weight", "1.running_var"]


def test_load_state_dict_copies_in_place_and_casts() -> None:
    lin = nn.Linear(2, 2)
    weight = lin.weight
    lin.load_state_dict({"weight": np.ones((2, 2), np.float64), "bias": np.zeros(2)})
    assert lin.weight is weight and weight.dtype == np.float32 and weight.sum() == 4


def test_forward_hooks_and_pre_hooks_match_torch_behaviour() -> None:
    for lib in (nn, torch.nn):
        calls: list[str] = []
        lin = lib.Identity()
        as_in = (lambda v: torch.tensor(v)) if lib is torch.nn else np.asarray

        def pre(module: Any, args: tuple[Any, ...], calls: list[str] = calls) -> Any:
            calls.append("pre")
            return args[0] + 1  # a non-tuple result replaces the args

        def pre_kwargs(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                       calls: list[str] = calls) -> Any:
            calls.append("pre_kwargs")
            return None

        def post(module: Any, args: tuple[Any, ...], output: Any,
                 calls: list[str] = calls) -> Any:
            calls.append("post")
            return output * 10

        handles = [lin.register_forward_pre_hook(pre),
                   lin.register_forward_pre_hook(pre_kwargs, with_kwargs=True, prepend=True),
                   lin.register_forward_hook(post)]
        assert float(lin(as_in(1.0))) == 20.0
        assert calls == ["pre_kwargs", "pre", "post"]
        for handle in handles:
            handle.remove()
        handles[0].remove()
        assert float(lin(as_in(1.0))) == 1.0
        with lin.register_forward_hook(lambda m, a, o: o * 3):
            assert float(lin(as_in(1.0))) == 3.0
        assert float(lin(as_in(1.0))) == 1.0


def test_forward_hook_with_kwargs_sees_kwargs() -> None:
    seen: list[Any] = []
    mha = nn.MultiheadAttention(4, 1, batch_first=True)
    mha.register_forward_hook(lambda m, a, k, o: seen.append(sorted(k)), with_kwargs=True)
    x = np.ones((1, 2, 4), np.float32)
    mha(x, x, x, need_weights=False)
    assert seen == [["need_weights"]]
    bad = nn.Identity()
    bad.register_forward_pre_hook(lambda m, a, k: 1, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, "
                                           r"new_kwargs\), but got 1"):
        bad(1)


def test_train_eval_apply_and_modes_like_torch() -> None:
    ours, theirs = _block(nn), _block(torch.nn)
    for model in (ours, theirs):
        model.eval()
        model.bn1.train()
    assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()]
    assert ours.train() is ours and all(m.training for m in ours.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        ours.train(1)  # type: ignore[arg-type]
    visited: list[str] = []
    ours.apply(lambda m: visited.append(type(m).__name__))
    theirs_visited: list[str] = []
    theirs.apply(lambda m: theirs_visited.append(type(m).__name__))
    assert visited == theirs_visited


def test_dtype_casts_go_through_one_apply_and_keep_integers_and_sharing() -> None:
    model = Shared()
    model.add_module("bn", nn.BatchNorm1d(2))
    model.double()
    assert model.a.weight.dtype == np.float64 and isinstance(model.a.weight, nn.Parameter)
    assert model.b.weight is model.a.weight is model.seq[0].weight
    assert model.bn.num_batches_tracked.dtype == np.int64
    assert model.half().a.bias.dtype == np.float16
    assert model.float().bn.running_var.dtype == np.float32
    assert model.to("cpu") is model
    with pytest.raises(TypeError, match="only accepts floating point dtypes, but got desired "
                                        "dtype=int32"):
        model.to(np.int32)


def test_get_submodule_and_get_parameter_like_torch() -> None:
    ours, theirs = _block(nn), _block(torch.nn)
    assert isinstance(ours.get_submodule("downsample.0"), nn.Conv2d)
    assert ours.get_parameter("downsample.0.bias").shape == (4,)
    assert ours.get_buffer("bn1.running_mean").shape == (4,)
    for target, message in (("downsample.7", "Sequential has no attribute `7`"),
                            ("relu.inplace", "`inplace` is not an nn.Module")):
        with pytest.raises(AttributeError, match=message):
            ours.get_submodule(target)
        with pytest.raises(AttributeError, match=message):
            theirs.get_submodule(target)
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        ours.get_parameter("bn1.running_mean")


def test_containers_index_slice_delete_and_repr_like_torch() -> None:
    def build(lib: Any) -> Any:
        seq = lib.Sequential(OrderedDict([("first", lib.Linear(2, 2)), ("act", lib.ReLU())]))
        seq.append(lib.Tanh())
        layers = lib.ModuleList([lib.Linear(3, 3) for _ in range(3)] + [lib.ReLU()])
        layers.insert(1, lib.GELU())
        del layers[0]
        layers += [lib.ReLU()]
        table = lib.ModuleDict({"x": lib.ReLU()})
        table["y"] = lib.Sigmoid()
        return lib.ModuleDict({"seq": seq, "seq_tail": seq[1:], "layers": layers,
                               "layers_head": layers[:2], "table": table})

    ours, theirs = build(nn), build(torch.nn)
    assert repr(ours) == repr(theirs)
    assert list(ours["seq"]._modules) == list(theirs["seq"]._modules)
    assert type(ours["seq"][-1]).__name__ == "Tanh"
    with pytest.raises(IndexError, match="index 5 is out of range"):
        ours["layers"][5]
    assert list(ours["table"].keys()) == ["x", "y"] and "y" in ours["table"]
    assert isinstance(ours["table"].pop("x"), nn.ReLU) and len(ours["table"]) == 1


def test_parameter_results_are_plain_arrays() -> None:
    p = nn.Parameter(np.ones(3, np.float32))
    assert type(p * 2) is np.ndarray and type(np.concatenate([p, p])) is np.ndarray
    p += 1
    assert type(p) is nn.Parameter and p[0] == 2
    assert repr(nn.Parameter(np.zeros(1))).startswith("Parameter containing:")
