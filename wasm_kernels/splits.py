"""How each kernel that splits across threads is cut into parts (``Split``, ``splits``) and
the sizes below which it runs on one thread; ``parallel`` builds the stand-ins and the
workers from this table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import abi
from .pack import CONV_BLOCK, PANEL
from .pack_quantized import QSPLIT_ROWS
from .templates import depthwise, gemm, linear
from .wasm import Code

Factor = str | tuple[str, int]
"""A factor of a pointer's advance: a parameter, or ``(parameter, multiple)``, that parameter
rounded up to a multiple (a row of scratch padded to whole steps)."""


@dataclass(frozen=True)
class Region:
    """A scratch pointer of which each part takes a region of its own: part ``p`` of a job
    cut into at most ``parts`` moves ``pointer`` by ``p`` times the bytes ``size`` pushes
    from the job's i32 arguments (``size(code, push)``, ``push`` pushing one by name)."""

    pointer: str
    parts: int
    size: Callable[[Code, Callable[[str], object]], None]


@dataclass(frozen=True)
class Split:
    """How a kernel splits: ``count`` is the parameter cut into parts, each starting at a
    multiple of ``grain`` units; a part starting at unit ``lo`` moves each pointer of
    ``advance`` by ``lo * unit[p] * product(factors)`` bytes (``unit[p]`` 4 unless ``unit``
    names the pointer; ``lo // per[p]`` units for a pointer listed in ``per``, which then
    runs one unit at a time with that parameter set to 1). ``work`` times ``count``
    estimates the work; below ``threshold``, or unless each parameter of ``only`` has its
    value there, one thread runs it. A call whose parameter
    ``one_part_when[0]`` exceeds ``one_part_when[1]`` is cut into one part a thread, not
    ``CHUNKS_PER_THREAD``: every part re-reads an operand larger than its own work. Each
    parameter of ``same`` counts the same units as ``count`` (one thread runs a call where
    it differs from ``count``) and is cut with it. A kernel with a ``region`` of scratch is
    cut into at most ``region.parts`` parts, each with its own region. A call with more than
    one ``groups`` splits only where each parameter of ``groups_when`` has its value, and
    then, from ``GROUP_SPLIT_MIN`` groups, by ``by_groups`` when there is one. Each
    parameter of ``shares`` counts ``count`` times as many units as one unit of ``count``
    holds (a grouped conv's channels): a part sees ``(hi - lo) * param / count`` of them,
    and a factor of it in ``advance`` moves by ``param / count``."""

    count: str
    advance: dict[str, tuple[Factor, ...]]
    work: tuple[str, ...]
    threshold: int
    grain: int = 1
    per: dict[str, str] = field(default_factory=dict)
    unit: dict[str, int] = field(default_factory=dict)
    only: dict[str, int] = field(default_factory=dict)
    one_part_when: tuple[str, str] | None = None
    same: tuple[str, ...] = ()
    region: Region | None = None
    groups_when: dict[str, int] = field(default_factory=dict)
    shares: tuple[str, ...] = ()
    by_groups: Split | None = None


DENSE_THRESHOLD = 1 << 18
"""Multiply-adds below which a dense kernel runs on one thread: a dispatch (~12 us round
trip) costs about as much as 2^18 multiply-adds at ~30 GFLOPS."""
STREAM_THRESHOLD = 1 << 15
"""Elements below which an elementwise or row-wise kernel runs on one thread."""
GROUP_SPLIT_MIN = 16
"""Groups from which a kernel with a ``Split.by_groups`` is cut by groups (Winograd's
products have 16 or 36); with fewer, whole groups would not share out evenly (3 groups on
2 threads: 2 and 1), so it is cut as with one group."""
WINOGRAD_THRESHOLD = 1 << 13
"""Elements below which a Winograd transform runs on one thread: at 4-5 ns an element (an
input element spreads into 4 or 36/16 tiles' worth of V) they cost 4-5x a streamed element,
so ResNet-18's 7x7 planes of 512 channels (25,088 elements, 93-130 us a call) split."""
DEPTHWISE_THRESHOLD = 1 << 17
"""Multiply-adds below which a depthwise kernel runs on one thread: it runs at about half
the dense kernels' speed, so a dispatch costs as much as half as many multiply-adds."""
AUTO_WEIGHTS = 32 << 20
"""Weight bytes from which ``threads="auto"`` uses every core; a smaller model runs on one
thread. Set when a threaded model ran 1.1-1.25x slower on one core (over a wasm shared
memory; 0.97-1.01x since ``runtime.host_memory``), which only models whose time is mostly
large dense kernels won back: measured 2 threads against 1 on 2 cores, MiniLM b1 (86 MB)
1.58x, ResNet-18 (45 MB) 1.45x, MobileNetV2 (14 MB, mostly depthwise) 0.81x, the LSTM
(0.2 MB) 0.93x (bench/README, Threads); not measured again since."""


