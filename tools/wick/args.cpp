#include "args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string_view>

#include "wick/error.h"

namespace wick::cli {

namespace {

const char* command_name(Command c) {
  switch (c) {
    case Command::Info:
      return "info";
    case Command::Bench:
      return "bench";
    case Command::Generate:
      return "generate";
    case Command::Chat:
      return "chat";
    case Command::Serve:
      return "serve";
    case Command::Perplexity:
      return "perplexity";
    default:
      return "";
  }
}

Command parse_command(std::string_view word) {
  if (word == "info") return Command::Info;
  if (word == "bench") return Command::Bench;
  if (word == "generate") return Command::Generate;
  if (word == "chat") return Command::Chat;
  if (word == "serve") return Command::Serve;
  if (word == "perplexity") return Command::Perplexity;
  if (word == "help") return Command::Help;
  throw UsageError("unknown command '" + std::string(word) +
                   "' (commands: info, bench, generate, chat, serve, perplexity, help)");
}

bool is_bench_name(std::string_view name) {
  return std::find(kBenchNames.begin(), kBenchNames.end(), name) != kBenchNames.end() ||
         std::find(kNamedOnlyBenchNames.begin(), kNamedOnlyBenchNames.end(), name) !=
             kNamedOnlyBenchNames.end();
}

std::string all_bench_names() {
  std::string s;
  for (const std::string& n : kBenchNames) s += (s.empty() ? "" : ", ") + n;
  for (const std::string& n : kNamedOnlyBenchNames) s += ", " + n;
  return s;
}

constexpr uint64_t kMaxCount = INT32_MAX;
// bench gen --batch: at most this many sequences (each holds a KV cache of the whole context).
constexpr uint64_t kMaxBatch = 256;

// Every numeric flag of every command is read by one of these two: plain decimal digits (no
// hex, exponent, spaces, inf or nan; a '-' only where the range has negatives), the whole word,
// in range.
uint64_t parse_integer(std::string_view opt, std::string_view v, uint64_t lo, uint64_t hi) {
  uint64_t x = 0;
  const char* end = v.data() + v.size();
  const auto [stop, ec] = std::from_chars(v.data(), end, x);
  if (v.empty() || ec != std::errc() || stop != end || x < lo || x > hi)
    throw UsageError(std::string(opt) + " needs a whole number in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "] in decimal digits, got '" + std::string(v) + "'");
  return x;
}

// Digits with an optional '.' fraction; in [lo, hi] (lo excluded when lo_open).
double parse_decimal(std::string_view opt, std::string_view v, double lo, double hi, bool lo_open) {
  double x = 0;
  const char* end = v.data() + v.size();
  const auto [stop, ec] = std::from_chars(v.data(), end, x, std::chars_format::fixed);
  const bool in_range = x <= hi && (lo_open ? x > lo : x >= lo);
  if (v.empty() || ec != std::errc() || stop != end || !std::isfinite(x) || !in_range) {
    std::ostringstream range;
    if (std::isinf(hi))
      range << (lo_open ? "> " : ">= ") << lo;
    else
      range << "in " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
    throw UsageError(std::string(opt) + " needs a decimal number " + range.str() + ", got '" +
                     std::string(v) + "'");
  }
  return x;
}

int64_t parse_count(std::string_view opt, std::string_view v, int64_t lo) {
  return static_cast<int64_t>(parse_integer(opt, v, static_cast<uint64_t>(lo), kMaxCount));
}

// llama.cpp's TOKEN_ID(+|-)BIAS: "15043+1.5", "15043-1", "15043-inf" (a ban).
std::pair<uint32_t, double> parse_logit_bias(std::string_view opt, std::string_view v) {
  const size_t sign = v.find_first_of("+-");
  if (sign == std::string_view::npos || sign == 0)
    throw UsageError(std::string(opt) + " needs TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, " +
                     "15043-inf), got '" + std::string(v) + "'");
  const auto id = static_cast<uint32_t>(parse_integer(opt, v.substr(0, sign), 0, INT32_MAX));
  const std::string_view mag = v.substr(sign + 1);
  if (v[sign] == '-' && mag == "inf") return {id, -std::numeric_limits<double>::infinity()};
  if (mag.starts_with('-'))
    throw UsageError(std::string(opt) + " has two signs in '" + std::string(v) + "'");
  const double x = parse_decimal(opt, mag, 0, 100, false);
  return {id, v[sign] == '-' ? -x : x};
}

}  // namespace

Args parse_args(int argc, const char* const* argv) {
  Args a;
  if (argc < 2) return a;
  const std::string_view first = argv[1];
  if (first == "-h" || first == "--help") return a;
  if (first == "--version" || first == "-V") {
    if (argc > 2) throw UsageError("--version takes no arguments");
    a.command = Command::Version;
    return a;
  }
  if (first.starts_with("-")) throw UsageError("unknown option '" + std::string(first) + "'");
  a.command = parse_command(first);

  if (a.command == Command::Help) {
    // "wick help COMMAND" is "wick COMMAND --help".
    if (argc > 3) throw UsageError("'wick help' takes at most one command");
    if (argc == 3) {
      a.command = parse_command(argv[2]);
      a.help = a.command != Command::Help;
    }
    return a;
  }

  const std::string cmd = command_name(a.command);
  // `chat` takes generate's options but the prompt (it reads turns from stdin) and --chat.
  const bool bench = a.command == Command::Bench, chat = a.command == Command::Chat;
  // `serve` takes the model, device, thread, context and -n options of generate.
  const bool serve = a.command == Command::Serve;
  const bool gen = a.command == Command::Generate || chat;
  // `perplexity` takes the model, device, thread, context, KV cache and --file options.
  const bool ppl = a.command == Command::Perplexity;
  const bool model_cmd = bench || gen || serve || ppl;
  std::vector<std::string> gen_flags;        // bench: options that only the gen benchmark reads
  std::vector<std::string> tokenizer_flags;  // ... and the tokenizer benchmark
  for (int i = 2; i < argc; i++) {
    const std::string_view arg = argv[i];
    // "--opt VALUE" or "--opt=VALUE" for options that take one.
    std::string_view name = arg, inline_value;
    bool has_inline = false;
    if (arg.starts_with("--")) {
      if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        inline_value = arg.substr(eq + 1);
        has_inline = true;
      }
    }
    // The option's value; an empty one is refused like a missing one (never a silent default).
    auto value = [&](const char* what) -> std::string {
      if (!has_inline && i + 1 >= argc) throw UsageError(std::string(name) + " needs " + what);
      const std::string v = has_inline ? std::string(inline_value) : argv[++i];
      if (v.empty()) throw UsageError(std::string(name) + " needs " + what + ", got ''");
      return v;
    };
    const auto gen_only = [&] { gen_flags.emplace_back(name); };
    if (arg == "-h" || arg == "--help") {
      a.help = true;
    } else if (model_cmd && name == "--device") {
      a.device = value("a value (cpu, vulkan[:N], cuda[:N])");
    } else if (model_cmd && (name == "-m" || name == "--model")) {
      a.model = value("a path");
      gen_only();
    } else if (model_cmd && !ppl && (name == "-n" || name == "--n-predict")) {
      // bench gen times decoding: at least one token after the prefill's.
      a.n_predict = parse_count(name, value("a count"), bench ? 2 : 1);
      gen_only();
    } else if (model_cmd && (name == "-t" || name == "--threads")) {
      a.threads = parse_count(name, value("a count"), 1);
    } else if (serve && name == "--host") {
      a.host = value("an address");
    } else if (serve && name == "--port") {
      a.port = static_cast<int64_t>(parse_integer(name, value("a number"), 0, 65535));
    } else if (serve && (name == "-np" || name == "--parallel")) {
      a.parallel = parse_count(name, value("a count"), 1);
    } else if (serve && name == "--max-queue") {
      a.max_queue = parse_count(name, value("a count"), 0);
    } else if (serve && name == "--log-passes") {
      a.log_passes = true;
    } else if (serve && name == "--max-body") {
      a.max_body = parse_count(name, value("a count"), 1);
    } else if (bench && name == "--json") {
      a.json = true;
      gen_only();
    } else if ((gen || serve || ppl) && (name == "-c" || name == "--ctx")) {
      a.max_seq = parse_count(name, value("a count"), 1);
    } else if ((bench || gen || ppl) && name == "--kv-type") {
      const std::string v = value("a type (f16, f32, bf16)");
      try {
        a.kv_type = parse_kv_cache_type(v);
      } catch (const Error&) {
        throw UsageError("--kv-type: unknown type '" + v + "' (f16, f32, bf16)");
      }
      if (bench) gen_only();
    } else if (bench && name == "--batch") {
      a.batch = static_cast<int64_t>(parse_integer(name, value("a count"), 2, kMaxBatch));
      gen_only();
    } else if (bench && name == "--save-text") {
      a.save_text = value("a path");
      tokenizer_flags.emplace_back(name);
    } else if (bench && name == "--save-model") {
      a.save_model = value("a path");
      gen_only();
    } else if (bench && name == "--prompt-tokens") {
      a.prompt_tokens = parse_count(name, value("a count"), 1);
      gen_only();
    } else if (gen && !chat && (name == "-p" || name == "--prompt")) {
      a.prompt = value("a text");
    } else if (chat && name == "--system") {
      a.system = value("a text");
    } else if (((gen && !chat) || ppl) && (name == "-f" || name == "--file")) {
      a.prompt_file = value("a path");
    } else if (ppl && name == "--chunks") {
      a.chunks = parse_count(name, value("a count"), 1);
    } else if (gen && name == "--temp") {
      a.temperature =
          parse_decimal(name, value("a number"), 0, std::numeric_limits<double>::infinity(), false);
    } else if (gen && name == "--top-k") {
      a.top_k = parse_count(name, value("a count"), 0);
    } else if (gen && name == "--top-p") {
      a.top_p = parse_decimal(name, value("a number"), 0, 1, true);
    } else if (gen && arg == "--ignore-eos") {
      a.ignore_eos = true;
    } else if (gen && name == "--min-p") {
      a.min_p = parse_decimal(name, value("a number"), 0, 1, false);
    } else if (gen && name == "--repeat-penalty") {
      a.repeat_penalty =
          parse_decimal(name, value("a number"), 0, std::numeric_limits<double>::infinity(), true);
    } else if (gen && name == "--repeat-last-n") {
      a.repeat_last_n = parse_count(name, value("a count"), 0);
    } else if (gen && name == "--frequency-penalty") {
      a.frequency_penalty = parse_decimal(name, value("a number"), -2, 2, false);
    } else if (gen && name == "--presence-penalty") {
      a.presence_penalty = parse_decimal(name, value("a number"), -2, 2, false);
    } else if (gen && name == "--logit-bias") {
      a.logit_bias.push_back(parse_logit_bias(name, value("TOKEN_ID+BIAS")));
    } else if (gen && name == "--stop") {
      a.stops.push_back(value("a text"));
    } else if (gen && (name == "-s" || name == "--seed")) {
      a.seed = parse_integer(name, value("a number"), 0, std::numeric_limits<uint64_t>::max());
    } else if (gen && !chat && arg == "--chat") {
      a.chat = true;
    } else if (bench && arg == "--full") {
      a.full = true;
    } else if (bench && arg == "--quick") {
      a.quick = true;
    } else if (bench && arg == "--worker") {
      a.worker = true;
    } else if (arg.starts_with("-")) {
      throw UsageError("unknown option '" + std::string(arg) + "' for 'wick " + cmd + "'");
    } else if (bench) {
      if (!is_bench_name(arg))
        throw UsageError("unknown benchmark '" + std::string(arg) +
                         "' (benchmarks: " + all_bench_names() + ")");
      if (std::find(a.benches.begin(), a.benches.end(), arg) == a.benches.end())
        a.benches.emplace_back(arg);
    } else {
      throw UsageError("'wick " + cmd + "' takes no argument '" + std::string(arg) + "'");
    }
  }
  if (chat && !a.help && a.model.empty()) throw UsageError("wick chat needs --model PATH (-m)");
  if (serve && !a.help && a.model.empty()) throw UsageError("wick serve needs --model PATH (-m)");
  if (ppl && !a.help) {
    if (a.model.empty()) throw UsageError("wick perplexity needs --model PATH (-m)");
    if (a.prompt_file.empty()) throw UsageError("wick perplexity needs --file PATH (-f)");
  }
  if (gen && !chat && !a.help) {
    if (a.model.empty()) throw UsageError("wick generate needs --model PATH (-m)");
    if (!a.prompt.empty() && !a.prompt_file.empty())
      throw UsageError("--prompt and --file both give the prompt: pass one");
    if (a.prompt.empty() && a.prompt_file.empty())
      throw UsageError("wick generate needs --prompt TEXT (-p) or --file PATH (-f)");
  }
  if (a.command == Command::Bench && !a.help) {
    if (a.worker && (a.benches.size() != 1 || (a.benches[0] != "queue" && a.benches[0] != "first")))
      throw UsageError("--worker runs exactly one of: queue, first");
    if (a.benches.empty()) a.benches = kBenchNames;
    if (!gen_flags.empty() &&
        std::find(a.benches.begin(), a.benches.end(), "gen") == a.benches.end())
      throw UsageError(gen_flags[0] + " is an option of the gen benchmark, which is not run");
    if (!tokenizer_flags.empty() &&
        std::find(a.benches.begin(), a.benches.end(), "tokenizer") == a.benches.end())
      throw UsageError(tokenizer_flags[0] +
                       " is an option of the tokenizer benchmark, which is not run");
    if (a.json && a.benches != std::vector<std::string>{"gen"})
      throw UsageError("--json prints the gen benchmark alone: run 'wick bench gen --json'");
  }
  // Defaults of what was not given; --quick shrinks bench gen's.
  if (a.n_predict == 0) a.n_predict = (bench && a.quick) ? 8 : (chat || serve) ? 512 : 128;
  if (a.prompt_tokens == 0) a.prompt_tokens = a.quick ? 16 : 128;
  return a;
}

