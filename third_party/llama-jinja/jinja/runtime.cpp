#include "lexer.h"
#include "runtime.h"
#include "value.h"
#include "utils.h"

#include <string>
#include <vector>
#include <memory>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>

#define FILENAME "jinja-runtime"

bool g_jinja_debug = false;

namespace jinja {

void enable_debug(bool enable) {
    g_jinja_debug = enable;
}

static value_string exec_statements(const statements & stmts, context & ctx) {
    auto result = mk_val<value_array>();
    for (const auto & stmt : stmts) {
        JJ_DEBUG("Executing statement of type %s", stmt->type().c_str());
        result->push_back(stmt->execute(ctx));
    }
    // convert to string parts
    value_string str = mk_val<value_string>();
    gather_string_parts_recursive(result, str);
    return str;
}

static std::string get_line_col(const std::string & source, size_t pos) {
    size_t line = 1;
    size_t col = 1;
    for (size_t i = 0; i < pos && i < source.size(); i++) {
        if (source[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

static void ensure_key_type_allowed(const value & val) {
    if (!val->is_hashable()) {
        throw std::runtime_error("Type: " + val->type() + " is not allowed as object key");
    }
}

void check_string_size(const exec_state & st, size_t bytes, const char * what) {
    if (bytes > st.limits.max_string) {
        throw limit_exceeded(std::string(what) + " would make a string of " + std::to_string(bytes) +
                             " bytes, more than the limit of " + std::to_string(st.limits.max_string));
    }
}

void check_item_count(const exec_state & st, size_t items, const char * what) {
    if (items > st.limits.max_items) {
        throw limit_exceeded(std::string(what) + " would make " + std::to_string(items) +
                             " elements, more than the limit of " + std::to_string(st.limits.max_items));
    }
}

void count_step(exec_state & st) {
    if (++st.steps > st.limits.max_steps) {
        throw limit_exceeded("the render ran more than the limit of " + std::to_string(st.limits.max_steps) +
                             " steps (statements and loop iterations)");
    }
    if (st.steps % 16 == 0) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - st.start).count();
        if (s > st.limits.max_seconds) {
            std::ostringstream msg;
            msg << "the render ran more than the limit of " << st.limits.max_seconds << " s";
            throw limit_exceeded(msg.str());
        }
    }
}

void check_no_cycle(exec_state & st, const value_t * target, const value & inserted, const char * what) {
    std::vector<const value_t *> todo = {inserted.get()};
    std::set<const value_t *> seen;
    while (!todo.empty()) {
        const value_t * v = todo.back();
        todo.pop_back();
        if (v == target) {
            throw limit_exceeded(std::string(what) + ": a container cannot hold itself");
        }
        if (v == nullptr || (v->val_arr.empty() && v->val_obj.empty()) || !seen.insert(v).second) continue;
        count_step(st);
        for (const auto & c : v->val_arr) todo.push_back(c.get());
        for (const auto & [k, c] : v->val_obj) {
            todo.push_back(k.get());
            todo.push_back(c.get());
        }
    }
}

bool member_expression::makes_values() const {
    return is_stmt<slice_expression>(property);
}

// wick: Jinja2's message for using an undefined value ("'x' is undefined"), with the variable's
// name where the value came from one.
static std::string undefined_message(const value & v) {
    const auto * u = dynamic_cast<const value_undefined_t *>(v.get());
    const std::string hint = u ? u->hint : std::string();
    if (hint.empty() || hint == "object_property") {
        return "an undefined value is used (an attribute or item that does not exist?)";
    }
    return "'" + hint + "' is undefined";
}

namespace {

// wick: counts a statement's execution against the render's limits while it runs.
struct exec_guard {
    exec_state & st;
    explicit exec_guard(exec_state & s) : st(s) {
        if (st.depth >= st.limits.max_depth) {
            throw limit_exceeded("statements nested deeper than the limit of " +
                                 std::to_string(st.limits.max_depth) + " (a macro that calls itself without end?)");
        }
        count_step(st);
        st.depth++;
    }
    ~exec_guard() { st.depth--; }
    exec_guard(const exec_guard &) = delete;
    exec_guard & operator=(const exec_guard &) = delete;
};

// wick: a value that grew past the limits is refused where it was made; `made` says whether it
// counts in the render's totals.
void check_value_size(exec_state & st, const value & v, bool made) {
    if (!v) return;
    size_t bytes = 0, items = 0;
    if (is_val<value_string>(v)) {
        // its parts count too: concatenation keeps them apart (a string doubled in a loop)
        check_item_count(st, v->val_str.parts.size(), "this expression (string parts)");
        bytes = v->val_str.length();
        check_string_size(st, bytes, "this expression");
    } else if (is_val<value_array>(v)) {
        items = v->val_arr.size();
        check_item_count(st, items, "this expression");
    } else if (is_val<value_object>(v)) {
        items = v->val_obj.size();
        check_item_count(st, items, "this expression");
    }
    if (!made) return;
    st.total_bytes += bytes;
    st.total_items += items;
    if (st.total_bytes > st.limits.max_total_bytes || st.total_items > st.limits.max_total_items) {
        throw limit_exceeded("the render's expressions gave more than the limit of " +
                             std::to_string(st.limits.max_total_bytes) + " bytes of strings or " +
                             std::to_string(st.limits.max_total_items) + " elements in all");
    }
}

} // namespace

// execute with error handling
value statement::execute(context & ctx) const {
    try {
        exec_guard guard(*ctx.exec);
        value out = execute_impl(ctx);
        check_value_size(*ctx.exec, out, makes_values());
        return out;
    } catch (const continue_statement::signal & /* ex */) {
        throw;
    } catch (const break_statement::signal & /* ex */) {
        throw;
    } catch (const rethrown_exception & /* ex */) {
        throw;
    } catch (const not_implemented_exception & /* ex */) {
        throw;
    } catch (const limit_exceeded & /* ex */) {
        throw; // wick: said once, where it happened (rethrown_exception would wrap it at every level)
    } catch (const std::exception & e) {
        const std::string & source = *ctx.src;
        if (source.empty()) {
            std::ostringstream oss;
            oss << "\nError executing " << type() << " at position " << pos << ": " << e.what();
            throw rethrown_exception(oss.str());
        } else {
            std::ostringstream oss;
            oss << "\n------------\n";
            oss << "While executing " << type() << " at " << get_line_col(source, pos) << " in source:\n";
            oss << peak_source(source, pos) << "\n";
            oss << "Error: " << e.what();
            // throw as another exception to avoid repeated formatting
            throw rethrown_exception(oss.str());
        }
    }
}

value identifier::execute_impl(context & ctx) const {
    auto it = ctx.get_val(val);
    auto builtins = global_builtins();
    if (!it->is_undefined()) {
        if (ctx.is_get_stats) {
            value_t::stats_t::mark_used(it);
        }
        JJ_DEBUG("Identifier '%s' found, type = %s", val.c_str(), it->type().c_str());
        return it;
    } else if (builtins.find(val) != builtins.end()) {
        JJ_DEBUG("Identifier '%s' found in builtins", val.c_str());
        return mk_val<value_func>(val, builtins.at(val));
    } else {
        JJ_DEBUG("Identifier '%s' not found, returning undefined", val.c_str());
        return mk_val<value_undefined>(val);
    }
}

value object_literal::execute_impl(context & ctx) const {
    auto obj = mk_val<value_object>();
    for (const auto & pair : val) {
        value key = pair.first->execute(ctx);
        value val = pair.second->execute(ctx);
        JJ_DEBUG("Object literal: setting key '%s' with value type %s", key->as_string().str().c_str(), val->type().c_str());
        obj->insert(key, val);
    }
    return obj;
}

value binary_expression::execute_impl(context & ctx) const {
    value left_val = left->execute(ctx);

    // Logical operators
    if (op.value == "and") {
        JJ_DEBUG("Executing logical test: %s AND %s", left->type().c_str(), right->type().c_str());
        return left_val->as_bool() ? right->execute(ctx) : std::move(left_val);
    } else if (op.value == "or") {
        JJ_DEBUG("Executing logical test: %s OR %s", left->type().c_str(), right->type().c_str());
        return left_val->as_bool() ? std::move(left_val) : right->execute(ctx);
    }

    // Equality operators
    value right_val = right->execute(ctx);
    JJ_DEBUG("Executing binary expression %s '%s' %s", left_val->type().c_str(), op.value.c_str(), right_val->type().c_str());
    if (op.value == "==") {
        return mk_val<value_bool>(*left_val == *right_val);
    } else if (op.value == "!=") {
        return mk_val<value_bool>(!(*left_val == *right_val));
    }

    auto workaround_concat_null_with_str = [&](value & res) -> bool {
        bool is_left_null  = left_val->is_none()  || left_val->is_undefined();
        bool is_right_null = right_val->is_none() || right_val->is_undefined();
        bool is_left_str   = is_val<value_string>(left_val);
        bool is_right_str  = is_val<value_string>(right_val);
        if ((is_left_null && is_right_str) || (is_right_null && is_left_str)) {
            JJ_DEBUG("%s", "Workaround: treating null/undefined as empty string for string concatenation");
            // wick: `~` writes none as None, as Jinja2 does (undefined is empty; `+` keeps the workaround)
            auto null_str = [&](const value & v) { return op.value == "~" && v->is_none() ? string("None") : string(); };
            string left_str  = is_left_null  ? null_str(left_val) : left_val->as_string();
            string right_str = is_right_null ? null_str(right_val) : right_val->as_string();
            auto output = left_str.append(right_str);
            res = mk_val<value_string>(std::move(output));
            return true;
        }
        return false;
    };

    auto test_is_in = [&]() -> bool {
        func_args args(ctx);
        args.push_back(left_val);
        args.push_back(right_val);
        return global_builtins().at("test_is_in")(args)->as_bool();
    };

    // Handle undefined and null values
    if (is_val<value_undefined>(left_val) || is_val<value_undefined>(right_val)) {
        if (is_val<value_undefined>(right_val) && (op.value == "in" || op.value == "not in")) {
            // Special case: `anything in undefined` is `false` and `anything not in undefined` is `true`
            return mk_val<value_bool>(op.value == "not in");
        }
        // wick: only `~` takes an undefined operand (as empty), as in Jinja2, whose `+` raises
        // UndefinedError: a string + undefined printed the string alone.
        if (op.value == "~") {
            value res = mk_val<value_undefined>();
            if (workaround_concat_null_with_str(res)) {
                return res;
            }
        }
        throw std::runtime_error(undefined_message(is_val<value_undefined>(left_val) ? left_val : right_val) +
                                 " (operation " + op.value + ")");
    } else if (is_val<value_none>(left_val) || is_val<value_none>(right_val)) {
        if (!is_val<value_none>(right_val) && (op.value == "in" || op.value == "not in")) {
            // case: none in {'low': 1}
            // A null left operand is looked up like any other value.
            bool member = test_is_in();
            return mk_val<value_bool>(op.value == "in" ? member : !member);
        }
        // wick: `~` writes none as None; `+` with none is Python's TypeError, not the other
        // operand alone.
        if (op.value == "~") {
            value res = mk_val<value_undefined>();
            if (workaround_concat_null_with_str(res)) {
                return res;
            }
        }
        throw std::runtime_error("Cannot perform operation " + op.value + " on none (Python's TypeError)");
    }

    // wick: integers compute in int64, exactly, and an overflow is an error (Python's integers
    // never overflow: a template that needs more than 64 bits is refused, not answered wrongly);
    // `%` and `//` round toward negative infinity as Python's do; `/` is a float division.
    if (is_val<value_int>(left_val) && is_val<value_int>(right_val) && op.value != "/") {
        const int64_t a = left_val->as_int(), b = right_val->as_int();
        int64_t r = 0;
        auto overflow = [&]() -> value {
            throw std::runtime_error(std::to_string(a) + " " + op.value + " " + std::to_string(b) +
                                     " does not fit a 64-bit integer");
        };
        if (op.value == "+") {
            if (__builtin_add_overflow(a, b, &r)) overflow();
            return mk_val<value_int>(r);
        } else if (op.value == "-") {
            if (__builtin_sub_overflow(a, b, &r)) overflow();
            return mk_val<value_int>(r);
        } else if (op.value == "*") {
            if (__builtin_mul_overflow(a, b, &r)) overflow();
            return mk_val<value_int>(r);
        } else if (op.value == "%" || op.value == "//") {
            if (b == 0) {
                throw std::runtime_error(op.value == "%" ? "integer modulo by zero" : "integer division by zero");
            }
            if (b == -1) { // INT64_MIN / -1 overflows; the remainder is 0
                if (op.value == "%") return mk_val<value_int>(0);
                return mk_val<value_int>(negate_int64(a));
            }
            int64_t q = a / b, m = a % b;
            if (m != 0 && ((m < 0) != (b < 0))) {
                m += b;
                q -= 1;
            }
            return mk_val<value_int>(op.value == "%" ? m : q);
        } else if (op.value == "**") {
            if (b < 0) return mk_val<value_float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
            int64_t result = 1, base = a;
            for (int64_t e = b; e > 0; e >>= 1) { // by squaring: at most 63 rounds
                if ((e & 1) && __builtin_mul_overflow(result, base, &result)) overflow();
                if (e > 1 && __builtin_mul_overflow(base, base, &base)) {
                    // base^2 overflows: the result does unless nothing more multiplies it
                    if (result != 0) overflow();
                    break;
                }
            }
            return mk_val<value_int>(result);
        }
    }

    // Float operations
    if ((is_val<value_int>(left_val) || is_val<value_float>(left_val)) &&
        (is_val<value_int>(right_val) || is_val<value_float>(right_val))) {
        double a = left_val->as_float();
        double b = right_val->as_float();
        if (op.value == "+" || op.value == "-" || op.value == "*") {
            double res = (op.value == "+") ? a + b : (op.value == "-") ? a - b : a * b;
            JJ_DEBUG("Arithmetic operation: %f %s %f = %f", a, op.value.c_str(), b, res);
            return mk_val<value_float>(res); // wick: one operand is a float (integers above)
        } else if (op.value == "/") {
            JJ_DEBUG("Division operation: %f / %f", a, b);
            if (b == 0) throw std::runtime_error("division by zero"); // wick: as Python
            return mk_val<value_float>(a / b);
        } else if (op.value == "%" || op.value == "//") {
            // wick: Python's float modulo and floor division
            if (b == 0) throw std::runtime_error(op.value == "%" ? "float modulo by zero" : "float division by zero");
            // CPython's float divmod: the remainder takes b's sign, the quotient is rounded to
            // the integer nearest (a - rem) / b
            double rem = std::fmod(a, b);
            double div = (a - rem) / b;
            if (rem != 0) {
                if ((b < 0) != (rem < 0)) {
                    rem += b;
                    div -= 1.0;
                }
            } else {
                rem = std::copysign(0.0, b);
            }
            if (op.value == "%") return mk_val<value_float>(rem);
            double floordiv = std::copysign(0.0, a / b);
            if (div != 0) {
                floordiv = std::floor(div);
                if (div - floordiv > 0.5) floordiv += 1.0;
            }
            return mk_val<value_float>(floordiv);
        } else if (op.value == "**") {
            return mk_val<value_float>(std::pow(a, b)); // wick
        }
    }

    // Array operations
    if (is_val<value_array>(left_val) && is_val<value_array>(right_val)) {
        if (op.value == "+") {
            auto & left_arr = left_val->as_array();
            auto & right_arr = right_val->as_array();
            auto result = mk_val<value_array>();
            for (const auto & item : left_arr) {
                result->push_back(item);
            }
            for (const auto & item : right_arr) {
                result->push_back(item);
            }
            return result;
        }
    } else if (is_val<value_array>(right_val)) {
        // case: 1 in [0, 1, 2]
        bool member = test_is_in();
        if (op.value == "in") {
            return mk_val<value_bool>(member);
        } else if (op.value == "not in") {
            return mk_val<value_bool>(!member);
        }
    }

    // wick: <, >, <= and >= as the comparison tests order (value_compare: numbers by value, int64
    // exactly, strings in code point order, lists item by item, booleans as 0 and 1; an error for
    // what Python cannot order): strings and lists were unknown operators.
    if (op.value == "<" || op.value == ">" || op.value == "<=" || op.value == ">=") {
        const value_compare_op cmp = op.value == "<"  ? value_compare_op::lt
                                   : op.value == ">"  ? value_compare_op::gt
                                   : op.value == "<=" ? value_compare_op::le
                                                      : value_compare_op::ge;
        return mk_val<value_bool>(value_compare(left_val, right_val, cmp));
    }

    // String concatenation with ~ and +
    if ((is_val<value_string>(left_val) || is_val<value_string>(right_val)) &&
            (op.value == "~" || op.value == "+")) {
        JJ_DEBUG("String concatenation with %s operator", op.value.c_str());
        auto output = left_val->as_string().append(right_val->as_string());
        auto res = mk_val<value_string>();
        res->val_str = std::move(output);
        return res;
    }

    // Python-style string repetition
    // TODO: support array/tuple repetition (e.g., [1, 2] * 3 → [1, 2, 1, 2, 1, 2])
    if (op.value == "*" &&
            ((is_val<value_string>(left_val) && is_val<value_int>(right_val)) ||
             (is_val<value_int>(left_val) && is_val<value_string>(right_val)))) {
        const auto & str = is_val<value_string>(left_val) ? left_val->as_string() : right_val->as_string();
        const int64_t repeat = is_val<value_int>(right_val) ? right_val->as_int() : left_val->as_int();
        auto res = mk_val<value_string>();
        if (repeat <= 0) {
            return res;
        }
        // wick: the size is checked before it is made
        check_string_size(*ctx.exec, mul_saturated(str.length(), size_t(repeat)), "string repetition");
        for (int64_t i = 0; i < repeat; ++i) {
            res->val_str.append(str);
        }
        return res;
    }

    // String membership
    if (is_val<value_string>(left_val) && is_val<value_string>(right_val)) {
        // case: "a" in "abc"
        bool member = test_is_in();
        if (op.value == "in") {
            return mk_val<value_bool>(member);
        } else if (op.value == "not in") {
            return mk_val<value_bool>(!member);
        }
    }

    // Value key in object
    if (is_val<value_object>(right_val)) {
        // case: key in {key: value}
        bool member = test_is_in();
        if (op.value == "in") {
            return mk_val<value_bool>(member);
        } else if (op.value == "not in") {
            return mk_val<value_bool>(!member);
        }
    }

    throw std::runtime_error("Unknown operator \"" + op.value + "\" between " + left_val->type() + " and " + right_val->type());
}

static value try_builtin_func(context & ctx, const std::string & name, value & input, bool undef_on_missing = false) {
    JJ_DEBUG("Trying built-in function '%s' for type %s", name.c_str(), input->type().c_str());
    if (ctx.is_get_stats) {
        value_t::stats_t::mark_used(input);
        input->stats.ops.insert(name);
    }
    auto builtins = input->get_builtins();
    auto it = builtins.find(name);
    if (it != builtins.end()) {
        JJ_DEBUG("Binding built-in '%s'", name.c_str());
        return mk_val<value_func>(name, it->second, input);
    }
    if (undef_on_missing) {
        return mk_val<value_undefined>(name);
    }
    throw std::runtime_error("Unknown (built-in) filter '" + name + "' for type " + input->type());
}

// wick: Python's str() of a value, as `%s` writes it
static std::string python_str(const value & v) {
    if (is_val<value_string>(v)) return v->as_string().str();
    if (v->is_undefined()) return "";
    return value_to_python_repr(v);
}

// wick: snprintf into a string of the size it needs
template<typename... Args>
static std::string printf_string(const std::string & spec, Args... args) {
    const int n = snprintf(nullptr, 0, spec.c_str(), args...);
    if (n < 0) throw std::runtime_error("format: bad format " + spec);
    std::string out(static_cast<size_t>(n) + 1, '\0');
    snprintf(out.data(), out.size(), spec.c_str(), args...);
    out.pop_back();
    return out;
}

// wick: the `format` filter is Python's printf-style `fmt % args` in Jinja2 (the `.format()` method
// of a string is str.format, the builtin): %s %r %d %i %f %F %e %E %g %G %x %X %o %c %% with flags,
// width and precision; a mapping's `%(name)s` is not supported.
static value printf_format(const value & input, const func_args & args) {
    if (!is_val<value_string>(input)) {
        throw std::runtime_error("format: the input must be a string, got " + input->type());
    }
    const std::string fmt = input->as_string().str();
    // Positional arguments, or keyword arguments for %(name)s (Python's `%` with a mapping).
    std::vector<value> items;
    std::map<std::string, value> named;
    for (const auto & a : args.get_args()) {
        if (const auto * kw = dynamic_cast<const value_kwarg_t *>(a.get())) {
            named[kw->key] = kw->val;
        } else {
            items.push_back(a);
        }
    }
    if (!items.empty() && !named.empty()) {
        throw std::runtime_error("format: can't handle positional and keyword arguments at the same time");
    }
    std::string out;
    size_t next = 0;
    std::string key; // the current spec's (name), if any
    bool keyed = false;
    auto take = [&]() -> value {
        if (!named.empty() || keyed) {
            if (!keyed) throw std::runtime_error("format: format requires a mapping");
            auto it = named.find(key);
            if (it == named.end()) throw std::runtime_error("format: no argument named '" + key + "'");
            return it->second;
        }
        if (next >= items.size()) throw std::runtime_error("format: not enough arguments for the format string");
        return items[next++];
    };
    auto take_number = [&](char conv) -> value {
        value v = take();
        if (!is_val<value_int>(v) && !is_val<value_float>(v) && !is_val<value_bool>(v)) {
            throw std::runtime_error(std::string("format: %") + conv + " takes a number, got " + v->type());
        }
        return v;
    };
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        size_t j = i + 1;
        keyed = j < fmt.size() && fmt[j] == '(';
        if (keyed) {
            const size_t close = fmt.find(')', j);
            if (close == std::string::npos) throw std::runtime_error("format: incomplete format key");
            key = fmt.substr(j + 1, close - j - 1);
            j = close + 1;
        }
        std::string spec = "%";
        while (j < fmt.size() && std::strchr("-+ 0#", fmt[j])) spec += fmt[j++];
        for (int k = 0; j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j])) && k < 4; ++k) spec += fmt[j++];
        if (j < fmt.size() && fmt[j] == '.') {
            spec += fmt[j++];
            for (int k = 0; j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j])) && k < 4; ++k) spec += fmt[j++];
        }
        if (j >= fmt.size()) throw std::runtime_error("format: incomplete format");
        const char conv = fmt[j];
        if (conv == '%') {
            out += '%';
        } else if (conv == 's' || conv == 'r') {
            const value v = take();
            const std::string text = conv == 's' ? python_str(v) : value_to_python_repr(v);
            out += printf_string(spec + "s", text.c_str()); // flags, width, precision as printf's
        } else if (std::strchr("dixXoc", conv)) {
            const value v = take_number(conv);
            const long long n = is_val<value_float>(v) ? static_cast<long long>(double_to_int64(std::trunc(v->as_float())))
                                                       : static_cast<long long>(v->as_int());
            const std::string f = spec + (conv == 'i' ? std::string("lld") : conv == 'c' ? std::string("c") : std::string("ll") + conv);
            out += conv == 'c' ? printf_string(f, static_cast<int>(n)) : printf_string(f, n);
        } else if (std::strchr("fFeEgG", conv)) {
            const value v = take_number(conv);
            out += printf_string(spec + conv, v->as_float());
        } else {
            throw std::runtime_error(std::string("format: unsupported format character '") + conv + "'");
        }
        check_string_size(*args.ctx.exec, out.size(), "format");
        i = j;
    }
    if (named.empty() && next < items.size()) throw std::runtime_error("format: not all arguments converted during string formatting");
    return mk_val<value_string>(out);
}

