// Command-line parsing of the `wick` CLI (kept apart from the commands so tests can link it).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "wick/device.h"
#include "wick/llama.h"

namespace wick::cli {

// A bad command line: main prints "wick: <message>" and a hint, and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Command { Help, Version, Info, Bench, Generate, Chat, Serve, Perplexity };

// Every benchmark, in the order `wick bench` runs them.
inline const std::vector<std::string> kBenchNames = {
    "batch_mm", "storage",     "queue",    "first", "matmul",
    "qmatmul",  "elementwise", "overhead", "gen",   "tokenizer"};
// Benchmarks that run only when named (no NAME runs kBenchNames).
inline const std::vector<std::string> kNamedOnlyBenchNames = {"gemm"};

struct Args {
  Command command = Command::Help;
  bool help = false;                 // --help after a command: print that command's help
  std::vector<std::string> benches;  // names to run, in order, no repeats (all when none given)
  std::string device;                // --device D; empty -> the default device
  bool full = false;                 // --full: also the slow sizes (matmul 4096 on the CPU)
  bool quick = false;                // --quick: small sizes and few runs (tests, sanitizers)
  bool worker = false;               // --worker: internal, this process was re-executed by a bench

  int64_t threads = 0;  // -t/--threads N: CPU threads (0: OMP_NUM_THREADS, else all)
  bool json = false;    // bench gen: --json prints the figures as one JSON object

  // generate (and bench gen: --model, -n, --prompt-tokens); llama.cpp's short flags beside them
  std::string model;  // -m/--model PATH; bench gen: empty -> the fetched SmolLM2, else synthetic
  std::string save_model;          // bench gen: --save-model PATH keeps the synthetic model there
  int64_t batch = 0;               // bench gen: --batch B, also B sequences decoding together
  std::string save_text;           // bench tokenizer: --save-text PATH writes the text it encodes
  std::string prompt;              // -p/--prompt TEXT
  std::string prompt_file;         // -f/--file PATH: the prompt is that file's text
  int64_t n_predict = 0;           // -n N: tokens to generate (default 128; bench --quick: 8)
  int64_t prompt_tokens = 0;       // bench gen: --prompt-tokens N, timed prompt (128; --quick: 16)
  double temperature = 0.0;        // --temp T (0: greedy)
  int64_t top_k = 0;               // --top-k K (0: off)
  double top_p = 1.0;              // --top-p P (1: off)
  double min_p = 0.0;              // --min-p P (0: off)
  double repeat_penalty = 1.0;     // --repeat-penalty X (1: off)
  int64_t repeat_last_n = 64;      // --repeat-last-n N: tokens the penalty looks back on (0: off)
  double frequency_penalty = 0.0;  // --frequency-penalty X, in [-2, 2] (0: off)
  double presence_penalty = 0.0;   // --presence-penalty X, in [-2, 2] (0: off)
  std::vector<std::pair<uint32_t, double>> logit_bias;  // --logit-bias ID+X / ID-X (repeatable)
  std::vector<std::string> stops;  // --stop STR (repeatable): end when the text contains one
  uint64_t seed = 299792458;       // -s/--seed S
  bool ignore_eos = false;         // --ignore-eos: plain text does not stop at eos
  bool chat = false;               // --chat: wrap the prompt in the model's chat template
  std::string system;              // wick chat: --system TEXT, the conversation's system turn
  int64_t max_seq = 0;             // -c/--ctx N: KV cache length (0: the model's, capped)
  KvCacheType kv_type = KvCacheType::F16;  // --kv-type T: the KV cache's element type
  int64_t chunks = 0;  // perplexity: --chunks N, the chunks of the text scored (0: all)

  // serve (with -m, --device, -t, -c: each slot's context, -n: the default max_tokens)
  std::string host = "127.0.0.1";  // --host ADDR
  int64_t port = 8080;             // --port N (0: any free port, printed)
  int64_t parallel = 4;            // -np/--parallel N: requests decoded together
  int64_t max_queue = 64;          // --max-queue N: requests waiting for a slot, then 503
  bool log_passes = false;         // --log-passes: each scheduler pass on stderr
  int64_t max_body = 1 << 20;      // --max-body BYTES: larger request bodies get 413
};

// Parses argv[1..argc); throws UsageError. Numbers are plain decimal, checked for range.
Args parse_args(int argc, const char* const* argv);

// The device of --device `spec` (empty: WICK_DEVICE, else the CPU); a spec that does not parse,
// given or from WICK_DEVICE, is a UsageError.
Device device_from_flag(const std::string& spec);

// Help text of the program (Command::Help) or of one command.
std::string help_text(Command command);

}  // namespace wick::cli
