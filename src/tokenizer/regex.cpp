#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "wick/error.h"

namespace wick::tokenizer_detail {
namespace {

constexpr const char* kOp = "tokenizer regex";

// Match data and a JIT stack per thread: Regex is shared, read-only, by every encode() call.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);  // the whole match is enough
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  // (?!\S) after a long run of spaces backtracks one frame per space; 32 KiB (PCRE2's default)
  // runs out at a few thousand.
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  MatchScratch() {
    if (!data || !context || !jit_stack) fail(ErrorKind::OutOfMemory, kOp, "PCRE2 match scratch");
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}

}  // namespace

Regex::Regex(std::string pattern) : pattern_(std::move(pattern)) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // DOLLAR_ENDONLY: '$' is the end of the piece only, as in llama.cpp's std::regex (ECMAScript).
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &offset, nullptr);
  if (!code)
    fail(ErrorKind::Parse, kOp, "pattern '", pattern_, "' at offset ", offset, ": ",
         pcre2_message(error));
  code_ = code;
  // Without JIT support (some platforms), PCRE2's interpreter gives the same matches, slower.
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() {
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

bool Regex::find(std::string_view subject, size_t from, size_t& begin, size_t& end) const {
  MatchScratch& s = scratch();
  const auto* code = static_cast<const pcre2_code*>(code_);
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const int rc =
      jit_ ? pcre2_jit_match(code, text, subject.size(), from, 0, s.data, s.context)
           : pcre2_match(code, text, subject.size(), from, PCRE2_NO_UTF_CHECK, s.data, s.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0)
    fail(ErrorKind::Internal, kOp, "matching '", pattern_, "' on ", subject.size(),
         " bytes: ", pcre2_message(rc));
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(s.data);
  begin = ovector[0];
  end = ovector[1];
  return true;
}

}  // namespace wick::tokenizer_detail
