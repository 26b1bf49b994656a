"""
learnsched's C++ solver core (private: use the learnsched package).
"""
from __future__ import annotations
import typing
from . import finite
from . import forecast
from . import causal
from . import portfolio
__all__: list[str] = ['causal', 'finite', 'forecast', 'portfolio', 'read_online_spec']
def read_online_spec(data: bytes, max_depth: typing.SupportsInt | typing.SupportsIndex, packed_type: typing.Any) -> typing.Any:
    """
    Standard JSON (UTF-8 bytes) as Python's json module reads it, except each forecast's plain "samples" array: packed_type(windows (M, 2), offsets (N + 1)).
    """
