#include "args.h"

#include <algorithm>
#include <string_view>

namespace wick::cli {

namespace {

const char* command_name(Command c) {
  switch (c) {
    case Command::Info:
      return "info";
    case Command::Bench:
      return "bench";
    default:
      return "";
  }
}

Command parse_command(std::string_view word) {
  if (word == "info") return Command::Info;
  if (word == "bench") return Command::Bench;
  if (word == "help") return Command::Help;
  throw UsageError("unknown command '" + std::string(word) + "' (commands: info, bench, help)");
}

bool is_bench_name(std::string_view name) {
  return std::find(kBenchNames.begin(), kBenchNames.end(), name) != kBenchNames.end();
}

std::string all_bench_names() {
  std::string s;
  for (const std::string& n : kBenchNames) s += (s.empty() ? "" : ", ") + n;
  return s;
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
  for (int i = 2; i < argc; i++) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      a.help = true;
    } else if (a.command == Command::Bench && (arg == "--device" || arg.starts_with("--device="))) {
      if (arg == "--device") {
        if (i + 1 >= argc) throw UsageError("--device needs a value (cpu, vulkan[:N], cuda[:N])");
        a.device = argv[++i];
      } else {
        a.device = std::string(arg.substr(9));
      }
      if (a.device.empty()) throw UsageError("--device needs a value (cpu, vulkan[:N], cuda[:N])");
    } else if (a.command == Command::Bench && arg == "--full") {
      a.full = true;
    } else if (a.command == Command::Bench && arg == "--quick") {
      a.quick = true;
    } else if (a.command == Command::Bench && arg == "--worker") {
      a.worker = true;
    } else if (arg.starts_with("-")) {
      throw UsageError("unknown option '" + std::string(arg) + "' for 'wick " + cmd + "'");
    } else if (a.command == Command::Bench) {
      if (!is_bench_name(arg))
        throw UsageError("unknown benchmark '" + std::string(arg) +
                         "' (benchmarks: " + all_bench_names() + ")");
      if (std::find(a.benches.begin(), a.benches.end(), arg) == a.benches.end())
        a.benches.emplace_back(arg);
    } else {
      throw UsageError("'wick " + cmd + "' takes no argument '" + std::string(arg) + "'");
    }
  }
  if (a.command == Command::Bench && !a.help) {
    if (a.worker && (a.benches.size() != 1 || (a.benches[0] != "queue" && a.benches[0] != "first")))
      throw UsageError("--worker runs exactly one of: queue, first");
    if (a.benches.empty()) a.benches = kBenchNames;
  }
  return a;
}

std::string help_text(Command command) {
  switch (command) {
    case Command::Info:
      return "usage: wick info\n"
             "\n"
             "Prints the wick version, the machine, every available device (name, kind, id,\n"
             "time taken to open it) and every WICK_* environment knob with its value.\n";
    case Command::Bench:
      return "usage: wick bench [NAME ...] [--device D] [--full] [--quick]\n"
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
             "  qmatmul      µs per quantized matmul on SmolLM2-135M shapes (q4_1, q8_0), m = 1 "
             "and\n"
             "               64, against an f32 matmul of the same shape on the same device\n"
             "  elementwise  GB/s of add, mul, exp, to_dtype, sum against memcpy of the same "
             "bytes\n"
             "  overhead     time per op on 1-element tensors\n"
             "\n"
             "options:\n"
             "  --device D   cpu, vulkan[:N], cuda[:N] (default: WICK_DEVICE, else cpu)\n"
             "  --full       also the slow sizes (matmul n = 4096 on the CPU)\n"
             "  --quick      small sizes and few runs (for tests and sanitizer builds)\n"
             "  --worker     internal: the re-executed child of queue / first\n"
             "\n"
             "exit status: 0 when every benchmark ran and every check passed, 1 otherwise.\n";
    default:
      return "usage: wick COMMAND [OPTIONS]\n"
             "\n"
             "commands:\n"
             "  info         version, devices and environment knobs\n"
             "  bench        the benchmarks (wick bench --help lists them)\n"
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
