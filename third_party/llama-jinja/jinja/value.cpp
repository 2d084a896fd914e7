#include <charconv>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <limits>
#include "runtime.h"
#include "unicode.h"
#include "value.h"

// for converting from JSON to jinja values
#include "json.h"

#include <sstream>
#include <string>
#include <cctype>
#include <vector>
#include <optional>
#include <algorithm>

#define FILENAME "jinja-value"

namespace jinja {

static value urlencode(const func_args & args);       // wick: below
static value filesizeformat(const func_args & args);  // wick: below

// func_args method implementations

value func_args::get_kwarg(const std::string & key, value default_val) const {
    for (const auto & arg : args) {
        if (is_val<value_kwarg>(arg)) {
            auto * kwarg = cast_val<value_kwarg>(arg);
            if (kwarg->key == key) {
                return kwarg->val;
            }
        }
    }
    return default_val;
}

value func_args::get_kwarg_or_pos(const std::string & key, size_t pos) const {
    value val = get_kwarg(key, mk_val<value_undefined>());

    if (val->is_undefined() && pos < count() && !is_val<value_kwarg>(args[pos])) {
        return args[pos];
    }

    return val;
}

value func_args::get_pos(size_t pos) const {
    if (count() > pos) {
        return args[pos];
    }
    throw raised_exception("Function '" + func_name + "' expected at least " + std::to_string(pos + 1) + " arguments, got " + std::to_string(count()));
}

value func_args::get_pos(size_t pos, value default_val) const {
    if (count() > pos) {
        return args[pos];
    }
    return default_val;
}

void func_args::push_back(const value & val) {
    args.push_back(val);
}

void func_args::push_front(const value & val) {
    args.insert(args.begin(), val);
}

const std::vector<value> & func_args::get_args() const {
    return args;
}

/**
 * Function that mimics Python's array slicing.
 */
template<typename T>
static T slice(const T & array, int64_t start, int64_t stop, int64_t step = 1) {
    int64_t len = static_cast<int64_t>(array.size());
    int64_t direction = (step > 0) ? 1 : ((step < 0) ? -1 : 0);
    int64_t start_val = 0;
    int64_t stop_val = 0;
    if (direction >= 0) {
        start_val = start;
        if (start_val < 0) {
            start_val = std::max(len + start_val, (int64_t)0);
        } else {
            start_val = std::min(start_val, len);
        }

        stop_val = stop;
        if (stop_val < 0) {
            stop_val = std::max(len + stop_val, (int64_t)0);
        } else {
            stop_val = std::min(stop_val, len);
        }
    } else {
        start_val = start;
        if (start_val < 0) {
            start_val = std::max(len + start_val, (int64_t)0);
        } else {
            start_val = std::min(start_val, len - 1);
        }

        stop_val = stop;
        if (stop_val < -1) {
            stop_val = std::max(len + stop_val, (int64_t)-1);
        } else {
            stop_val = std::min(stop_val, len - 1);
        }
    }
    T result;
    if (direction == 0) {
        return result;
    }
    for (int64_t i = start_val; direction * i < direction * stop_val; i += step) {
        if (i >= 0 && i < len) {
            result.push_back(array[static_cast<size_t>(i)]);
        }
        // wick: stop before i + step overflows (it would be past the end)
        if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
    }
    return result;
}

template<typename T>
static value empty_value_fn(const func_args &) {
    if constexpr (std::is_same_v<T, value_int>) {
        return mk_val<T>(0);
    } else if constexpr (std::is_same_v<T, value_float>) {
        return mk_val<T>(0.0);
    } else if constexpr (std::is_same_v<T, value_bool>) {
        return mk_val<T>(false);
    } else {
        return mk_val<T>();
    }
}
template<typename T>
static value test_type_fn(const func_args & args) {
    args.ensure_count(1);
    bool is_type = is_val<T>(args.get_pos(0));
    JJ_DEBUG("test_type_fn: type=%s result=%d", typeid(T).name(), is_type ? 1 : 0);
    return mk_val<value_bool>(is_type);
}
template<typename T, typename U>
static value test_type_fn(const func_args & args) {
    args.ensure_count(1);
    bool is_type = is_val<T>(args.get_pos(0)) || is_val<U>(args.get_pos(0));
    JJ_DEBUG("test_type_fn: type=%s or %s result=%d", typeid(T).name(), typeid(U).name(), is_type ? 1 : 0);
    return mk_val<value_bool>(is_type);
}
template<typename T, typename U, typename V>
static value test_type_fn(const func_args & args) {
    args.ensure_count(1);
    bool is_type = is_val<T>(args.get_pos(0)) || is_val<U>(args.get_pos(0)) || is_val<V>(args.get_pos(0));
    JJ_DEBUG("test_type_fn: type=%s, %s or %s result=%d", typeid(T).name(), typeid(U).name(), typeid(V).name(), is_type ? 1 : 0);
    return mk_val<value_bool>(is_type);
}
template<typename T, typename U, typename V, typename W>
static value test_type_fn(const func_args & args) {
    args.ensure_count(1);
    bool is_type = is_val<T>(args.get_pos(0)) || is_val<U>(args.get_pos(0)) || is_val<V>(args.get_pos(0)) || is_val<W>(args.get_pos(0));
    JJ_DEBUG("test_type_fn: type=%s, %s, %s or %s result=%d", typeid(T).name(), typeid(U).name(), typeid(V).name(), typeid(W).name(), is_type ? 1 : 0);
    return mk_val<value_bool>(is_type);
}
template<value_compare_op op>
static value test_compare_fn(const func_args & args) {
    args.ensure_count(2, 2);
    return mk_val<value_bool>(value_compare(args.get_pos(0), args.get_pos(1), op));
}
// wick: the builtin a filter's name stands for (Jinja2's aliases), for apply_filter and map
std::string filter_builtin_name(const std::string & name) {
    if (name == "count") return "length";
    if (name == "d") return "default";
    if (name == "e") return "escape";
    if (name == "trim") return "strip";
    if (name == "title") return "title_words"; // wick: the filter is not str.title()
    if (name == "slice") return "slice_columns"; // wick: the filter is not a[start:stop]
    return name;
}


static void append_codepoint_as_ascii_json_escape(std::string & out, uint32_t codepoint) {
    auto append_u16 = [&out](uint32_t value) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned int>(value));
        out += buf;
    };

    if (codepoint <= 0xFFFF) {
        append_u16(codepoint);
        return;
    }

    codepoint -= 0x10000;
    append_u16(0xD800 + ((codepoint >> 10) & 0x3FF));
    append_u16(0xDC00 + (codepoint & 0x3FF));
}

static std::string json_ensure_ascii_preserving_format(const std::string & json_str) {
    std::string output;
    output.reserve(json_str.size());

    bool in_string = false;
    bool escaped = false;

    for (size_t pos = 0; pos < json_str.size();) {
        const char ch = json_str[pos];
        if (!in_string) {
            output.push_back(ch);
            if (ch == '"') {
                in_string = true;
            }
            ++pos;
            continue;
        }

        if (escaped) {
            output.push_back(ch);
            escaped = false;
            ++pos;
            continue;
        }

        if (ch == '\\') {
            output.push_back(ch);
            escaped = true;
            ++pos;
            continue;
        }

        if (ch == '"') {
            output.push_back(ch);
            in_string = false;
            ++pos;
            continue;
        }

        const unsigned char uch = static_cast<unsigned char>(ch);
        if (uch < 0x80) {
            output.push_back(ch);
            ++pos;
            continue;
        }

        auto parsed = common_parse_utf8_codepoint(json_str, pos);
        if (parsed.status != utf8_parse_result::SUCCESS) {
            output += "\\ufffd";
            ++pos;
            continue;
        }

        append_codepoint_as_ascii_json_escape(output, parsed.codepoint);
        pos += parsed.bytes_consumed;
    }

    return output;
}

static value tojson(const func_args & args) {
    args.ensure_count(1, 5);
    value val_ascii      = args.get_kwarg_or_pos("ensure_ascii", 1);
    value val_indent     = args.get_kwarg_or_pos("indent",       2);
    value val_separators = args.get_kwarg_or_pos("separators",   3);
    value val_sort       = args.get_kwarg_or_pos("sort_keys",    4);
    int indent = -1;
    if (args.ctx.is_get_stats) {
        // mark as used (recursively) for stats
        auto val_input = args.get_pos(0);
        value_t::stats_t::mark_used(const_cast<value&>(val_input), true);
    }
    if (is_val<value_int>(val_indent)) {
        // wick: an indent is repeated once per nesting level on every line: bounded like a string
        const int64_t width = val_indent->as_int();
        if (width > 1024) {
            throw limit_exceeded("tojson(indent=" + std::to_string(width) + "): more than the limit of 1024");
        }
        indent = static_cast<int>(width);
    }
    const bool ensure_ascii = val_ascii->as_bool(); // undefined == false
    auto separators = (is_val<value_array>(val_separators) ? val_separators : mk_val<value_array>())->as_array();
    std::string item_sep = separators.size() > 0 ? separators[0]->as_string().str() : (indent < 0 ? ", " : ",");
    std::string key_sep = separators.size() > 1 ? separators[1]->as_string().str() : ": ";
    std::string json_str = value_to_json(args.get_pos(0), indent, item_sep, key_sep, val_sort->as_bool()); // wick: sort_keys
    if (ensure_ascii) {
        json_str = json_ensure_ascii_preserving_format(json_str);
    }
    return mk_val<value_string>(json_str);
}

static value & get_attribute(const value & val, const value & attr, value & default_val) {
    if (!attr->is_undefined()) {
        if (is_val<value_array>(val)) {
            value idx = attr;

            if (is_val<value_string>(attr)) {
                const std::string s = attr->as_string().str();
                if (!s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
                    try {
                        idx = mk_val<value_int>(std::stoll(s));
                    } catch (...) {
                        idx = mk_val<value_undefined>();
                    }
                }
            }

            return val->at(idx, default_val);
        } else if (is_val<value_object>(val)) {
            return val->at(attr, default_val);
        }
    }
    return default_val;
}

// wick: Jinja2's select/reject (by_attr false) and selectattr/rejectattr (true): the item (or its
// attribute, the first argument) is kept where the named test passes (with the arguments after
// the test's name), or where it is true when no test is named. The engine had one function for
// the four, which tested nothing for `select('odd')` and took selectattr's attribute for a test.
template<bool is_reject, bool by_attr>
static value select_items(const func_args & args) {
    const char * name = by_attr ? (is_reject ? "rejectattr" : "selectattr") : (is_reject ? "reject" : "select");
    args.ensure_count(by_attr ? 2 : 1);
    if (!is_val<value_array>(args.get_pos(0))) {
        throw raised_exception(std::string(name) + ": the input must be a list");
    }
    const auto & items = args.get_args();
    const size_t test_at = by_attr ? 2 : 1;
    value attribute = by_attr ? items[1] : value();
    func_handler test_fn;
    if (items.size() > test_at) {
        if (!is_val<value_string>(items[test_at])) {
            throw raised_exception(std::string(name) + ": the test's name must be a string");
        }
        const std::string test_name = items[test_at]->as_string().str();
        auto & builtins = global_builtins();
        auto it = builtins.find("test_is_" + test_name);
        if (it == builtins.end()) {
            throw raised_exception(std::string(name) + ": unknown test '" + test_name + "'");
        }
        test_fn = it->second;
    }
    auto out = mk_val<value_array>();
    value val_default = mk_val<value_undefined>();
    for (const auto & item : args.get_pos(0)->as_array()) {
        value subject = by_attr ? get_attribute(item, attribute, val_default) : item;
        bool selected;
        if (test_fn) {
            func_args test_args(args.ctx);
            test_args.func_name = name;
            test_args.push_back(subject);
            for (size_t k = test_at + 1; k < items.size(); ++k) test_args.push_back(items[k]);
            selected = test_fn(test_args)->as_bool();
        } else {
            selected = subject->as_bool();
        }
        if (selected != is_reject) out->push_back(item);
    }
    return out;
}

static value default_value(const func_args & args) {
    args.ensure_count(2, 3);
    value val_check = args.get_kwarg_or_pos("boolean", 2);
    bool check_bool = val_check->as_bool(); // undefined == false
    bool no_value = check_bool
        ? (!args.get_pos(0)->as_bool())
        : (args.get_pos(0)->is_undefined() || args.get_pos(0)->is_none());
    return no_value ? args.get_pos(1) : args.get_pos(0);
}

static value toobject(const func_args & args) {
    auto out = mk_val<value_object>();
    value iter = args.get_pos(0, mk_val<value_undefined>());
    bool iter_first = false;
    if (is_val<value_array>(iter)) {
        iter_first = true;
        for (const auto & it : iter->as_array()) {
            if (is_val<value_array>(it) && it->as_array().size() == 2) {
                auto tuple = it->as_array();
                auto key = tuple[0];
                auto val = tuple[1];
                JJ_DEBUG("namespace/dict: adding key '%s'", key->as_string().str().c_str());
                out->insert(key, val);
            } else {
                throw raised_exception("namespace/dict() iterable argument must consist of tuples, not " + it->type());
            }
        }
    } else if (is_val<value_object>(iter)) {
        iter_first = true;
        for (const auto & pair : iter->as_ordered_object()) {
            JJ_DEBUG("namespace/dict: adding key '%s'", pair.first->as_string().str().c_str());
            out->insert(pair.first, pair.second);
        }
    }
    for (const auto & arg : args.get_args()) {
        if (is_val<value_kwarg>(arg)) {
            auto kwarg = cast_val<value_kwarg>(arg);
            JJ_DEBUG("namespace/dict: adding key '%s'", kwarg->key.c_str());
            out->insert(kwarg->key, kwarg->val);
        } else if (!iter_first) {
            throw raised_exception("namespace/dict() arguments must be kwargs, dict and/or iterable of tuples, not " + arg->type());
        }
        iter_first = false;
    }
    return out;
}