static value apply_filter(context & ctx, const statement_ptr & filter, value input) {
    JJ_DEBUG("Applying filter to %s", input->type().c_str());

    auto set_filter_alias = [](auto & filter_id) { filter_id = filter_builtin_name(filter_id); }; // wick: shared with map

    if (is_stmt<identifier>(filter)) {
        auto filter_id = cast_stmt<identifier>(filter)->val;

        set_filter_alias(filter_id);
        JJ_DEBUG("Applying filter '%s' to %s", filter_id.c_str(), input->type().c_str());
        // TODO: Refactor filters so this coercion can be done automatically
        if (!input->is_undefined() && !is_val<value_string>(input) && (
            filter_id == "capitalize" ||
            filter_id == "lower" ||
            filter_id == "replace" ||
            filter_id == "strip" ||
            filter_id == "title_words" ||
            filter_id == "upper" ||
            filter_id == "wordcount"
        )) {
            JJ_DEBUG("Coercing %s to String for '%s' filter", input->type().c_str(), filter_id.c_str());
            input = mk_val<value_string>(input->as_string());
        }
        return try_builtin_func(ctx, filter_id, input)->invoke(func_args(ctx));

    } else if (is_stmt<call_expression>(filter)) {
        auto call = cast_stmt<call_expression>(filter);
        if (!is_stmt<identifier>(call->callee)) {
            throw std::runtime_error("Filter callee must be an identifier");
        }
        auto filter_id = cast_stmt<identifier>(call->callee)->val;

        set_filter_alias(filter_id);
        JJ_DEBUG("Applying filter '%s' with arguments to %s", filter_id.c_str(), input->type().c_str());
        func_args args(ctx);
        for (const auto & arg_expr : call->args) {
            args.push_back(arg_expr->execute(ctx));
        }
        if (filter_id == "format") return printf_format(input, args); // wick

        return try_builtin_func(ctx, filter_id, input)->invoke(args);

    } else {
        throw std::runtime_error("Invalid filter expression");
    }
}

