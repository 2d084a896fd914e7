// `wick serve`: the HTTP side (cpp-httplib). HTTP threads parse and check requests, hand them to
// the scheduler (serve_scheduler.h) and stream its output back; they never touch the model.
#include "serve.h"

#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "generate.h"
#include "serve_api.h"
#include "serve_scheduler.h"
#include "wick/gguf.h"
#include "wick/wick.h"

#if WICK_HAVE_HTTPLIB
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace wick::cli {

#if !WICK_HAVE_HTTPLIB

int run_serve(const Args&) {
  fail(ErrorKind::Unsupported, "wick serve",
       "this wick was built without cpp-httplib (Debian: libcpp-httplib-dev); rebuild with it");
}

#else

namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";
// A streamed answer silent for this long gets an SSE comment: a client that left is then noticed
// (the write fails) even while its request waits in the queue.
constexpr auto kKeepAlive = std::chrono::seconds(2);

std::string model_id(const GgufFile& f, const std::string& path) {
  if (const GgufValue* v = f.find("general.name"); v && v->is<std::string>())
    if (!v->as_string().empty()) return v->as_string();
  return std::filesystem::path(path).filename().string();
}

void send_error(httplib::Response& res, int status, const std::string& message,
                const std::string& type, const std::string& param = {}) {
  res.status = status;
  res.set_content(error_body(message, type, param), kJson);
}

// One choice of a streamed answer.
struct StreamedChoice {
  std::shared_ptr<RequestStream> stream;
  bool first = true;
  size_t streamed_bytes = 0;  // of the answer's text so far: a completion's text_offset
  bool echoed = false;        // the prompt's text went out (echo)
  bool done = false;
  int64_t completion_tokens = 0;
  std::string held{};  // parse_tools: the answer's text, sent once parsed at its end
};

// One streamed answer's state between calls of the content provider.
struct StreamState {
  ApiRequest request;
  std::vector<StreamedChoice> choices;
  std::string id, model;
  int64_t created = 0;
  int64_t prompt_tokens = 0;
  RequestStream::Clock::time_point last_write = RequestStream::Clock::now();
};

// Writes what the scheduler produced since the last call; false when the client is gone. The
// choices' chunks interleave as their tokens come, each with its index.
bool write_events(StreamState& s, httplib::DataSink& sink) {
  const auto write = [&](const std::string& text) {
    s.last_write = RequestStream::Clock::now();
    return sink.write(text.data(), text.size());
  };
  const auto chunk = [&](int64_t i, const std::string* text, bool first, FinishReason finish,
                         const std::vector<TokenLogprob>& lps = {}, size_t offset = 0) {
    return write(sse_event(
        chunk_json(s.request, s.id, s.created, s.model, text, first, finish, lps, offset, i)));
  };
  bool any = false, all_done = true;
  for (size_t i = 0; i < s.choices.size(); i++) {
    StreamedChoice& c = s.choices[i];
    const auto index = static_cast<int64_t>(i);
    if (c.done) continue;
    if (c.first && s.request.chat) {  // OpenAI's first chunk: the role, no text yet
      static const std::string empty;
      if (!chunk(index, &empty, true, FinishReason::None)) return false;
      c.first = false;
    }
    RequestStream::Update u;
    // The first unfinished choice waits a while; the others are only looked at.
    const auto wait = std::chrono::milliseconds(any || !all_done ? 0 : 200);
    if (!c.stream->next(u, wait)) {
      all_done = false;
      continue;
    }
    any = true;
    if (s.request.echo && !c.echoed) {
      u.text.insert(0, s.request.prompt_text);
      c.echoed = true;
    }
    if (s.request.parse_tools) {  // tool calls are known at the end
      c.held += u.text;
      u.text.clear();
    }
    if ((!u.text.empty() || !u.logprobs.empty()) &&
        !chunk(index, &u.text, c.first, FinishReason::None, u.logprobs, c.streamed_bytes))
      return false;
    for (const TokenLogprob& t : u.logprobs) c.streamed_bytes += t.token.size();
    c.first = false;
    s.prompt_tokens = u.prompt_tokens;
    c.completion_tokens = u.completion_tokens;
    if (u.finish == FinishReason::None) {
      all_done = false;
      continue;
    }
    if (u.finish == FinishReason::Error) {
      write(sse_event(json::parse(error_body(u.error, "server_error"))));
      for (StreamedChoice& other : s.choices) other.stream->cancel();
      write("data: [DONE]\n\n");
      sink.done();
      return true;
    }
    FinishReason finish = u.finish;
    if (s.request.parse_tools) {
      const ToolAnswer t = tool_answer(c.held, u.finish);
      if (!t.content.empty() && !chunk(index, &t.content, false, FinishReason::None)) return false;
      if (!t.tool_calls.empty() &&
          !write(sse_event(tool_calls_chunk_json(s.id, s.created, s.model, index, t.tool_calls))))
        return false;
      finish = t.finish;
    }
    if (!chunk(index, nullptr, false, finish)) return false;
    c.done = true;
  }
  if (!all_done) {
    if (any || RequestStream::Clock::now() - s.last_write < kKeepAlive) return true;
    return write(": waiting\n\n");
  }
  int64_t completion_tokens = 0;
  for (const StreamedChoice& c : s.choices) completion_tokens += c.completion_tokens;
  if (s.request.include_usage &&
      !write(sse_event(usage_chunk_json(s.request, s.id, s.created, s.model, s.prompt_tokens,
                                        completion_tokens))))
    return false;
  write("data: [DONE]\n\n");
  sink.done();
  return true;
}

class Server {
 public:
  Server(const Args& args, ServedModel served, Scheduler& scheduler)
      : args_(args), served_(std::move(served)), scheduler_(scheduler) {
    // Streams hold an HTTP thread each; requests beyond the slots and the queue still need one
    // to be told 503.
    const size_t threads = static_cast<size_t>(
        std::min<int64_t>(1024, std::max<int64_t>(16, args.parallel + args.max_queue + 8)));
    http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http_.set_payload_max_length(static_cast<size_t>(args.max_body));
    http_.set_read_timeout(30);
    http_.set_write_timeout(30);
    http_.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      listen_socket_ = sock;
    });
    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const SchedulerStats st = scheduler_.stats();
      res.set_content(dump_json(json{{"status", "ok"},
                                     {"slots", st.slots},
                                     {"slots_processing", st.active},
                                     {"queued", st.queued},
                                     {"completed", st.completed},
                                     {"cancelled", st.cancelled},
                                     {"decode_steps", st.steps},
                                     {"decoded_rows", st.decoded_rows},
                                     {"decode_passes", st.decode_passes},
                                     {"prompt_passes", st.prompt_passes},
                                     {"decode_pass_ms", st.decode_pass_ms},
                                     {"prompt_pass_ms", st.prompt_pass_ms},
                                     {"host_ms", st.host_ms},
                                     {"longest_pass_ms", st.longest_pass_ms}}),
                      kJson);
    });
    http_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump_json(json{{"object", "list"},
                                     {"data", json::array({{{"id", served_.id},
                                                            {"object", "model"},
                                                            {"created", started_},
                                                            {"owned_by", "wick"}}})}}),
                      kJson);
    });
    http_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      complete(req, res, false);
    });
    http_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      complete(req, res, true);
    });
    http_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 413)
        send_error(res, 413,
                   "the request body is larger than the server's limit of " +
                       std::to_string(args_.max_body) + " bytes (--max-body)",
                   "invalid_request_error");
      else if (res.status == 404)
        send_error(res, 404, "no route " + req.method + " " + req.path, "not_found_error");
      else
        send_error(res, res.status, "HTTP error " + std::to_string(res.status),
                   "invalid_request_error");
    });
    http_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send_error(res, 500, what, "server_error");
        });
  }

  // Binds; the port listened on.
  int bind() {
    if (args_.port == 0) {
      const int port = http_.bind_to_any_port(args_.host);
      if (port < 0) fail(ErrorKind::Io, "wick serve", "cannot listen on ", args_.host);
      deepen_backlog();
      return port;
    }
    if (!http_.bind_to_port(args_.host, static_cast<int>(args_.port)))
      fail(ErrorKind::Io, "wick serve", "cannot listen on ", args_.host, ":", args_.port,
           " (in use, or not an address of this machine)");
    deepen_backlog();
    return static_cast<int>(args_.port);
  }
  // cpp-httplib listens with a backlog of 5 connections (built into Debian's library): 8 clients
  // connecting at once lost SYNs, and the client's kernel sent them again after 1 s (a first
  // token after 1022 ms, H200 session 19). Linux takes a second listen() as a new backlog.
  void deepen_backlog() {
    if (listen_socket_ != socket_t(-1)) ::listen(listen_socket_, SOMAXCONN);
  }
  void listen() { http_.listen_after_bind(); }
  void stop() { http_.stop(); }

 private:
  socket_t listen_socket_ = socket_t(-1);
  void complete(const httplib::Request& req, httplib::Response& res, bool chat) {
    ApiRequest r;
    try {
      r = parse_api_request(req.body, chat, served_);
    } catch (const ApiError& e) {
      send_error(res, e.status, e.what(), "invalid_request_error", e.param);
      return;
    }
    // Choice i samples with the request's seed + i (greedy choices are the same answer).
    std::vector<std::shared_ptr<RequestStream> > streams;
    for (int64_t i = 0; i < r.n; i++) {
      GenRequest g = r.gen;
      g.sampling.seed += static_cast<uint64_t>(i);
      std::shared_ptr<RequestStream> stream = scheduler_.submit(std::move(g));
      if (!stream) {
        for (const auto& placed : streams) placed->cancel();
        res.set_header("Retry-After", "1");
        send_error(res, 503,
                   "the server is busy: its " + std::to_string(args_.parallel) +
                       " slots and its queue of " + std::to_string(args_.max_queue) +
                       " are full; retry later",
                   "server_busy");
        return;
      }
      streams.push_back(std::move(stream));
    }
    const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(++next_id_);
    const auto created = static_cast<int64_t>(std::time(nullptr));
    if (r.stream) {
      auto s = std::make_shared<StreamState>();
      for (const auto& stream : streams) s->choices.push_back({stream});
      s->request = std::move(r);
      s->id = id;
      s->model = served_.id;
      s->created = created;
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [s](size_t, httplib::DataSink& sink) { return write_events(*s, sink); },
          // Done, failed or the client left: a finished request ignores the cancel.
          [streams](bool) {
            for (const auto& stream : streams) stream->cancel();
          });
      return;
    }
    std::vector<ChoiceResult> choices(streams.size());
    int64_t prompt_tokens = 0;
    for (size_t i = 0; i < streams.size(); i++) {
      ChoiceResult& c = choices[i];
      RequestStream::Update u;
      for (;;) {
        if (!streams[i]->next(u, std::chrono::seconds(1))) continue;
        c.text += u.text;
        for (TokenLogprob& t : u.logprobs) c.logprobs.push_back(std::move(t));
        if (u.finish != FinishReason::None) break;
      }
      if (u.finish == FinishReason::Error) {
        for (const auto& stream : streams) stream->cancel();
        send_error(res, 500, u.error, "server_error");
        return;
      }
      c.finish = u.finish;
      c.completion_tokens = u.completion_tokens;
      prompt_tokens = u.prompt_tokens;
    }
    res.set_content(dump_json(answer_json(r, id, created, served_.id, choices, prompt_tokens)),
                    kJson);
  }

  const Args& args_;
  ServedModel served_;
  Scheduler& scheduler_;
  httplib::Server http_;
  std::atomic<int64_t> next_id_{0};
  int64_t started_ = static_cast<int64_t>(std::time(nullptr));
};