const func_builtins & global_builtins() {
    static const func_builtins builtins = {
        {"raise_exception", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            std::string msg = args.get_pos(0)->as_string().str();
            throw raised_exception("Jinja Exception: " + msg);
        }},
        {"dict", toobject},
        {"namespace", toobject},
        {"strftime_now", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            std::string format = args.get_pos(0)->as_string().str();
            // get current time
            // TODO: make sure this is the same behavior as Python's strftime
            char buf[100];
            if (std::strftime(buf, sizeof(buf), format.c_str(), std::localtime(&args.ctx.current_time))) {
                return mk_val<value_string>(std::string(buf));
            } else {
                throw raised_exception("strftime_now: failed to format time");
            }
        }},
        {"range", [](const func_args & args) -> value {
            args.ensure_count(1, 3);
            args.ensure_vals<value_int, value_int, value_int>(true, false, false);

            auto arg0 = args.get_pos(0);
            auto arg1 = args.get_pos(1, mk_val<value_undefined>());
            auto arg2 = args.get_pos(2, mk_val<value_undefined>());

            int64_t start, stop, step;
            if (args.count() == 1) {
                start = 0;
                stop = arg0->as_int();
                step = 1;
            } else if (args.count() == 2) {
                start = arg0->as_int();
                stop = arg1->as_int();
                step = 1;
            } else {
                start = arg0->as_int();
                stop = arg1->as_int();
                step = arg2->as_int();
            }

            auto out = mk_val<value_array>();
            if (step == 0) {
                throw raised_exception("range() step argument must not be zero");
            }
            // wick: the length first (in unsigned arithmetic: start + step may not fit int64), checked
            // against the limits before anything is made.
            const bool up = step > 0;
            const uint64_t span = up ? (stop > start ? uint64_t(stop) - uint64_t(start) : 0)
                                     : (start > stop ? uint64_t(start) - uint64_t(stop) : 0);
            const uint64_t stride = up ? uint64_t(step) : uint64_t(0) - uint64_t(step);
            const uint64_t count = span == 0 ? 0 : (span - 1) / stride + 1;
            check_item_count(*args.ctx.exec, count > SIZE_MAX ? SIZE_MAX : size_t(count), "range()");
            for (uint64_t k = 0; k < count; k++) {
                out->push_back(mk_val<value_int>(int64_t(uint64_t(start) + (up ? k * stride : uint64_t(0) - k * stride))));
            }
            return out;
        }},
        {"tojson", tojson},

        // tests
        {"test_is_boolean", test_type_fn<value_bool>},
        {"test_is_callable", test_type_fn<value_func>},
        {"test_is_odd", [](const func_args & args) -> value {
            args.ensure_vals<value_int>();
            int64_t val = args.get_pos(0)->as_int();
            return mk_val<value_bool>(val % 2 != 0);
        }},
        {"test_is_even", [](const func_args & args) -> value {
            args.ensure_vals<value_int>();
            int64_t val = args.get_pos(0)->as_int();
            return mk_val<value_bool>(val % 2 == 0);
        }},
        {"test_is_false", [](const func_args & args) -> value {
            args.ensure_count(1);
            bool val = is_val<value_bool>(args.get_pos(0)) && !args.get_pos(0)->as_bool();
            return mk_val<value_bool>(val);
        }},
        {"test_is_true", [](const func_args & args) -> value {
            args.ensure_count(1);
            bool val = is_val<value_bool>(args.get_pos(0)) && args.get_pos(0)->as_bool();
            return mk_val<value_bool>(val);
        }},
        {"test_is_divisibleby", [](const func_args & args) -> value {
            args.ensure_vals<value_int, value_int>();
            bool res = args.get_pos(0)->val_int % args.get_pos(1)->val_int == 0;
            return mk_val<value_bool>(res);
        }},
        {"test_is_string", test_type_fn<value_string>},
        {"test_is_integer", test_type_fn<value_int>},
        {"test_is_float", test_type_fn<value_float>},
        {"test_is_number", test_type_fn<value_int, value_float>},
        {"test_is_iterable", test_type_fn<value_object, value_array, value_string, value_undefined>},
        {"test_is_sequence", test_type_fn<value_object, value_array, value_string, value_undefined>},
        {"test_is_mapping", test_type_fn<value_object>},
        {"test_is_lower", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            return mk_val<value_bool>(args.get_pos(0)->val_str.is_lowercase());
        }},
        {"test_is_upper", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            return mk_val<value_bool>(args.get_pos(0)->val_str.is_uppercase());
        }},
        {"test_is_none", test_type_fn<value_none>},
        {"test_is_defined", [](const func_args & args) -> value {
            args.ensure_count(1);
            bool res = !args.get_pos(0)->is_undefined();
            JJ_DEBUG("test_is_defined: result=%d", res ? 1 : 0);
            return mk_val<value_bool>(res);
        }},
        {"test_is_undefined", test_type_fn<value_undefined>},
        {"test_is_eq", test_compare_fn<value_compare_op::eq>},
        {"test_is_equalto", test_compare_fn<value_compare_op::eq>},
        {"test_is_ge", test_compare_fn<value_compare_op::ge>},
        {"test_is_gt", test_compare_fn<value_compare_op::gt>},
        {"test_is_greaterthan", test_compare_fn<value_compare_op::gt>},
        {"test_is_lt", test_compare_fn<value_compare_op::lt>},
        {"test_is_lessthan", test_compare_fn<value_compare_op::lt>},
        {"test_is_ne", test_compare_fn<value_compare_op::ne>},
        // wick: the rest of Jinja2's comparison tests (`select('>', 2)`, `x is le 3`)
        {"test_is_==", test_compare_fn<value_compare_op::eq>},
        {"test_is_!=", test_compare_fn<value_compare_op::ne>},
        {"test_is_>", test_compare_fn<value_compare_op::gt>},
        {"test_is_>=", test_compare_fn<value_compare_op::ge>},
        {"test_is_<", test_compare_fn<value_compare_op::lt>},
        {"test_is_le", test_compare_fn<value_compare_op::le>},
        {"test_is_<=", test_compare_fn<value_compare_op::le>},
        {"test_is_in", [](const func_args & args) -> value {
            args.ensure_count(2);
            auto needle   = args.get_pos(0);
            auto haystack = args.get_pos(1);
            if (is_val<value_undefined>(haystack)) {
                return mk_val<value_bool>(false);
            }
            if (is_val<value_array>(haystack)) {
                for (const auto & item : haystack->as_array()) {
                    if (*needle == *item) {
                        return mk_val<value_bool>(true);
                    }
                }
                return mk_val<value_bool>(false);
            }
            if (is_val<value_string>(haystack)) {
                if (!is_val<value_string>(needle)) {
                    throw raised_exception("'in' test expects args[1] as string when args[0] is string, got args[1] as " + needle->type());
                }
                return mk_val<value_bool>(
                    haystack->as_string().str().find(needle->as_string().str()) != std::string::npos);
            }
            if (is_val<value_object>(haystack)) {
                return mk_val<value_bool>(haystack->has_key(needle));
            }
            throw raised_exception("'in' test expects iterable as first argument, got " + haystack->type());
        }},
        {"test_is_test", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            auto & builtins = global_builtins();
            std::string test_name = args.get_pos(0)->val_str.str();
            auto it = builtins.find("test_is_" + test_name);
            bool res = it != builtins.end();
            return mk_val<value_bool>(res);
        }},
        {"test_is_sameas", [](const func_args & args) -> value {
            // Check if an object points to the same memory address as another object
            args.ensure_count(2);
            auto a = args.get_pos(0);
            auto b = args.get_pos(1);
            bool res = false;
            if (!is_val<value_undefined>(a) && !is_val<value_undefined>(b)) {
                if (is_val<value_none>(a) && is_val<value_none>(b)) {
                    res = true;
                } else if (is_val<value_bool>(a) && is_val<value_bool>(b)) {
                    if (a->as_bool() == b->as_bool()) {
                        res = true;
                    }
                } else if (is_val<value_int>(a) && is_val<value_int>(b)) {
                    const int64_t x = a->as_int();
                    // Allow comparison within small-int cache range
                    if (x >= -5 && x <= 256 && x == b->as_int()) {
                        res = true;
                    }
                } else if (a == b) {
                    res = true;
                }
            }
            return mk_val<value_bool>(res);
        }},
        {"test_is_escaped", [](const func_args & args) -> value {
            (void)args;
            throw not_implemented_exception("escaped test not implemented");
        }},
        {"test_is_filter", [](const func_args & args) -> value {
            (void)args;
            throw not_implemented_exception("filter test not implemented");
        }},
    };
    return builtins;
}


// wick: jinja2's round(precision=0, method='common'): 'common' is Python's round() (the exact
// value's nearest, ties to even: printf's rounding), 'ceil' and 'floor' scale by 10^precision;
// a float comes back (an int stays an int under 'common').
static value round_number(const func_args & args) {
    args.ensure_count(1, 3);
    value input = args.get_pos(0);
    value val_precision = args.get_kwarg_or_pos("precision", 1);
    value val_method = args.get_kwarg_or_pos("method", 2);
    const int64_t precision = val_precision->is_undefined() ? 0 : val_precision->as_int();
    const std::string method = val_method->is_undefined() ? "common" : val_method->as_string().str();
    if (method != "common" && method != "ceil" && method != "floor") {
        throw std::runtime_error("round: method must be 'common', 'ceil' or 'floor'");
    }
    if (precision < -308 || precision > 308) {
        throw std::runtime_error("round: precision " + std::to_string(precision) + " is out of range");
    }
    const double x = input->as_float();
    if (method == "common" && is_val<value_int>(input) && precision >= 0) {
        return input;
    }
    if (method == "common" && precision >= 0) {
        if (!std::isfinite(x)) return mk_val<value_float>(x);
        std::vector<char> buf(400);
        const int n = snprintf(buf.data(), buf.size(), "%.*f", static_cast<int>(precision), x);
        double r = 0.0;
        std::from_chars(buf.data(), buf.data() + std::min<size_t>(n, buf.size() - 1), r);
        return mk_val<value_float>(r);
    }
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double r = method == "ceil" ? std::ceil(x * scale) / scale
                   : method == "floor" ? std::floor(x * scale) / scale
                   : std::nearbyint(x * scale) / scale;
    if (method == "common" && is_val<value_int>(input)) {
        return mk_val<value_int>(double_to_int64(r));
    }
    return mk_val<value_float>(r);
}

// wick: a string's characters (UTF-8 code points), for list, first, last and reverse on strings
// (jinja2 takes a string as the sequence of its characters; they were not defined for strings).
static std::vector<std::string> string_chars(const std::string & str) {
    std::vector<std::string> chars;
    for (size_t i = 0; i < str.size();) {
        const auto parsed = common_parse_utf8_codepoint(str, i);
        const size_t n = parsed.status == utf8_parse_result::SUCCESS ? parsed.bytes_consumed : 1;
        chars.push_back(str.substr(i, n));
        i += n;
    }
    return chars;
}

const func_builtins & value_int_t::get_builtins() const {
    static const func_builtins builtins = {
        {"round", round_number}, // wick
        {"default", default_value},
        {"abs", [](const func_args & args) -> value {
            args.ensure_vals<value_int>();
            int64_t val = args.get_pos(0)->as_int();
            return mk_val<value_int>(val < 0 ? negate_int64(val) : val); // wick: checked
        }},
        {"int", [](const func_args & args) -> value {
            args.ensure_vals<value_int>();
            return mk_val<value_int>(args.get_pos(0)->as_int());
        }},
        {"float", [](const func_args & args) -> value {
            args.ensure_vals<value_int>();
            double val = static_cast<double>(args.get_pos(0)->as_int());
            return mk_val<value_float>(val);
        }},
        {"safe", tojson},
        {"string", tojson},
        {"tojson", tojson},
        {"urlencode", urlencode},            // wick
        {"filesizeformat", filesizeformat},  // wick
    };
    return builtins;
}


static value float_to_string(const func_args & args) {
    return mk_val<value_string>(args.get_pos(0)->as_string());
}

const func_builtins & value_float_t::get_builtins() const {
    static const func_builtins builtins = {
        {"round", round_number}, // wick
        {"default", default_value},
        {"abs", [](const func_args & args) -> value {
            args.ensure_vals<value_float>();
            double val = args.get_pos(0)->as_float();
            return mk_val<value_float>(val < 0.0 ? -val : val);
        }},
        {"int", [](const func_args & args) -> value {
            args.ensure_vals<value_float>();
            int64_t val = double_to_int64(args.get_pos(0)->as_float()); // wick: checked
            return mk_val<value_int>(val);
        }},
        {"float", [](const func_args & args) -> value {
            args.ensure_vals<value_float>();
            return mk_val<value_float>(args.get_pos(0)->as_float());
        }},
        // wick: Python's str(), not JSON (3.0 wrote 3)
        {"safe", float_to_string},
        {"string", float_to_string},
        {"tojson", tojson},
        {"urlencode", urlencode},            // wick
        {"filesizeformat", filesizeformat},  // wick
    };
    return builtins;
}