value filter_expression::execute_impl(context & ctx) const {
    return apply_filter(ctx, filter, operand->execute(ctx));
}

value print_expression::execute_impl(context & ctx) const {
    value v = expr->execute(ctx);
    if (is_val<value_array>(v) || is_val<value_object>(v) || is_val<value_none>(v)) {
        return mk_val<value_string>(value_to_python_repr(v));
    }
    return v;
}

value filter_statement::execute_impl(context & ctx) const {
    // eval body as string, then apply filter
    context scope(ctx); // wick: as Jinja2, the block's sets stay in the block
    auto body_val = exec_statements(body, scope);
    value_string parts = mk_val<value_string>();
    gather_string_parts_recursive(body_val, parts);

    JJ_DEBUG("FilterStatement: applying filter to body string of length %zu", parts->val_str.length());
    return apply_filter(ctx, filter, parts);
}

value test_expression::execute_impl(context & ctx) const {
    // NOTE: "value is something" translates to function call "test_is_something(value)"
    const auto & builtins = global_builtins();

    std::string test_id;
    value input = operand->execute(ctx);

    func_args args(ctx);
    args.push_back(input);

    if (is_stmt<identifier>(test)) {
        test_id = cast_stmt<identifier>(test)->val;
    } else if (is_stmt<call_expression>(test)) {
        auto call = cast_stmt<call_expression>(test);
        if (!is_stmt<identifier>(call->callee)) {
            throw std::runtime_error("Test callee must be an identifier");
        }
        test_id = cast_stmt<identifier>(call->callee)->val;

        JJ_DEBUG("Applying test '%s' with arguments to %s", test_id.c_str(), input->type().c_str());
        for (const auto & arg_expr : call->args) {
            args.push_back(arg_expr->execute(ctx));
        }

    } else {
        throw std::runtime_error("Invalid test expression");
    }

    const std::string test_name = "test_is_" + test_id;
    auto it = builtins.find(test_name);
    JJ_DEBUG("Test expression %s '%s' %s (using function '%s')", operand->type().c_str(), test_id.c_str(), negate ? "(negate)" : "", test_name.c_str());
    if (it == builtins.end()) {
        throw std::runtime_error("Unknown test '" + test_id + "'");
    }

    if (ctx.is_get_stats) {
        value_t::stats_t::mark_used(input);
        input->stats.ops.insert(test_name);
    }

    auto res = it->second(args);

    if (negate) {
        return mk_val<value_bool>(!res->as_bool());
    } else {
        return res;
    }
}

