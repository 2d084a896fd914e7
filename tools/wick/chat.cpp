// `wick chat`: a multi-turn conversation. Each stdin line is a user turn; the whole conversation is
// rendered by the model's chat template, and only the tokens the KV cache does not hold yet are fed
// (the rendering of earlier turns is the cache's prefix, unless the template rewrites them).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>

#include "generate.h"
#include "report.h"
#include "stop_strings.h"
#include "wick/gguf.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

// Set by Ctrl-C; the generation loop checks it after every token.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
}

// No SA_RESTART: Ctrl-C at the prompt interrupts the read, which ends the session.
void install_sigint_handler() {
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

int run_chat(const Args& args) {
  const Device dev = device_from_flag(args.device);
  double load_s = 0;
  const std::string ctx_flag = ctx_flag_text(args);
  LlamaModel model =
      load_model_with_progress(args.model, dev, args.max_seq, ctx_flag, &load_s, args.kv_type);
  const Tokenizer tok = load_gguf_tokenizer(model.gguf());
  const ChatTemplate tmpl = load_gguf_chat_template(model.gguf());
  const std::vector<int32_t> ends = end_of_turn_ids(tok, model.gguf());
  const bool add_bos = gguf_adds_bos(model.gguf()) && tok.bos_id() >= 0;
  const std::string bos_text = add_bos ? tok.token(tok.bos_id()) : std::string();
  Sampler sampler(sampling_options(args));
  install_sigint_handler();

  std::vector<ChatMessage> history;
  if (!args.system.empty()) history.push_back({"system", args.system});
  const size_t first_turn = history.size();  // turns before it are never dropped
  std::vector<uint32_t> cached;              // the tokens in the KV cache
  // Room kept for a reply when older turns have to go.
  const int64_t reply_room = std::min<int64_t>(args.n_predict, model.max_seq() / 2);
  const bool echo = ::isatty(::fileno(stdin)) == 0;  // a terminal shows what is typed already
  int64_t turns = 0, total_tokens = 0;
  double total_decode_s = 0;
  std::fprintf(stderr, "%s on %s: loaded in %.1f ms; a line is a turn, Ctrl-D ends\n",
               args.model.c_str(), dev.name().c_str(), load_s * 1e3);

  const auto render = [&] {
    const std::string text = tmpl.apply(history, /*add_generation_prompt=*/true);
    std::vector<uint32_t> ids;
    if (add_bos && text.rfind(bos_text, 0) != 0) ids.push_back(static_cast<uint32_t>(tok.bos_id()));
    for (const int32_t id : tok.encode(text, /*allow_special=*/true))
      ids.push_back(static_cast<uint32_t>(id));
    return ids;
  };

  std::string line;
  while (true) {
    std::cout << "> " << std::flush;
    g_interrupted.store(false);
    if (!std::getline(std::cin, line)) break;  // end of input, or Ctrl-C at the prompt
    if (echo) std::cout << line << "\n";
    if (line.empty()) continue;
    history.push_back({"user", line});

    std::vector<uint32_t> ids = render();
    int dropped = 0;
    while (static_cast<int64_t>(ids.size()) + reply_room > model.max_seq() &&
           history.size() > first_turn + 1) {
      // The oldest turn goes, with its reply: up to the next user turn.
      size_t end = first_turn + 1;
      while (end < history.size() - 1 && history[end].role != "user") end++;
      history.erase(history.begin() + static_cast<long>(first_turn),
                    history.begin() + static_cast<long>(end));
      dropped++;
      ids = render();
    }
    if (dropped > 0)
      std::fprintf(stderr,
                   "wick: the conversation no longer fits the context of %lld tokens: dropped "
                   "the oldest %d turn%s\n",
                   static_cast<long long>(model.max_seq()), dropped, dropped == 1 ? "" : "s");
    if (static_cast<int64_t>(ids.size()) >= model.max_seq()) {
      std::fprintf(stderr,
                   "wick: this turn is %zu tokens, more than the context of %lld: skipped\n",
                   ids.size(), static_cast<long long>(model.max_seq()));
      history.pop_back();
      continue;
    }
    // Feed what the cache lacks; a template that rewrote earlier turns starts over.
    const bool extends =
        cached.size() < ids.size() && std::equal(cached.begin(), cached.end(), ids.begin());
    if (!extends) {
      model.reset();
      cached.clear();
    }
    const std::vector<uint32_t> fresh(ids.begin() + static_cast<long>(cached.size()), ids.end());

    TokenStreamer stream(tok, /*skip_special=*/true);
    StopStrings stops(args.stops);
    std::string reply;
    std::vector<uint32_t> sampled;
    bool at_end = false;
    const auto emit = [&](const std::string& text) {
      reply += text;
      std::cout << text << std::flush;
    };
    const GenerationStats st =
        generate(model, fresh, args.n_predict, sampler, -1, [&](uint32_t id) {
          sampled.push_back(id);
          if (std::find(ends.begin(), ends.end(), static_cast<int32_t>(id)) != ends.end()) {
            at_end = true;
            return false;
          }
          emit(stops.push(stream.push(static_cast<int32_t>(id))));
          return !stops.stopped() && !g_interrupted.load();
        });
    emit(stops.push(stream.finish()));
    if (!stops.stopped()) emit(stops.finish());
    std::cout << "\n" << std::flush;
    const bool interrupted = g_interrupted.exchange(false);
    history.push_back({"assistant", reply});
    // The cache holds the prompt and every token but the last sampled one.
    cached = ids;
    cached.insert(cached.end(), sampled.begin(), sampled.end());
    cached.resize(static_cast<size_t>(model.position()));
    turns++;
    total_tokens += st.generated_tokens;
    total_decode_s += st.decode_seconds;
    std::fprintf(stderr, "[%lld prompt tokens %.1f ms, %lld tokens %.1f tokens/s%s]\n",
                 static_cast<long long>(fresh.size()), st.prefill_seconds * 1e3,
                 static_cast<long long>(st.generated_tokens),
                 st.decode_seconds > 0
                     ? static_cast<double>(st.generated_tokens - 1) / st.decode_seconds
                     : 0.0,
                 interrupted                 ? ", interrupted"
                 : at_end                    ? ""
                 : stops.stopped()           ? ", at a stop string"
                 : st.stopped_at_context_end ? ", the context is full"
                                             : ", at -n");
  }
  std::cout << "\n" << std::flush;
  std::fprintf(stderr, "\n%s on %s: %lld turns, %lld tokens generated, load %.1f ms\n",
               args.model.c_str(), dev.name().c_str(), static_cast<long long>(turns),
               static_cast<long long>(total_tokens), load_s * 1e3);
  return 0;
}

}  // namespace wick::cli
