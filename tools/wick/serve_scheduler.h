// `wick serve`'s scheduler: one thread owns the model and runs every active request together
// (continuous batching: each pass is one LlamaModel::forward_batch over the next token of each
// answer under way and the prompts of new requests, each sequence with its own KV cache);
// requests join a bounded queue and take a slot as one frees.
// HTTP threads only submit requests and read their streams. Knows nothing of HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "wick/llama.h"

namespace wick::cli {

// What a client asked for, already tokenized and checked.
struct GenRequest {
  std::vector<uint32_t> prompt;  // 1 ..= the slot's context - 1 tokens
  int64_t max_tokens = 16;       // >= 0 (0: the prompt's log-probabilities only)
  SamplingOptions sampling;
  std::vector<std::string> stops;  // the answer ends before the first of these
  std::vector<int32_t> end_ids;    // tokens that end the answer (not part of its text)
  // -1: none; else each answer token's log-probability and this many alternatives
  // (Sampler::logprobs).
  int64_t logprobs = -1;
  // The prompt's tokens come first in the log-probabilities (the first without one): the
  // model's own distribution, neither biased nor penalised.
  bool prompt_logprobs = false;
};

// An answer token's log-probability and the most likely alternatives, with their bytes.
struct TokenLogprob {
  std::string token;
  bool has_logprob = true;  // false: a prompt's first token
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;
};

// ToolCalls: an answer that stopped and parsed as tool calls (the API's, never the scheduler's).
enum class FinishReason { None, Stop, Length, Error, ToolCalls };
inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Error:
      return "error";
    case FinishReason::ToolCalls:
      return "tool_calls";
    case FinishReason::None:
      break;
  }
  return "";
}

// One request's output, written by the scheduler and read by an HTTP thread.
class RequestStream {
 public:
  using Clock = std::chrono::steady_clock;
  struct Update {
    std::string text;                    // new text since the last update
    std::vector<TokenLogprob> logprobs;  // of the tokens since the last update (when asked)
    FinishReason finish = FinishReason::None;
    std::string error;  // FinishReason::Error: what failed
    int64_t prompt_tokens = 0, completion_tokens = 0;
  };

  // Waits up to `timeout` for new text or the end; takes what arrived since the last call.
  // Returns false (and nothing) on a timeout.
  bool next(Update& out, std::chrono::milliseconds timeout);
  // The client is gone or no longer wants the answer: the scheduler frees its slot at the next
  // step. Idempotent.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Scheduler side.
  void push(const std::string& text, int64_t completion_tokens,
            std::optional<TokenLogprob> logprob = std::nullopt);
  void finish(FinishReason reason, int64_t completion_tokens, std::string error = {});
  int64_t prompt_tokens = 0;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;
  std::vector<TokenLogprob> logprobs_;
  FinishReason finish_ = FinishReason::None;
  std::string error_;
  int64_t completion_tokens_ = 0;
  bool delivered_end_ = false;
  std::atomic<bool> cancelled_{false};
};

struct SchedulerOptions {
  int64_t slots = 4;        // requests decoded together (--parallel)
  int64_t max_queued = 64;  // requests waiting for a slot before submit() refuses (503)
  // Rows of one pass (decode tokens + new prompts). Below the CPU's switch of quantized matmuls
  // to dequantize + sgemm (1024 rows), a row's numbers do not depend on its neighbours, so a
  // greedy answer is the same under load as alone.
  int64_t max_step_rows = 512;
  bool log_passes = false;  // each pass's rows and milliseconds on stderr (--log-passes)
};

struct SchedulerStats {
  int64_t active = 0, queued = 0, slots = 0;
  int64_t steps = 0;         // passes (forward_batch calls) that decoded answer tokens
  int64_t decoded_rows = 0;  // answer tokens decoded by them (rows / steps: the mean batch)
  int64_t completed = 0, cancelled = 0;
  // Where the scheduler's time went (ms, since start): passes of answer tokens only, passes with
  // prompts (each from the forward_batch call to its tokens read back), and the host's work
  // between passes (streaming the tokens, placing requests, building the next pass).
  int64_t decode_passes = 0, prompt_passes = 0;
  double decode_pass_ms = 0, prompt_pass_ms = 0, host_ms = 0;
  double longest_pass_ms = 0;
};

class Scheduler {
 public:
  // Takes the model (it is used by the scheduler's thread only) and starts that thread.
  // On a GPU, runs a pass of every batch size first (warm_up).
  Scheduler(LlamaModel model, Tokenizer tokenizer, SchedulerOptions opts);
  ~Scheduler();
  // Stops the thread; every open request ends with FinishReason::Error, later submits get
  // nullptr. Idempotent.
  void shutdown();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request; nullptr when the queue is full (the caller answers 503).
  std::shared_ptr<RequestStream> submit(GenRequest request);
  int64_t context() const { return context_; }
  SchedulerStats stats() const;

 private:
  void warm_up();
  void warm_up_row_counts();
  struct Job {
    GenRequest request;
    std::shared_ptr<RequestStream> stream;
  };
  struct Slot;

  void run();
  // Takes `token` as the next one of `slot` and streams it (with its log-probabilities when the
  // request asked for them: `logits` is then its row on the host); false when the answer ended.
  bool advance(Slot& slot, uint32_t token, const Tensor* logits);
  // Streams the prompt's log-probabilities (GenRequest::prompt_logprobs), from the model's own
  // cache; releases the slot when the answer ends there (max_tokens 0).
  void score_prompt(Slot& slot);
  TokenLogprob token_logprob(const Sampler& sampler, const Tensor& logits, uint32_t token,
                             int64_t top) const;
  std::string token_bytes(uint32_t token) const;  // its bytes, special tokens' text included
  void release(Slot& slot, FinishReason reason, const std::string& error = {});

  LlamaModel model_;
  Tokenizer tokenizer_;
  SchedulerOptions opts_;
  int64_t context_;
  std::vector<std::unique_ptr<Slot>> slots_;

  std::mutex shutdown_mu_;  // shutdown() may come from a signal thread and the destructor
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  SchedulerStats stats_;
  std::thread thread_;
};

}  // namespace wick::cli
