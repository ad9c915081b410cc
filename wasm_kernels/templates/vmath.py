"""Vectorised transcendental functions as expressions (``expr.Expr -> expr.Expr``).

Every function is branch-free, handles the whole float range (NaN propagates, +-inf and
denormal inputs and outputs are exact where the true result is), and has its maximum
error measured against a float64 reference over all float classes by
``tests/wasm_kernels/test_vmath.py`` (``MAX_ERROR`` below is what that test asserts):

- ``exp``: Cephes range reduction ``x = n ln2 + r`` (``n`` rounded by adding a shifter, not
  by ``nearest`` and a saturating conversion) and a degree-6 polynomial, scaled by ``2**n``
  in two steps so results down to the smallest denormal and up to overflow are right.

Polynomials are evaluated with ``Expr.madd`` (fused on the ``relaxed`` ISA) and clamps with
``clamp_below``/``clamp_above`` (one instruction each): together they take the ``exp``
loop from 61 to 36 instructions per register.
- ``log``: exponent/mantissa split (denormal inputs rescaled by 2**23) and Cephes' degree-9
  polynomial.
- ``tanh``: one odd rational function ``x P(x**2) / Q(x**2)`` (degrees 13 over 6, fitted
  here) of x clamped to [-9, 9]: no exp, no branch, ~1.7x faster than the two-branch
  polynomial / ``decay`` form it replaced, for ~5 ulp where tanh is near 1.
- ``erf``: Taylor series for ``|x| < 0.5``; else ``1 - erfc(|x|)`` with the Numerical Recipes
  erfc (fractional error < 1.2e-7).
- ``sin``, ``cos``: ``x = n pi + r`` (``n`` rounded with the shifter, ``pi`` in three parts,
  Cody-Waite) and an odd degree-11 polynomial for ``sin(r)`` on ``[-pi/2, pi/2]``, its sign
  flipped for odd ``n``; ``cos(x)`` reduces ``x - pi/2`` the same way (``n`` rounded from
  ``x / pi - 1/2``). Accurate for ``|x| <= PERIODIC_RANGE``; beyond it the reduction loses
  bits (onnxruntime's ``std::sin`` reduces exactly at any size) and inf gives NaN.
- ``sigmoid``, ``silu`` = ``x * sigmoid(x)`` and ``gelu_tanh`` = ``x * sigmoid(2u)`` are one
  quotient ``x / (1 + e**-u)`` for either sign of ``u``, with ``decay``'s e**-u (degree-6
  polynomial, one scaling step, +inf below u = -88.38) instead of ``exp``: they run as fused
  epilogues on every output of a conv, so they trade the tail below ~1e-36 (returned as 0)
  for half the instructions. ``hardswish`` multiplies by 1/6;
  ``relu`` and ``relu6`` clamp with ``pmax``/``pmin`` (one instruction each, where wasm's
  ``max`` is eight on x86; a -0 input stays -0).
- ``gelu`` = ``x / 2 * (1 + erf(x / sqrt(2)))`` with a rational erf (no ``exp``): relative
  error 2e-5, but absolute (1e-6) in the negative tail, where ``1 + erf`` cancels.
"""

from __future__ import annotations

from collections.abc import Callable

from .expr import Expr, copysign, from_bits, ibinary, select, shift, to_float

INF = float("inf")

MAX_ERROR: dict[str, tuple[float, float]] = {
    "exp": (2e-7, 0.0), "log": (2e-7, 0.0), "tanh": (3.5e-7, 0.0), "erf": (3e-7, 0.0),
    "sigmoid": (2.5e-7, 8.5e-39), "silu": (3e-7, 7.5e-37), "gelu": (2e-5, 1.2e-6),
    "gelu_tanh": (1.5e-5, 1e-37), "hardswish": (2.5e-7, 0.0), "relu": (0.0, 0.0),
    "relu6": (0.0, 0.0),
}
"""Documented maximum error: (relative, absolute); a result passes if within either, or
within 4 steps of the smallest denormal. Measured maxima (all ISAs alike): exp 7.6e-8,
log 7.7e-8, tanh 3.3e-7 (also over 2M more uniform samples in [-10, 10]), erf 2.1e-7,
sigmoid 1.4e-7, silu 1.6e-7, hardswish 1.6e-7, gelu 2.5e-7 relative for x > 0 and 8.4e-7
absolute in the negative tail (``1 + erf`` cancels there). The absolute bounds of the
logistic functions are their tails, returned as 0 where e**-u overflows (e.g. silu(-88.4)
= -3.4e-37); gelu_tanh's relative error grows to 1.1e-5 in its tail (x < -9) because ``u``
itself is rounded to float32, as in the formula's own float32 evaluation."""