static bool string_startswith(const std::string & str, const std::string & prefix) {
    if (str.length() < prefix.length()) return false;
    return str.compare(0, prefix.length(), prefix) == 0;
}

static bool string_endswith(const std::string & str, const std::string & suffix) {
    if (str.length() < suffix.length()) return false;
    return str.compare(str.length() - suffix.length(), suffix.length(), suffix) == 0;
}

// wick: parts joined by sep (the join filter on a string, str.join), bounded as strings are
static value join_texts(const std::vector<std::string> & parts, const std::string & sep, const func_args & args) {
    std::string result;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i) result += sep;
        result += parts[i];
        check_string_size(*args.ctx.exec, result.size(), "join()");
    }
    return mk_val<value_string>(result);
}

// wick: str.find/rfind(sub): the code point index of the first (last) match, -1 for none
static int64_t string_find(const func_args & args, const char * name, bool last) {
    args.ensure_count(2, 2);
    if (!is_val<value_string>(args.get_pos(0)) || !is_val<value_string>(args.get_pos(1))) {
        throw std::runtime_error(std::string(name) + "() takes a string");
    }
    const std::string str = args.get_pos(0)->as_string().str(), sub = args.get_pos(1)->as_string().str();
    const size_t at = last ? str.rfind(sub) : str.find(sub);
    if (at == std::string::npos) return -1;
    return static_cast<int64_t>(string_chars(str.substr(0, at)).size());
}

// wick: str.islower() / isupper(): a letter at least, and none of the other case (ASCII)
static value string_case_is(const func_args & args, bool upper) {
    args.ensure_count(1, 1);
    args.ensure_vals<value_string>();
    bool cased = false, other = false;
    for (unsigned char c : args.get_pos(0)->as_string().str()) {
        if (std::isalpha(c)) {
            cased = true;
            other = other || (upper ? std::islower(c) : std::isupper(c));
        }
    }
    return mk_val<value_bool>(cased && !other);
}

// wick: str.ljust / rjust / center(width[, fillchar]) (side 0, 1, 2), in code points; center puts
// the odd fill on the right unless the width is odd, as Python's
static value string_pad(const func_args & args, int side) {
    args.ensure_count(1, 3);
    args.ensure_vals<value_string>();
    const std::string str = args.get_pos(0)->as_string().str();
    value val_width = args.get_kwarg_or_pos("width", 1);
    const int64_t width = val_width->is_undefined() ? 80 : val_width->as_int(); // the center filter's default
    value val_fill = args.get_kwarg_or_pos("fillchar", 2);
    const std::string fill = val_fill->is_undefined() ? " " : val_fill->as_string().str();
    if (string_chars(fill).size() != 1) throw std::runtime_error("the fill character must be exactly one character long");
    const int64_t n = static_cast<int64_t>(string_chars(str).size());
    if (width <= n) return mk_val<value_string>(str);
    check_string_size(*args.ctx.exec, mul_saturated(static_cast<size_t>(width), fill.size()), "ljust/rjust/center()");
    const int64_t pad = width - n;
    const int64_t left = side == 0 ? 0 : side == 1 ? pad : pad / 2 + (pad & width & 1);
    auto repeat = [&](int64_t k) { std::string r; for (int64_t i = 0; i < k; i++) r += fill; return r; };
    return mk_val<value_string>(repeat(left) + str + repeat(pad - left));
}

// wick: str.partition / rpartition(sep): a tuple (before, sep, after)
static value string_partition(const func_args & args, bool last) {
    args.ensure_count(2, 2);
    args.ensure_vals<value_string, value_string>();
    const std::string str = args.get_pos(0)->as_string().str(), sep = args.get_pos(1)->as_string().str();
    if (sep.empty()) throw std::runtime_error("empty separator");
    const size_t at = last ? str.rfind(sep) : str.find(sep);
    std::vector<value> parts;
    if (at == std::string::npos) {
        parts = last ? std::vector<value>{mk_val<value_string>(""), mk_val<value_string>(""), mk_val<value_string>(str)}
                     : std::vector<value>{mk_val<value_string>(str), mk_val<value_string>(""), mk_val<value_string>("")};
    } else {
        parts = {mk_val<value_string>(str.substr(0, at)), mk_val<value_string>(sep), mk_val<value_string>(str.substr(at + sep.size()))};
    }
    return mk_val<value_tuple>(std::move(parts));
}

// wick: str.isalpha() and the like: non-empty and every character of the class (ASCII)
template <typename Pred>
static value string_is(const func_args & args, Pred pred) {
    args.ensure_count(1, 1);
    args.ensure_vals<value_string>();
    const std::string str = args.get_pos(0)->as_string().str();
    bool all = !str.empty();
    for (unsigned char c : str) all = all && pred(c);
    return mk_val<value_bool>(all);
}

// wick: str.startswith / str.endswith(affix or tuple of affixes[, start[, end]])
static value string_affix(const func_args & args, bool suffix) {
    args.ensure_count(2, 4);
    if (!is_val<value_string>(args.get_pos(0))) throw std::runtime_error("startswith/endswith: not a string");
    std::string str = args.get_pos(0)->as_string().str();
    if (args.count() > 2) {
        const auto chars = string_chars(str);
        const int64_t n = static_cast<int64_t>(chars.size());
        auto clamp = [n](const value & v, int64_t dflt) {
            if (v->is_none() || v->is_undefined()) return dflt;
            int64_t i = v->as_int();
            if (i < 0) i += n;
            return std::min(std::max<int64_t>(i, 0), n);
        };
        const int64_t start = clamp(args.get_pos(2), 0);
        const int64_t end = args.count() > 3 ? clamp(args.get_pos(3), n) : n;
        if (start > end) return mk_val<value_bool>(false);
        std::string cut;
        for (int64_t i = start; i < end; i++) cut += chars[i];
        str = cut;
    }
    value affixes = args.get_pos(1);
    std::vector<value> list = is_val<value_array>(affixes) ? affixes->as_array() : std::vector<value>{affixes};
    for (const auto & a : list) {
        if (!is_val<value_string>(a)) throw std::runtime_error("startswith/endswith: the affix must be a string or a tuple of strings");
        const std::string x = a->as_string().str();
        if (suffix ? string_endswith(str, x) : string_startswith(str, x)) return mk_val<value_bool>(true);
    }
    return mk_val<value_bool>(false);
}

