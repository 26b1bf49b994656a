// Reading `learnsched online` SPEC files (learnsched._core.read_online_spec): standard JSON
// parsed in C++, every value as Python's json module gives it, except the sampled
// calendars of a forecast ("forecast": {"samples": [...]}), which go straight into packed
// arrays (no Python float per number). A SPEC of 1000 calendars x 64 samples holds
// millions of numbers: this is where `online` spent most of its time in json.loads.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace py = pybind11;

namespace {

class JsonError : public std::runtime_error {
  public:
    explicit JsonError(const std::string& what) : std::runtime_error(what) {}
};

// Nested deeper than allowed: reported as "JSON nesting depth N exceeds the limit of M".
class TooDeep : public std::runtime_error {
  public:
    explicit TooDeep(const std::string& what) : std::runtime_error(what) {}
};

class Reader {
  public:
    Reader(std::string_view text, int max_depth, py::object packed_type)
        : text_(text), max_depth_(max_depth), packed_type_(std::move(packed_type)) {}

    py::object document() {
        skip_space();
        py::object value = parse(0, false);
        skip_space();
        if (at_ < text_.size()) fail("Extra data");
        return value;
    }

  private:
    [[noreturn]] void fail(const std::string& what) const {
        std::size_t line = 1;
        std::size_t column = 1;
        for (std::size_t i = 0; i < at_ && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        throw JsonError(what + ": line " + std::to_string(line) + " column " +
                        std::to_string(column) + " (char " + std::to_string(at_) + ")");
    }

    void skip_space() {
        while (at_ < text_.size()) {
            const char c = text_[at_];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
            ++at_;
        }
    }

    bool take(char c) {
        if (at_ < text_.size() && text_[at_] == c) {
            ++at_;
            return true;
        }
        return false;
    }

    bool literal(std::string_view word) {
        if (text_.substr(at_, word.size()) == word) {
            at_ += word.size();
            return true;
        }
        return false;
    }

    // A value at nesting `depth`; `samples`: the value of a forecast's "samples" key.
    py::object parse(int depth, bool samples) {
        if (at_ >= text_.size()) fail("Expecting value");
        const char c = text_[at_];
        if (c == '{') return object(depth + 1);
        if (c == '[') {
            if (samples) {
                const std::size_t mark = at_;
                py::object packed = packed_calendars(depth);
                if (!packed.is_none()) return packed;
                at_ = mark;  // not plain calendars: Python objects, for the checker to name
            }
            return array(depth + 1);
        }
        if (c == '"') return string();
        if (literal("true")) return py::bool_(true);
        if (literal("false")) return py::bool_(false);
        if (literal("null")) return py::none();
        for (const std::string_view constant : {"NaN", "Infinity", "-Infinity"}) {
            if (literal(constant)) {
                at_ -= constant.size();
                fail(std::string(constant) + " is not standard JSON");
            }
        }
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        fail("Expecting value");
    }

    void deeper(int depth) const {
        if (depth > max_depth_) {
            throw TooDeep("JSON nesting depth " + std::to_string(text_depth()) +
                          " exceeds the limit of " + std::to_string(max_depth_));
        }
    }

    // The deepest nesting of [ and { in the whole text, outside strings (for the message).
    int text_depth() const {
        int deepest = 0;
        int level = 0;
        bool in_string = false;
        bool escaped = false;
        for (const char c : text_) {
            if (in_string) {
                if (escaped) {
                    escaped = false;
                } else if (c == '\\') {
                    escaped = true;
                } else if (c == '"') {
                    in_string = false;
                }
            } else if (c == '"') {
                in_string = true;
            } else if (c == '[' || c == '{') {
                deepest = std::max(deepest, ++level);
            } else if (c == ']' || c == '}') {
                --level;
            }
        }
        return deepest;
    }

    py::object object(int depth) {
        deeper(depth);
        ++at_;  // '{'
        py::dict out;
        skip_space();
        if (take('}')) return std::move(out);
        for (;;) {
            skip_space();
            if (at_ >= text_.size() || text_[at_] != '"') {
                fail("Expecting property name enclosed in double quotes");
            }
            py::object key = string();
            skip_space();
            if (!take(':')) fail("Expecting ':' delimiter");
            skip_space();
            // Compared as str: a key with a lone surrogate ("\ud800", standard JSON) has
            // no UTF-8 view to cast to.
            const bool samples = in_forecast_ && is_key(key, "samples");
            const bool forecast = is_key(key, "forecast");
            const bool outer = in_forecast_;
            in_forecast_ = forecast;
            py::object value = parse(depth, samples);
            in_forecast_ = outer;
            out[key] = std::move(value);
            skip_space();
            if (take('}')) return std::move(out);
            if (!take(',')) fail("Expecting ',' delimiter");
        }
    }

    py::object array(int depth) {
        deeper(depth);
        ++at_;  // '['
        py::list out;
        skip_space();
        if (take(']')) return std::move(out);
        const bool outer = in_forecast_;
        in_forecast_ = false;
        for (;;) {
            skip_space();
            out.append(parse(depth, false));
            skip_space();
            if (take(']')) break;
            if (!take(',')) fail("Expecting ',' delimiter");
        }
        in_forecast_ = outer;
        return std::move(out);
    }

    // Past a JSON number's fraction and exponent at at_, if any (integral = false then).
    void fraction_and_exponent(bool& integral) {
        if (at_ + 1 < text_.size() && text_[at_] == '.' &&
            std::isdigit(static_cast<unsigned char>(text_[at_ + 1]))) {
            integral = false;
            ++at_;
            while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
        }
        if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
            std::size_t exp = at_ + 1;
            if (exp < text_.size() && (text_[exp] == '+' || text_[exp] == '-')) ++exp;
            if (exp < text_.size() && std::isdigit(static_cast<unsigned char>(text_[exp]))) {
                integral = false;
                at_ = exp;
                while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
                    ++at_;
                }
            }
        }
    }