MAX_ULPS: dict[str, float] = {"sigmoid": 3.0, "silu": 3.0, "hardswish": 3.0}
"""Maximum error in units in the last place of the float32 result, where the true result
is at least ``ULP_FLOOR`` in magnitude (measured: sigmoid 1.9, silu 2.2, hardswish 2.3)."""
ULP_FLOOR = 1e-36


PERIODIC_RANGE = 8192.0
"""Largest ``|x|`` for which ``sin`` and ``cos`` keep ``PERIODIC_MAX_ERROR``."""
PERIODIC_MAX_ERROR = {"sin": 2e-7, "cos": 2e-7}
"""Documented maximum absolute error of ``sin`` and ``cos`` on ``|x| <= PERIODIC_RANGE``
(absolute, since near a zero of the function the reduced argument carries the absolute
rounding error of ``x`` itself); ``tests/wasm_kernels/test_vmath.py`` asserts it."""


def _poly(x: Expr, coefficients: tuple[float, ...]) -> Expr:
    """Horner: ``c[0] + x * (c[1] + x * (...))``, one multiply-add per coefficient."""
    out: Expr = Expr.const(coefficients[-1])
    for coefficient in reversed(coefficients[:-1]):
        out = out.madd(x, coefficient)
    return out


ROUNDING_SHIFTER = 12582912.0
"""1.5 * 2**23: adding it to a float of magnitude below 2**22 rounds that float to an
integer (to nearest, ties to even) held in the low mantissa bits, so ``t - shifter`` is the
rounded float and ``bits(t) - bits(shifter)`` the integer, with no conversion instruction."""


def exp(x: Expr) -> Expr:
    """e**x."""
    x = x.clamp_below(-104.0).clamp_above(89.0)  # NaN passes through
    t = x.madd(1.44269504088896341, ROUNDING_SHIFTER)
    n = t - ROUNDING_SHIFTER
    r = n.madd(2.12194440e-4, n.madd(-0.693359375, x))  # x - n ln2, ln2 in two parts
    p = _poly(r, (0.5, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3,
                  1.9875691500e-4)).madd(r * r, r) + 1.0
    whole = ibinary("sub", t.bits(), 0x4B400000)
    half = shift("shr_s", whole, 1)
    scale_1 = from_bits(shift("shl", ibinary("add", half, 127), 23))
    scale_2 = from_bits(shift("shl", ibinary("add", ibinary("sub", whole, half), 127), 23))
    return p * scale_1 * scale_2


def log(x: Expr) -> Expr:
    """Natural logarithm; log(0) = -inf, log(x < 0) = NaN."""
    tiny = x < 1.17549435e-38
    scaled = select(tiny, x * 8388608.0, x)
    bits = scaled.bits()
    exponent = ibinary("sub", shift("shr_s", bits, 23),
                       select(tiny, Expr.iconst(150), Expr.iconst(127)))
    mantissa = from_bits(ibinary("or", ibinary("and", bits, 0x007FFFFF), 0x3F800000))
    big = mantissa > 1.41421356
    mantissa = select(big, mantissa * 0.5, mantissa)
    e = to_float(ibinary("add", exponent, select(big, Expr.iconst(1), Expr.iconst(0))))
    f = mantissa - 1.0
    z = f * f
    y = f * z * _poly(f, (3.3333331174e-1, -2.4999993993e-1, 2.0000714765e-1,
                          -1.6668057665e-1, 1.4249322787e-1, -1.2420140846e-1,
                          1.1676998740e-1, -1.1514610310e-1, 7.0376836292e-2))
    result = f + (y + e * -2.12194440e-4 - z * 0.5) + e * 0.693359375
    finite = select(x < INF, result, x)
    return select(x > 0.0, finite, select(x.eq(0.0), -INF, float("nan")))


TANH_NUMERATOR = (1.0, 0.13091295957565308, 0.00311208120547235, 1.1239016203035135e-05,
                  -2.0567767933243886e-08, 5.4425318418704904e-11, -8.910941781551177e-14)
TANH_DENOMINATOR = (1.0, 0.4642462730407715, 0.024527570232748985, 0.00025579589419066906)
"""tanh(x) = x P(x**2) / Q(x**2) on |x| <= TANH_LIMIT: a least-squares fit of the relative
error (2.1e-8 in float64; the float32 evaluation adds up to ~5 ulp where tanh is near 1).
P(0) = Q(0) = 1, so a tiny x (x**2 rounding to 0) gives x itself."""
TANH_LIMIT = 9.0
"""``tanh`` clamps x here: tanh(9) is 1 - 3e-8, which rounds to 1.0 in float32."""