// wick: jinja2's striptags, urlencode, filesizeformat and xmlattr filters, and the escape they share.
static std::string html_escape(const std::string & in) {
    std::string out;
    for (char c : in) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// The length of the Python whitespace character (str.split's) at `at` in UTF-8 text, or 0.
static size_t python_space_at(const std::string & text, size_t at) {
    const utf8_parse_result r = common_parse_utf8_codepoint(text, at);
    if (r.status != utf8_parse_result::SUCCESS) return 0;
    const uint32_t c = r.codepoint;
    const bool space = (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
                       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
                       c == 0x202f || c == 0x205f || c == 0x3000;
    return space ? r.bytes_consumed : 0;
}

// The named references html.unescape also reads without a ';' (html5's legacy names).
static const char * const legacy_entities[] = {
    "AElig", "AMP", "Aacute", "Acirc", "Agrave", "Aring", "Atilde", "Auml", "COPY", "Ccedil", "ETH", "Eacute",
    "Ecirc", "Egrave", "Euml", "GT", "Iacute", "Icirc", "Igrave", "Iuml", "LT", "Ntilde", "Oacute", "Ocirc",
    "Ograve", "Oslash", "Otilde", "Ouml", "QUOT", "REG", "THORN", "Uacute", "Ucirc", "Ugrave", "Uuml", "Yacute",
    "aacute", "acirc", "acute", "aelig", "agrave", "amp", "aring", "atilde", "auml", "brvbar", "ccedil", "cedil",
    "cent", "copy", "curren", "deg", "divide", "eacute", "ecirc", "egrave", "eth", "euml", "frac12", "frac14",
    "frac34", "gt", "iacute", "icirc", "iexcl", "igrave", "iquest", "iuml", "laquo", "lt", "macr", "micro",
    "middot", "nbsp", "not", "ntilde", "oacute", "ocirc", "ograve", "ordf", "ordm", "oslash", "otilde", "ouml",
    "para", "plusmn", "pound", "quot", "raquo", "reg", "sect", "shy", "sup1", "sup2", "sup3", "szlig", "thorn",
    "times", "uacute", "ucirc", "ugrave", "uml", "uuml", "yacute", "yen", "yuml"};

// The character of a named reference this engine reads (amp, lt, gt, quot, apos, nbsp), or 0.
static uint32_t known_entity(const std::string & name) {
    if (name == "amp" || name == "AMP") return '&';
    if (name == "lt" || name == "LT") return '<';
    if (name == "gt" || name == "GT") return '>';
    if (name == "quot" || name == "QUOT") return '"';
    if (name == "apos") return '\'';
    if (name == "nbsp") return 0xa0;
    return 0;
}

// Python's html.unescape for the references this engine reads: numeric ones of plain characters
// and amp, lt, gt, quot, apos, nbsp (with or without the ';' as html.unescape takes them).
// Another reference html.unescape would replace is an error rather than a silent difference.
static std::string html_unescape(const std::string & in) {
    auto fail = [](const std::string & ref) -> void {
        throw std::runtime_error("striptags: the character reference " + ref + " is not supported");
    };
    std::string out;
    for (size_t j = 0; j < in.size();) {
        if (in[j] != '&') { out += in[j++]; continue; }
        if (j + 1 < in.size() && in[j + 1] == '#') {  // &#[0-9]+;? or &#[xX][0-9a-fA-F]+;?
            const bool hex = j + 2 < in.size() && (in[j + 2] == 'x' || in[j + 2] == 'X');
            size_t e = j + (hex ? 3 : 2);
            while (e < in.size() && (hex ? std::isxdigit(static_cast<unsigned char>(in[e])) : std::isdigit(static_cast<unsigned char>(in[e])))) e++;
            const size_t first = j + (hex ? 3 : 2);
            if (e == first) { out += in[j++]; continue; }
            const size_t end = e < in.size() && in[e] == ';' ? e + 1 : e;
            const std::string digits = in.substr(first, e - first);
            unsigned long n = 0x110000;  // past Unicode: more than 7 significant digits
            const size_t lead = digits.find_first_not_of('0');
            if (lead == std::string::npos) n = 0;
            else if (digits.size() - lead <= 7) n = std::stoul(digits.substr(lead), nullptr, hex ? 16 : 10);
            // Python maps controls, cp1252's range, surrogates and noncharacters its own way.
            const bool plain = n == 9 || n == 10 || n == 13 || (n >= 0x20 && n <= 0x7e) ||
                               (n >= 0xa0 && n <= 0xd7ff) || (n >= 0xe000 && n <= 0xfdcf) ||
                               (n >= 0xfdf0 && n <= 0x10ffff && (n & 0xfffe) != 0xfffe);
            if (!plain) fail(in.substr(j, end - j));
            out += common_unicode_cpt_to_utf8(static_cast<uint32_t>(n));
            j = end;
            continue;
        }
        size_t e = j + 1;  // html.unescape's name: [^\t\n\f <&#;]{1,32}
        while (e < in.size() && e - j <= 32 && std::strchr("\t\n\f <&#;", in[e]) == nullptr) e++;
        const std::string name = in.substr(j + 1, e - j - 1);
        if (name.empty()) { out += in[j++]; continue; }
        if (e < in.size() && in[e] == ';') {
            const uint32_t cp = known_entity(name);
            if (cp == 0) fail("&" + name + ";");
            out += common_unicode_cpt_to_utf8(cp);
            j = e + 1;
            continue;
        }
        // No ';': the longest legacy name that begins it, the rest kept.
        size_t best = 0;
        for (const char * legacy : legacy_entities) {
            const size_t n = std::strlen(legacy);
            if (n > best && n <= name.size() && name.compare(0, n, legacy) == 0) best = n;
        }
        if (best == 0) { out += in[j++]; continue; }
        const uint32_t cp = known_entity(name.substr(0, best));
        if (cp == 0) fail("&" + name.substr(0, best));
        out += common_unicode_cpt_to_utf8(cp);
        j += 1 + best;
    }
    return out;
}

// markupsafe's striptags: comments and tags removed, runs of whitespace (Python's) made one
// space, then the character references unescaped (html_unescape).
static std::string strip_tags(const std::string & in) {
    // Two passes as markupsafe's two regular expressions: <!--.*?--> everywhere, then <.*?>.
    auto strip = [](const std::string & from, const char * open, const char * close) {
        std::string kept;
        for (size_t i = 0; i < from.size();) {
            if (from.compare(i, std::strlen(open), open) == 0) {
                const size_t end = from.find(close, i + std::strlen(open));
                if (end != std::string::npos) { i = end + std::strlen(close); continue; }
            }
            kept += from[i++];
        }
        return kept;
    };
    const std::string text = strip(strip(in, "<!--", "-->"), "<", ">");
    std::string words;
    for (size_t i = 0; i < text.size();) {
        if (const size_t n = python_space_at(text, i)) { i += n; continue; }
        if (!words.empty()) words += ' ';
        while (i < text.size() && python_space_at(text, i) == 0) words += text[i++];
    }
    return html_unescape(words);
}

// Python's urllib.parse.quote of the UTF-8 bytes, '/' kept (jinja2's url_quote), or for a query
// string (for_qs): nothing kept, spaces as '+'.
static std::string url_quote(const std::string & in, bool for_qs) {
    static const char * hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : in) {
        const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                c == '_' || c == '.' || c == '-' || c == '~';
        if (unreserved || (!for_qs && c == '/')) {
            out += static_cast<char>(c);
        } else if (for_qs && c == ' ') {
            out += '+';
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

// jinja2's urlencode: a string or number quoted; a dict's items, or a list's (key, value) pairs,
// as a query string.
static value urlencode(const func_args & args) {
    args.ensure_count(1, 1);
    const value v = args.get_pos(0);
    if (is_val<value_string>(v) || is_val<value_int>(v) || is_val<value_float>(v) || is_val<value_bool>(v) ||
        v->is_none())
        return mk_val<value_string>(url_quote(v->as_string().str(), false));
    std::vector<std::pair<value, value>> items;
    if (is_val<value_object>(v)) {
        for (const auto & pair : v->as_ordered_object()) items.push_back(pair);
    } else if (is_val<value_array>(v)) {
        for (const auto & item : v->as_array()) {
            if (!is_val<value_array>(item) || item->as_array().size() != 2)
                throw std::runtime_error("urlencode: a list's items must be (key, value) pairs");
            items.emplace_back(item->as_array()[0], item->as_array()[1]);
        }
    } else {
        throw std::runtime_error("urlencode: cannot encode " + v->type());
    }
    std::string out;
    for (const auto & [k, val] : items) {
        if (!out.empty()) out += '&';
        out += url_quote(k->as_string().str(), true) + "=" + url_quote(val->as_string().str(), true);
    }
    return mk_val<value_string>(out);
}

// jinja2's filesizeformat(binary=false): bytes in kB, MB... (powers of 1000) or KiB, MiB...
static value filesizeformat(const func_args & args) {
    args.ensure_count(1, 2);
    const value v = args.get_pos(0);
    double bytes;
    if (is_val<value_int>(v)) {
        bytes = static_cast<double>(v->as_int());
    } else if (is_val<value_float>(v)) {
        bytes = v->as_float();
    } else if (is_val<value_string>(v)) {
        const std::string s = v->as_string().str();
        char * end = nullptr;
        bytes = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size()) throw std::runtime_error("filesizeformat: could not convert string to float: '" + s + "'");
    } else {
        throw std::runtime_error("filesizeformat: needs a number, got " + v->type());
    }
    const bool binary = args.get_kwarg_or_pos("binary", 1)->as_bool();  // undefined == false
    const double base = binary ? 1024.0 : 1000.0;
    static const char * const decimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char * const powers2[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    if (bytes == 1.0) return mk_val<value_string>("1 Byte");
    if (bytes < base) return mk_val<value_string>(std::to_string(static_cast<int64_t>(bytes)) + " Bytes");
    double unit = base;
    for (int i = 0; i < 8; i++) {
        unit *= base;
        if (bytes < unit || i == 7) {
            char buf[64];
            std::snprintf(buf, sizeof(buf), "%.1f %s", base * bytes / unit, binary ? powers2[i] : decimal[i]);
            return mk_val<value_string>(buf);
        }
    }
    return mk_val<value_string>("");  // not reached
}

const func_builtins & value_string_t::get_builtins() const {
    static const func_builtins builtins = {
        {"default", default_value},
        // wick: a string as the sequence of its characters
        {"list", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            auto result = mk_val<value_array>();
            for (auto & c : string_chars(args.get_pos(0)->as_string().str())) result->push_back(mk_val<value_string>(c));
            return result;
        }},
        {"first", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            const auto chars = string_chars(args.get_pos(0)->as_string().str());
            return chars.empty() ? value(mk_val<value_undefined>()) : value(mk_val<value_string>(chars.front()));
        }},
        {"last", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            const auto chars = string_chars(args.get_pos(0)->as_string().str());
            return chars.empty() ? value(mk_val<value_undefined>()) : value(mk_val<value_string>(chars.back()));
        }},
        {"reverse", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            auto chars = string_chars(args.get_pos(0)->as_string().str());
            std::string out;
            for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
            return mk_val<value_string>(out);
        }},
        {"upper", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            jinja::string str = args.get_pos(0)->as_string().uppercase();
            return mk_val<value_string>(str);
        }},
        {"lower", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            jinja::string str = args.get_pos(0)->as_string().lowercase();
            return mk_val<value_string>(str);
        }},
        {"strip", [](const func_args & args) -> value {
            value val_input = args.get_pos(0);
            if (!is_val<value_string>(val_input)) {
                throw raised_exception("strip() first argument must be a string");
            }
            value val_chars = args.get_kwarg_or_pos("chars", 1);
            if (val_chars->is_undefined()) {
                return mk_val<value_string>(args.get_pos(0)->as_string().strip(true, true));
            } else {
                return mk_val<value_string>(args.get_pos(0)->as_string().strip(true, true, val_chars->as_string().str()));
            }
        }},
        {"rstrip", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            value val_chars = args.get_kwarg_or_pos("chars", 1);
            if (val_chars->is_undefined()) {
                return mk_val<value_string>(args.get_pos(0)->as_string().strip(false, true));
            } else {
                return mk_val<value_string>(args.get_pos(0)->as_string().strip(false, true, val_chars->as_string().str()));
            }
        }},
        {"lstrip", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            value val_chars = args.get_kwarg_or_pos("chars", 1);
            if (val_chars->is_undefined()) {
                return mk_val<value_string>(args.get_pos(0)->as_string().strip(true, false));
            } else {
                return mk_val<value_string>(args.get_pos(0)->as_string().strip(true, false, val_chars->as_string().str()));
            }
        }},
        {"title", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            jinja::string str = args.get_pos(0)->as_string().titlecase();
            return mk_val<value_string>(str);
        }},
        // wick: jinja2's title filter: each word (after -, whitespace, (, {, [ or <) capitalized
        {"title_words", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            const std::string str = args.get_pos(0)->as_string().str();
            auto is_break = [](char c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || std::isspace(static_cast<unsigned char>(c)); };
            std::string out = str;
            bool word_start = true;
            for (char & c : out) {
                if (is_break(c)) {
                    word_start = true;
                } else {
                    c = static_cast<char>(word_start ? ::toupper(static_cast<unsigned char>(c)) : ::tolower(static_cast<unsigned char>(c)));
                    word_start = false;
                }
            }
            return mk_val<value_string>(out);
        }},
        {"capitalize", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            jinja::string str = args.get_pos(0)->as_string().capitalize();
            return mk_val<value_string>(str);
        }},
        {"length", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            jinja::string str = args.get_pos(0)->as_string();
            return mk_val<value_int>(str.length());
        }},
        // wick: a tuple of prefixes, and start and end (code points), as Python's
        {"startswith", [](const func_args & args) -> value { return string_affix(args, false); }},
        {"endswith", [](const func_args & args) -> value { return string_affix(args, true); }},
        {"split", [](const func_args & args) -> value {
            args.ensure_count(1, 3);
            value val_input = args.get_pos(0);
            if (!is_val<value_string>(val_input)) {
                throw raised_exception("split() first argument must be a string");
            }
            std::string str = val_input->as_string().str();
            // FIXME: Support non-specified delimiter (split on consecutive (no leading or trailing) whitespace)
            std::string delim = (args.count() > 1) ? args.get_pos(1)->as_string().str() : " ";
            if (delim.empty()) {
                throw raised_exception("empty separator");
            }
            int64_t maxsplit = (args.count() > 2) ? args.get_pos(2)->as_int() : -1;
            auto result = mk_val<value_array>();
            // wick: one pass (erasing each piece from the front was quadratic), pieces counted
            size_t from = 0;
            for (size_t pos; maxsplit != 0 && (pos = str.find(delim, from)) != std::string::npos; maxsplit -= maxsplit > 0) {
                check_item_count(*args.ctx.exec, result->val_arr.size() + 2, "split()");
                result->push_back(mk_val<value_string>(str.substr(from, pos - from)));
                from = pos + delim.length();
            }
            str.erase(0, from);
            auto res = mk_val<value_string>(str);
            res->val_str.mark_input_based_on(args.get_pos(0)->val_str);
            result->push_back(std::move(res));
            return result;
        }},
        {"rsplit", [](const func_args & args) -> value {
            args.ensure_count(1, 3);
            value val_input = args.get_pos(0);
            if (!is_val<value_string>(val_input)) {
                throw raised_exception("rsplit() first argument must be a string");
            }
            std::string str = val_input->as_string().str();
            // FIXME: Support non-specified delimiter (split on consecutive (no leading or trailing) whitespace)
            std::string delim = (args.count() > 1) ? args.get_pos(1)->as_string().str() : " ";
            if (delim.empty()) {
                throw raised_exception("empty separator");
            }
            int64_t maxsplit = (args.count() > 2) ? args.get_pos(2)->as_int() : -1;
            auto result = mk_val<value_array>();
            // wick: one pass from the end (erasing each piece was quadratic), pieces counted
            size_t end = str.size(); // the text before `end` is what is left to split
            for (size_t pos; maxsplit != 0 && end >= delim.length() &&
                             (pos = str.rfind(delim, end - delim.length())) != std::string::npos;
                 maxsplit -= maxsplit > 0) {
                check_item_count(*args.ctx.exec, result->val_arr.size() + 2, "rsplit()");
                result->push_back(mk_val<value_string>(str.substr(pos + delim.length(), end - pos - delim.length())));
                end = pos;
            }
            str.erase(end);
            auto res = mk_val<value_string>(str);
            res->val_str.mark_input_based_on(args.get_pos(0)->val_str);
            result->push_back(std::move(res));
            result->reverse();
            return result;
        }},
        {"replace", [](const func_args & args) -> value {
            args.ensure_vals<value_string, value_string, value_string, value_int>(true, true, true, false);
            std::string str = args.get_pos(0)->as_string().str();
            std::string old_str = args.get_pos(1)->as_string().str();
            std::string new_str = args.get_pos(2)->as_string().str();
            // wick: a count limits the replacements, as Python's (it was not implemented)
            const int64_t count = args.count() > 3 ? args.get_pos(3)->as_int() : -1;
            const size_t limit = count < 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(count);
            if (old_str != new_str && limit > 0) {
                // wick: the size is checked before the text is built, and built in one pass (replacing
                // in place moved the tail once per match: quadratic).
                const exec_state & st = *args.ctx.exec;
                std::string new_res;
                if (old_str.empty()) {
                    // between characters (code points, as Python), at most `limit` of them
                    const auto chars = string_chars(str);
                    const size_t gaps = std::min(limit, chars.size() + 1);
                    check_string_size(st, add_saturated(str.length(), mul_saturated(new_str.length(), gaps)), "replace()");
                    new_res.reserve(str.length() + new_str.length() * gaps);
                    for (size_t c = 0; c < chars.size(); c++) {
                        if (c < gaps) new_res += new_str;
                        new_res += chars[c];
                    }
                    if (chars.size() < gaps) new_res += new_str;
                } else {
                    size_t matches = 0;
                    for (size_t pos = 0; matches < limit && (pos = str.find(old_str, pos)) != std::string::npos; pos += old_str.length()) {
                        matches++;
                    }
                    if (new_str.length() > old_str.length()) {
                        check_string_size(st, add_saturated(str.length(), mul_saturated(matches, new_str.length() - old_str.length())),
                                          "replace()");
                    }
                    size_t from = 0, done = 0;
                    for (size_t pos = 0; done < matches && (pos = str.find(old_str, pos)) != std::string::npos; pos += old_str.length()) {
                        new_res.append(str, from, pos - from);
                        new_res += new_str;
                        from = pos + old_str.length();
                        done++;
                    }
                    new_res.append(str, from, std::string::npos);
                }
                str = std::move(new_res);
            }
            auto res = mk_val<value_string>(str);
            res->val_str.mark_input_based_on(args.get_pos(0)->val_str);
            return res;
        }},
        {"format", [](const func_args & args) -> value {
            value val_input = args.get_pos(0);
            if (!is_val<value_string>(val_input)) {
                throw raised_exception("format() first argument must be a string");
            }
            const jinja::string & fmt = val_input->as_string();
            const bool fmt_is_input = fmt.all_parts_are_input();

            const std::string str = fmt.str();
            jinja::string result;
            std::string literal;
            auto flush_literal = [&]() {
                if (!literal.empty()) {
                    result.parts.push_back({fmt_is_input, literal});
                    literal.clear();
                }
            };

            size_t arg_idx = 1; // positional args follow the format string
            for (size_t i = 0; i < str.size(); ++i) {
                if (str[i] != '{') {
                    literal += str[i];
                    continue;
                }
                if (i + 1 >= str.size() || str[i + 1] != '}') {
                    throw not_implemented_exception("format() only supports simple '{}' placeholders");
                }
                ++i;
                flush_literal();
                const jinja::string arg_str = args.get_pos(arg_idx++)->as_string();
                result.parts.insert(result.parts.end(), arg_str.parts.begin(), arg_str.parts.end());
            }
            flush_literal();
            return mk_val<value_string>(result);
        }},
        {"int", [](const func_args & args) -> value {
            value val_input   = args.get_pos(0);
            value val_default = args.get_kwarg_or_pos("default", 1);
            value val_base    = args.get_kwarg_or_pos("base",    2);
            const int base = val_base->is_undefined() ? 10 : val_base->as_int();
            if (base != 0 && (base < 2 || base > 36)) {
                // an out-of-range base makes std::stoi fail fast on the MSVC CRT instead of throwing
                throw raised_exception("int() base must be 0 or between 2 and 36");
            }
            if (is_val<value_string>(val_input) == false) {
                throw raised_exception("int() first argument must be a string");
            }
            std::string str = val_input->as_string().str();
            try {
                return mk_val<value_int>(std::stoi(str, nullptr, base));
            } catch (...) {
                return mk_val<value_int>(val_default->is_undefined() ? 0 : val_default->as_int());
            }
        }},
        {"float", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            value val_default = args.get_kwarg_or_pos("default", 1);
            std::string str = args.get_pos(0)->as_string().str();
            try {
                return mk_val<value_float>(std::stod(str));
            } catch (...) {
                return mk_val<value_float>(val_default->is_undefined() ? 0.0 : val_default->as_float());
            }
        }},
        {"string", [](const func_args & args) -> value {
            // no-op
            args.ensure_vals<value_string>();
            return mk_val<value_string>(args.get_pos(0)->as_string());
        }},
        {"default", [](const func_args & args) -> value {
            value input = args.get_pos(0);
            if (!is_val<value_string>(input)) {
                throw raised_exception("default() first argument must be a string");
            }
            value default_val = mk_val<value_string>("");
            if (args.count() > 1 && !args.get_pos(1)->is_undefined()) {
                default_val = args.get_pos(1);
            }
            value boolean_val = args.get_kwarg_or_pos("boolean", 2); // undefined == false
            if (input->is_undefined() || (boolean_val->as_bool() && !input->as_bool())) {
                return default_val;
            } else {
                return input;
            }
        }},
        {"slice", [](const func_args & args) -> value {
            args.ensure_count(1, 4);
            args.ensure_vals<value_string, value_int, value_int, value_int>(true, true, false, false);

            auto arg0 = args.get_pos(1);
            auto arg1 = args.get_pos(2, mk_val<value_undefined>());
            auto arg2 = args.get_pos(3, mk_val<value_undefined>());

            int64_t start, stop, step;
            if (args.count() == 1) {
                start = 0;
                stop = arg0->as_int();
                step = 1;
            } else if (args.count() == 2) {
                start = arg0->as_int();
                stop = arg1->as_int();
                step = 1;
            } else {
                start = arg0->as_int();
                stop = arg1->as_int();
                step = arg2->as_int();
            }
            if (step == 0) {
                throw raised_exception("slice step cannot be zero");
            }
            auto input = args.get_pos(0);
            auto sliced = slice(input->as_string().str(), start, stop, step);
            auto res = mk_val<value_string>(sliced);
            res->val_str.mark_input_based_on(input->as_string());
            return res;
        }},
        {"safe", [](const func_args & args) -> value {
            // no-op for now
            args.ensure_vals<value_string>();
            return args.get_pos(0);
        }},
        {"tojson", tojson},
        {"indent", [](const func_args &args) -> value {
            args.ensure_count(1, 4);
            value val_input  = args.get_pos(0);
            value val_width  = args.get_kwarg_or_pos("width", 1);
            const bool first = args.get_kwarg_or_pos("first", 2)->as_bool(); // undefined == false
            const bool blank = args.get_kwarg_or_pos("blank", 3)->as_bool(); // undefined == false
            if (!is_val<value_string>(val_input)) {
                throw raised_exception("indent() first argument must be a string");
            }
            std::string indent;
            if (is_val<value_int>(val_width)) {
                const int64_t width = std::max<int64_t>(val_width->as_int(), 0); // wick: checked
                check_string_size(*args.ctx.exec, uint64_t(width) > SIZE_MAX ? SIZE_MAX : size_t(width), "indent()");
                indent.assign(size_t(width), ' ');
            } else if (is_val<value_string>(val_width)) {
                indent = val_width->as_string().str();
            } else {
                indent = "    ";
            }
            std::string indented;
            std::string input = val_input->as_string().str();
            // wick: the indent goes before every line
            const size_t lines = size_t(std::count(input.begin(), input.end(), '\n')) + 1;
            check_string_size(*args.ctx.exec, add_saturated(input.size(), mul_saturated(lines, indent.size())), "indent()");
            std::istringstream iss = std::istringstream(input);
            std::string line;
            while (std::getline(iss, line)) {
                if (!indented.empty()) {
                    indented.push_back('\n');
                }
                if ((indented.empty() ? first : (!line.empty() || blank))) {
                    indented += indent;
                }
                indented += line;
            }
            if (!input.empty() && input.back() == '\n') {
                indented.push_back('\n');
                if (blank) {
                    indented += indent;
                }
            }

            auto res = mk_val<value_string>(indented);
            res->val_str.mark_input_based_on(val_input->as_string());
            return res;
        }},
        // wick: the join filter on a string: its characters, joined by the argument (it was not
        // implemented)
        {"join", [](const func_args & args) -> value {
            args.ensure_count(1, 2);
            args.ensure_vals<value_string>();
            const std::string sep = args.count() == 2 ? args.get_pos(1)->as_string().str() : "";
            return join_texts(string_chars(args.get_pos(0)->as_string().str()), sep, args);
        }},
        // wick: `sep.join(items)`, Python's str.join (strings only; member_expression calls it)
        {"str_join", [](const func_args & args) -> value {
            args.ensure_count(2, 2);
            args.ensure_vals<value_string>();
            const std::string sep = args.get_pos(0)->as_string().str();
            value items = args.get_pos(1);
            std::vector<std::string> parts;
            if (is_val<value_string>(items)) {
                parts = string_chars(items->as_string().str());
            } else if (is_val<value_array>(items)) {
                for (const auto & item : items->as_array()) {
                    if (!is_val<value_string>(item)) {
                        throw std::runtime_error("join: sequence item is " + item->type() + ", not a string");
                    }
                    parts.push_back(item->as_string().str());
                }
            } else {
                throw std::runtime_error("join: can only join an iterable");
            }
            return join_texts(parts, sep, args);
        }},
        // wick: Python's str methods templates call (find, index, count, the is* tests), on
        // code points; ASCII classes for the is* tests.
        {"find", [](const func_args & args) -> value { return mk_val<value_int>(string_find(args, "find", false)); }},
        {"rfind", [](const func_args & args) -> value { return mk_val<value_int>(string_find(args, "rfind", true)); }},
        {"index", [](const func_args & args) -> value {
            const int64_t at = string_find(args, "index", false);
            if (at < 0) throw std::runtime_error("substring not found");
            return mk_val<value_int>(at);
        }},
        {"rindex", [](const func_args & args) -> value {
            const int64_t at = string_find(args, "rindex", true);
            if (at < 0) throw std::runtime_error("substring not found");
            return mk_val<value_int>(at);
        }},
        {"count", [](const func_args & args) -> value {
            args.ensure_count(2, 2);
            args.ensure_vals<value_string, value_string>();
            const std::string str = args.get_pos(0)->as_string().str(), sub = args.get_pos(1)->as_string().str();
            if (sub.empty()) return mk_val<value_int>(static_cast<int64_t>(string_chars(str).size()) + 1);
            int64_t n = 0;
            for (size_t at = str.find(sub); at != std::string::npos; at = str.find(sub, at + sub.size())) n++;
            return mk_val<value_int>(n);
        }},
        {"isalpha", [](const func_args & args) -> value { return string_is(args, [](unsigned char c) { return std::isalpha(c) != 0; }); }},
        {"isdigit", [](const func_args & args) -> value { return string_is(args, [](unsigned char c) { return std::isdigit(c) != 0; }); }},
        {"isalnum", [](const func_args & args) -> value { return string_is(args, [](unsigned char c) { return std::isalnum(c) != 0; }); }},
        {"isspace", [](const func_args & args) -> value { return string_is(args, [](unsigned char c) { return std::isspace(c) != 0; }); }},
        // wick: more of Python's str methods (ASCII letters for the case ones, widths in code points)
        {"islower", [](const func_args & args) -> value { return string_case_is(args, false); }},
        {"isupper", [](const func_args & args) -> value { return string_case_is(args, true); }},
        {"swapcase", [](const func_args & args) -> value {
            args.ensure_count(1, 1);
            args.ensure_vals<value_string>();
            std::string str = args.get_pos(0)->as_string().str();
            for (char & c : str) {
                const unsigned char u = static_cast<unsigned char>(c);
                c = static_cast<char>(std::islower(u) ? std::toupper(u) : std::isupper(u) ? std::tolower(u) : u);
            }
            return mk_val<value_string>(str);
        }},
        {"removeprefix", [](const func_args & args) -> value {
            args.ensure_count(2, 2);
            args.ensure_vals<value_string, value_string>();
            const std::string str = args.get_pos(0)->as_string().str(), x = args.get_pos(1)->as_string().str();
            return mk_val<value_string>(string_startswith(str, x) ? str.substr(x.size()) : str);
        }},
        {"removesuffix", [](const func_args & args) -> value {
            args.ensure_count(2, 2);
            args.ensure_vals<value_string, value_string>();
            const std::string str = args.get_pos(0)->as_string().str(), x = args.get_pos(1)->as_string().str();
            return mk_val<value_string>(string_endswith(str, x) ? str.substr(0, str.size() - x.size()) : str);
        }},
        {"splitlines", [](const func_args & args) -> value {
            args.ensure_count(1, 2);
            args.ensure_vals<value_string>();
            const std::string str = args.get_pos(0)->as_string().str();
            const bool keep = args.count() > 1 && args.get_pos(1)->as_bool();
            auto result = mk_val<value_array>();
            size_t from = 0;
            for (size_t i = 0; i < str.size(); i++) {
                const char c = str[i];
                if (c != '\n' && c != '\r' && c != '\v' && c != '\f' && c != '\x1c' && c != '\x1d' && c != '\x1e') continue;
                size_t end = i + 1;
                if (c == '\r' && end < str.size() && str[end] == '\n') end++;
                result->push_back(mk_val<value_string>(str.substr(from, (keep ? end : i) - from)));
                from = end;
                i = end - 1;
            }
            if (from < str.size()) result->push_back(mk_val<value_string>(str.substr(from)));
            return result;
        }},
        {"zfill", [](const func_args & args) -> value {
            args.ensure_count(2, 2);
            args.ensure_vals<value_string, value_int>();
            const std::string str = args.get_pos(0)->as_string().str();
            const int64_t n = static_cast<int64_t>(string_chars(str).size());
            const int64_t width = args.get_pos(1)->as_int();
            if (width <= n) return mk_val<value_string>(str);
            check_string_size(*args.ctx.exec, static_cast<size_t>(width), "zfill()");
            const bool sign = !str.empty() && (str[0] == '+' || str[0] == '-');
            return mk_val<value_string>((sign ? str.substr(0, 1) : "") + std::string(width - n, '0') + str.substr(sign ? 1 : 0));
        }},
        {"ljust", [](const func_args & args) -> value { return string_pad(args, 0); }},
        {"rjust", [](const func_args & args) -> value { return string_pad(args, 1); }},
        {"center", [](const func_args & args) -> value { return string_pad(args, 2); }},
        {"partition", [](const func_args & args) -> value { return string_partition(args, false); }},
        {"rpartition", [](const func_args & args) -> value { return string_partition(args, true); }},
        // wick: jinja2's wordcount filter: runs of word characters
        {"wordcount", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            int64_t words = 0;
            bool in_word = false;
            for (unsigned char c : args.get_pos(0)->as_string().str()) {
                const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
                if (w && !in_word) words++;
                in_word = w;
            }
            return mk_val<value_int>(words);
        }},
        // wick: jinja2's escape filter: & < > " ' as HTML entities
        {"escape", [](const func_args & args) -> value {
            args.ensure_vals<value_string>();
            return mk_val<value_string>(html_escape(args.get_pos(0)->as_string().str()));
        }},
        {"striptags", [](const func_args & args) -> value {  // wick
            args.ensure_vals<value_string>();
            return mk_val<value_string>(strip_tags(args.get_pos(0)->as_string().str()));
        }},
        {"urlencode", urlencode},            // wick
        {"filesizeformat", filesizeformat},  // wick
    };
    return builtins;
}


