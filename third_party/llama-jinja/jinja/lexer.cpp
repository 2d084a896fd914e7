#include "lexer.h"
#include "runtime.h"
#include "unicode.h"

#include <cctype>
#include <functional>
#include <map>
#include <string>
#include <vector>

#define FILENAME "jinja-lexer"

namespace jinja {

static void string_lstrip(std::string & s, const char * chars) {
    size_t start = s.find_first_not_of(chars);
    if (start == std::string::npos) {
        s.clear();
    } else {
        s.erase(0, start);
    }
}

static void string_rstrip(std::string & s, const char * chars) {
    size_t end = s.find_last_not_of(chars);
    if (end == std::string::npos) {
        s.clear();
    } else {
        s.erase(end + 1);
    }
}

// wick: whether a `{% word %}` tag (with `-` or `+` on either side) starts at `at`; `end` is
// where it ends, the flags say which side has `-` (and whether the right side has `+`).
static bool raw_tag_at(const std::string & src, size_t at, const char * word, size_t & end,
                       bool & strip_left, bool & strip_right, bool & plus_left) {
    if (src.compare(at, 2, "{%") != 0) return false;
    size_t p = at + 2;
    strip_left = p < src.size() && src[p] == '-';
    plus_left = p < src.size() && src[p] == '+';
    if (strip_left || plus_left) p++;
    while (p < src.size() && std::isspace(static_cast<unsigned char>(src[p]))) p++;
    const std::string w(word);
    if (src.compare(p, w.size(), w) != 0) return false;
    p += w.size();
    if (p < src.size() && (std::isalnum(static_cast<unsigned char>(src[p])) || src[p] == '_')) return false;
    while (p < src.size() && std::isspace(static_cast<unsigned char>(src[p]))) p++;
    strip_right = p < src.size() && src[p] == '-';
    if (p < src.size() && (src[p] == '-' || src[p] == '+')) p++;
    if (src.compare(p, 2, "%}") != 0) return false;
    end = p + 2;
    return true;
}

lexer_result lexer::tokenize(const std::string & source) {
    std::vector<token> tokens;

    // NOTE: do NOT transform the source string (i.e. preprocessing), as we need to keep
    //       the original character positions for error reporting etc.
    std::string src = source;

    if (source.empty()) {
        return {tokens, src};
    }

    // Normalize \r\n or \r to \n
    for (std::string::size_type pos = 0; (pos = src.find("\r\n", pos)) != std::string::npos; ) {
        src.erase(pos, 1);
        ++pos;
    }
    for (std::string::size_type pos = 0; (pos = src.find("\r", pos)) != std::string::npos; ) {
        src.replace(pos, 1, 1, '\n');
        ++pos;
    }

    // In the default configuration:
    //  - a single trailing newline is stripped if present
    //  - other whitespace (spaces, tabs, newlines etc.) is returned unchanged
    if (source.back() == '\n') {
        src.pop_back();
    }

    size_t pos = 0;
    size_t start_pos = 0;
    size_t curly_bracket_depth = 0;

    using pred = std::function<bool(char)>;
    auto consume_while = [&](const pred & predicate) -> std::string {
        std::string str;
        // wick: no escapes here: string literals have consume_string
        while (predicate(src[pos])) {
            str += src[pos++];
            if (pos > src.size()) {
                throw lexer_exception("unexpected end of input during consume_while", source, pos);
            }
        }
        return str;
    };

    // wick: numbers as jinja2 reads them: digits with single underscores between them, a
    // fraction, an exponent (1e3 is a float); the underscores are dropped.
    auto digit_at = [&](size_t at) { return at < src.size() && is_integer(src[at]); };
    auto consume_digits = [&]() -> std::string {
        std::string digits;
        for (;;) {
            while (digit_at(pos)) digits += src[pos++];
            if (pos < src.size() && src[pos] == '_' && digit_at(pos + 1)) { ++pos; continue; }
            return digits;
        }
    };
    auto consume_numeric = [&]() -> std::string {
        std::string num = consume_digits();
        if (pos < src.size() && src[pos] == '.' && digit_at(pos + 1)) {
            ++pos; // Consume '.'
            num += '.';
            num += consume_digits();
        }
        if (pos < src.size() && (src[pos] == 'e' || src[pos] == 'E')) {
            const bool sign = pos + 1 < src.size() && (src[pos + 1] == '+' || src[pos + 1] == '-');
            if (digit_at(pos + (sign ? 2 : 1))) {
                num += 'e';
                if (sign) num += src[pos + 1];
                pos += sign ? 2 : 1;
                num += consume_digits();
            }
        }
        return num;
    };

    // wick: a string literal's escapes as Python's unicode-escape codec reads them (jinja2's
    // lexer): \\ \' \" \a \b \f \n \r \t \v, octal \ooo, \xhh, \uhhhh, \Uhhhhhhhh (written as UTF-8), a
    // backslash before a newline drops both; any other backslash stays in the text (the engine
    // refused `\d` and `\x41`).
    auto append_utf8 = [&](std::string & out, uint32_t cp) {
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            throw lexer_exception("escape of code point " + std::to_string(cp) + " is not a character", source, pos);
        }
        out += common_unicode_cpt_to_utf8(cp);
    };
    auto consume_string = [&](char quote) -> std::string {
        std::string str;
        for (;;) {
            if (pos >= src.size()) {
                throw lexer_exception("unterminated string literal", source, pos);
            }
            const char c = src[pos++];
            if (c == quote) return str;
            if (c != '\\') { str += c; continue; }
            if (pos >= src.size()) {
                throw lexer_exception("unexpected end of input after escape character", source, pos);
            }
            const char e = src[pos++];
            auto hex = [&](int n) -> uint32_t {
                uint32_t v = 0;
                for (int i = 0; i < n; i++, pos++) {
                    const char h = pos < src.size() ? src[pos] : '\0';
                    if (!std::isxdigit(static_cast<unsigned char>(h))) {
                        throw lexer_exception(std::string("truncated \\") + e + " escape", source, pos);
                    }
                    v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
                }
                return v;
            };
            switch (e) {
                case '\n': break;
                case 'a': str += '\a'; break;
                case 'x': append_utf8(str, hex(2)); break;
                case 'u': append_utf8(str, hex(4)); break;
                case 'U': append_utf8(str, hex(8)); break;
                case 'N': throw lexer_exception("\\N{...} escapes are not supported", source, pos);
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t v = static_cast<uint32_t>(e - '0');
                        for (int i = 0; i < 2 && pos < src.size() && src[pos] >= '0' && src[pos] <= '7'; i++) {
                            v = v * 8 + static_cast<uint32_t>(src[pos++] - '0');
                        }
                        append_utf8(str, v);
                    } else if (escape_chars.count(e)) {
                        str += escape_chars.at(e);
                    } else {
                        str += '\\';
                        str += e;
                    }
            }
        }
    };

    auto next_pos_is = [&](std::initializer_list<char> chars, size_t n = 1) -> bool {
        if (pos + n >= src.size()) return false;
        for (char c : chars) {
            if (src[pos + n] == c) return true;
        }
        return false;
    };

    // note: default config for chat template: lstrip_blocks = true, trim_blocks = true

    // text\n[space]{block} --> text\n{block}
    bool opt_lstrip_blocks = true;

    // {block}\n[space]text --> {block}[space]text
    bool opt_trim_blocks = true;

    // options set dynamically based on current/last block
    bool is_lstrip_block = false; // example: {%-
    bool is_rstrip_block = false; // example: -%}

    while (pos < src.size()) {
        start_pos = pos;
        // JJ_DEBUG("lexer main loop at pos %zu: '%s...'", pos, src.substr(pos, 10).c_str());

        // First, consume all text that is outside of a Jinja statement or expression
        token::type last_token_type = tokens.empty()
                                            ? token::close_statement // initial state
                                            : tokens.back().t;
        if (last_token_type == token::close_statement ||
            last_token_type == token::close_expression ||
            last_token_type == token::comment) {

            bool last_block_can_rm_newline = false;
            is_rstrip_block = false;
            if (pos > 3) {
                char c0 = src[pos - 3];
                char c1 = src[pos - 2];
                char c2 = src[pos - 1];
                // strip if: -[%}#]}text
                is_rstrip_block = c0 == '-'
                                    && (c1 == '%' || c1 == '}' || c1 == '#')
                                    && c2 == '}';
                // match behavior of hf.js: exclude {{ and }} cases, regex: ([#%-]})
                last_block_can_rm_newline = (c1 == '#' || c1 == '%' || c1 == '-') && c2 == '}'
                                            && !(c0 == '+' && c1 == '%'); // wick: `+%}` keeps it
            }

            size_t start = pos;
            size_t end = start;
            while (pos < src.size() &&
                    // Keep going until we hit the next Jinja statement or expression
                    !(
                        src[pos] == '{' &&
                        next_pos_is( {'%', '{', '#'} )
                    )) {
                end = ++pos;
            }

            // equivalent to hf.js code: template.replace(/^[ \t]*({[#%-])/gm, "$1");
            if (opt_lstrip_blocks && src[pos] == '{' && next_pos_is({'%', '#', '-'})
                && !(next_pos_is({'%'}) && next_pos_is({'+'}, 2))) { // wick: `{%+` keeps it
                size_t current = end;
                while (current > start) {
                    char c = src[current - 1];
                    if (c == '\n') {
                        end = current; // Trim from the start of the line
                        break;
                    }
                    if (!std::isspace(static_cast<unsigned char>(c))) {
                        break; // Found non-whitespace before newline, keep
                    }
                    --current;
                    if (current == 0) {
                        // wick: the start of the source is a line start too (the engine cut the
                        // first character whatever it was: "a {% if %}" lost its "a ")
                        end = 0;
                        break;
                    }
                }
            }

            std::string text = src.substr(start, end - start);

            // equivalent to hf.js code: template.replace(/([#%-]})\n/g, "$1");
            if (opt_trim_blocks && last_block_can_rm_newline) {
                if (!text.empty() && text.front() == '\n') {
                    text.erase(text.begin());
                }
            }

            if (is_rstrip_block) {
                // example: {last_block}[space]text
                // doing lstrip on text, effectively rstrip the LAST block
                // JJ_DEBUG("RSTRIP block detected, current text: '%s'", text.c_str());
                string_lstrip(text, " \t\r\n");
            }

            is_lstrip_block = src[pos] == '{' && next_pos_is({'{', '%', '#'}) && next_pos_is({'-'}, 2);
            if (is_lstrip_block) {
                // example: text[space]{current_block}
                // doing rstrip on text, effectively lstrip the CURRENT block
                // JJ_DEBUG("LSTRIP block detected, current text: '%s'", text.c_str());
                string_rstrip(text, " \t\r\n");
            }

            if (!text.empty()) {
                // JJ_DEBUG("consumed text: '%s'", text.c_str());
                tokens.push_back({token::text, text, start_pos});
                continue;
            }
        }

        // Possibly consume a comment
        // TODO: handle lstrip/rstrip for comments? (not important for now)
        if (src[pos] == '{' && next_pos_is( {'#'} )) {
            start_pos = pos;
            pos += 2; // Skip the opening {#
            std::string comment;
            while (!(src[pos] == '#' && next_pos_is( {'}'} ))) {
                if (pos + 2 >= src.size()) {
                    throw lexer_exception("missing end of comment tag", source, pos);
                }
                comment += src[pos++];
            }
            JJ_DEBUG("consumed comment: '%s'", comment.c_str());
            tokens.push_back({token::comment, comment, start_pos});
            pos += 2; // Skip the closing #}
            continue;
        }

        // wick: {% raw %}...{% endraw %}: the text between as it is, as jinja2 has it; `-` on
        // either tag strips the whitespace on that side, lstrip_blocks applies before the end tag,
        // trim_blocks after it. The text token is followed by an empty comment, after which the
        // text branch above trims what follows the end tag.
        size_t raw_end = 0;
        bool raw_strip_inner_left = false, unused_a = false, unused_b = false;
        if (raw_tag_at(src, pos, "raw", raw_end, unused_a, raw_strip_inner_left, unused_b)) {
            size_t q = src.find("{%", raw_end);
            size_t end_tag_end = 0;
            bool strip_inner_right = false, end_strip_after = false, end_plus_before = false;
            while (q != std::string::npos &&
                   !raw_tag_at(src, q, "endraw", end_tag_end, strip_inner_right, end_strip_after, end_plus_before)) {
                q = src.find("{%", q + 2);
            }
            if (q == std::string::npos) {
                throw lexer_exception("missing {% endraw %}", source, pos);
            }
            std::string text = src.substr(raw_end, q - raw_end);
            if (raw_strip_inner_left) string_lstrip(text, " \t\r\n");
            if (strip_inner_right) {
                string_rstrip(text, " \t\r\n");
            } else if (opt_lstrip_blocks && !end_plus_before) {
                const size_t nl = text.find_last_of('\n');
                if (nl != std::string::npos && text.find_first_not_of(" \t", nl + 1) == std::string::npos) {
                    text.erase(nl + 1);
                }
            }
            start_pos = pos;
            if (!text.empty()) tokens.push_back({token::text, text, start_pos});
            tokens.push_back({token::comment, "", start_pos});
            pos = end_tag_end;
            continue;
        }

        if (src[pos] == '-' && (
                last_token_type == token::open_expression ||
                last_token_type == token::open_statement)
        ) {
            JJ_DEBUG("lexer main loop at pos %zu: '%s...'", pos, src.substr(pos, 10).c_str());
            pos++; // consume '-' in {%- or {{-
            if (pos >= src.size()) break;
        }

        // Consume (and ignore) all whitespace inside Jinja statements or expressions
        consume_while([](char c) { return std::isspace(static_cast<unsigned char>(c)); });

        if (pos >= src.size()) break;

        char ch = src[pos];

        bool is_closing_block = (ch == '-' && next_pos_is( {'%', '}'} ))
                                || (ch == '+' && next_pos_is( {'%'} ) && next_pos_is( {'}'}, 2 )); // wick: +%}

        // Check for unary operators
        if (!is_closing_block && (ch == '-' || ch == '+')) {
            start_pos = pos;
            token::type last_token_type = tokens.empty() ? token::eof : tokens.back().t;
            if (last_token_type == token::text || last_token_type == token::eof) {
                throw lexer_exception(std::string("unexpected character: ") + ch, source, pos);
            }
            switch (last_token_type) {
                case token::identifier:
                case token::numeric_literal:
                case token::string_literal:
                case token::close_paren:
                case token::close_square_bracket:
                    // Part of a binary operator
                    // a - 1, 1 - 1, true - 1, "apple" - 1, (1) - 1, a[1] - 1
                    // Continue parsing normally
                    break;
                default: {
                    // Is part of a unary operator
                    // (-1), [-1], (1 + -1), not -1, -apple
                    ++pos; // Consume the operator

                    // Check for numbers following the unary operator
                    std::string num = consume_numeric();
                    std::string value = std::string(1, ch) + num;
                    token::type t = num.empty() ? token::unary_operator : token::numeric_literal;
                    // JJ_DEBUG("consumed unary operator or numeric literal: '%s'", value.c_str());
                    tokens.push_back({t, value, start_pos});
                    continue;
                }
            }
        }

        // Try to match one of the tokens in the mapping table
        bool matched = false;
        for (const auto & [seq, typ] : ordered_mapping_table) {
            start_pos = pos;
            // Inside an object literal, don't treat "}}" as expression-end
            if (seq == "}}" && curly_bracket_depth > 0) {
                continue;
            }
            if (pos + seq.size() <= src.size() && src.substr(pos, seq.size()) == seq) {
                tokens.push_back({typ, seq, start_pos});
                if (typ == token::open_expression) {
                    curly_bracket_depth = 0;
                } else if (typ == token::open_curly_bracket) {
                    ++curly_bracket_depth;
                } else if (typ == token::close_curly_bracket) {
                    --curly_bracket_depth;
                }

                pos += seq.size();
                matched = true;
                break; // continue main loop
            }
        }
        if (matched) continue; // continue main loop

        // Strings
        if (ch == '\'' || ch == '"') {
            start_pos = pos;
            ++pos; // Skip opening quote
            std::string str = consume_string(ch); // wick: takes the closing quote
            // JJ_DEBUG("consumed string literal: '%s'", str.c_str());
            tokens.push_back({token::string_literal, str, start_pos});
            continue;
        }

        // Numbers
        if (is_integer(ch)) {
            start_pos = pos;
            std::string num = consume_numeric();
            // JJ_DEBUG("consumed numeric literal: '%s'", num.c_str());
            tokens.push_back({token::numeric_literal, num, start_pos});
            continue;
        }

        // Identifiers
        if (is_word(ch)) {
            start_pos = pos;
            std::string word = consume_while(is_word);
            // JJ_DEBUG("consumed identifier: '%s'", word.c_str());
            tokens.push_back({token::identifier, word, start_pos});
            continue;
        }

        throw lexer_exception(std::string("unexpected character: ") + ch, source, pos);
    }

    return {std::move(tokens), src};
}

} // namespace jinja