    // The JSON number at at_ as Python's json gives it: an int (exact), or the correctly
    // rounded float of its text.
    py::object number() {
        const std::size_t begin = at_;
        bool integral = true;
        take('-');
        if (take('0')) {
        } else if (at_ < text_.size() && text_[at_] >= '1' && text_[at_] <= '9') {
            while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
        } else {
            fail("Expecting value");
        }
        fraction_and_exponent(integral);
        const std::string digits(text_.substr(begin, at_ - begin));
        if (integral) {
            PyObject* value = PyLong_FromString(digits.c_str(), nullptr, 10);
            if (value == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(value);
        }
        return py::float_(to_double(digits));
    }

    static double to_double(const std::string& digits) {
        double value = 0.0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (error == std::errc::result_out_of_range) {  // as float(): overflow to inf, underflow to 0
            const bool negative = digits.front() == '-';
            const std::size_t e = digits.find_first_of("eE");
            const bool tiny = e != std::string::npos && digits[e + 1] == '-';
            const double big = tiny ? 0.0 : std::numeric_limits<double>::infinity();
            return negative ? -big : big;
        }
        (void)end;
        return value;
    }

    unsigned hex4() {
        if (at_ + 4 > text_.size()) fail("Invalid \\uXXXX escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = text_[at_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
            else fail("Invalid \\uXXXX escape");
        }
        return v;
    }

    static bool is_key(const py::object& key, const char* word) {
        return PyUnicode_CompareWithASCIIString(key.ptr(), word) == 0;
    }

    // A string (at_ on its opening quote), escapes and UTF-8 decoded, lone surrogates
    // kept as Python's json keeps them.
    py::object string() {
        ++at_;
        std::u32string out;
        for (;;) {
            if (at_ >= text_.size()) fail("Unterminated string starting at");
            const auto c = static_cast<unsigned char>(text_[at_]);
            if (c == '"') {
                ++at_;
                break;
            }
            if (c < 0x20) fail("Invalid control character at");
            if (c == '\\') {
                ++at_;
                if (at_ >= text_.size()) fail("Unterminated string starting at");
                const char e = text_[at_++];
                switch (e) {
                    case '"': out.push_back(U'"'); break;
                    case '\\': out.push_back(U'\\'); break;
                    case '/': out.push_back(U'/'); break;
                    case 'b': out.push_back(U'\b'); break;
                    case 'f': out.push_back(U'\f'); break;
                    case 'n': out.push_back(U'\n'); break;
                    case 'r': out.push_back(U'\r'); break;
                    case 't': out.push_back(U'\t'); break;
                    case 'u': {
                        unsigned v = hex4();
                        if (v >= 0xD800 && v <= 0xDBFF && text_.substr(at_, 2) == "\\u") {
                            const std::size_t mark = at_;
                            at_ += 2;
                            const unsigned low = hex4();
                            if (low >= 0xDC00 && low <= 0xDFFF) {
                                v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
                            } else {
                                at_ = mark;
                            }
                        }
                        out.push_back(static_cast<char32_t>(v));
                        break;
                    }
                    default: --at_; fail("Invalid \\escape");
                }
                continue;
            }
            // UTF-8, surrogates allowed (a str encoded with surrogatepass); checked, as
            // private callers may pass any bytes.
            if (c >= 0xF8 || (c >= 0x80 && c < 0xC0)) fail("Invalid UTF-8 byte at");
            char32_t code = c;
            int more = 0;
            if (c >= 0xF0) {
                code = c & 0x07u;
                more = 3;
            } else if (c >= 0xE0) {
                code = c & 0x0Fu;
                more = 2;
            } else if (c >= 0xC0) {
                code = c & 0x1Fu;
                more = 1;
            }
            ++at_;
            for (int k = 0; k < more; ++k) {
                if (at_ >= text_.size() ||
                    (static_cast<unsigned char>(text_[at_]) & 0xC0u) != 0x80u) {
                    fail("Invalid UTF-8 byte at");
                }
                code = (code << 6) | (static_cast<unsigned char>(text_[at_++]) & 0x3Fu);
            }
            if (code > 0x10FFFF) fail("Invalid UTF-8 byte at");
            out.push_back(code);
        }
        PyObject* s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.data(),
                                                static_cast<Py_ssize_t>(out.size()));
        if (s == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(s);
    }

    // [[[start, end], ...], ...] of plain JSON numbers, finite, each calendar non-empty,
    // its windows sorted and non-overlapping with end > start: packed; anything else None.
    py::object packed_calendars(int depth) {
        if (depth + 3 > max_depth_) return py::none();
        std::vector<double> flat;
        std::vector<std::int64_t> offsets{0};
        ++at_;  // '['
        skip_space();
        if (take(']')) return py::none();  // no calendar: the checker says so
        for (;;) {
            skip_space();
            if (!take('[')) return py::none();
            skip_space();
            if (take(']')) return py::none();  // an empty calendar: the checker says so
            double previous_end = -std::numeric_limits<double>::infinity();
            for (;;) {
                skip_space();
                if (!take('[')) return py::none();
                double start = 0.0;
                double end = 0.0;
                skip_space();
                if (!plain_number(start)) return py::none();
                skip_space();
                if (!take(',')) return py::none();
                skip_space();
                if (!plain_number(end)) return py::none();
                skip_space();
                if (!take(']')) return py::none();
                if (!(end > start) || start < previous_end) return py::none();
                flat.push_back(start);
                flat.push_back(end);
                previous_end = end;
                skip_space();
                if (take(']')) break;
                if (!take(',')) return py::none();
            }
            offsets.push_back(static_cast<std::int64_t>(flat.size() / 2));
            skip_space();
            if (take(']')) break;
            if (!take(',')) return py::none();
        }
        py::array_t<double> windows({static_cast<py::ssize_t>(flat.size() / 2), py::ssize_t{2}});
        std::copy(flat.begin(), flat.end(), windows.mutable_data());
        py::array_t<std::int64_t> bounds(static_cast<py::ssize_t>(offsets.size()), offsets.data());
        return packed_type_(windows, bounds);
    }

    // A finite JSON number as a double (false, position unspecified, if not one).
    bool plain_number(double& out) {
        const std::size_t begin = at_;
        if (at_ >= text_.size()) return false;
        const char c = text_[at_];
        if (c != '-' && !(c >= '0' && c <= '9')) return false;
        bool integral = true;
        take('-');
        if (!take('0')) {
            if (at_ >= text_.size() || !(text_[at_] >= '1' && text_[at_] <= '9')) return false;
            while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
        }
        fraction_and_exponent(integral);
        const auto [end, error] = std::from_chars(text_.data() + begin, text_.data() + at_, out);
        if (integral && out == 0.0) out = 0.0;  // an int -0 is 0, as float(int("-0"))
        // Ints beyond a double and overflows take the checker's path (its messages).
        return error == std::errc() && end == text_.data() + at_ && std::isfinite(out) &&
               at_ - begin < 300;
    }

    std::string_view text_;
    std::size_t at_ = 0;
    int max_depth_;
    py::object packed_type_;
    bool in_forecast_ = false;  // parsing the value of a "forecast" key (an object)
};

}  // namespace

// The deepest nesting read_online_spec may be asked to allow (Python's own limit).
constexpr int kMaxDepth = 1000;

void bind_spec(py::module_& m) {
    m.def(
        "read_online_spec",
        [](const py::bytes& data, int max_depth, const py::object& packed_type) {
            // The reader recurses once per level: a deep limit would let a document of
            // brackets overflow the C stack instead of being refused.
            if (max_depth < 0 || max_depth > kMaxDepth) {
                throw std::invalid_argument("max_depth must be in [0, " +
                                            std::to_string(kMaxDepth) + "], got " +
                                            std::to_string(max_depth));
            }
            const std::string_view text = data;
            try {
                return Reader(text, max_depth, packed_type).document();
            } catch (const JsonError& e) {
                throw std::invalid_argument(std::string("not valid JSON: ") + e.what());
            } catch (const TooDeep& e) {
                throw std::invalid_argument(e.what());
            }
        },
        py::arg("data"), py::arg("max_depth"), py::arg("packed_type"),
        "Standard JSON (UTF-8 bytes) as Python's json module reads it, except each "
        "forecast's plain \"samples\" array: packed_type(windows (M, 2), offsets (N + 1)).");
}