const func_builtins & value_bool_t::get_builtins() const {
    static const func_handler tostring = [](const func_args & args) -> value {
        args.ensure_vals<value_bool>();
        bool val = args.get_pos(0)->as_bool();
        return mk_val<value_string>(val ? "True" : "False");
    };
    static const func_builtins builtins = {
        {"default", default_value},
        {"int", [](const func_args & args) -> value {
            args.ensure_vals<value_bool>();
            bool val = args.get_pos(0)->as_bool();
            return mk_val<value_int>(val ? 1 : 0);
        }},
        {"float", [](const func_args & args) -> value {
            args.ensure_vals<value_bool>();
            bool val = args.get_pos(0)->as_bool();
            return mk_val<value_float>(val ? 1.0 : 0.0);
        }},
        {"safe", tostring},
        {"string", tostring},
        {"tojson", tojson},
    };
    return builtins;
}

// wick: what sort, min and max compare: a string lowered unless case_sensitive (jinja2's default)
static value compare_key(const value & v, bool case_sensitive) {
    return !case_sensitive && is_val<value_string>(v) ? value(mk_val<value_string>(v->as_string().lowercase())) : v;
}

// wick: jinja2's unique(case_sensitive=false, attribute=none): the first item of each key, in
// order; strings compared without case unless case_sensitive (it was not implemented).
static value array_unique(const func_args & args) {
    args.ensure_count(1, 3);
    args.ensure_vals<value_array>();
    const bool case_sensitive = args.get_kwarg_or_pos("case_sensitive", 1)->as_bool();
    value attribute = args.get_kwarg_or_pos("attribute", 2);
    value undef = mk_val<value_undefined>();
    std::unordered_map<size_t, std::vector<value>> seen; // keys by hash
    auto result = mk_val<value_array>();
    for (const auto & item : args.get_pos(0)->as_array()) {
        const value key = compare_key(attribute->is_undefined() ? item : get_attribute(item, attribute, undef), case_sensitive);
        // Python's lists and dicts are unhashable (a tuple is not)
        if (!key->is_hashable() || is_val<value_object>(key) || (is_val<value_array>(key) && !is_val<value_tuple>(key))) {
            throw std::runtime_error("unique: unhashable item of type " + key->type());
        }
        auto & bucket = seen[key->unique_hash().digest()];
        bool found = false;
        for (const auto & k : bucket) {
            if (*k == *key) { found = true; break; }
        }
        if (!found) {
            bucket.push_back(key);
            result->push_back(item);
        }
    }
    return result;
}

