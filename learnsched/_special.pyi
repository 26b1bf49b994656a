"""Types of the Cython kernel in _special.pyx (input: 1-D float64, or converted when lossless)."""

import numpy as np
import numpy.typing as npt

def ndtr(x: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
