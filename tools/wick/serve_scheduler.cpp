#include "serve_scheduler.h"

#include <algorithm>
#include <cstdio>
#include <span>

#include "stop_strings.h"

namespace wick::cli {

bool RequestStream::next(Update& out, std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  const auto ready = [&] {
    return !text_.empty() || !logprobs_.empty() ||
           (finish_ != FinishReason::None && !delivered_end_);
  };
  if (!cv_.wait_for(lk, timeout, ready)) return false;
  out = Update{};
  out.text.swap(text_);
  out.logprobs.swap(logprobs_);
  out.finish = finish_;
  out.error = error_;
  out.prompt_tokens = prompt_tokens;
  out.completion_tokens = completion_tokens_;
  if (finish_ != FinishReason::None) delivered_end_ = true;
  return true;
}

void RequestStream::push(const std::string& text, int64_t completion_tokens,
                         std::optional<TokenLogprob> logprob) {
  const bool news = !text.empty() || logprob;
  {
    std::lock_guard lk(mu_);
    text_ += text;
    if (logprob) logprobs_.push_back(std::move(*logprob));
    completion_tokens_ = completion_tokens;
  }
  if (news) cv_.notify_all();
}

void RequestStream::finish(FinishReason reason, int64_t completion_tokens, std::string error) {
  {
    std::lock_guard lk(mu_);
    if (finish_ != FinishReason::None) return;
    finish_ = reason;
    completion_tokens_ = completion_tokens;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

// A request slot: its own KV cache, and the decoding state of the request in it.
struct Scheduler::Slot {
  LlamaSequence seq;
  std::optional<Job> job;
  std::optional<Sampler> sampler;
  std::optional<TokenStreamer> streamer;
  std::optional<StopStrings> stops;
  int64_t generated = 0;
  uint32_t next = 0;  // the token the next decode step feeds
};

Scheduler::Scheduler(LlamaModel model, Tokenizer tokenizer, SchedulerOptions opts)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      opts_(opts),
      context_(model_.max_seq()) {
  for (int64_t i = 0; i < opts_.slots; i++) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->seq = model_.new_sequence();
  }
  stats_.slots = opts_.slots;
  if (!model_.device().is_cpu()) warm_up();
  thread_ = std::thread([this] { run(); });
}

// A GPU compiles the kernels of each batch size at their first use and captures a decode step
// per number of sequences: one pass of each size (and one prompt) before serving, so that no
// request waits for a compile or a capture (measured on the H200: a new size's first pass took
// ~20 ms against ~2 ms after, with cold kernel caches far more). The sequences are emptied after.
void Scheduler::warm_up() {
  const auto reset_all = [&] {
    for (auto& s : slots_) s->seq.reset();
  };
  std::vector<LlamaModel::SequenceStep> steps;
  for (size_t b = 1; b <= slots_.size(); b++) {
    steps.clear();
    for (size_t i = 0; i < b; i++) steps.push_back({&slots_[i]->seq, {0}});
    // The greedy tokens' argmax too: its kernel was the one a first request still compiled.
    model_.forward_batch(steps).argmax(1).to_device(Device::cpu());
    reset_all();
  }
  // Prompts: one alone, every slot's together (past the rows where a GPU's quantized products
  // change kernels: 64 and more rows take the tensor-core GEMM, whose first call per process
  // loads its kernels: ~0.1-1 s of a first request's wait, measured on an H100), and prompts
  // joining answers under way (the usual pass while clients arrive).
  if (!slots_.empty() && context_ > 1) {
    const auto n = static_cast<size_t>(std::min<int64_t>(16, context_));
    model_.forward_batch({{&slots_[0]->seq, std::vector<uint32_t>(n, 0)}}).to_device(Device::cpu());
    reset_all();
    steps.clear();
    const auto per_slot =
        static_cast<size_t>(std::min<int64_t>(context_ - 1, 64 / std::ssize(slots_) + 1));
    for (auto& s : slots_) steps.push_back({&s->seq, std::vector<uint32_t>(per_slot, 0)});
    model_.forward_batch(steps).argmax(1).to_device(Device::cpu());
    if (slots_.size() > 1) {
      steps.clear();
      for (size_t i = 0; i + 1 < slots_.size(); i++) steps.push_back({&slots_[i]->seq, {0}});
      steps.push_back({&slots_.back()->seq, std::vector<uint32_t>(n, 0)});
      model_.forward_batch(steps).argmax(1).to_device(Device::cpu());
    }
    reset_all();
    warm_up_row_counts();
  }
}

// A tensor-core GEMM picks its kernel by the rows of the product, in steps of 64 (CUDA:
// lt_bucket_rows), and a kernel's first launch loads it: ~4-6 ms more for a pass whose row count
// was new (H100, session 19). One pass for each 64 rows up to the rows a pass can have (at most
// 1024: longer prompts may still meet a new kernel), a prompt alone or, where the context is
// shorter, prompts of up to prompt_rows() tokens that run as rows of one batch. It stops at a pass
// of more than 100 ms: there a first use's few ms do not matter, and a slow device (a CPU
// implementation of Vulkan) would take minutes over the longer passes.
void Scheduler::warm_up_row_counts() {
  const int64_t most = std::min<int64_t>(1024, std::max(opts_.max_step_rows, context_));
  const int64_t chunk = std::min(model_.prompt_rows(), context_ - 1);
  std::vector<LlamaModel::SequenceStep> steps;
  for (int64_t rows = 64; rows <= most; rows += 64) {
    steps.clear();
    if (rows <= context_ - 1) {
      steps.push_back({&slots_[0]->seq, std::vector<uint32_t>(static_cast<size_t>(rows), 0)});
    } else if (chunk > 0 && rows <= chunk * std::ssize(slots_)) {
      for (int64_t done = 0, i = 0; done < rows; done += chunk, i++)
        steps.push_back(
            {&slots_[static_cast<size_t>(i)]->seq,
             std::vector<uint32_t>(static_cast<size_t>(std::min(chunk, rows - done)), 0)});
    } else {
      break;
    }
    const auto start = std::chrono::steady_clock::now();
    model_.forward_batch(steps).argmax(1).to_device(Device::cpu());
    for (auto& s : slots_) s->seq.reset();
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(100)) break;
  }
}

Scheduler::~Scheduler() {
  shutdown();
}

void Scheduler::shutdown() {
  std::lock_guard once(shutdown_mu_);
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  for (auto& s : slots_)
    if (s->job) release(*s, FinishReason::Error, "the server is shutting down");
  std::lock_guard lk(mu_);
  for (Job& j : queue_) j.stream->finish(FinishReason::Error, 0, "the server is shutting down");
  queue_.clear();
}

std::shared_ptr<RequestStream> Scheduler::submit(GenRequest request) {
  auto stream = std::make_shared<RequestStream>();
  stream->prompt_tokens = static_cast<int64_t>(request.prompt.size());
  {
    std::lock_guard lk(mu_);
    // Room: a free slot for each request not yet placed, then max_queued waiting.
    const int64_t free_slots = opts_.slots - stats_.active;
    if (stopping_ || static_cast<int64_t>(queue_.size()) >= free_slots + opts_.max_queued)
      return nullptr;
    queue_.push_back(Job{std::move(request), stream});
    stats_.queued = static_cast<int64_t>(queue_.size());
  }
  cv_.notify_all();
  return stream;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

void Scheduler::release(Slot& slot, FinishReason reason, const std::string& error) {
  // Held here: the HTTP thread may drop its reference as soon as the stream is finished.
  const std::shared_ptr<RequestStream> stream = slot.job->stream;
  RequestStream& out = *stream;
  const bool cancelled = out.cancelled();
  if (reason == FinishReason::Stop || reason == FinishReason::Length) {
    // Bytes of an unfinished character, and text held back for a stop string that never came.
    std::string tail = slot.stops->push(slot.streamer->finish());
    if (!slot.stops->stopped()) tail += slot.stops->finish();
    out.push(tail, slot.generated);
  }
  out.finish(reason, slot.generated, error);
  slot.job.reset();
  slot.sampler.reset();
  slot.streamer.reset();
  slot.stops.reset();
  std::lock_guard lk(mu_);
  stats_.active--;
  (cancelled ? stats_.cancelled : stats_.completed)++;
}

std::string Scheduler::token_bytes(uint32_t token) const {
  const auto id = static_cast<int32_t>(token);
  return tokenizer_.decode_bytes(std::span(&id, 1), /*skip_special=*/false);
}

TokenLogprob Scheduler::token_logprob(const Sampler& sampler, const Tensor& logits, uint32_t tok,
                                      int64_t top) const {
  const TokenLogprobs l = sampler.logprobs(logits, tok, top);
  TokenLogprob out{token_bytes(tok), true, l.logprob, {}};
  for (const auto& [t, v] : l.top) out.top.emplace_back(token_bytes(t), v);
  return out;
}

void Scheduler::score_prompt(Slot& slot) {
  const GenRequest& r = slot.job->request;
  if (r.prompt_logprobs) {
    slot.job->stream->push({}, 0, TokenLogprob{token_bytes(r.prompt[0]), false, 0, {}});
    const auto n = static_cast<int64_t>(r.prompt.size()) - 1;  // tokens with a row before them
    if (n > 0) {
      // The model's own distribution (no bias, no penalty), reduced on the device: each row's
      // log-softmax at its next token and its `logprobs` largest, not n x vocab logits.
      model_.reset();
      const Tensor logits = model_.forward_all(r.prompt);
      const int64_t k = std::min(r.logprobs, logits.shape()[1]);
      // Blocks of rows bound the temporaries (a log-softmax and a sort a block).
      constexpr int64_t kRows = 256;
      for (int64_t b = 0; b < n; b += kRows) {
        const int64_t rows = std::min(kRows, n - b);
        const Tensor lsm = logits.narrow(0, b, rows).log_softmax(1);
        const std::vector<uint32_t> next(r.prompt.begin() + b + 1, r.prompt.begin() + b + 1 + rows);
        const std::vector<float> lp =
            lsm.gather(Tensor::from_vec(next, {rows, 1}).to_device(lsm.device()), 1)
                .to_vec<float>();
        std::vector<float> top_lp;
        std::vector<uint32_t> top_id;
        if (k > 0) {
          const auto [values, ids] = lsm.topk(k, 1);
          top_lp = values.to_vec<float>();
          top_id = ids.to_dtype(DType::U32).to_vec<uint32_t>();
        }
        for (size_t i = 0; i < static_cast<size_t>(rows); i++) {
          TokenLogprob t{token_bytes(next[i]), true, lp[i], {}};
          for (size_t j = 0; j < static_cast<size_t>(k); j++)
            t.top.emplace_back(token_bytes(top_id[i * static_cast<size_t>(k) + j]),
                               top_lp[i * static_cast<size_t>(k) + j]);
          slot.job->stream->push({}, 0, std::move(t));
        }
      }
    }
  }
  if (r.max_tokens == 0) release(slot, FinishReason::Length);
}

bool Scheduler::advance(Slot& slot, uint32_t tok, const Tensor* logits) {
  const GenRequest& r = slot.job->request;
  // Before accept(): the distribution tok was drawn from.
  std::optional<TokenLogprob> lp;
  if (r.logprobs >= 0 && logits) lp = token_logprob(*slot.sampler, *logits, tok, r.logprobs);
  slot.sampler->accept(tok);
  slot.generated++;
  if (std::find(r.end_ids.begin(), r.end_ids.end(), static_cast<int32_t>(tok)) != r.end_ids.end()) {
    release(slot, FinishReason::Stop);
    return false;
  }
  const std::string text = slot.stops->push(slot.streamer->push(static_cast<int32_t>(tok)));
  // The token that completes a stop string is not part of the answer, nor its log-probability.
  if (slot.stops->stopped()) lp.reset();
  slot.job->stream->push(text, slot.generated, std::move(lp));
  if (slot.stops->stopped()) {
    release(slot, FinishReason::Stop);
    return false;
  }
  if (slot.generated >= r.max_tokens || slot.seq.position() >= context_) {
    release(slot, FinishReason::Length);
    return false;
  }
  slot.next = tok;
  return true;
}

void Scheduler::run() {
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  const auto idle = Clock::time_point::min();
  Clock::time_point last_pass_end = idle;  // the last pass's end; idle: none since the last wait
  for (;;) {
    std::vector<Slot*> fresh;
    {
      std::unique_lock lk(mu_);
      if (stopping_ || (queue_.empty() && stats_.active == 0)) last_pass_end = idle;
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty() || stats_.active > 0; });
      if (stopping_) return;
      for (auto& s : slots_) {
        if (s->job || queue_.empty()) continue;
        s->job = std::move(queue_.front());
        queue_.pop_front();
        fresh.push_back(s.get());
        stats_.active++;
      }
      stats_.queued = static_cast<int64_t>(queue_.size());
    }
    for (auto& s : slots_)
      if (s->job && s->job->stream->cancelled()) release(*s, FinishReason::Error, "cancelled");

    for (Slot* s : fresh) {
      const GenRequest& r = s->job->request;
      s->seq.reset();
      s->generated = 0;
      s->sampler.emplace(r.sampling);
      s->streamer.emplace(tokenizer_, /*skip_special=*/true);
      s->stops.emplace(r.stops);
      for (uint32_t t : r.prompt) s->sampler->accept(t);
    }
    for (Slot* s : fresh) {
      try {
        score_prompt(*s);
      } catch (const std::exception& e) {
        release(*s, FinishReason::Error, e.what());
      }
    }

    // One pass: the next token of every answer under way, and the prompts of new requests while
    // the rows fit max_step_rows (one prompt at least, so that every prompt gets its turn).
    std::vector<Slot*> batch;
    std::vector<LlamaModel::SequenceStep> steps;
    for (auto& s : slots_)
      if (s->job && s->generated > 0) {
        batch.push_back(s.get());
        steps.push_back({&s->seq, {s->next}});
      }
    const auto decode_rows = static_cast<int64_t>(steps.size());
    int64_t rows = decode_rows;
    bool prompts = false;
    for (auto& s : slots_) {
      if (!s->job || s->generated > 0) continue;
      const std::vector<uint32_t>& prompt = s->job->request.prompt;
      const auto n = static_cast<int64_t>(prompt.size());
      if (prompts && rows + n > opts_.max_step_rows) continue;
      batch.push_back(s.get());
      steps.push_back({&s->seq, prompt});
      rows += n;
      prompts = true;
    }
    if (steps.empty()) continue;
    const int64_t prompt_tokens = rows - decode_rows;
    const Clock::time_point pass_start = Clock::now();
    try {
      const Tensor logits = model_.forward_batch(steps);
      // Greedy answers take the first maximum of their row, found for all rows at once (on a
      // GPU: b ids read back instead of b x vocab logits); the others sample on the host.
      // Log-probabilities need the row on the host too.
      bool any_greedy = false, any_row = false;
      for (const Slot* s : batch) {
        any_greedy = any_greedy || s->sampler->plain_greedy();
        any_row = any_row || !s->sampler->plain_greedy() || s->job->request.logprobs >= 0;
      }
      const std::vector<uint32_t> best =
          any_greedy ? logits.argmax(1).to_vec<uint32_t>() : std::vector<uint32_t>{};
      const Tensor rows = any_row ? logits.to_device(Device::cpu()) : Tensor();
      const Clock::time_point pass_end = Clock::now();
      const double pass_ms = ms(pass_end - pass_start);
      const double host_ms = last_pass_end != idle ? ms(pass_start - last_pass_end) : 0.0;
      int64_t pass_number;
      {
        std::lock_guard lk(mu_);
        if (decode_rows > 0) {
          stats_.steps++;
          stats_.decoded_rows += decode_rows;
        }
        (prompts ? stats_.prompt_pass_ms : stats_.decode_pass_ms) += pass_ms;
        (prompts ? stats_.prompt_passes : stats_.decode_passes)++;
        stats_.longest_pass_ms = std::max(stats_.longest_pass_ms, pass_ms);
        stats_.host_ms += host_ms;
        pass_number = stats_.decode_passes + stats_.prompt_passes;
      }
      if (opts_.log_passes)  // outside the lock: /health and submit() need not wait for stderr
        std::fprintf(stderr,
                     "wick serve: pass %lld: %lld answer tokens, %zu prompts of %lld tokens, "
                     "%.3f ms (%.3f ms since the last)\n",
                     static_cast<long long>(pass_number), static_cast<long long>(decode_rows),
                     batch.size() - static_cast<size_t>(decode_rows),
                     static_cast<long long>(prompt_tokens), pass_ms, host_ms);
      last_pass_end = pass_end;
      for (size_t i = 0; i < batch.size(); i++) {
        Slot& s = *batch[i];
        const Tensor row = any_row ? rows.get(static_cast<int64_t>(i)) : Tensor();
        const uint32_t tok = s.sampler->plain_greedy() ? best[i] : s.sampler->sample(row);
        advance(s, tok, any_row ? &row : nullptr);
      }
    } catch (const std::exception& e) {
      for (Slot* s : batch)
        if (s->job) release(*s, FinishReason::Error, e.what());
    }
  }
}

}  // namespace wick::cli