def _conv_gemm_groups() -> Split:
    """A grouped conv gemm's split by groups (Winograd's products: 16 or 36 groups of 16 to
    196 pixels). Cut by pixels in whole panels, ResNet-18's 52-pixel products went 7 panels
    to one thread and 6 to the other, and each part read every group's weight (16.8 MB at
    7x7 x 512): by groups each part reads its groups' weights only, for every pixel
    (ResNet-18 2t / 1t 1.75-1.83x -> 1.91-1.99x, with ``WINOGRAD_THRESHOLD``; bench/README,
    Threads). A part packs a plane under a panel into the ws region of its first group."""
    per_group = ("c", "kh", "kw")  # K of one group: c / groups * kh * kw
    return Split(
        "groups", {"x": ("c", "h", "w"), "weight": ("o", *per_group), "bias": ("o",),
                   "ws": (*per_group, ("pixels", PANEL)), "y": ("o", "oh", "ow"),
                   "r": ("o", "oh", "ow")},
        (), 0, shares=("c", "o"))


def _score_block_bytes(c: Code, push: Callable[[str], object]) -> None:
    """Push the bytes of one part's region of an attention kernel's scratch:
    ``(ATTENTION_ROWS + d) * src * 4``."""
    push("d")
    c.emit("i32.const", abi.ATTENTION_ROWS).emit("i32.add")
    push("src")
    c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl")


