# cython: language_level=3, boundscheck=False, wraparound=False, autotestdict=False
"""Array kernels of learnsched.capacity: feasibility scan, fluid replay, empirical tail.

Private, but callable directly: every kernel converts its arguments by name (an input
array becomes a 1-D C-contiguous float64 array when that changes no value, and is refused
otherwise; an output array must already be a writable C-contiguous array of its dtype;
scalars must be real numbers, not bools) and checks its lengths and scalar preconditions at
the top (O(1)), raising TypeError/ValueError naming the argument, so the loops below never
index out of bounds whatever they are given; that is why Cython's
per-access bounds and negative-index checks are off. What the kernels cannot check in O(1)
(sorted arrivals and starts, finite values, deadlines after arrivals) is validated by
learnsched.capacity; violating it gives meaningless numbers, never an out-of-bounds read
or an endless loop. Each kernel releases the GIL only around its loop, after the
arguments are typed and checked.

A service-rate profile is three arrays of length m >= 1: ``starts`` (strictly increasing,
s), ``rates`` (>= 0, work/s; rate j holds on [starts[j], starts[j+1]), the first rate also
before starts[0] and the last one forever) and ``cum``, the cumulative service
G(starts[j]) with G(starts[0]) = 0.
"""

cimport cpython.array as array
from cpython.float cimport PyFloat_AS_DOUBLE
from libc.math cimport INFINITY, NAN, isfinite, log2

import array

from learnsched._checks import float64_vector, integer, real


cdef inline double _real(str name, object value) except? -1.0:
    """real(name, value) without its Python call when ``value`` is a float already: the
    checks' call per scalar (16 a replay) cost more than the kernel itself at 100 requests
    (docs/performance.md)."""
    if type(value) is float:
        return PyFloat_AS_DOUBLE(value)
    return real(name, value)


cdef const double[::1] _input(str name, object values):
    """``values`` as a read-only float64 view: as it is when it already is one (the fast
    path), else converted without changing a value, or refused naming ``name``."""
    cdef const double[::1] view
    if values is None:  # a memoryview may be None; ours may not
        return float64_vector(name, values)
    try:
        view = values
    except (TypeError, ValueError, BufferError):
        view = float64_vector(name, values)
    return view


cdef double[::1] _output(str name, object values):
    """``values`` as a writable float64 view, or an error naming ``name``: results are
    written into it, so a converted copy would lose them."""
    cdef double[::1] view
    try:
        if values is None:
            raise TypeError
        view = values
    except (TypeError, ValueError, BufferError):
        raise TypeError(f"{name} must be a writable, 1-D, C-contiguous float64 array, "
                        f"got {type(values).__name__}") from None
    return view


cdef int _same_length(str name, Py_ssize_t length, str reference, Py_ssize_t expected) except -1:
    if length != expected:
        raise ValueError(f"{name} has {length} entries but {reference} has {expected}")
    return 0


cdef int _check_profile(
    const double[::1] starts, const double[::1] rates, const double[::1] cum
) except -1:
    if starts.shape[0] == 0:
        raise ValueError("starts must have at least one entry, got none")
    _same_length("rates", rates.shape[0], "starts", starts.shape[0])
    _same_length("cum", cum.shape[0], "starts", starts.shape[0])
    return 0


cdef int _check_requests(
    const double[::1] arrival, const double[::1] work, const double[::1] deadline,
    const double[::1] slack,
) except -1:
    cdef Py_ssize_t n = arrival.shape[0]
    _same_length("work", work.shape[0], "arrival", n)
    _same_length("deadline", deadline.shape[0], "arrival", n)
    _same_length("slack", slack.shape[0], "arrival", n)
    return 0


cdef int _check_at_least(str name, double value, double low) except -1:
    if not value >= low:  # also rejects NaN
        raise ValueError(f"{name} must be >= {low:g}, got {value!r}")
    return 0


cdef int _check_fraction(str name, double value) except -1:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return 0