Device device_from_flag(const std::string& spec) {
  try {
    return spec.empty() ? Device::default_device() : Device::parse(spec);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Parse) throw;  // a device that is not there is not a usage error
    const char* env = std::getenv("WICK_DEVICE");
    const std::string what = spec.empty() ? std::string("WICK_DEVICE '") + (env ? env : "") + "'"
                                          : "--device '" + spec + "'";
    throw UsageError(what + " is not a device spec (cpu, vulkan[:N], cuda[:N])");
  }
}

std::string help_text(Command command) {
  switch (command) {
    case Command::Info:
      return "usage: wick info\n"
             "\n"
             "Prints the wick version, the machine, every available device (name, kind, id,\n"
             "time taken to open it) and every WICK_* environment knob with its value.\n";
    case Command::Bench:
      return "usage: wick bench [NAME ...] [--device D] [-t N] [--full] [--quick]\n"
             "\n"
             "Runs benchmarks and prints one table each (markdown, with a line naming the\n"
             "machine, device, date and command). No NAME runs them all (a minute or two on a "
             "quiet\n"
             "2-core machine, longer on a busy one).\n"
             "\n"
             "benchmarks:\n"
             "  batch_mm     matmul of a narrowed 4-D tensor vs a float64 reference: OK / WRONG\n"
             "  storage      copy() then an in-place write to the original: is the copy "
             "independent?\n"
             "  queue        x = x.add(y) in a loop, encode / synchronize / read / total, under "
             "each\n"
             "               WICK_COMPUTE_PER_BUFFER setting (each in a re-executed process)\n"
             "  first        first use vs later of each op, in a fresh process and in a second "
             "one\n"
             "  matmul       GFLOP/s of f32, f64, bf16, f16 matmul against BLAS on the same data\n"
             "  gemm         TFLOP/s of a@b, a@b.T, a.T@b (views) and a narrowed 4-D batch, the\n"
             "               cases of the PyTorch anchor (not in the default list)\n"
             "  qmatmul      µs per quantized matmul on SmolLM2-135M shapes (q4_1, q8_0), m = 1, "
             "2,\n"
             "               4, 8 and 64, against an f32 matmul of the same shape on the same "
             "device\n"
             "  elementwise  GB/s of add, mul, exp, to_dtype, sum against memcpy of the same "
             "bytes\n"
             "               (a GPU: against a device-to-device copy)\n"
             "  overhead     time per op on 1-element tensors\n"
             "  gen          llama text generation: load time, prefill and decode tokens/s\n"
             "  tokenizer    encode MB/s of English text on one thread, BPE and SentencePiece\n"
             "               vocabularies (llama.cpp's vocab files, from scripts/install-deps.sh)\n"
             "\n"
             "options:\n"
             "  --device D   cpu, vulkan[:N], cuda[:N] (default: WICK_DEVICE, else cpu)\n"
             "  -m, --model P  gen: the GGUF model (default:\n"
             "               models/SmolLM2-135M-Instruct.Q4_1.gguf when present, else a\n"
             "               SmolLM2-135M-shaped model with random Q4_1 weights written to a\n"
             "               temporary file)\n"
             "  --save-model P  gen: write the random-weight model to P and keep it (it has a\n"
             "               byte-level vocabulary, so other runtimes such as llama.cpp load it "
             "too)\n"
             "  --prompt-tokens N  gen: prompt length (default 128; --quick: 16)\n"
             "  -n N         gen: tokens generated, at least 2 (default 128; --quick: 8)\n"
             "  --json       gen: print the figures as one JSON object instead of the table\n"
             "               (alone: wick bench gen --json)\n"
             "  --kv-type T  gen: the KV cache's element type, f16 (default), bf16 or f32\n"
             "  --batch B    gen: also B sequences decoding together (as wick serve's slots),\n"
             "               each after a prompt of its own: ms per pass and aggregate tok/s\n"
             "               for 1, 2, 4, ... and B sequences\n"
             "  --save-text P  tokenizer: also write the text it encodes to P (for other\n"
             "               tokenizers, such as bench/llama_tokenize.cpp's llama.cpp)\n"
             "  -t N         CPU threads (default: OMP_NUM_THREADS, else every core)\n"
             "  --full       also the slow sizes (matmul n = 4096 on the CPU)\n"
             "  --quick      small sizes and few runs (for tests and sanitizer builds)\n"
             "  --worker     internal: the re-executed child of queue / first\n"
             "\n"
             "Numbers are decimal digits. --model, --save-model, --prompt-tokens, -n, --json,\n"
             "--kv-type and --batch need the gen benchmark among those run, --save-text the\n"
             "tokenizer benchmark; a context (prompt + generated tokens) beyond the model's\n"
             "context length is refused.\n"
             "\n"
             "exit status: 0 when every benchmark ran and every check passed, 1 otherwise.\n";
    case Command::Generate:
      return "usage: wick generate -m PATH (-p TEXT | -f PATH) [-n N] [--device D] [-t N]\n"
             "                     [--temp T] [--top-k K] [--top-p P] [--min-p P]\n"
             "                     [--repeat-penalty X] [--repeat-last-n N] [--stop STR]...\n"
             "                     [--frequency-penalty X] [--presence-penalty X]\n"
             "                     [--logit-bias ID+X]... [-s S] [--chat] [-c N] [--ignore-eos]\n"
             "\n"
             "Loads a llama-family model (SmolLM2, Llama, ...; a GGUF file or a Hugging Face\n"
             "folder) and continues the prompt, printing tokens as they come; then load time,\n"
             "prompt and generation tokens/s (on stderr). Stops after N tokens, at the\n"
             "end-of-sequence token, at a stop string, or when the context is full (said on\n"
             "stderr). A progress bar is drawn while a slow model loads when stderr is a\n"
             "terminal.\n"
             "\n"
             "options (llama.cpp's short forms beside the long ones):\n"
             "  -m, --model PATH   GGUF file (./scripts/fetch-model.sh fetches "
             "SmolLM2-135M-Instruct),\n"
             "                     or Hugging Face folder (config.json, *.safetensors,\n"
             "                     tokenizer.json)\n"
             "  -p, --prompt TEXT  the text to continue\n"
             "  -f, --file PATH    the text to continue is this file's\n"
             "  -n, --n-predict N  tokens to generate, at most 2147483647 (default 128)\n"
             "  --device D         cpu, vulkan[:N], cuda[:N] (default: WICK_DEVICE, else cpu)\n"
             "  -t, --threads N    CPU threads (default: OMP_NUM_THREADS, else every core)\n"
             "  --temp T           sampling temperature >= 0; 0 picks the most likely token\n"
             "                     (default 0)\n"
             "  --top-k K          sample among the K most likely tokens (default 0: all)\n"
             "  --top-p P          sample among the smallest set holding probability P, in\n"
             "                     (0, 1] (default 1)\n"
             "  --min-p P          drop tokens less likely than P times the most likely one,\n"
             "                     in [0, 1] (after the temperature; default 0: off)\n"
             "  --repeat-penalty X divide the positive logits of the tokens among the last N\n"
             "                     (prompt included) by X, multiply the negative ones, > 0\n"
             "                     (llama.cpp's; default 1: off)\n"
             "  --repeat-last-n N  the N of --repeat-penalty, --frequency-penalty and\n"
             "                     --presence-penalty (default 64; 0: off)\n"
             "  --frequency-penalty X\n"
             "                     subtract X times its count among the last N tokens from\n"
             "                     each token's logit, X in [-2, 2] (OpenAI's; default 0)\n"
             "  --presence-penalty X\n"
             "                     subtract X from the logit of each token among the last N,\n"
             "                     X in [-2, 2] (OpenAI's; default 0)\n"
             "  --logit-bias ID+X  add X (or with ID-X subtract it; X <= 100, or ID-inf: never\n"
             "                     pick it) to token ID's logit before sampling (repeatable)\n"
             "  --stop STR         stop when the generated text contains STR, which is not\n"
             "                     printed (repeatable)\n"
             "  --ignore-eos       go on past the end-of-sequence token (not with --chat)\n"
             "  -s, --seed S       seed of the sampler, 0 to 2^64 - 1 (default 299792458)\n"
             "  --chat             wrap the prompt as a user turn in the model's chat template\n"
             "  -c, --ctx N        context length: prompt and generated tokens held in the KV\n"
             "                     cache (default: the model's context length, at most 4096);\n"
             "                     more than the model's context length, or more than fits in\n"
             "                     memory, is an error\n"
             "  --kv-type T        the KV cache's element type: f16 (default, as llama.cpp's),\n"
             "                     bf16 or f32 (q8_0 is not implemented)\n"
             "\n"
             "Numbers are decimal digits (T, P and X with an optional '.' fraction, the\n"
             "frequency and presence penalties' with an optional '-'); no value may be empty.\n";
    case Command::Chat:
      return "usage: wick chat -m PATH [--system TEXT] [-n N] [--device D] [-t N] [-c N]\n"
             "                 [--temp T] [--top-k K] [--top-p P] [--min-p P] [-s S]\n"
             "                 [--repeat-penalty X] [--repeat-last-n N] [--stop STR]...\n"
             "                 [--frequency-penalty X] [--presence-penalty X] [--logit-bias "
             "ID+X]...\n"
             "\n"
             "A conversation with a llama-family model (a GGUF file or a Hugging Face folder):\n"
             "each line read from stdin is a user turn; the conversation so far is rendered by\n"
             "the model's chat template (tokenizer.chat_template, run by a Jinja engine;\n"
             "ChatML when the file has none) and the reply streams to stdout after it. The KV\n"
             "cache keeps the conversation: a turn feeds only its new tokens. When the\n"
             "conversation no longer fits the context, the oldest turns are dropped (said on\n"
             "stderr). A reply ends at the model's end-of-turn token, after N tokens (default\n"
             "512), or at a stop string. Ctrl-C stops the reply being generated (the\n"
             "conversation goes on; at the prompt it ends the session); end of input (Ctrl-D)\n"
             "ends the session. Statistics go to stderr.\n"
             "\n"
             "options: those of wick generate (wick generate --help), without -p, -f and\n"
             "--chat, and\n"
             "  --system TEXT  the system turn that opens the conversation (default: none, or\n"
             "                 the template's own)\n";
    case Command::Serve:
      return "usage: wick serve -m PATH [--host ADDR] [--port N] [-np N] [-c N] [-n N]\n"
             "                  [--max-queue N] [--max-body BYTES] [--device D] [-t N]\n"
             "                  [--log-passes]\n"
             "\n"
             "Serves a llama-family model (a GGUF file or a Hugging Face folder) over HTTP\n"
             "with OpenAI's API: POST /v1/completions and /v1/chat/completions (\"stream\":\n"
             "true for server-sent events), GET /v1/models and /health. Requests in the slots\n"
             "are decoded together, one pass through the model per token of all of them\n"
             "(continuous batching); more wait in a queue; beyond it the server answers 503.\n"
             "docs/serve.md has more.\n"
             "\n"
             "options:\n"
             "  -m, --model PATH   GGUF file or Hugging Face folder\n"
             "  --host ADDR        address to listen on (default 127.0.0.1)\n"
             "  --port N           port (default 8080; 0: any free port)\n"
             "  -np, --parallel N  slots: requests decoded together (default 4)\n"
             "  -c, --ctx N        each slot's context: prompt and answer tokens (default: the\n"
             "                     model's context length, at most 4096)\n"
             "  -n, --n-predict N  max_tokens of a request that gives none (default 512)\n"
             "  --max-queue N      requests waiting for a slot before 503 (default 64)\n"
             "  --max-body BYTES   larger request bodies get 413 (default 1048576)\n"
             "  --device D         cpu, vulkan[:N], cuda[:N] (default: WICK_DEVICE, else cpu)\n"
             "  -t, --threads N    CPU threads (default: OMP_NUM_THREADS, else every core)\n"
             "  --log-passes       print each pass of the scheduler on stderr: its answer\n"
             "                     tokens, prompts and their tokens, and its milliseconds\n"
             "\n"
             "The server prints 'wick serve: listening on http://ADDR:PORT' on stdout once\n"
             "ready; SIGINT or SIGTERM stops it.\n";
    case Command::Perplexity:
      return "usage: wick perplexity -m PATH -f PATH [-c N] [--chunks N] [--device D] [-t N]\n"
             "                       [--kv-type T]\n"
             "\n"
             "The perplexity of a llama-family model (a GGUF file or a Hugging Face folder) over\n"
             "a text, computed as llama.cpp's llama-perplexity computes it, so the two compare\n"
             "on the same file: the text's tokens in chunks of N, each run from position 0 in\n"
             "one pass (its first token BOS when the model adds one), the second half of each\n"
             "chunk scored. Prints the running estimate after each chunk and 'Final estimate:\n"
             "PPL = X +/- E' on stdout, timings on stderr.\n"
             "\n"
             "options:\n"
             "  -m, --model PATH   GGUF file or Hugging Face folder\n"
             "  -f, --file PATH    the text\n"
             "  -c, --ctx N        tokens a chunk, at least 4 (default 512, or the model's\n"
             "                     context length where shorter)\n"
             "  --chunks N         score the first N chunks only (default: every whole chunk)\n"
             "  --device D         cpu, vulkan[:N], cuda[:N] (default: WICK_DEVICE, else cpu)\n"
             "  -t, --threads N    CPU threads (default: OMP_NUM_THREADS, else every core)\n"
             "  --kv-type T        the KV cache's element type: f16 (default), bf16 or f32\n";
    default:
      return "usage: wick COMMAND [OPTIONS]\n"
             "\n"
             "commands:\n"
             "  info         version, devices and environment knobs\n"
             "  bench        the benchmarks (wick bench --help lists them)\n"
             "  generate     generate text with a llama-family model (GGUF or Hugging Face)\n"
             "  chat         a multi-turn conversation with a model, turns read from stdin\n"
             "  serve        an OpenAI-compatible HTTP server for a model\n"
             "  perplexity   a model's perplexity over a text file (as llama.cpp measures it)\n"
             "  help [CMD]   this text, or the help of one command\n"
             "\n"
             "options:\n"
             "  -h, --help     help (also after a command: wick bench --help)\n"
             "  -V, --version  the version\n"
             "\n"
             "exit status: 0 success, 1 a wick error, 2 a bad command line.\n";
  }
}

}  // namespace wick::cli