def splits(isa: str) -> dict[str, Split]:
    """The kernels that run on several threads, by name, for ``isa``'s tile sizes."""
    # NOTE: the dense kernels pack A's rows into wa where they lie in A, so parts pack
    # disjoint bytes; every part packs all of gemm's B into ws, the same bytes.
    # Each splits at its own row tile: MiniLM's 128 rows in whole tiles of 12 (3 and 4 in
    # common) left 2 threads 68 and 60 rows.
    rows: dict[str, tuple[Factor, ...]] = {"a": ("k",), "wa": ("k",), "r": ("n",), "c": ("n",)}
    row_tile = {"gemm": gemm.TILES[isa][0], "linear": linear.MR[isa]}
    table: dict[str, Split] = {}
    for spec in abi.KERNELS:
        if spec.family in ("gemm", "linear") and spec.op in ("gemm", "linear"):
            table[spec.name] = Split("m", rows, ("k", "n"), DENSE_THRESHOLD,
                                     row_tile[spec.family])
        elif spec.op == "bmm":
            bias = {"bias": ("n",)} if "bias" in spec.params else {}
            table[spec.name] = Split(
                "batch", {"a": ("a_stride",), "b": ("b_stride",), "c": ("m", "n"), **bias},
                ("m", "k", "n"), DENSE_THRESHOLD,
                per={"bias": "bias_every"} if bias else {})
        elif spec.family == "attention":
            # NOTE: parts are ranges of query rows of every batch element and head, each with
            # its own region of scratch
            rows_mask = {"mask": ("src",)} if "add" in spec.epilogue else {}
            table[spec.name] = Split(
                "rows", {"q": ("heads", "d"), "y": ("heads", "d"), **rows_mask},
                ("batch", "heads", "src", "d"), DENSE_THRESHOLD, gemm.TILES[isa][0],
                region=Region("s", abi.ATTENTION_PARTS, _score_block_bytes))
        elif spec.family == "conv":
            # NOTE: output channels of one image and one group are contiguous in Y, and
            # whole blocks of them in the packed weight.
            table[spec.name] = Split(
                "o", {"weight": ("c", "kh", "kw"), "bias": (), "y": ("oh", "ow"),
                      "r": ("oh", "ow")},
                ("c", "kh", "kw", "oh", "ow"), DENSE_THRESHOLD, CONV_BLOCK,
                only={"n": 1, "groups": 1})
        elif spec.family == "conv_gemm":
            # NOTE: parts are ranges of output pixels (whole panels): each packs its own
            # columns into its own region of ws and pads the input rows they read into xp
            # (the same bytes where parts overlap). Each reads the whole weight: with more
            # output channels than pixels (512 -> 512 at 7x7: 9.4 MB against 49 pixels),
            # 4 parts a thread cost 1.28-1.31x the CPU time of one core, 1 part 1.09-1.10x
            # (bench/README, Threads).
            table[spec.name] = Split(
                "pixels", {"ws": ("c", "kh", "kw"), "y": (), "r": (), "first_bytes": ()},
                ("c", "kh", "kw", "o"), DENSE_THRESHOLD, PANEL, only={"n": 1},
                one_part_when=("o", "pixels"),
                # a group's padded or subsampled input is shared by the parts: a grouped conv
                # splits only without one (1x1, stride 1, no padding: Winograd's product);
                # its ws holds every group's steps (``modelc.ops.conv2d``'s scratch)
                groups_when={"kh": 1, "kw": 1, "sh": 1, "sw": 1, "ph": 0, "pw": 0},
                by_groups=_conv_gemm_groups())
        elif spec.family == "depthwise":
            # NOTE: parts are ranges of input channels of one image, with one output channel
            # each (o == c); each pads its planes into its own plane of the scratch. The
            # quantized rows' x and y are bytes, their scales and zero points shared.
            table[spec.name] = Split(
                "c", {"x": ("h", "w"), "weight": ("kh", "kw"), "bias": (), "y": ("oh", "ow")},
                ("oh", "ow", "kh", "kw"), DEPTHWISE_THRESHOLD, only={"n": 1}, same=("o",),
                region=Region("scratch", abi.DEPTHWISE_PARTS, depthwise.plane_bytes),
                unit={"x": 1, "y": 1} if spec.dtypes[0] != "float32" else {})
        elif spec.family == "qlinear":
            # NOTE: parts are ranges of rows (a multiple of QSPLIT_ROWS, a multiple of the
            # tile's rows): each widens its rows into its own rows of wa and its panels into
            # the ws region of its first row. Every part widens every panel of W: one part
            # a thread when W has more columns than the call has rows.
            table[spec.name] = Split(
                "m", {"a": ("k",), "c": ("n",), "wa": (("k", 4),), "ws": (("k", 4),)},
                ("k", "n"), DENSE_THRESHOLD, QSPLIT_ROWS,
                unit={"a": 1, "c": 1 if "requantize" in spec.epilogue else 4,
                      "ws": 16 // QSPLIT_ROWS},  # a panel: 16 * round_up(k, 4) bytes
                one_part_when=("n", "m"))
        elif spec.op in ("max_pool2d", "avg_pool2d"):
            # NOTE: planes are independent; avg_pool2d's scale is one (oh, ow) plane for all.
            table[spec.name] = Split("planes", {"x": ("h", "w"), "y": ("oh", "ow")},
                                     ("oh", "ow", "kh", "kw"), STREAM_THRESHOLD)
        elif spec.family == "rowwise":
            table[spec.name] = Split("rows", {"x": ("n",), "y": ("n",)}, ("n",),
                                     STREAM_THRESHOLD)
        elif spec.family == "winograd":
            # NOTE: parts are ranges of channels (cs, os keep the whole call's count for the
            # strides between images and between the 16 planes of V and M)
            table[spec.name] = (
                Split("c", {"x": ("h", "w"), "v": ("count",)}, ("n", "h", "w"),
                      WINOGRAD_THRESHOLD) if spec.op.endswith("input") else
                Split("o", {"m": ("count",), "bias": (), "y": ("oh", "ow"),
                            "r": ("oh", "ow")}, ("n", "oh", "ow"), WINOGRAD_THRESHOLD))
        elif spec.family == "unary":
            table[spec.name] = Split("n", {"x": (), "y": ()}, (), STREAM_THRESHOLD, 4)
    return table