// SIGINT/SIGTERM write a byte to this pipe (all a signal handler may safely do); a thread reading
// it stops the server.
int g_stop_pipe[2] = {-1, -1};

void on_stop_signal(int sig) {
  const auto b = static_cast<char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_stop_pipe[1], &b, 1);
}

}  // namespace

int run_serve(const Args& args) {
  std::signal(SIGPIPE, SIG_IGN);  // a client that left is a failed write, not the end
  if (::pipe(g_stop_pipe) != 0) fail(ErrorKind::Io, "wick serve", "pipe() failed");
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);

  const Device dev = device_from_flag(args.device);
  LlamaModel model =
      load_model_with_progress(args.model, dev, args.max_seq, ctx_flag_text(args), nullptr);
  ServedModel served{model_id(model.gguf(), args.model),
                     load_gguf_tokenizer(model.gguf()),
                     load_gguf_chat_template(model.gguf()),
                     gguf_adds_bos(model.gguf()),
                     {},
                     {},
                     model.max_seq(),
                     args.n_predict};
  if (served.tokenizer.eos_id() >= 0) served.eos_ids.push_back(served.tokenizer.eos_id());
  served.end_of_turn_ids = end_of_turn_ids(served.tokenizer, model.gguf());
  Scheduler scheduler(
      std::move(model), served.tokenizer,
      SchedulerOptions{
          .slots = args.parallel, .max_queued = args.max_queue, .log_passes = args.log_passes});
  Server server(args, std::move(served), scheduler);
  const int port = server.bind();

  // Byte 0 on the pipe (below) only ends this thread; a signal's number also stops the server.
  std::thread watcher([&scheduler, &server] {
    char sig = 0;
    while (::read(g_stop_pipe[0], &sig, 1) < 0 && errno == EINTR) {
    }
    if (sig == 0) return;
    std::fprintf(stderr, "wick serve: signal %d, stopping\n", sig);
    scheduler.shutdown();  // ends every open answer, so that no HTTP thread waits on one
    server.stop();
  });

  std::printf("wick serve: listening on http://%s:%d (%lld slots of %lld tokens, %s)\n",
              args.host.c_str(), port, static_cast<long long>(args.parallel),
              static_cast<long long>(scheduler.context()), dev.name().c_str());
  std::fflush(stdout);
  server.listen();
  const char end = 0;
  [[maybe_unused]] const ssize_t n = ::write(g_stop_pipe[1], &end, 1);
  watcher.join();  // it may still be using the server
  scheduler.shutdown();
  return 0;
}

#endif

}  // namespace wick::cli
