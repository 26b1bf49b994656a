# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, autotestdict=False
"""The standard normal CDF, bit for bit as ``scipy.special.ndtr``, without importing scipy.

Importing ``scipy.special`` costs about 0.3 s (it pulls numpy.testing, importlib.metadata
and the array-API layer), a quarter of a whole ``learnsched econ alerts`` run, whose only
use of it is Phi in ``Lognormal.expected_min``. This is a port of the Cephes code scipy
1.17 runs (xsf/cephes/ndtr.h with polevl.h; Cephes Math Library 2.2, Copyright 1984-1992
by Stephen L. Moshier, BSD-licensed in SciPy): the same coefficients, the same order of
operations, the same branch thresholds and libm's exp, so every result equals scipy's to
the bit (tests/test_special.py checks it). Only the branches ndtr can reach are kept: it
calls erf for |x| < 1 and erfc for x >= 1, never NaN (handled first).
"""

from libc.math cimport M_SQRT1_2, NAN, exp, fabs, isnan

import numpy as np

from learnsched._checks import float64_vector

# log(DBL_MAX): below -MAXLOG, exp(-a*a) underflows (xsf/cephes/const.h).
cdef double _MAXLOG = 7.097827128933839730962063185871E2

# erfc on [1, 8): P/Q; on [8, inf): R/S (the leading 1 of Q and S is implicit).
cdef double[9] _P = [2.46196981473530512524E-10, 5.64189564831068821977E-1,
                     7.46321056442269912687E0, 4.86371970985681366614E1,
                     1.96520832956077098242E2, 5.26445194995477358631E2,
                     9.34528527171957607540E2, 1.02755188689515710272E3,
                     5.57535335369399327526E2]
cdef double[8] _Q = [1.32281951154744992508E1, 8.67072140885989742329E1,
                     3.54937778887819891062E2, 9.75708501743205489753E2,
                     1.82390916687909736289E3, 2.24633760818710981792E3,
                     1.65666309194161350182E3, 5.57535340817727675546E2]
cdef double[6] _R = [5.64189583547755073984E-1, 1.27536670759978104416E0,
                     5.01905042251180477414E0, 6.16021097993053585195E0,
                     7.40974269950448939160E0, 2.97886665372100240670E0]
cdef double[6] _S = [2.26052863220117276590E0, 9.39603524938001434673E0,
                     1.20489539808096656605E1, 1.70814450747565897222E1,
                     9.60896809063285878198E0, 3.36907645100081516050E0]
# erf on [0, 1]: x*T(x^2)/U(x^2).
cdef double[5] _T = [9.60497373987051638749E0, 9.00260197203842689217E1,
                     2.23200534594684319226E3, 7.00332514112805075473E3,
                     5.55923013010394962768E4]
cdef double[5] _U = [3.35617141647503099647E1, 5.21357949780152679795E2,
                     4.59432382970980127987E3, 2.26290000613890934246E4,
                     4.92673942608635921086E4]


cdef inline double _polevl(double x, const double* coef, int degree) noexcept nogil:
    """coef[0]*x^degree + ... + coef[degree], by Horner's rule from coef[0] (polevl)."""
    cdef double ans = coef[0]
    cdef int i
    for i in range(1, degree + 1):
        ans = ans * x + coef[i]
    return ans


cdef inline double _p1evl(double x, const double* coef, int degree) noexcept nogil:
    """x^degree + coef[0]*x^(degree-1) + ... + coef[degree-1] (p1evl: leading 1 implicit)."""
    cdef double ans = x + coef[0]
    cdef int i
    for i in range(1, degree):
        ans = ans * x + coef[i]
    return ans


cdef inline double _erf_small(double x) noexcept nogil:
    """erf(x) for |x| <= 1 (Cephes erf's rational branch, odd by its own recursion)."""
    if x < 0.0:
        return -_erf_small(-x)
    cdef double z = x * x
    return x * _polevl(z, _T, 4) / _p1evl(z, _U, 5)


cdef inline double _erfc_large(double a) noexcept nogil:
    """erfc(a) for a >= 1 (Cephes erfc's rational branches and its underflow to 0)."""
    cdef double z = -a * a
    if z < -_MAXLOG:
        return 0.0
    z = exp(z)
    cdef double p, q
    if a < 8.0:
        p = _polevl(a, _P, 8)
        q = _p1evl(a, _Q, 8)
    else:
        p = _polevl(a, _R, 5)
        q = _p1evl(a, _S, 6)
    return (z * p) / q  # 0.0 when it underflows, as Cephes returns then


cdef inline double _ndtr(double a) noexcept nogil:
    if isnan(a):
        return NAN
    cdef double x = a * M_SQRT1_2
    cdef double z = fabs(x)
    cdef double y
    if z < 1.0:
        return 0.5 + 0.5 * _erf_small(x)
    y = 0.5 * _erfc_large(z)
    if x > 0:
        y = 1.0 - y
    return y


def ndtr(x):
    """Standard normal CDF ``Phi(x) = P(Z <= x)`` of each entry, equal to
    ``scipy.special.ndtr`` bit for bit (NaN gives NaN).

    Parameters
    ----------
    x
        1-D float64 array (or values that convert to one without loss), in units of
        standard deviations.

    Returns
    -------
    numpy.ndarray
        A new float64 array of probabilities in [0, 1], same length as ``x``.
    """
    cdef const double[::1] values = float64_vector("x", x)
    out = np.empty(values.shape[0], dtype=np.float64)
    cdef double[::1] phi = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(values.shape[0]):
            phi[i] = _ndtr(values[i])
    return out
