"""
learnsched's C++ solver core (private: use the learnsched package).
"""
from __future__ import annotations
from . import finite
from . import forecast
from . import causal
from . import portfolio
__all__: list[str] = ['causal', 'finite', 'forecast', 'portfolio']