const func_builtins & value_array_t::get_builtins() const {
    static const func_builtins builtins = {
        {"default", default_value},
        {"urlencode", urlencode},  // wick
        {"list", [](const func_args & args) -> value {
            args.ensure_vals<value_array>();
            const auto & arr = args.get_pos(0)->as_array();
            auto result = mk_val<value_array>();
            for (const auto& v : arr) {
                result->push_back(v);
            }
            return result;
        }},
        {"first", [](const func_args & args) -> value {
            args.ensure_vals<value_array>();
            const auto & arr = args.get_pos(0)->as_array();
            if (arr.empty()) {
                return mk_val<value_undefined>();
            }
            return arr[0];
        }},
        {"last", [](const func_args & args) -> value {
            args.ensure_vals<value_array>();
            const auto & arr = args.get_pos(0)->as_array();
            if (arr.empty()) {
                return mk_val<value_undefined>();
            }
            return arr[arr.size() - 1];
        }},
        {"length", [](const func_args & args) -> value {
            args.ensure_vals<value_array>();
            const auto & arr = args.get_pos(0)->as_array();
            return mk_val<value_int>(static_cast<int64_t>(arr.size()));
        }},
        {"slice", [](const func_args & args) -> value {
            args.ensure_count(1, 4);
            args.ensure_vals<value_array, value_int, value_int, value_int>(true, true, false, false);

            auto val  = args.get_pos(0);
            auto arg0 = args.get_pos(1);
            auto arg1 = args.get_pos(2, mk_val<value_undefined>());
            auto arg2 = args.get_pos(3, mk_val<value_undefined>());

            int64_t start, stop, step;
            if (args.count() == 1) {
                start = 0;
                stop = arg0->as_int();
                step = 1;
            } else if (args.count() == 2) {
                start = arg0->as_int();
                stop = arg1->as_int();
                step = 1;
            } else {
                start = arg0->as_int();
                stop = arg1->as_int();
                step = arg2->as_int();
            }
            if (step == 0) {
                throw raised_exception("slice step cannot be zero");
            }
            auto arr = slice(val->as_array(), start, stop, step);
            return is_val<value_tuple>(val) ? mk_val<value_tuple>(std::move(arr)) : mk_val<value_array>(std::move(arr));
        }},
        {"selectattr", select_items<false, true>},
        {"select", select_items<false, false>},
        {"rejectattr", select_items<true, true>},
        {"reject", select_items<true, false>},
        {"join", [](const func_args & args) -> value {
            args.ensure_count(1, 3);
            if (!is_val<value_array>(args.get_pos(0))) {
                throw raised_exception("join() first argument must be an array");
            }
            value val_delim = args.get_kwarg_or_pos("d",         1);
            value attribute = args.get_kwarg_or_pos("attribute", 2);
            value undef = mk_val<value_undefined>();
            const auto & arr = args.get_pos(0)->as_array();
            const std::string delim = val_delim->is_undefined() ? "" : val_delim->as_string().str();
            std::string result;
            for (size_t i = 0; i < arr.size(); ++i) {
                value val_arr = arr[i];
                if (!attribute->is_undefined()) {
                    val_arr = get_attribute(val_arr, attribute, undef);
                }
                if (!is_val<value_string>(val_arr) && !is_val<value_int>(val_arr) && !is_val<value_float>(val_arr)) {
                    throw raised_exception("join() can only join arrays of strings or numerics");
                }
                result += val_arr->as_string().str();
                if (i < arr.size() - 1) {
                    result += delim;
                }
                check_string_size(*args.ctx.exec, result.size(), "join()"); // wick
            }
            return mk_val<value_string>(result);
        }},
        {"string", [](const func_args & args) -> value {
            args.ensure_vals<value_array>();
            if (args.ctx.is_get_stats) {
                // mark as used (recursively) for stats
                auto val_input = args.get_pos(0);
                value_t::stats_t::mark_used(const_cast<value&>(val_input), true);
            }
            return mk_val<value_string>(args.get_pos(0)->as_string());
        }},
        {"tojson", tojson},
        {"map", [](const func_args & args) -> value {
            args.ensure_count(2);
            if (!is_val<value_array>(args.get_pos(0))) {
                throw raised_exception("map: first argument must be an array");
            }
            if (!is_val<value_kwarg>(args.get_args().at(1))) {
                // wick: map('filter', args...), Jinja2's: the filter applied to each item
                const value & filter = args.get_args().at(1);
                if (!is_val<value_string>(filter)) {
                    throw raised_exception("map: the filter's name must be a string");
                }
                const std::string name = filter_builtin_name(filter->as_string().str());
                auto out = mk_val<value_array>();
                for (const auto & item : args.get_pos(0)->as_array()) {
                    const auto & builtins = item->get_builtins();
                    auto it = builtins.find(name);
                    if (it == builtins.end()) {
                        throw raised_exception("map: no filter '" + name + "' for " + item->type());
                    }
                    func_args item_args(args.ctx);
                    item_args.func_name = name;
                    item_args.push_back(item);
                    for (size_t k = 2; k < args.get_args().size(); ++k) item_args.push_back(args.get_args()[k]);
                    out->push_back(it->second(item_args));
                }
                return out;
            }
            value val       = args.get_pos(0);
            value attribute = args.get_kwarg_or_pos("attribute", 1);
            value default_val = args.get_kwarg("default", mk_val<value_undefined>());
            auto out = mk_val<value_array>();
            auto arr = val->as_array();
            for (const auto & item : arr) {
                value attr_val = get_attribute(item, attribute, default_val);
                out->push_back(attr_val);
            }
            return is_val<value_tuple>(val) ? mk_val<value_tuple>(std::move(out->as_array())) : out;
        }},
        {"sum", [](const func_args & args) -> value { // wick: Jinja2's sum(attribute=, start=0)
            args.ensure_count(1, 3);
            value attribute = args.get_kwarg_or_pos("attribute", 1);
            value start = args.get_kwarg_or_pos("start", 2);
            value undef = mk_val<value_undefined>();
            bool is_float = is_val<value_float>(start);
            int64_t total = start->is_undefined() ? 0 : start->as_int();
            double ftotal = start->is_undefined() ? 0.0 : start->as_float();
            for (const auto & item : args.get_pos(0)->as_array()) {
                value v = attribute->is_undefined() ? item : get_attribute(item, attribute, undef);
                if (!is_val<value_int>(v) && !is_val<value_float>(v) && !is_val<value_bool>(v)) {
                    throw raised_exception("sum: cannot add " + v->type());
                }
                if (is_val<value_float>(v) && !is_float) {
                    is_float = true;
                    ftotal = static_cast<double>(total);
                }
                if (is_float) {
                    ftotal += v->as_float();
                } else if (__builtin_add_overflow(total, v->as_int(), &total)) {
                    throw std::runtime_error("sum: the total does not fit a 64-bit integer");
                }
            }
            return is_float ? value(mk_val<value_float>(ftotal)) : value(mk_val<value_int>(total));
        }},
        {"append", [](const func_args & args) -> value {
            args.ensure_count(2);
            if (!is_val<value_array>(args.get_pos(0))) {
                throw raised_exception("append: first argument must be an array");
            }
            const value_array_t * arr = cast_val<value_array>(args.get_pos(0));
            // need to use const_cast here to modify the array
            value_array_t * arr_editable = const_cast<value_array_t *>(arr);
            check_no_cycle(*args.ctx.exec, arr, args.get_pos(1), "append()"); // wick
            check_item_count(*args.ctx.exec, arr->val_arr.size() + 1, "append()");
            arr_editable->push_back(args.get_pos(1));
            return args.get_pos(0);
        }},
        {"pop", [](const func_args & args) -> value {
            args.ensure_count(1, 2);
            args.ensure_vals<value_array, value_int>(true, false);
            int64_t index = args.count() == 2 ? args.get_pos(1)->as_int() : -1;
            const value_array_t * arr = cast_val<value_array>(args.get_pos(0));
            // need to use const_cast here to modify the array
            value_array_t * arr_editable = const_cast<value_array_t *>(arr);
            return arr_editable->pop_at(index);
        }},
        {"sort", [](const func_args & args) -> value {
            args.ensure_count(1, 4);
            if (!is_val<value_array>(args.get_pos(0))) {
                throw raised_exception("sort: first argument must be an array");
            }
            value val         = args.get_pos(0);
            value val_reverse = args.get_kwarg_or_pos("reverse",        1);
            value val_case    = args.get_kwarg_or_pos("case_sensitive", 2);
            value attribute   = args.get_kwarg_or_pos("attribute",      3);
            // wick: strings compare without case unless case_sensitive, and equal items keep
            // their order (Python's sorted is stable), as jinja2's sort
            const bool case_sensitive = val_case->as_bool(); // undefined == false
            const bool reverse = val_reverse->as_bool(); // undefined == false
            value undef = mk_val<value_undefined>();
            std::vector<value> arr = val->as_array(); // copy
            std::vector<std::pair<value, value>> keyed; // (key, item)
            keyed.reserve(arr.size());
            for (const auto & item : arr) {
                value key = attribute->is_undefined() ? item : get_attribute(item, attribute, undef);
                keyed.emplace_back(compare_key(key, case_sensitive), item);
            }
            std::stable_sort(keyed.begin(), keyed.end(), [&](const auto & a, const auto & b) {
                return value_compare(a.first, b.first, reverse ? value_compare_op::gt : value_compare_op::lt);
            });
            for (size_t i = 0; i < arr.size(); i++) arr[i] = keyed[i].second;
            return is_val<value_tuple>(val) ? mk_val<value_tuple>(std::move(arr)) : mk_val<value_array>(std::move(arr));
        }},
        {"reverse", [](const func_args & args) -> value {
            args.ensure_vals<value_array>();
            value val = args.get_pos(0);
            std::vector<value> arr = val->as_array(); // copy
            std::reverse(arr.begin(), arr.end());
            return is_val<value_tuple>(val) ? mk_val<value_tuple>(std::move(arr)) : mk_val<value_array>(std::move(arr));
        }},
        {"min", [](const func_args & args) -> value {
            args.ensure_count(1, 4);
            args.ensure_vals<value_array>();
            value val_case    = args.get_kwarg_or_pos("case_sensitive", 1);
            value attribute   = args.get_kwarg_or_pos("attribute",      2);
            const bool case_sensitive = val_case->as_bool(); // wick: jinja2's default is without case
            value undef = mk_val<value_undefined>();
            const auto & arr = args.get_pos(0)->as_array();
            if (arr.empty()) {
                return undef;
            }
            value result = arr[0];
            for (const auto & item : arr) {
                value val_arr = item;
                value val_cmp = result;
                if (!attribute->is_undefined()) {
                    val_arr = get_attribute(val_arr, attribute, undef);
                    val_cmp = get_attribute(val_cmp, attribute, undef);
                }
                if (value_compare(compare_key(val_arr, case_sensitive), compare_key(val_cmp, case_sensitive), value_compare_op::lt)) {
                    result = item;
                }
            }
            return result;
        }},
        {"max", [](const func_args & args) -> value {
            args.ensure_count(1, 4);
            args.ensure_vals<value_array>();
            value val_case    = args.get_kwarg_or_pos("case_sensitive", 1);
            value attribute   = args.get_kwarg_or_pos("attribute",      2);
            const bool case_sensitive = val_case->as_bool(); // wick: jinja2's default is without case
            value undef = mk_val<value_undefined>();
            const auto & arr = args.get_pos(0)->as_array();
            if (arr.empty()) {
                return undef;
            }
            value result = arr[0];
            for (const auto & item : arr) {
                value val_arr = item;
                value val_cmp = result;
                if (!attribute->is_undefined()) {
                    val_arr = get_attribute(val_arr, attribute, undef);
                    val_cmp = get_attribute(val_cmp, attribute, undef);
                }
                if (value_compare(compare_key(val_arr, case_sensitive), compare_key(val_cmp, case_sensitive), value_compare_op::gt)) {
                    result = item;
                }
            }
            return result;
        }},
        {"unique", array_unique},
        // wick: jinja2's batch(n, fill_with=none): lists of n items, the last filled up to n
        {"batch", [](const func_args & args) -> value {
            args.ensure_count(2, 3);
            args.ensure_vals<value_array, value_int>();
            const int64_t n = args.get_pos(1)->as_int();
            if (n <= 0) throw std::runtime_error("batch: the count must be positive");
            value fill = args.get_kwarg_or_pos("fill_with", 2);
            auto result = mk_val<value_array>();
            std::vector<value> tmp;
            for (const auto & item : args.get_pos(0)->as_array()) {
                if (static_cast<int64_t>(tmp.size()) == n) {
                    result->push_back(mk_val<value_array>(std::move(tmp)));
                    tmp.clear();
                }
                tmp.push_back(item);
            }
            if (!tmp.empty()) {
                if (!fill->is_undefined() && !fill->is_none()) {
                    while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(fill);
                }
                result->push_back(mk_val<value_array>(std::move(tmp)));
            }
            return result;
        }},
        // wick: jinja2's slice filter (slices, fill_with=none): the items in that many columns,
        // the first ones one longer; `a[start:stop]` is the builtin `slice`
        {"slice_columns", [](const func_args & args) -> value {
            args.ensure_count(2, 3);
            args.ensure_vals<value_array, value_int>();
            const int64_t slices = args.get_pos(1)->as_int();
            if (slices <= 0) throw std::runtime_error("slice: the count must be positive");
            if (slices > (1 << 20)) throw std::runtime_error("slice: too many slices");
            value fill = args.get_kwarg_or_pos("fill_with", 2);
            const auto & seq = args.get_pos(0)->as_array();
            const int64_t length = static_cast<int64_t>(seq.size());
            const int64_t per = length / slices, extra = length % slices;
            auto result = mk_val<value_array>();
            int64_t offset = 0;
            for (int64_t k = 0; k < slices; k++) {
                const int64_t start = offset + k * per;
                if (k < extra) offset++;
                const int64_t end = offset + (k + 1) * per;
                std::vector<value> tmp(seq.begin() + start, seq.begin() + end);
                if (!fill->is_undefined() && !fill->is_none() && k >= extra) tmp.push_back(fill);
                result->push_back(mk_val<value_array>(std::move(tmp)));
            }
            return result;
        }},
    };
    return builtins;
}