def tanh(x: Expr) -> Expr:
    """Hyperbolic tangent: one odd rational function of the clamped x (no exp, no branch),
    its result clamped to [-1, 1]."""
    x = x.clamp_below(-TANH_LIMIT).clamp_above(TANH_LIMIT)  # NaN passes through
    z = x * x
    return (x * _poly(z, TANH_NUMERATOR) / _poly(z, TANH_DENOMINATOR)).clamp_below(
        -1.0).clamp_above(1.0)


def _erfc_abs(a: Expr) -> Expr:
    """erfc(a) for a >= 0 (Numerical Recipes ``erfcc``)."""
    t = 1.0 / (a * 0.5 + 1.0)
    inner = _poly(t, (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                      0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277))
    return t * exp((-a).madd(a, inner))


def erf(x: Expr) -> Expr:
    """The error function."""
    z = x * x
    series = x * 1.12837916709551257 * _poly(z, (1.0, -1 / 3, 1 / 10, -1 / 42, 1 / 216,
                                                  -1 / 1320))
    return select(x.abs() < 0.5, series, copysign(1.0 - _erfc_abs(x.abs()), x))


PI_PARTS = (3.140625, 9.67502593994140625e-4, 1.509957990978376432e-7)
"""pi = sum of these: the first two have few mantissa bits, so ``n * part`` is exact for
the ``n`` up to ``PERIODIC_RANGE / pi`` (Cody-Waite)."""
SIN_COEFFICIENTS = (-1.6666667163e-1, 8.3333337680e-3, -1.9841270114e-4, 2.7557314297e-6,
                    -2.5052108385e-8, 1.6059043836e-10)
"""sin(r) = r + r**3 * P(r**2) on [-pi/2, pi/2]: Taylor's coefficients, truncated at r**13."""


def _sin_reduced(x: Expr, offset: float) -> Expr:
    """sin(x - offset * pi) by ``x - offset * pi = n pi + r``, for offset 0 or 1/2."""
    # NOTE: the shifter minus 1/2 is not a float32, so 1/2 comes off before the rounding.
    t = (x.madd(0.318309886183790672, -offset) + ROUNDING_SHIFTER if offset
         else x.madd(0.318309886183790672, ROUNDING_SHIFTER))
    n = t - ROUNDING_SHIFTER
    half = n + offset  # the multiple of pi taken off x, exactly (an integer, or one + 1/2)
    r = half.madd(-PI_PARTS[0], x)
    r = half.madd(-PI_PARTS[1], r)
    r = half.madd(-PI_PARTS[2], r)
    z = r * r
    sine = (z * r).madd(_poly(z, SIN_COEFFICIENTS), r)
    odd = shift("shl", t.bits(), 31)  # the parity of n, as a sign bit
    return from_bits(ibinary("xor", sine.bits(), odd))


def sin(x: Expr) -> Expr:
    """Sine, accurate on ``|x| <= PERIODIC_RANGE``."""
    return _sin_reduced(x, 0.0)


def cos(x: Expr) -> Expr:
    """Cosine, as sin(x + pi/2) = -sin(x - pi/2), accurate on ``|x| <= PERIODIC_RANGE``."""
    return -_sin_reduced(x, 0.5)


DECAY_COEFFICIENTS = (1.0, -1.0, 0.49999994, -0.166664213, 0.0416680574, -0.00837496575,
                      0.00138427119)
"""e**-r = sum c[k] r**k on |r| <= ln2 / 2: a degree-6 fit of e**r's relative error (2.0e-8
with these float32 coefficients; degree 5 gave 1.0e-7 and sigmoid 3.3 ulp), its odd terms
negated; ``exp``'s Cephes polynomial is degree 7."""
DECAY_LIMIT = 88.0
"""``decay`` clamps ``a`` here: round(a / ln2) <= 127, so the scale's exponent field stays in
[0, 254] (0: the result is exactly 0)."""
LOGISTIC_FLOOR = -89.0
"""``logistic_product`` clamps ``u`` from below here: round(u / ln2) >= -128, whose scale's
exponent field is 255, so e**-u is +inf from u < -88.38 on (the true value overflows from
-88.72) and the quotient is 0."""


def _decay_parts(a: Expr) -> tuple[Expr, Expr]:
    """(p, s) with e**-a = p * s, for ``a`` already clamped to [LOGISTIC_FLOOR, DECAY_LIMIT]:
    the rounding shifter carries the exponent bias (so one shift makes the scale ``s``, a
    power of two), the reduced argument keeps its sign flipped (no negation) and ``p`` is a
    degree-6 polynomial in it."""
    biased = ROUNDING_SHIFTER + 127.0
    t = a.madd(-1.44269504088896341, biased)  # biased - round(a / ln2), exactly
    m = Expr.const(biased) - t
    r = m.madd(2.12194440e-4, m.madd(-0.693359375, a))  # a - m ln2, ln2 in two parts
    scale = from_bits(shift("shl", t.bits(), 23))  # 2**-m: the exponent field is 127 - m
    return _poly(r, DECAY_COEFFICIENTS), scale


