// The `wick` command-line tool: dispatches to info / bench / generate / chat / serve and maps
// failures to exit statuses (1: a wick error, 2: a bad command line).
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "args.h"
#include "bench.h"
#include "cpu/thread_pool.h"
#include "generate.h"
#include "info.h"
#include "serve.h"
#include "wick/wick.h"

namespace {

// -t N: the CPU pool's size. Set in the environment before the pool starts (it reads
// OMP_NUM_THREADS once), which re-executed bench workers inherit too.
void set_cpu_threads(int64_t n) {
  if (n <= 0) return;
  ::setenv("OMP_NUM_THREADS", std::to_string(n).c_str(), 1);
  wick::cpu::ThreadPool::instance().set_threads(static_cast<int>(n));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace wick::cli;
  try {
    const Args args = parse_args(argc, argv);
    set_cpu_threads(args.threads);
    if (args.help || args.command == Command::Help) {
      std::cout << help_text(args.command);
      return 0;
    }
    switch (args.command) {
      case Command::Version:
        std::cout << "wick " << wick::version() << "\n";
        return 0;
      case Command::Info:
        return run_info(std::cout);
      case Command::Bench: {
        std::string command = "wick";
        for (int i = 1; i < argc; i++) command += std::string(" ") + argv[i];
        return run_bench(args, command);
      }
      case Command::Generate:
        return run_generate(args);
      case Command::Chat:
        return run_chat(args);
      case Command::Serve:
        return run_serve(args);
      case Command::Perplexity:
        return run_perplexity(args);
      case Command::Help:
        break;
    }
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "wick: " << e.what() << "\nTry 'wick --help'.\n";
    return 2;
  } catch (const wick::Error& e) {
    std::cout.flush();
    std::cerr << "wick: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "wick: internal error: " << e.what() << "\n";
    return 1;
  }
}