[[noreturn]] static value object_join_not_implemented(const func_args &) {
    throw not_implemented_exception("object join not implemented");
}

const func_builtins & value_object_t::get_builtins() const {
    if (!has_builtins) {
        static const func_builtins no_builtins = {};
        return no_builtins;
    }

    static const func_builtins builtins = {
        // {"default", default_value}, // cause issue with gpt-oss
        {"get", [](const func_args & args) -> value {
            args.ensure_count(2, 3);
            if (!is_val<value_object>(args.get_pos(0))) {
                throw raised_exception("get: first argument must be an object");
            }
            if (!is_val<value_string>(args.get_pos(1))) {
                throw raised_exception("get: second argument must be a string (key)");
            }
            value default_val = mk_val<value_none>();
            if (args.count() == 3) {
                default_val = args.get_pos(2);
            }
            const value obj = args.get_pos(0);
            const value key = args.get_pos(1);
            return obj->at(key, default_val);
        }},
        {"keys", [](const func_args & args) -> value {
            args.ensure_vals<value_object>();
            const auto & obj = args.get_pos(0)->as_ordered_object();
            auto result = mk_val<value_array>();
            for (const auto & pair : obj) {
                result->push_back(pair.first);
            }
            return result;
        }},
        {"values", [](const func_args & args) -> value {
            args.ensure_vals<value_object>();
            const auto & obj = args.get_pos(0)->as_ordered_object();
            auto result = mk_val<value_array>();
            for (const auto & pair : obj) {
                result->push_back(pair.second);
            }
            return result;
        }},
        {"items", [](const func_args & args) -> value {
            args.ensure_vals<value_object>();
            const auto & obj = args.get_pos(0)->as_ordered_object();
            auto result = mk_val<value_array>();
            for (const auto & pair : obj) {
                auto item = mk_val<value_tuple>(pair);
                result->push_back(std::move(item));
            }
            return result;
        }},
        {"tojson", tojson},
        {"string", [](const func_args & args) -> value {
            args.ensure_vals<value_object>();
            if (args.ctx.is_get_stats) {
                // mark as used (recursively) for stats
                auto val_input = args.get_pos(0);
                value_t::stats_t::mark_used(const_cast<value&>(val_input), true);
            }
            return mk_val<value_string>(args.get_pos(0)->as_string());
        }},
        {"length", [](const func_args & args) -> value {
            args.ensure_vals<value_object>();
            const auto & obj = args.get_pos(0)->as_ordered_object();
            return mk_val<value_int>(static_cast<int64_t>(obj.size()));
        }},
        {"tojson", [](const func_args & args) -> value {
            args.ensure_vals<value_object>();
            // use global to_json
            return global_builtins().at("tojson")(args);
        }},
        {"dictsort", [](const func_args & args) -> value {
            value val_input   = args.get_pos(0);
            value val_case    = args.get_kwarg_or_pos("case_sensitive", 1);
            value val_by      = args.get_kwarg_or_pos("by",             2);
            value val_reverse = args.get_kwarg_or_pos("reverse",        3);
            // wick: as Jinja2's, a list of (key, value) pairs; strings compared without case
            // unless case_sensitive; a stable sort
            const bool case_sensitive = val_case->as_bool(); // undefined == false
            const bool reverse = val_reverse->as_bool(); // undefined == false
            const bool by_value = is_val<value_string>(val_by) && val_by->as_string().str() == "value" ? true : false;
            std::vector<std::pair<value, value>> keyed; // (sort key, the pair)
            for (const auto & pair : val_input->as_ordered_object()) {
                keyed.emplace_back(compare_key(by_value ? pair.second : pair.first, case_sensitive), mk_val<value_tuple>(pair));
            }
            std::stable_sort(keyed.begin(), keyed.end(), [&](const auto & a, const auto & b) {
                return value_compare(a.first, b.first, reverse ? value_compare_op::gt : value_compare_op::lt);
            });
            auto result = mk_val<value_array>();
            for (auto & k : keyed) result->push_back(std::move(k.second));
            return result;
        }},
        {"join", object_join_not_implemented},
        {"urlencode", urlencode},  // wick
        // wick: jinja2's xmlattr(autospace=true): ' key="value"' for the items not none nor
        // undefined, escaped; a key with whitespace, '/', '>' or '=' is an error
        {"xmlattr", [](const func_args & args) -> value {
            args.ensure_count(1, 2);
            const value autospace = args.get_kwarg_or_pos("autospace", 1);
            std::string out;
            for (const auto & [k, v] : args.get_pos(0)->as_ordered_object()) {
                if (v->is_none() || v->is_undefined()) continue;
                const std::string key = k->as_string().str();
                for (char c : key)
                    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '/' || c == '>' || c == '=')
                        throw std::runtime_error("xmlattr: invalid character in attribute name: '" + key + "'");
                if (!out.empty()) out += ' ';
                out += html_escape(key) + "=\"" + html_escape(v->as_string().str()) + "\"";
            }
            if (!out.empty() && (autospace->is_undefined() || autospace->as_bool())) out = " " + out;
            return mk_val<value_string>(out);
        }},
    };
    return builtins;
}

const func_builtins & value_none_t::get_builtins() const {
    static const func_handler tostring = [](const func_args &) -> value {
        return mk_val<value_string>("None");
    };
    static const func_builtins builtins = {
        {"urlencode", urlencode},  // wick
        {"default", default_value},
        {"tojson", tojson},
        {"string", tostring},
        {"safe", tostring},
        {"items", empty_value_fn<value_array>},
        {"map", empty_value_fn<value_array>},
        {"reject", empty_value_fn<value_array>},
        {"rejectattr", empty_value_fn<value_array>},
        {"select", empty_value_fn<value_array>},
        {"selectattr", empty_value_fn<value_array>},
        {"unique", empty_value_fn<value_array>},
    };
    return builtins;
}


const func_builtins & value_undefined_t::get_builtins() const {
    static const func_builtins builtins = {
        {"default", default_value},
        {"capitalize", empty_value_fn<value_string>},
        {"first", empty_value_fn<value_undefined>},
        {"items", empty_value_fn<value_array>},
        {"join", empty_value_fn<value_string>},
        {"last", empty_value_fn<value_undefined>},
        {"length", empty_value_fn<value_int>},
        {"list", empty_value_fn<value_array>},
        {"lower", empty_value_fn<value_string>},
        {"map", empty_value_fn<value_array>},
        {"max", empty_value_fn<value_undefined>},
        {"min", empty_value_fn<value_undefined>},
        {"reject", empty_value_fn<value_array>},
        {"rejectattr", empty_value_fn<value_array>},
        {"replace", empty_value_fn<value_string>},
        {"reverse", empty_value_fn<value_array>},
        {"safe", empty_value_fn<value_string>},
        {"select", empty_value_fn<value_array>},
        {"selectattr", empty_value_fn<value_array>},
        {"sort", empty_value_fn<value_array>},
        {"string", empty_value_fn<value_string>},
        {"strip", empty_value_fn<value_string>},
        {"sum", empty_value_fn<value_int>},
        {"title", empty_value_fn<value_string>},
        {"title_words", empty_value_fn<value_string>}, // wick: the title filter
        {"truncate", empty_value_fn<value_string>},
        {"unique", empty_value_fn<value_array>},
        {"upper", empty_value_fn<value_string>},
        {"wordcount", empty_value_fn<value_int>},
    };
    return builtins;
}


//////////////////////////////////


static value from_json(const common_json & j, bool mark_input) {
    if (j.is_null()) {
        return mk_val<value_none>();
    } else if (j.is_boolean()) {
        return mk_val<value_bool>(j.get<bool>());
    } else if (j.is_number_integer()) {
        return mk_val<value_int>(j.get<int64_t>());
    } else if (j.is_number_float()) {
        return mk_val<value_float>(j.get<double>());
    } else if (j.is_string()) {
        auto str = mk_val<value_string>(j.get<std::string>());
        if (mark_input) {
            str->mark_input();
        }
        return str;
    } else if (j.is_array()) {
        auto arr = mk_val<value_array>();
        for (const auto & item : j) {
            arr->push_back(from_json(item, mark_input));
        }
        return arr;
    } else if (j.is_object()) {
        auto obj = mk_val<value_object>();
        for (auto it = j.begin(); it != j.end(); ++it) {
            obj->insert(it.key(), from_json(it.value(), mark_input));
        }
        return obj;
    } else {
        throw std::runtime_error("Unsupported JSON value type");
    }
}