def decay(a: Expr) -> Expr:
    """e**-a for a >= 0, NaN passing through: softmax's ``exp``.

    Cheaper than ``exp(-a)`` (14 instructions against 26 with fused multiply-adds,
    ``_decay_parts``), with one scaling step: where e**-a falls below 2**-126.5 (a > 87.68)
    the result is 0, not the denormal."""
    p, scale = _decay_parts(a.clamp_above(DECAY_LIMIT))
    return p * scale


def logistic_product(x: Expr, u: Expr) -> Expr:
    """x * sigmoid(u) = x / (1 + e**-u), NaN passing through: one quotient for either sign
    of ``u`` (no ``abs``, no select), the scale multiplied into the 1 + p step.

    e**-u is right to its polynomial's error from u = -88.38 up; below, it is +inf and the
    result 0 (the true x * sigmoid(u) there is under 4e-39 |x|); from u > 87.68 it is 0 and
    the result x. Where e**-u is large, 1 / (1 + e**-u) keeps e**-u's relative error, so
    sigmoid's tail stays accurate down to its denormals."""
    p, scale = _decay_parts(u.clamp_below(LOGISTIC_FLOOR).clamp_above(DECAY_LIMIT))
    return x / p.madd(scale, 1.0)


def sigmoid(x: Expr) -> Expr:
    """1 / (1 + e**-x)."""
    return logistic_product(Expr.const(1.0), x)


def silu(x: Expr) -> Expr:
    """x * sigmoid(x)."""
    return logistic_product(x, x)


def gelu_tanh(x: Expr) -> Expr:
    """GELU's tanh approximation, x * sigmoid(2u) with u = sqrt(2 / pi) (x + 0.044715 x**3)
    (the ABI's formula)."""
    return logistic_product(x, (x * x).madd(0.044715 * 1.5957691216057308, 1.5957691216057308) * x)


def relu(x: Expr) -> Expr:
    """max(x, 0) in one instruction; relu(-0) is -0."""
    return x.clamp_below(0.0)


def relu6(x: Expr) -> Expr:
    """min(max(x, 0), 6) in two instructions; relu6(-0) is -0."""
    return x.clamp_below(0.0).clamp_above(6.0)


def hardswish(x: Expr) -> Expr:
    """x * min(max(x + 3, 0), 6) / 6, the division a multiply by 1/6 before the one by x
    (no overflow near the largest float)."""
    return x * ((x + 3.0).clamp_below(0.0).clamp_above(6.0) * (1.0 / 6.0))


ERF_NUMERATOR = (1.12837914, 0.1939727581, 0.05315813901, 0.003901334706, 0.0002849036821,
                 1.982802354e-06)
ERF_DENOMINATOR = (1.0, 0.505236403, 0.1155265105, 0.01524374512, 0.001189784689,
                   3.739620364e-05)
"""erf(z) = z * P(z**2) / Q(z**2) on |z| < 4: a (5, 5) rational fitted for this module by
reweighted least squares on erf's relative error (2.7e-8 in exact arithmetic, ~4e-7 once
evaluated in float32). Beyond 4, erf rounds to +-1 in float32."""


def _erf_rational(z: Expr) -> Expr:
    """erf(z) without exp or division chains: about 15 instructions against ``erf``'s 50."""
    u = z * z
    inside = z * _poly(u, ERF_NUMERATOR) / _poly(u, ERF_DENOMINATOR)
    return select(z.abs() < 4.0, inside, copysign(Expr.const(1.0), z))


def gelu(x: Expr) -> Expr:
    """Exact GELU: x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2))), with the rational erf.

    NOTE: as in torch's float32 formula, ``1 + erf`` cancels in the negative tail, so results
    there carry an absolute error (up to 1.2e-6), not a relative one; computing the tail
    through ``erfc`` keeps it relative but costs three times as much, and gelu runs on every
    element of a transformer's widest activation."""
    return x * 0.5 * (_erf_rational(x * 0.70710678118654752) + 1.0)


FUNCTIONS: dict[str, Callable[[Expr], Expr]] = {
    "exp": exp, "log": log, "tanh": tanh, "erf": erf, "sigmoid": sigmoid, "silu": silu,
    "gelu": gelu, "gelu_tanh": gelu_tanh, "hardswish": hardswish, "relu": relu, "relu6": relu6,
}
"""Tuned evaluations of the ABI's unary ops, as expressions: where one is listed here,
``activations.unary`` uses it instead of evaluating the op's formula term by term. Each has
its measured error bound in ``MAX_ERROR`` (a test checks both tables name the same ops, all
of them ABI unary ops)."""