value unary_expression::execute_impl(context & ctx) const {
    value operand_val = argument->execute(ctx);
    JJ_DEBUG("Executing unary expression with operator '%s'", op.value.c_str());

    if (op.value == "not") {
        return mk_val<value_bool>(!operand_val->as_bool());
    } else if (op.value == "-") {
        if (is_val<value_int>(operand_val)) {
            return mk_val<value_int>(negate_int64(operand_val->as_int())); // wick: checked
        } else if (is_val<value_float>(operand_val)) {
            return mk_val<value_float>(-operand_val->as_float());
        } else {
            throw std::runtime_error("Unary - operator requires numeric operand");
        }
    } else if (op.value == "+") {
        if (is_val<value_int>(operand_val) || is_val<value_float>(operand_val)) {
            return operand_val;
        }
        throw std::runtime_error("Unary + operator requires numeric operand");
    }

    throw std::runtime_error("Unknown unary operator '" + op.value + "'");
}

value if_statement::execute_impl(context & ctx) const {
    value test_val = test->execute(ctx);

    auto out = mk_val<value_array>();
    if (test_val->as_bool()) {
        for (auto & stmt : body) {
            JJ_DEBUG("IF --> Executing THEN body, current block: %s", stmt->type().c_str());
            out->push_back(stmt->execute(ctx));
        }
    } else {
        for (auto & stmt : alternate) {
            JJ_DEBUG("IF --> Executing ELSE body, current block: %s", stmt->type().c_str());
            out->push_back(stmt->execute(ctx));
        }
    }
    // convert to string parts
    value_string str = mk_val<value_string>();
    gather_string_parts_recursive(out, str);
    return str;
}

