// Contiguous blocks of independent work items on a few threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace learnsched {

// Call work(begin, end) on contiguous blocks of [0, count) with at most `threads`
// workers (threads >= 1, checked by the caller); each block writes only its own
// outputs, so results do not depend on the thread count. The first exception of any
// block is rethrown after every started worker has finished.
template <class Work>
void run_blocks(std::size_t count, int threads, Work&& work) {
    const std::size_t workers =
        std::min<std::size_t>(static_cast<std::size_t>(threads), std::max<std::size_t>(count, 1));
    if (workers == 1) {
        work(std::size_t{0}, count);
        return;
    }
    std::vector<std::exception_ptr> errors(workers);
    std::vector<std::thread> pool;
    pool.reserve(workers);
    const std::size_t block = (count + workers - 1) / workers;
    try {
        for (std::size_t w = 0; w < workers; ++w) {
            const std::size_t begin = std::min(count, w * block);
            const std::size_t end = std::min(count, begin + block);
            pool.emplace_back([&, w, begin, end] {
                try {
                    work(begin, end);
                } catch (...) {
                    errors[w] = std::current_exception();
                }
            });
        }
    } catch (...) {  // a thread could not start: let the started ones finish, then report
        for (std::thread& t : pool) t.join();
        throw;
    }
    for (std::thread& t : pool) t.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace learnsched