// compare operator for value_t
bool value_compare(const value & a, const value & b, value_compare_op op) {
    if (op == value_compare_op::le) { // wick: as Python's, less or equal
        return value_compare(a, b, value_compare_op::lt) || value_compare(a, b, value_compare_op::eq);
    }
    auto cmp = [&]() {
        // compare numeric types
        if (is_val<value_int>(a) && is_val<value_int>(b)) { // wick: exactly, past 2^53 too
            const int64_t x = a->as_int(), y = b->as_int();
            switch (op) {
                case value_compare_op::eq: return x == y;
                case value_compare_op::ge: return x >= y;
                case value_compare_op::gt: return x > y;
                case value_compare_op::lt: return x < y;
                case value_compare_op::ne: return x != y;
                default: break;
            }
        }
        if ((is_val<value_int>(a) || is_val<value_float>(a)) &&
            (is_val<value_int>(b) || is_val<value_float>(b))){
            try {
                if (op == value_compare_op::eq) {
                    return a->as_float() == b->as_float();
                } else if (op == value_compare_op::ge) {
                    return a->as_float() >= b->as_float();
                } else if (op == value_compare_op::gt) {
                    return a->as_float() > b->as_float();
                } else if (op == value_compare_op::lt) {
                    return a->as_float() < b->as_float();
                } else if (op == value_compare_op::ne) {
                    return a->as_float() != b->as_float();
                } else {
                    throw std::runtime_error("Unsupported comparison operator for numeric types");
                }
            } catch (...) {}
        }
        // wick: a string and a number are never equal and do not order, as in Python (they were
        // compared as text: '10' is eq 10 was true)
        if ((is_val<value_string>(b) && (is_val<value_int>(a) || is_val<value_float>(a))) ||
            (is_val<value_string>(a) && (is_val<value_int>(b) || is_val<value_float>(b)))) {
            if (op == value_compare_op::eq) return false;
            if (op == value_compare_op::ne) return true;
            throw std::runtime_error("a string and a number cannot be ordered");
        }
        if (is_val<value_string>(a) && is_val<value_string>(b)) {
            try {
                if (op == value_compare_op::eq) {
                    return a->as_string().str() == b->as_string().str();
                } else if (op == value_compare_op::ge) {
                    return a->as_string().str() >= b->as_string().str();
                } else if (op == value_compare_op::gt) {
                    return a->as_string().str() > b->as_string().str();
                } else if (op == value_compare_op::lt) {
                    return a->as_string().str() < b->as_string().str();
                } else if (op == value_compare_op::ne) {
                    return a->as_string().str() != b->as_string().str();
                } else {
                    throw std::runtime_error("Unsupported comparison operator for string/number types");
                }
            } catch (...) {}
        }
        // wick: booleans order as 0 and 1 among themselves and with numbers, as Python's
        const bool num_a = is_val<value_bool>(a) || is_val<value_int>(a) || is_val<value_float>(a);
        const bool num_b = is_val<value_bool>(b) || is_val<value_int>(b) || is_val<value_float>(b);
        if ((is_val<value_bool>(a) || is_val<value_bool>(b)) && num_a && num_b) {
            const double x = is_val<value_bool>(a) ? (a->as_bool() ? 1.0 : 0.0) : a->as_float();
            const double y = is_val<value_bool>(b) ? (b->as_bool() ? 1.0 : 0.0) : b->as_float();
            switch (op) {
                case value_compare_op::eq: return x == y;
                case value_compare_op::ge: return x >= y;
                case value_compare_op::gt: return x > y;
                case value_compare_op::lt: return x < y;
                case value_compare_op::ne: return x != y;
                default: break;
            }
        }
        // wick: lists and tuples order item by item, then by length, as Python's
        if (is_val<value_array>(a) && is_val<value_array>(b) && op != value_compare_op::eq && op != value_compare_op::ne) {
            value_nesting_guard guard;
            const auto & x = a->as_array();
            const auto & y = b->as_array();
            for (size_t i = 0; i < x.size() && i < y.size(); i++) {
                if (!(*x[i] == *y[i])) return value_compare(x[i], y[i], op);
            }
            switch (op) {
                case value_compare_op::ge: return x.size() >= y.size();
                case value_compare_op::gt: return x.size() > y.size();
                case value_compare_op::lt: return x.size() < y.size();
                default: break;
            }
        }
        // wick: anything else is equal as `==` says (none is eq none, [1] is eq [1], and `ne` of two
        // different types is true: it was false for both) and has no order
        if (op == value_compare_op::eq) return *a == *b;
        if (op == value_compare_op::ne) return !(*a == *b);
        throw std::runtime_error(a->type() + " and " + b->type() + " cannot be ordered");
    };
    auto result = cmp();
    JJ_DEBUG("Comparing types: %s and %s result=%d", a->type().c_str(), b->type().c_str(), result);
    return result;
}

template<>
void global_from_json(context & ctx, const common_json & json_obj, bool mark_input) {
    // printf("global_from_json: %s\n" , json_obj.dump(2).c_str());
    if (json_obj.is_null() || !json_obj.is_object()) {
        throw std::runtime_error("global_from_json: input JSON value must be an object");
    }
    for (auto it = json_obj.begin(); it != json_obj.end(); ++it) {
        JJ_DEBUG("global_from_json: setting key '%s'", it.key().c_str());
        ctx.set_val(it.key(), from_json(it.value(), mark_input));
    }
}

// recursively convert value to JSON string
// TODO: avoid circular references
thread_local size_t value_nesting_guard::depth = 0;
thread_local size_t walk_output_limit = SIZE_MAX;

void check_walk_output(size_t bytes) {
    if (bytes > walk_output_limit) {
        throw limit_exceeded("writing this value would make a string of more than " + std::to_string(walk_output_limit) +
                             " bytes, the limit");
    }
}

value_t::~value_t() {
    if (val_arr.empty() && val_obj.empty()) return;
    // The outermost destructor frees the values that reach a refcount of zero one at a time; the
    // destructors it runs hand their children back to it instead of freeing them themselves.
    static thread_local std::vector<value> * pending = nullptr;
    std::vector<value> local;
    const bool outermost = pending == nullptr;
    if (outermost) pending = &local;
    for (auto & v : val_arr) pending->push_back(std::move(v));
    for (auto & [k, v] : val_obj) {
        pending->push_back(std::move(k));
        pending->push_back(std::move(v));
    }
    if (outermost) {
        while (!local.empty()) {
            value v = std::move(local.back());
            local.pop_back();
        }
        pending = nullptr;
    }
}

// wick
std::string python_float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    // The shortest digits, as d.ddde[+-]x; Python puts the point itself.
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    const size_t e = sci.find('e');
    const bool negative = sci[0] == '-';
    std::string digits;
    for (size_t i = negative ? 1 : 0; i < e; i++) {
        if (sci[i] != '.') digits += sci[i];
    }
    const int exp10 = std::stoi(sci.substr(e + 1));
    const int point = exp10 + 1; // digits[0..point) before the decimal point
    std::string out = negative ? "-" : "";
    if (point > 16 || point < -3) {
        out += digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char ebuf[16];
        snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return out + ebuf;
    }
    if (point <= 0) return out + "0." + std::string(-point, '0') + digits;
    if (static_cast<size_t>(point) >= digits.size()) {
        return out + digits + std::string(point - digits.size(), '0') + ".0";
    }
    return out + digits.substr(0, point) + "." + digits.substr(point);
}

static void value_to_json_internal(std::ostringstream & oss, const value & val, int curr_lvl, int indent, const std::string_view item_sep, const std::string_view key_sep, bool sort_keys) {
    value_nesting_guard guard; // wick
    check_walk_output(static_cast<size_t>(oss.tellp()));
    auto indent_str = [indent, curr_lvl]() -> std::string {
        return (indent > 0) ? std::string(curr_lvl * indent, ' ') : "";
    };
    auto newline = [indent]() -> std::string {
        return (indent >= 0) ? "\n" : "";
    };

    if (is_val<value_none>(val) || val->is_undefined()) {
        oss << "null";
    } else if (is_val<value_bool>(val)) {
        oss << (val->as_bool() ? "true" : "false");
    } else if (is_val<value_int>(val)) {
        oss << val->as_int();
    } else if (is_val<value_float>(val)) {
        // wick: Python's json.dumps (float repr; it was 6 significant digits)
        const double d = val->as_float();
        oss << (std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : python_float_repr(d));
    } else if (is_val<value_string>(val)) {
        oss << "\"";
        for (char c : val->as_string().str()) {
            switch (c) {
                case '"': oss << "\\\""; break;
                case '\\': oss << "\\\\"; break;
                case '\b': oss << "\\b"; break;
                case '\f': oss << "\\f"; break;
                case '\n': oss << "\\n"; break;
                case '\r': oss << "\\r"; break;
                case '\t': oss << "\\t"; break;
                default:
                    if (static_cast<unsigned char>(c) < 0x20) {
                        char buf[7];
                        snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
                        oss << buf;
                    } else {
                        oss << c;
                    }
            }
        }
        oss << "\"";
    } else if (is_val<value_array>(val)) {
        const auto & arr = val->as_array();
        oss << "[";
        if (!arr.empty()) {
            oss << newline();
            for (size_t i = 0; i < arr.size(); ++i) {
                oss << indent_str() << (indent > 0 ? std::string(indent, ' ') : "");
                value_to_json_internal(oss, arr[i], curr_lvl + 1, indent, item_sep, key_sep, sort_keys);
                if (i < arr.size() - 1) {
                    oss << item_sep;
                }
                oss << newline();
            }
            oss << indent_str();
        }
        oss << "]";
    } else if (is_val<value_object>(val)) {
        const auto & ordered = val->as_ordered_object(); // IMPORTANT: need to keep exact order
        std::vector<std::pair<value, value>> sorted;
        if (sort_keys) {
            sorted = ordered;
            // wick: json.dumps(sort_keys=True): the keys in Python's order (value_compare; a mix of
            // strings and numbers is Python's TypeError)
            std::stable_sort(sorted.begin(), sorted.end(), [](const auto & a, const auto & b) {
                return value_compare(a.first, b.first, value_compare_op::lt);
            });
        }
        const auto & obj = sort_keys ? sorted : ordered;
        oss << "{";
        if (!obj.empty()) {
            oss << newline();
            size_t i = 0;
            for (const auto & pair : obj) {
                oss << indent_str() << (indent > 0 ? std::string(indent, ' ') : "");
                value_to_json_internal(oss, mk_val<value_string>(pair.first->as_string().str()), curr_lvl + 1, indent, item_sep, key_sep, sort_keys);
                oss << key_sep;
                value_to_json_internal(oss, pair.second, curr_lvl + 1, indent, item_sep, key_sep, sort_keys);
                if (i < obj.size() - 1) {
                    oss << item_sep;
                }
                oss << newline();
                ++i;
            }
            oss << indent_str();
        }
        oss << "}";
    } else {
        oss << "null";
    }
}

std::string value_to_json(const value & val, int indent, const std::string_view item_sep, const std::string_view key_sep, bool sort_keys) {
    std::ostringstream oss;
    value_to_json_internal(oss, val, 0, indent, item_sep, key_sep, sort_keys);
    JJ_DEBUG("value_to_json: result=%s", oss.str().c_str());
    return oss.str();
}

// wick: a string as Python's repr() writes it: single quotes unless it holds one and no double
// quote; backslash escapes for the quote, the backslash, control characters and the non-printing
// characters texts commonly hold (C1 controls, no-break and zero-width spaces, line separators,
// the byte order mark); other characters as they are.
static void python_string_repr(std::ostringstream & oss, const std::string & str) {
    const bool has_single = str.find('\'') != std::string::npos;
    const char quote = has_single && str.find('"') == std::string::npos ? '"' : '\'';
    oss << quote;
    char buf[12];
    for (size_t i = 0; i < str.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(str[i]);
        if (c == static_cast<unsigned char>(quote) || c == '\\') {
            oss << '\\' << static_cast<char>(c);
        } else if (c == '\n') {
            oss << "\\n";
        } else if (c == '\r') {
            oss << "\\r";
        } else if (c == '\t') {
            oss << "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(buf, sizeof(buf), "\\x%02x", c);
            oss << buf;
        } else if (c >= 0x80) {
            // the UTF-8 sequence at i (a malformed byte is written as it is)
            const auto parsed = common_parse_utf8_codepoint(str, i);
            const bool ok = parsed.status == utf8_parse_result::SUCCESS;
            const size_t len = ok ? parsed.bytes_consumed : 1;
            const uint32_t cp = parsed.codepoint;
            const bool hidden = (cp >= 0x80 && cp <= 0xa0) || cp == 0xad || (cp >= 0x200b && cp <= 0x200f) ||
                                cp == 0x2028 || cp == 0x2029 || (cp >= 0x2060 && cp <= 0x2064) || cp == 0xfeff;
            if (ok && hidden) {
                snprintf(buf, sizeof(buf), cp <= 0xff ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(cp));
                oss << buf;
            } else {
                oss.write(str.data() + i, static_cast<std::streamsize>(len));
            }
            i += len - 1;
        } else {
            oss << static_cast<char>(c);
        }
    }
    oss << quote;
}

static void value_to_python_repr_internal(std::ostringstream & oss, const value & val) {
    value_nesting_guard guard;
    check_walk_output(static_cast<size_t>(oss.tellp()));
    if (is_val<value_none>(val)) {
        oss << "None";
    } else if (val->is_undefined()) {
        oss << "Undefined";
    } else if (is_val<value_bool>(val)) {
        oss << (val->as_bool() ? "True" : "False");
    } else if (is_val<value_int>(val) || is_val<value_float>(val)) {
        oss << val->as_string().str();
    } else if (is_val<value_string>(val)) {
        python_string_repr(oss, val->as_string().str());
    } else if (is_val<value_array>(val)) {
        const bool tuple = is_val<value_tuple>(val);
        const auto & arr = val->as_array();
        oss << (tuple ? "(" : "[");
        for (size_t i = 0; i < arr.size(); ++i) {
            if (i > 0) oss << ", ";
            value_to_python_repr_internal(oss, arr[i]);
        }
        oss << (tuple ? (arr.size() == 1 ? ",)" : ")") : "]");
    } else if (is_val<value_object>(val)) {
        oss << "{";
        size_t i = 0;
        for (const auto & pair : val->as_ordered_object()) {
            if (i++ > 0) oss << ", ";
            value_to_python_repr_internal(oss, pair.first);
            oss << ": ";
            value_to_python_repr_internal(oss, pair.second);
        }
        oss << "}";
    } else {
        oss << val->as_repr();
    }
}

std::string value_to_python_repr(const value & val) {
    std::ostringstream oss;
    value_to_python_repr_internal(oss, val);
    check_walk_output(static_cast<size_t>(oss.tellp()));
    return oss.str();
}

// TODO: avoid circular references
std::string value_to_string_repr(const value & val) {
    if (is_val<value_string>(val)) {
        const std::string val_str = val->as_string().str();

        if (val_str.find('\'') != std::string::npos) {
            return value_to_json(val);
        } else {
            return "'" + val_str + "'";
        }
    } else {
        return val->as_repr();
    }
}

// stats utility
void value_t::stats_t::mark_used(value & val, bool deep) {
    value_nesting_guard guard; // wick
    val->stats.used = true;
    if (deep) {
        if (is_val<value_array>(val)) {
            for (auto & item : val->val_arr) {
                mark_used(item, deep);
            }
        } else if (is_val<value_object>(val)) {
            for (auto & pair : val->val_obj) {
                mark_used(pair.first, deep);
                mark_used(pair.second, deep);
            }
        }
    }
}

} // namespace jinja