value for_statement::execute_impl(context & ctx) const {
    context scope(ctx); // new scope for loop variables

    const jinja::select_expression * select_expr = cast_stmt<select_expression>(iterable);
    statement_ptr test_expr_nullptr;

    const statement_ptr & iter_expr = select_expr ? select_expr->lhs : iterable;
    const statement_ptr & test_expr = select_expr ? select_expr->test : test_expr_nullptr;

    JJ_DEBUG("Executing for statement, iterable type: %s", iter_expr->type().c_str());

    value iterable_val = iter_expr->execute(scope);

    // mark the variable being iterated as used for stats
    if (ctx.is_get_stats) {
        value_t::stats_t::mark_used(iterable_val);
        iterable_val->stats.ops.insert("array_access");
    }

    if (iterable_val->is_undefined()) {
        JJ_DEBUG("%s", "For loop iterable is undefined, skipping loop");
        iterable_val = mk_val<value_array>();
    }

    if (!is_val<value_array>(iterable_val) && !is_val<value_object>(iterable_val)) {
        throw std::runtime_error("Expected iterable or object type in for loop: got " + iterable_val->type());
    }

    std::vector<value> items;
    if (is_val<value_object>(iterable_val)) {
        JJ_DEBUG("%s", "For loop over object keys");
        auto & obj = iterable_val->as_ordered_object();
        for (auto & p : obj) {
            auto tuple = mk_val<value_tuple>(p);
            items.push_back(std::move(tuple));
        }
        if (ctx.is_get_stats) {
            value_t::stats_t::mark_used(iterable_val);
            iterable_val->stats.ops.insert("object_access");
        }
    } else {
        JJ_DEBUG("%s", "For loop over array items");
        auto & arr = iterable_val->as_array();
        for (const auto & item : arr) {
            items.push_back(item);
        }
        if (ctx.is_get_stats) {
            value_t::stats_t::mark_used(iterable_val);
            iterable_val->stats.ops.insert("array_access");
        }
    }

    std::vector<std::function<void(context &)>> scope_update_fns;

    std::vector<value> filtered_items;
    for (size_t i = 0; i < items.size(); ++i) {
        count_step(*ctx.exec); // wick

        value current = items[i];

        std::function<void(context&)> scope_update_fn = [](context &) { /* no-op */};
        if (is_stmt<identifier>(loopvar)) {
            auto id = cast_stmt<identifier>(loopvar)->val;

            if (is_val<value_object>(iterable_val)) {
                // case example: {% for key in dict %}
                current = items[i]->as_array()[0];
                scope_update_fn = [id, &items, i](context & ctx) {
                    ctx.set_val(id, items[i]->as_array()[0]);
                };
            } else {
                // case example: {% for item in list %}
                scope_update_fn = [id, &items, i](context & ctx) {
                    ctx.set_val(id, items[i]);
                };
            }

        } else if (is_stmt<tuple_literal>(loopvar)) {
            // case example: {% for key, value in dict %}
            auto tuple = cast_stmt<tuple_literal>(loopvar);
            if (!is_val<value_array>(current)) {
                throw std::runtime_error("Cannot unpack non-iterable type: " + current->type());
            }
            auto & c_arr = current->as_array();
            if (tuple->val.size() != c_arr.size()) {
                throw std::runtime_error(std::string("Too ") + (tuple->val.size() > c_arr.size() ? "few" : "many") + " items to unpack");
            }
            scope_update_fn = [tuple, &items, i](context & ctx) {
                auto & c_arr = items[i]->as_array();
                for (size_t j = 0; j < tuple->val.size(); ++j) {
                    if (!is_stmt<identifier>(tuple->val[j])) {
                        throw std::runtime_error("Cannot unpack non-identifier type: " + tuple->val[j]->type());
                    }
                    auto id = cast_stmt<identifier>(tuple->val[j])->val;
                    ctx.set_val(id, c_arr[j]);
                }
            };

        } else {
            throw std::runtime_error("Invalid loop variable(s): " + loopvar->type());
        }

        if (select_expr && test_expr) {
            context loop_scope(scope); // wick: only where a filter runs (a copy of every variable)
            scope_update_fn(loop_scope);
            value test_val = test_expr->execute(loop_scope);
            if (!test_val->as_bool()) {
                continue;
            }
        }
        JJ_DEBUG("For loop: adding item type %s at index %zu", current->type().c_str(), i);
        filtered_items.push_back(current);
        scope_update_fns.push_back(scope_update_fn);
    }
    JJ_DEBUG("For loop: %zu items after filtering", filtered_items.size());

    auto result = mk_val<value_array>();

    bool noIteration = true;
    for (size_t i = 0; i < filtered_items.size(); i++) {
        JJ_DEBUG("For loop iteration %zu/%zu", i + 1, filtered_items.size());
        count_step(*ctx.exec); // wick
        value_object loop_obj = mk_val<value_object>();
        loop_obj->has_builtins = false; // loop object has no builtins
        loop_obj->insert("index", mk_val<value_int>(i + 1));
        loop_obj->insert("index0", mk_val<value_int>(i));
        loop_obj->insert("revindex", mk_val<value_int>(filtered_items.size() - i));
        loop_obj->insert("revindex0", mk_val<value_int>(filtered_items.size() - i - 1));
        loop_obj->insert("first", mk_val<value_bool>(i == 0));
        loop_obj->insert("last", mk_val<value_bool>(i == filtered_items.size() - 1));
        loop_obj->insert("length", mk_val<value_int>(filtered_items.size()));
        loop_obj->insert("previtem", i > 0 ? filtered_items[i - 1] : mk_val<value_undefined>("previtem"));
        loop_obj->insert("nextitem", i < filtered_items.size() - 1 ? filtered_items[i + 1] : mk_val<value_undefined>("nextitem"));
        // wick: loop.cycle(a, b, ...), Jinja2's: the argument at the iteration's index modulo their count
        loop_obj->insert("cycle", mk_val<value_func>("cycle", [i](const func_args & args) -> value {
            const auto & items = args.get_args();
            if (items.empty()) {
                throw std::runtime_error("loop.cycle() takes at least one argument");
            }
            return items[i % items.size()];
        }));
        // wick: Jinja2 runs each iteration in a scope of its own: what the body sets lasts until
        // the iteration ends, and the next one reads the enclosing scope's values again.
        context iteration(scope);
        iteration.set_val("loop", loop_obj);
        scope_update_fns[i](iteration);
        try {
            for (auto & stmt : body) {
                value val = stmt->execute(iteration);
                result->push_back(val);
            }
        } catch (const continue_statement::signal &) {
            continue;
        } catch (const break_statement::signal &) {
            break;
        }
        noIteration = false;
    }

    JJ_DEBUG("For loop complete, total iterations: %zu", filtered_items.size());
    if (noIteration) {
        for (auto & stmt : default_block) {
            value val = stmt->execute(scope); // wick: as Jinja2, its sets stay in the loop
            result->push_back(val);
        }
    }

    // convert to string parts
    value_string str = mk_val<value_string>();
    gather_string_parts_recursive(result, str);
    return str;
}

