"""group_norm: normalise each of ``num_groups`` channel groups, then scale and shift per channel."""

from ._families import SameShape


class GroupNorm(SameShape):
    name = "group_norm"


OP = GroupNorm()
