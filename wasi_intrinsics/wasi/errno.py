"""WASI preview1 errno values returned to the guest (the subset this layer uses)."""

SUCCESS = 0
BADF = 8
FAULT = 21
INVAL = 28
IO = 29
NOSYS = 52
NOTCAPABLE = 76