value set_statement::execute_impl(context & ctx) const {
    auto rhs = val ? val->execute(ctx) : exec_statements(body, ctx);

    if (is_stmt<identifier>(assignee)) {
        // case: {% set my_var = value %}
        auto var_name = cast_stmt<identifier>(assignee)->val;
        JJ_DEBUG("Setting global variable '%s' with value type %s", var_name.c_str(), rhs->type().c_str());
        ctx.set_val(var_name, rhs);

    } else if (is_stmt<tuple_literal>(assignee)) {
        // case: {% set a, b = value %}
        auto tuple = cast_stmt<tuple_literal>(assignee);
        if (!is_val<value_array>(rhs)) {
            throw std::runtime_error("Cannot unpack non-iterable type in set: " + rhs->type());
        }
        auto & arr = rhs->as_array();
        if (arr.size() != tuple->val.size()) {
            throw std::runtime_error(std::string("Too ") + (tuple->val.size() > arr.size() ? "few" : "many") + " items to unpack in set");
        }
        for (size_t i = 0; i < tuple->val.size(); ++i) {
            auto & elem = tuple->val[i];
            if (!is_stmt<identifier>(elem)) {
                throw std::runtime_error("Cannot unpack to non-identifier in set: " + elem->type());
            }
            auto var_name = cast_stmt<identifier>(elem)->val;
            ctx.set_val(var_name, arr[i]);
        }

    } else if (is_stmt<member_expression>(assignee)) {
        // case: {% set ns.my_var = value %}
        auto member = cast_stmt<member_expression>(assignee);
        if (member->computed) {
            throw std::runtime_error("Cannot assign to computed member");
        }
        if (!is_stmt<identifier>(member->property)) {
            throw std::runtime_error("Cannot assign to member with non-identifier property");
        }
        auto prop_name = cast_stmt<identifier>(member->property)->val;

        value object = member->object->execute(ctx);
        if (!is_val<value_object>(object)) {
            throw std::runtime_error("Cannot assign to member of non-object");
        }
        auto obj_ptr = cast_val<value_object>(object);
        JJ_DEBUG("Setting object property '%s' with value type %s", prop_name.c_str(), rhs->type().c_str());
        check_no_cycle(*ctx.exec, obj_ptr, rhs, "set"); // wick
        obj_ptr->insert(prop_name, rhs);

    } else {
        throw std::runtime_error("Invalid LHS inside assignment expression: " + assignee->type());
    }
    return mk_val<value_undefined>();
}