cdef int _check_positive_finite(str name, double value) except -1:
    if not (isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return 0


cdef inline Py_ssize_t _segment_from(
    const double[::1] starts, double t, Py_ssize_t j
) noexcept nogil:
    """The segment holding time t (the largest j with starts[j] <= t, else 0; NaN gives
    0), found from a cursor j in [0, m): O(1) when t lies in segment j or j + 1 and
    O(log distance) otherwise, by galloping from j and bisecting the bracket. Times that
    mostly move forward, as sorted arrivals do, cost amortized O(1) per lookup instead of
    the O(log m) of a binary search from scratch, and find the same segment."""
    cdef Py_ssize_t m = starts.shape[0], lo, hi, mid, step = 1
    if starts[j] <= t:
        if j + 1 == m or t < starts[j + 1]:
            return j
        lo = j + 1  # starts[lo] <= t; gallop forward to hi with t < starts[hi] (m: none)
        while True:
            hi = lo + step
            if hi >= m:
                hi = m
                break
            if t < starts[hi]:
                break
            lo = hi
            step *= 2
    else:  # t before segment j (or NaN): gallop back to lo with starts[lo] <= t
        hi = j
        while True:
            lo = hi - step
            if lo <= 0:
                if not starts[0] <= t:
                    return 0
                lo = 0
                break
            if starts[lo] <= t:
                break
            hi = lo
            step *= 2
    while hi - lo > 1:  # starts[lo] <= t < starts[hi]
        mid = (lo + hi) // 2
        if starts[mid] <= t:
            lo = mid
        else:
            hi = mid
    return lo


cdef inline double _service_in(
    const double[::1] starts, const double[::1] rates, const double[::1] cum, double t,
    Py_ssize_t j,
) noexcept nogil:
    """G(t), the service the profile offers from starts[0] to t (negative before it),
    given t's segment j."""
    return cum[j] + rates[j] * (t - starts[j])


cdef inline double _service_inverse(
    const double[::1] starts, const double[::1] rates, const double[::1] cum, double g
) noexcept nogil:
    """The earliest t with G(t) >= g; INFINITY if never reached."""
    cdef Py_ssize_t m = starts.shape[0], lo = 0, hi = m, mid
    while lo < hi:  # first j with cum[j] >= g
        mid = (lo + hi) // 2
        if cum[mid] >= g:
            hi = mid
        else:
            lo = mid + 1
    if lo == 0:  # reached at or before starts[0], where the first rate extends back
        return starts[0] - (cum[0] - g) / rates[0] if rates[0] > 0.0 else -INFINITY
    # cum[lo-1] < g, so segment lo-1 has a positive rate unless it is the open last one
    if rates[lo - 1] <= 0.0:
        return INFINITY
    return min(starts[lo - 1] + (g - cum[lo - 1]) / rates[lo - 1],
               starts[lo] if lo < m else INFINITY)


cdef inline double _between(
    const double[::1] starts, const double[::1] rates, const double[::1] cum,
    double t0, Py_ssize_t j0, double t1, Py_ssize_t j1,
) noexcept nogil:
    """G(t1) - G(t0) for t0 <= t1 in segments j0 <= j1, summed from t0 on: its rounding
    is relative to this service (and to cum[j] across segment ends), not to t0 or G(t0)."""
    if j1 <= j0:
        return rates[j0] * (t1 - t0)
    return rates[j0] * (starts[j0 + 1] - t0) + (cum[j1] - cum[j0 + 1]) + rates[j1] * (
        t1 - starts[j1])


cdef inline Py_ssize_t _relative_scan(
    const double[::1] arrival, const double[::1] work, const double[::1] deadline,
    const double[::1] starts, const double[::1] rates, const double[::1] cum,
    double tolerance, double[::1] slack,
) noexcept nogil:
    """Eq. 6 measured from each request's own arrival; fills slack and returns the first
    i with slack[i] < -tolerance, or -1.

    slack_i = G(a_i, d_i) - w_i + B_i with B_i = min over k <= i of
    G(a_k, a_i) - sum_{j=k..i-1} w_j, and B_i = min(0, B_{i-1} + G(a_{i-1}, a_i) - w_{i-1}):
    every term is a service or a backlog near request i, never a time or a cumulative
    sum since the first arrival, so precision does not fall as absolute times grow.
    """
    cdef Py_ssize_t i, first = -1, j_arrival = 0, j_deadline = 0, j_previous = 0
    cdef double relative = 0.0, s, rate = rates[0]
    if starts.shape[0] == 1:
        # One segment: every cursor is 0 and _between is rate * (t1 - t0), so this is the
        # loop below with its segment lookups (half its work at n <= 1000) left out.
        for i in range(arrival.shape[0]):
            if i > 0:
                relative = min(0.0, relative + rate * (arrival[i] - arrival[i - 1]) - work[i - 1])
            s = rate * (deadline[i] - arrival[i]) - work[i] + relative
            slack[i] = s
            if first < 0 and s < -tolerance:
                first = i
        return first
    for i in range(arrival.shape[0]):
        # Forward cursors: arrivals are sorted and each deadline's segment is at or after
        # its arrival's, so both indices mostly stay or step ahead.
        j_arrival = _segment_from(starts, arrival[i], j_arrival)
        j_deadline = _segment_from(starts, deadline[i], max(j_deadline, j_arrival))
        if i > 0:
            relative = min(0.0, relative + _between(starts, rates, cum, arrival[i - 1],
                                                    j_previous, arrival[i], j_arrival)
                           - work[i - 1])
        s = _between(starts, rates, cum, arrival[i], j_arrival, deadline[i], j_deadline) - (
            work[i]) + relative
        slack[i] = s
        if first < 0 and s < -tolerance:
            first = i
        j_previous = j_arrival
    return first


cdef inline double _scan(
    const double[::1] arrival, const double[::1] work, const double[::1] deadline,
    const double[::1] starts, const double[::1] rates, const double[::1] cum,
    double before, double best, double tolerance, double[::1] slack, Py_ssize_t *first,
) noexcept nogil:
    """The Eq. 6 loop of scan_window, in cumulative terms: fill slack from W_{lo-1} =
    before and the running minimum best, record in first[0] the first i with slack[i] <
    -tolerance (if first[0] is still -1), and return the running minimum after the last
    request. Its rounding grows with G and W (the service and work since the first
    arrival); lending keeps a margin for it and confirms with the relative scan."""
    cdef Py_ssize_t i, j_arrival = 0, j_deadline = 0
    cdef double through, s
    for i in range(arrival.shape[0]):
        j_arrival = _segment_from(starts, arrival[i], j_arrival)  # forward cursors
        j_deadline = _segment_from(starts, deadline[i], max(j_deadline, j_arrival))
        # sum_{j=k..i} w_j <= G(d_i) - G(a_k)  <=>  W_i - G(d_i) <= W_{k-1} - G(a_k),
        # so a running minimum of the right side over k replaces the inner loop.
        best = min(best, before - _service_in(starts, rates, cum, arrival[i], j_arrival))
        through = before + work[i]
        s = _service_in(starts, rates, cum, deadline[i], j_deadline) - through + best
        slack[i] = s
        if first[0] < 0 and s < -tolerance:
            first[0] = i
        before = through
    return best


cdef class _Scan:
    """The arrays of a scan: converted by name, lengths checked."""
    cdef const double[::1] arrival, work, deadline, starts, rates, cum
    cdef double[::1] slack

    def __cinit__(self, arrival, work, deadline, starts, rates, cum, slack):
        # Arrays that are float64 views already take one try, not one per array (each try
        # saves and restores the exception state: a fifth of a small scan's cost).
        try:
            if arrival is None or work is None or deadline is None or starts is None or (
                    rates is None or cum is None):
                raise TypeError
            self.arrival = arrival
            self.work = work
            self.deadline = deadline
            self.starts = starts
            self.rates = rates
            self.cum = cum
        except (TypeError, ValueError, BufferError):
            self.arrival = _input("arrival", arrival)
            self.work = _input("work", work)
            self.deadline = _input("deadline", deadline)
            self.starts = _input("starts", starts)
            self.rates = _input("rates", rates)
            self.cum = _input("cum", cum)
        self.slack = _output("slack", slack)
        _check_requests(self.arrival, self.work, self.deadline, self.slack)
        _check_profile(self.starts, self.rates, self.cum)


def feasibility_scan(
    arrival, work, deadline, starts, rates, cum, tolerance, slack,
) -> int:
    """Eq. 6: fill slack[i] = min over k <= i of the spare service on [a_k, d_i]; return
    the first i with slack[i] < -tolerance, or -1. O(n + m) for sorted arrivals and
    deadlines (forward segment cursors), O(n log m) at worst."""
    cdef _Scan a = _Scan(arrival, work, deadline, starts, rates, cum, slack)
    cdef double tol = _real("tolerance", tolerance)
    _check_at_least("tolerance", tol, 0.0)
    cdef Py_ssize_t first
    # Lengths checked above; pure C from here on.
    with nogil:
        first = _relative_scan(a.arrival, a.work, a.deadline, a.starts, a.rates, a.cum, tol,
                               a.slack)
    return first


def scan_window(
    arrival, work, deadline, starts, rates, cum, before, best, slack,
) -> float:
    """:func:`feasibility_scan` over a window of requests that continues a longer trace.

    ``before`` is the work of the requests ahead of the window (W_{lo-1}) and ``best`` the
    running minimum of W_{k-1} - G(a_k) over them (INFINITY for none). Fills slack for
    the window's requests as the full scan does (in cumulative terms, so to rounding
    relative to G and W), and returns the running minimum after the window's last request.
    """
    cdef _Scan a = _Scan(arrival, work, deadline, starts, rates, cum, slack)
    cdef double ahead = _real("before", before)
    cdef double minimum = _real("best", best)
    if not isfinite(ahead):
        raise ValueError(f"before must be finite, got {ahead!r}")
    if minimum != minimum:
        raise ValueError("best must not be NaN")
    cdef Py_ssize_t first = -1  # unused: a window reports no violation
    # Lengths checked above; pure C from here on.
    with nogil:
        minimum = _scan(a.arrival, a.work, a.deadline, a.starts, a.rates, a.cum, ahead, minimum,
                        INFINITY, a.slack, &first)
    return minimum


cdef inline double _next_share(
    double share, double arrival_rate, double backlog_s, double step, double factor,
    double min_share, double max_share, double burst_rate, double pressure_limit_s,
) noexcept nogil:
    """The AIMD rule, the one home of it: replay applies it each period, Python through
    next_share."""
    if arrival_rate > burst_rate or backlog_s > pressure_limit_s:
        share = share * factor
    else:
        share = share + step
    return min(max(share, min_share), max_share)


def next_share(share, arrival_rate, backlog_s, config):
    """One AIMD update under ``config``, an AIMDConfig (learnsched.capacity.aimd.next_share
    checks the arguments; here they are only converted by name, and ``config`` must be an
    AIMDConfig, whose fields its constructor checked)."""
    from learnsched.capacity.aimd import AIMDConfig  # here: that module imports this one

    if not isinstance(config, AIMDConfig):
        raise TypeError(f"config must be an AIMDConfig, got {type(config).__name__}")
    return _next_share(_real("share", share), _real("arrival_rate", arrival_rate),
                       _real("backlog_s", backlog_s), config.step, config.factor,
                       config.min_share, config.max_share, config.burst_rate,
                       config.pressure_limit_s)


def replay(
    arrival, work, estimate, starts, rates, cum, start_s, period_s, rate_window_s,
    share, step, factor, min_share, max_share, burst_rate, pressure_limit_s,
    admission_kind, admission_limit, stage_estimate, finish, shares,
) -> float:
    """Replay a trace through a FIFO fluid queue beside a background share.

    Each control period [t, t + period_s) the background holds a constant share of the
    service rate, chosen from the arrival rate over the last rate_window_s and the backlog
    (its drain time at the full rate, s); an admission rule may keep it at zero:
    0 none, 1 work budget (in-flight estimates + stage_estimate <= admission_limit),
    2 count threshold (requests in flight before the stage <= admission_limit). Writes finish for each request that completes
    (pass it filled with INFINITY) and shares per period; returns the background's
    service, work.
    """
    kind = admission_kind if type(admission_kind) is int else integer(
        "admission_kind", admission_kind, None, None)
    if kind not in (0, 1, 2):  # before the C int conversion, which a huge int overflows
        raise ValueError(f"admission_kind must be 0, 1 or 2, got {kind!r}")
    return _replay(
        _input("arrival", arrival), _input("work", work), _input("estimate", estimate),
        _input("starts", starts), _input("rates", rates), _input("cum", cum),
        _real("start_s", start_s), _real("period_s", period_s),
        _real("rate_window_s", rate_window_s), _real("share", share), _real("step", step),
        _real("factor", factor), _real("min_share", min_share), _real("max_share", max_share),
        _real("burst_rate", burst_rate), _real("pressure_limit_s", pressure_limit_s),
        kind,
        _real("admission_limit", admission_limit), _real("stage_estimate", stage_estimate),
        _output("finish", finish), _output("shares", shares),
    )


cdef object _replay(
    const double[::1] arrival, const double[::1] work, const double[::1] estimate,
    const double[::1] starts, const double[::1] rates, const double[::1] cum,
    double start_s, double period_s, double rate_window_s,
    double share, double step, double factor, double min_share, double max_share,
    double burst_rate, double pressure_limit_s,
    int admission_kind, double admission_limit, double stage_estimate,
    double[::1] finish, double[::1] shares,
):
    cdef Py_ssize_t n = arrival.shape[0], k, head = 0, nxt = 0, window = 0
    cdef Py_ssize_t j_start = 0, j_end = 0, j_event = 0  # forward segment cursors
    _same_length("work", work.shape[0], "arrival", n)
    _same_length("estimate", estimate.shape[0], "arrival", n)
    _same_length("finish", finish.shape[0], "arrival", n)
    _check_profile(starts, rates, cum)
    if not isfinite(start_s):  # a NaN period end would never be reached
        raise ValueError(f"start_s must be finite, got {start_s!r}")
    _check_positive_finite("period_s", period_s)
    _check_positive_finite("rate_window_s", rate_window_s)
    _check_at_least("step", step, 0.0)
    for name, value in (("share", share), ("factor", factor), ("min_share", min_share),
                        ("max_share", max_share)):
        _check_fraction(name, value)
    if min_share > max_share:
        raise ValueError(f"min_share must be <= max_share, got {min_share!r} > {max_share!r}")
    if burst_rate != burst_rate:
        raise ValueError("burst_rate must not be NaN")
    if pressure_limit_s != pressure_limit_s:
        raise ValueError("pressure_limit_s must not be NaN")
    if admission_limit != admission_limit:
        raise ValueError("admission_limit must not be NaN")
    _check_at_least("stage_estimate", stage_estimate, 0.0)
    cdef double t, t1, t_event, g_now, g_event, g_target, full_rate, backlog_s
    cdef double active, fg, remaining = 0.0, backlog = 0.0, in_flight = 0.0
    cdef double progress = 0.0
    cdef bint admitted
    # Lengths and scalars checked above; pure C from here on.
    with nogil:
        for k in range(shares.shape[0]):
            t = start_s + k * period_s
            t1 = t + period_s
            while window < nxt and arrival[window] < t - rate_window_s:
                window += 1
            j_start = _segment_from(starts, t, j_start)
            full_rate = rates[j_start]
            backlog_s = backlog / full_rate if full_rate > 0.0 else (
                INFINITY if backlog > 0.0 else 0.0)
            share = _next_share(share, (nxt - window) / rate_window_s, backlog_s, step,
                                factor, min_share, max_share, burst_rate, pressure_limit_s)
            if admission_kind == 1:  # Section 4.4: the stage must fit with in-flight work
                admitted = in_flight + stage_estimate <= admission_limit
            elif admission_kind == 2:  # Sections 4.4, 6.2: threshold 0 = only when idle
                admitted = (nxt - head) <= admission_limit
            else:
                admitted = True
            active = share if admitted else 0.0
            shares[k] = active
            fg = 1.0 - active
            g_now = _service_in(starts, rates, cum, t, j_start)
            j_end = _segment_from(starts, t1, max(j_end, j_start))
            progress += active * (_service_in(starts, rates, cum, t1, j_end) - g_now)
            # Serve the queue head up to each arrival in this period, then to its end.
            while True:
                t_event = arrival[nxt] if nxt < n and arrival[nxt] < t1 else t1
                j_event = _segment_from(starts, t_event, max(j_event, j_start))
                g_event = _service_in(starts, rates, cum, t_event, j_event)
                while head < nxt and fg > 0.0:
                    g_target = g_now + remaining / fg
                    if g_target > g_event:
                        remaining -= fg * (g_event - g_now)
                        backlog -= fg * (g_event - g_now)
                        break
                    finish[head] = min(max(_service_inverse(starts, rates, cum, g_target),
                                           arrival[head]), t_event)
                    backlog -= remaining
                    if admission_kind == 1:  # only a work budget reads estimates
                        in_flight -= estimate[head]
                    g_now = g_target
                    head += 1
                    remaining = work[head] if head < nxt else 0.0
                if head == nxt:
                    backlog = 0.0  # drop rounding residue once the queue is empty
                g_now = g_event
                if t_event >= t1:
                    break
                if head == nxt:
                    remaining = work[nxt]
                backlog += work[nxt]
                if admission_kind == 1:
                    in_flight += estimate[nxt]
                nxt += 1
    return progress


def tail_counts(ascending, points, out) -> None:
    """out[j] = #{i : ascending[i] > points[j]} by binary search (A.1); ``out`` is a
    writable C-contiguous intp array."""
    _tail_counts(_input("ascending", ascending), _input("points", points),
                 _counts_output(out))


cdef Py_ssize_t[::1] _counts_output(object values):
    cdef Py_ssize_t[::1] view
    try:
        if values is None:
            raise TypeError
        view = values
    except (TypeError, ValueError, BufferError):
        raise TypeError("out must be a writable, 1-D, C-contiguous intp array, got "
                        f"{type(values).__name__}") from None
    return view


cdef _tail_counts(const double[::1] ascending, const double[::1] points,
                  Py_ssize_t[::1] out):
    _same_length("out", out.shape[0], "points", points.shape[0])
    cdef Py_ssize_t j, lo, hi, mid, n = ascending.shape[0]
    # Lengths checked above; pure C from here on.
    with nogil:
        for j in range(points.shape[0]):
            lo = 0
            hi = n
            while lo < hi:  # first index with a value > points[j]
                mid = (lo + hi) // 2
                if ascending[mid] > points[j]:
                    hi = mid
                else:
                    lo = mid + 1
            out[j] = n - lo


# ---- idle windows of a trace (learnsched.calendar.idle_windows) -------------------------


cdef inline double _lent_between(
    double t0, double t1, double ready, double rate, double idle
) noexcept nogil:
    """_between over the profile lent until ``ready``: starts [start, ready], rates [idle,
    rate] with idle = rate * 0 and cum [0, 0], for start < t0 <= t1 (the segment of t is 1
    iff t >= ready): the same operations, so the same bits."""
    if t1 < ready:
        return idle * (t1 - t0)
    if t0 < ready:
        return idle * (ready - t0) + (0.0 - 0.0) + rate * (t1 - ready)
    return rate * (t1 - t0)


cdef class _Windows:
    """The state of one idle-windows search: the trace, its unlent scan (slack and running
    backlog term per request) and suffix aggregates, so that each window's feasibility tests
    read only the requests its loan delays."""
    cdef const double[::1] arrival, work, deadline
    cdef object work_array
    cdef double rate, tolerance
    cdef double[::1] relative, least_slack, latest_deadline, sum_hi, sum_lo
    cdef Py_ssize_t n, window_first
    cdef double window_tolerance, estimate, band
    cdef bint exact

    def __cinit__(self, arrival, work, deadline, double rate, double tolerance):
        self.arrival = _input("arrival", arrival)
        self.work = _input("work", work)
        self.deadline = _input("deadline", deadline)
        self.work_array = work
        _same_length("work", self.work.shape[0], "arrival", self.arrival.shape[0])
        _same_length("deadline", self.deadline.shape[0], "arrival", self.arrival.shape[0])
        self.n = self.arrival.shape[0]
        self.rate = rate
        self.tolerance = tolerance
        self.relative = _zeros(self.n)
        self.least_slack = _zeros(self.n + 1)
        self.latest_deadline = _zeros(self.n + 1)
        self.sum_hi = _zeros(self.n + 1)
        self.sum_lo = _zeros(self.n + 1)
        self._prepare()

    cdef void _prepare(self) noexcept:
        cdef Py_ssize_t i
        cdef double relative = 0.0, s, hi, t
        # The unlent scan of the whole trace (_relative_scan's one-segment loop); from a
        # request whose running term is 0 it is also the unlent scan of the rest of the trace.
        for i in range(self.n):
            if i > 0:
                relative = min(0.0, relative + self.rate * (self.arrival[i] - self.arrival[i - 1])
                               - self.work[i - 1])
            self.relative[i] = relative
            self.least_slack[i] = (self.rate * (self.deadline[i] - self.arrival[i])
                                   - self.work[i] + relative)
        self.least_slack[self.n] = INFINITY
        self.latest_deadline[self.n] = -INFINITY
        for i in range(self.n - 1, -1, -1):
            self.least_slack[i] = min(self.least_slack[i], self.least_slack[i + 1])
            self.latest_deadline[i] = max(self.deadline[i], self.latest_deadline[i + 1])
            # Suffix sums of work as an unevaluated sum hi + lo (TwoSum): to ~eps^2 of exact.
            hi = self.work[i] + self.sum_hi[i + 1]
            t = hi - self.work[i]
            self.sum_lo[i] = self.sum_lo[i + 1] + (
                (self.work[i] - (hi - t)) + (self.sum_hi[i + 1] - t))
            self.sum_hi[i] = hi

    cdef void _tolerance_from(self, Py_ssize_t first) noexcept:
        """The window's tolerance (tolerance x the pairwise sum of the remaining work, as
        check_feasibility computes it) is used through a bound: known to within `band` of
        the estimate, it is computed exactly only for a slack inside that band."""
        cdef double total = self.sum_hi[first] + self.sum_lo[first]
        self.window_first = first
        self.estimate = self.tolerance * total
        # Pairwise summation errs by under (log2 n + 2) eps of the sum: 128 (1 + log2 n) eps
        # of it bounds that and every rounding here with room to spare.
        self.band = self.estimate * 128.0 * (1.0 + log2(<double>self.n)) * 2.220446049250313e-16
        self.exact = False

    cdef bint _misses(self, double s) except -1:
        """Whether slack s is below -tolerance, for the window's tolerance."""
        if s < -(self.estimate + self.band):
            return True
        if s >= -(self.estimate - self.band):
            return False
        if not self.exact:
            rest = self.work_array[self.window_first:]
            self.window_tolerance = self.tolerance * float(rest.sum())
            self.exact = True
        return s < -self.window_tolerance

    cdef bint _rest_unlent_feasible(self, Py_ssize_t first) except -1:
        cdef Py_ssize_t k
        cdef double relative = 0.0
        if self.relative[first] == 0.0:  # the rest's unlent scan is the whole trace's from here
            return not self._misses(self.least_slack[first])
        for k in range(first, self.n):
            if k > first:
                relative = min(0.0, relative + self.rate * (self.arrival[k] - self.arrival[k - 1])
                               - self.work[k - 1])
            if self._misses(self.rate * (self.deadline[k] - self.arrival[k])
                            - self.work[k] + relative):
                return False
        return True

    cdef bint _lent_feasible(self, Py_ssize_t first, double ready) except -1:
        """Eq. 6 for the requests from `first` on with the service lent until `ready`. Once
        the loan has ended and the backlog term is back to 0, the scan is the rest's unlent
        scan, which passed: the test stops there."""
        cdef Py_ssize_t k
        cdef double relative = 0.0, idle = self.rate * 0.0
        for k in range(first, self.n):
            if k > first:
                relative = min(0.0, relative + _lent_between(
                    self.arrival[k - 1], self.arrival[k], ready, self.rate, idle)
                    - self.work[k - 1])
                if self.arrival[k - 1] >= ready and relative == 0.0:
                    return True
            if self._misses(_lent_between(self.arrival[k], self.deadline[k], ready, self.rate, idle)
                            - self.work[k] + relative):
                return False
        return True

    cdef double _return_deadline(
        self, Py_ssize_t first, double start, double resolution
    ) except? -1.0:
        """return_deadline(rest, capacity from start, share 1) then min with the latest
        deadline (idle_windows' _window), by the same bisection; NaN if the rest misses
        deadlines even unlent."""
        cdef double low = start, high = self.latest_deadline[first], last, mid, ready
        last = high
        self._tolerance_from(first)
        if not self._rest_unlent_feasible(first):
            return NAN
        if self._lent_feasible(first, high):
            ready = high
        else:
            while high - low > resolution:
                mid = 0.5 * (low + high)
                if not (low < mid and mid < high):
                    break
                if self._lent_feasible(first, mid):
                    low = mid
                else:
                    high = mid
            ready = low
        if ready >= last:  # lending through the last deadline harms no request
            ready = INFINITY
        return last if last < ready else ready


cdef double[::1] _zeros(Py_ssize_t n):
    # No zeroing of an empty array: clone would memset(NULL, 0, 0), undefined behaviour
    # that UBSan reports (an empty trace through idle_window_bounds).
    return array.clone(array.array("d"), n, zero=n > 0)


def idle_window_bounds(arrival, work, deadline, rate, recovery_s, min_useful_s, resolution,
                       tolerance):
    """learnsched.calendar.idle_windows's walk over a trace (checked by it) in one kernel:
    ``(starts, ready_by, failed)``, the kept windows' starts and return deadlines, and the
    first request of a window whose rest misses deadlines even unlent (-1 if none).

    Each window's return deadline is return_deadline's bisection with each test bit for bit
    Eq. 6 over the lent profile, but reading only the requests the loan delays (until the
    backlog it left is gone), and the unlent tests from one scan of the whole trace: O(n)
    per window in the worst case, about the requests of one busy period in practice.
    """
    cdef double r = _real("rate", rate), tol = _real("tolerance", tolerance)
    cdef double path_s = _real("recovery_s", recovery_s)
    cdef double useful = _real("min_useful_s", min_useful_s)
    cdef double step = _real("resolution", resolution), free, a, service, ready
    _check_positive_finite("rate", r)
    _check_at_least("tolerance", tol, 0.0)
    _check_at_least("recovery_s", path_s, 0.0)
    _check_at_least("min_useful_s", useful, 0.0)
    _check_positive_finite("resolution", step)
    cdef _Windows w = _Windows(arrival, work, deadline, r, tol)
    cdef Py_ssize_t i, failed = -1
    starts, readies = [], []
    if w.n == 0:
        return starts, readies, failed
    free = w.arrival[0]
    for i in range(w.n):
        a = w.arrival[i]
        service = w.work[i] / w.rate
        if i > 0 and free < a and free + path_s + useful <= w.deadline[i] - service:
            ready = w._return_deadline(i, free, step)
            if ready != ready:
                failed = i
                break
            if (ready - path_s) - free >= useful:  # IdleWindow.useful_s
                starts.append(free)
                readies.append(ready)
                free = ready
        free = (free if free > a else a) + service
    return starts, readies, failed
