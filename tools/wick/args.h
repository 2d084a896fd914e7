// Command-line parsing of the `wick` CLI (kept apart from the commands so tests can link it).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace wick::cli {

// A bad command line: main prints "wick: <message>" and a hint, and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Command { Help, Version, Info, Bench };

// Every benchmark, in the order `wick bench` runs them.
inline const std::vector<std::string> kBenchNames = {
    "batch_mm", "storage", "queue", "first", "matmul", "qmatmul", "elementwise", "overhead"};

struct Args {
  Command command = Command::Help;
  bool help = false;                 // --help after a command: print that command's help
  std::vector<std::string> benches;  // names to run, in order, no repeats (all when none given)
  std::string device;                // --device D; empty -> the default device
  bool full = false;                 // --full: also the slow sizes (matmul 4096 on the CPU)
  bool quick = false;                // --quick: small sizes and few runs (tests, sanitizers)
  bool worker = false;               // --worker: internal, this process was re-executed by a bench
};

// Parses argv[1..argc); throws UsageError.
Args parse_args(int argc, const char* const* argv);

// Help text of the program (Command::Help) or of one command.
std::string help_text(Command command);

}  // namespace wick::cli