static inline void bind_parameters(const std::string & name, const statements & this_args, const func_args & args, context & ctx) {
    const size_t expected_count = this_args.size();
    const size_t input_count = args.count();

    JJ_DEBUG("Invoking '%s' with %zu input arguments (expected %zu)", name.c_str(), input_count, expected_count);
    for (size_t i = 0; i < expected_count; ++i) {
        if (i < input_count) {
            if (is_stmt<identifier>(this_args[i])) {
                // normal parameter
                std::string param_name = cast_stmt<identifier>(this_args[i])->val;
                value param_value = args.get_kwarg_or_pos(param_name, i);
                JJ_DEBUG("  Binding parameter '%s' to argument of type %s", param_name.c_str(), param_value->type().c_str());
                ctx.set_val(param_name, param_value);
            } else if (is_stmt<keyword_argument_expression>(this_args[i])) {
                // default argument used as normal parameter
                auto kwarg = cast_stmt<keyword_argument_expression>(this_args[i]);
                if (!is_stmt<identifier>(kwarg->key)) {
                    throw std::runtime_error("Keyword argument key must be an identifier in '" + name + "'");
                }
                std::string param_name = cast_stmt<identifier>(kwarg->key)->val;
                value param_value = args.get_kwarg_or_pos(param_name, i);
                JJ_DEBUG("  Binding parameter '%s' to argument of type %s", param_name.c_str(), param_value->type().c_str());
                ctx.set_val(param_name, param_value);
            } else {
                throw std::runtime_error("Invalid parameter type in '" + name + "'");
            }
        } else {
            auto & default_arg = this_args[i];
            if (is_stmt<keyword_argument_expression>(default_arg)) {
                auto kwarg = cast_stmt<keyword_argument_expression>(default_arg);
                if (!is_stmt<identifier>(kwarg->key)) {
                    throw std::runtime_error("Keyword argument key must be an identifier in '" + name + "'");
                }
                std::string param_name = cast_stmt<identifier>(kwarg->key)->val;
                JJ_DEBUG("  Binding parameter '%s' to default argument of type %s", param_name.c_str(), kwarg->val->type().c_str());
                ctx.set_val(param_name, kwarg->val->execute(args.ctx));
            } else {
                throw std::runtime_error("Not enough arguments provided to '" + name + "'");
            }
            //std::string param_name = cast_stmt<identifier>(default_args[i])->val;
            //JJ_DEBUG("  Binding parameter '%s' to default", param_name.c_str());
            //ctx.var[param_name] = default_args[i]->execute(ctx);
        }
    }
}

value macro_statement::execute_impl(context & ctx) const {
    if (!is_stmt<identifier>(this->name)) {
        throw std::runtime_error("Macro name must be an identifier");
    }
    std::string name = cast_stmt<identifier>(this->name)->val;

    const func_handler func = [this, name](const func_args & args) -> value {
        context macro_ctx(args.ctx); // new scope for macro execution

        bind_parameters(name, this->args, args, macro_ctx);

        // execute macro body
        JJ_DEBUG("Executing macro '%s' body with %zu statements", name.c_str(), this->body.size());
        auto res = exec_statements(this->body, macro_ctx);
        JJ_DEBUG("Macro '%s' execution complete, result: %s", name.c_str(), res->val_str.str().c_str());
        return res;
    };

    JJ_DEBUG("Defining macro '%s' with %zu parameters", name.c_str(), args.size());
    ctx.set_val(name, mk_val<value_func>(name, func));
    return mk_val<value_undefined>();
}

value call_statement::execute_impl(context & ctx) const {
    auto call_expr = cast_stmt<call_expression>(this->call);
    if (!call_expr) {
        throw std::runtime_error("Call statement requires a valid call expression");
    }

    value callee_val = call_expr->callee->execute(ctx);
    if (!is_val<value_func>(callee_val)) {
        throw std::runtime_error("Callee is not a function: got " + callee_val->type());
    }
    auto * callee_func = cast_val<value_func>(callee_val);

    context caller_ctx(ctx); // new scope for caller execution

    const func_handler func = [this, caller_ctx = std::move(caller_ctx)](const func_args & args) -> value {
        context block_ctx(caller_ctx); // new scope for block execution

        bind_parameters("caller", this->caller_args, args, block_ctx);

        JJ_DEBUG("Executing call body with %zu statements", this->body.size());
        auto res = exec_statements(this->body, block_ctx);
        JJ_DEBUG("Call body execution complete, result: %s", res->val_str.str().c_str());
        return res;
    };

    context call_ctx(ctx);
    call_ctx.set_val("caller", mk_val<value_func>("caller", func));

    func_args args(call_ctx);

    for (const auto & arg_expr : call_expr->args) {
        auto arg_val = arg_expr->execute(ctx);
        JJ_DEBUG("  Argument type: %s", arg_val->type().c_str());
        args.push_back(arg_val);
    }

    JJ_DEBUG("Calling macro '%s' with %zu arguments", callee_func->name.c_str(), args.count());
    return callee_func->invoke(args);
}

