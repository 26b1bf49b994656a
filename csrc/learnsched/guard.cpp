#include "guard.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace learnsched {

void validate(const Guard& guard) {
    if (std::isnan(guard.epsilon) || guard.epsilon < 0.0) {
        throw std::invalid_argument("epsilon must be >= 0 s-eq., got " + std::to_string(guard.epsilon));
    }
}

}  // namespace learnsched