value member_expression::execute_impl(context & ctx) const {
    value object = this->object->execute(ctx);
    // wick: an attribute or item of an undefined value is Jinja2's UndefinedError, not another
    // undefined (`x.y is defined` with x undefined raises there too).
    if (is_val<value_undefined>(object)) {
        throw std::runtime_error(undefined_message(object));
    }

    value property;
    if (this->computed) {
        // syntax: obj[expr]
        JJ_DEBUG("Member expression, computing property type %s", this->property->type().c_str());

        int64_t arr_size = 0;
        if (is_val<value_array>(object)) {
            arr_size = object->as_array().size();
        } else if (is_val<value_string>(object)) {
            arr_size = object->as_string().length();
        }

        if (is_stmt<slice_expression>(this->property)) {
            auto s = cast_stmt<slice_expression>(this->property);
            value step_val  = s->step_expr  ? s->step_expr->execute(ctx)  : mk_val<value_int>(1);
            value start_val = s->start_expr ? s->start_expr->execute(ctx) : (step_val->as_int() < 0 ? mk_val<value_int>(arr_size - 1) : mk_val<value_int>(0));
            value stop_val  = s->stop_expr  ? s->stop_expr->execute(ctx)  : (step_val->as_int() < 0 ? mk_val<value_int>(-1) : mk_val<value_int>(arr_size));

            // translate to function call: obj.slice(start, stop, step)
            JJ_DEBUG("Member expression is a slice: start %s, stop %s, step %s",
                     start_val->as_repr().c_str(),
                     stop_val->as_repr().c_str(),
                     step_val->as_repr().c_str());
            auto slice_func = try_builtin_func(ctx, "slice", object);
            func_args args(ctx);
            args.push_back(start_val);
            args.push_back(stop_val);
            args.push_back(step_val);
            return slice_func->invoke(args);
        } else {
            property = this->property->execute(ctx);
        }
    } else if (is_stmt<integer_literal>(this->property)) {
        // syntax: obj.index
        property = mk_val<value_int>(cast_stmt<integer_literal>(this->property)->val);
        if (property->as_int() < 0) {
            throw std::runtime_error("Static member property cannot be negative");
        }
    } else {
        // syntax: obj.prop
        if (!is_stmt<identifier>(this->property)) {
            throw std::runtime_error("Static member property must be an identifier");
        }
        property = mk_val<value_string>(cast_stmt<identifier>(this->property)->val);
        std::string prop = property->as_string().str();
        JJ_DEBUG("Member expression, object type %s, static property '%s'", object->type().c_str(), prop.c_str());

        // behavior of jinja2: obj having prop as a built-in function AND 'prop', as an object key,
        // then obj.prop returns the built-in function, not the property value.
        // while obj['prop'] returns the property value.
        // example: {"obj": {"items": 123}} -> obj.items is the built-in function, obj['items'] is 123

        // wick: `sep.join(items)` is Python's str.join, not the join filter on a string
        const std::string method = is_val<value_string>(object) && prop == "join" ? "str_join" : prop;
        value val = try_builtin_func(ctx, method, object, true);
        if (!is_val<value_undefined>(val)) {
            return val;
        }
        // else, fallthrough to normal property access below
    }

    JJ_DEBUG("Member expression on object type %s, property type %s", object->type().c_str(), property->type().c_str());
    value val = mk_val<value_undefined>("object_property");

    if (property->is_undefined()) {
        JJ_DEBUG("%s", "Member expression property is undefined, returning undefined");
        return val;
    }

    ensure_key_type_allowed(property);

    if (is_val<value_undefined>(object)) {
        JJ_DEBUG("%s", "Accessing property on undefined object, returning undefined");
        return val;

    } else if (is_val<value_object>(object)) {
        auto key = property->as_string().str();
        val = object->at(property, val);
        if (is_val<value_undefined>(val)) {
            val = try_builtin_func(ctx, key, object, true);
        }
        JJ_DEBUG("Accessed property '%s' value, got type: %s", key.c_str(), val->type().c_str());

    } else if (is_val<value_array>(object) || is_val<value_string>(object)) {
        if (is_val<value_int>(property) || is_val<value_bool>(property)) {
            int64_t index = property->as_int();
            JJ_DEBUG("Accessing %s index %d", object->type().c_str(), (int)index);
            if (is_val<value_array>(object)) {
                auto & arr = object->as_array();
                if (index < 0) {
                    index += static_cast<int64_t>(arr.size());
                }
                if (index >= 0 && index < static_cast<int64_t>(arr.size())) {
                    val = arr[index];
                }
            } else { // value_string
                auto str = object->as_string().str();
                if (index >= 0 && index < static_cast<int64_t>(str.size())) {
                    val = mk_val<value_string>(std::string(1, str[index]));
                }
            }

        } else if (is_val<value_string>(property)) {
            auto key = property->as_string().str();
            JJ_DEBUG("Accessing %s built-in '%s'", is_val<value_array>(object) ? "array" : "string", key.c_str());
            val = try_builtin_func(ctx, key, object, true);

        }
    } else {
        if (!is_val<value_string>(property)) {
            throw std::runtime_error("Cannot access property with non-string: got " + property->type());
        }
        auto key = property->as_string().str();
        val = try_builtin_func(ctx, key, object, true);
    }

    if (ctx.is_get_stats && val && object && property) {
        value_t::stats_t::mark_used(val);
        value_t::stats_t::mark_used(object);
        value_t::stats_t::mark_used(property);
        if (is_val<value_object>(object) || is_val<value_string>(property) || is_val<value_float>(property) || is_val<value_array>(property) || is_val<value_none>(property)) {
            object->stats.ops.insert("object_access");
        } else if (is_val<value_int>(property) || is_val<value_bool>(property)) {
            object->stats.ops.insert("array_access");
        }
    }

    return val;
}

value call_expression::execute_impl(context & ctx) const {
    // gather arguments
    func_args args(ctx);
    for (auto & arg_stmt : this->args) {
        auto arg_val = arg_stmt->execute(ctx);
        JJ_DEBUG("  Argument type: %s", arg_val->type().c_str());
        args.push_back(arg_val);
    }
    // execute callee
    value callee_val = callee->execute(ctx);
    if (!is_val<value_func>(callee_val)) {
        throw std::runtime_error("Callee is not a function: got " + callee_val->type());
    }
    auto * callee_func = cast_val<value_func>(callee_val);
    JJ_DEBUG("Calling function '%s' with %zu arguments", callee_func->name.c_str(), args.count());
    return callee_func->invoke(args);
}

value keyword_argument_expression::execute_impl(context & ctx) const {
    if (!is_stmt<identifier>(key)) {
        throw std::runtime_error("Keyword argument key must be identifiers");
    }

    std::string k = cast_stmt<identifier>(key)->val;
    JJ_DEBUG("Keyword argument expression key: %s, value: %s", k.c_str(), val->type().c_str());

    value v = val->execute(ctx);
    JJ_DEBUG("Keyword argument value executed, type: %s", v->type().c_str());

    return mk_val<value_kwarg>(k, v);
}

std::string runtime::debug_dump_program(const program & prog, const std::string & src) {
    std::ostringstream oss;
    size_t lvl = 0;
    context ctx;
    ctx.src.reset(new std::string(src));

    auto indent = [](size_t lvl) -> std::string {
        return std::string(lvl * 2, ' ');
    };

    ctx.visitor = [&](bool is_leaf, const statement * node, std::vector<visitor_pair> children) {
        oss << indent(lvl) << node->type() << ":\n";
        lvl++;
        if (is_leaf) {
            const auto & pos = node->pos;
            oss << indent(lvl) << "(leaf) at " << get_line_col(src, pos) << " in source:\n";
            std::string snippet = peak_source(src, pos);
            string_replace_all(snippet, "\n", "\n" + indent(lvl));
            oss << indent(lvl) << snippet << "\n";
        } else {
            for (auto & [label, children_vec] : children) {
                oss << indent(lvl) << label << ":\n";
                lvl++;
                if (children_vec.empty()) {
                    oss << indent(lvl) << "<empty>\n\n";
                } else {
                    for (auto * child : children_vec) {
                        if (!child) {
                            continue;
                        }
                        child->visit(ctx);
                    }
                }
                lvl--;
            }
        }
        lvl--;
    };

    for (const auto & stmt : prog.body) {
        stmt->visit(ctx);
    }

    return oss.str();
}

} // namespace jinja
