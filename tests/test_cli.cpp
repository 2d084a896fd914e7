// The `wick` CLI: argument parsing (linked in), and the built binary run as a user would.
#include <sys/wait.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "args.h"
#include "backend/registry.h"
#include "gguf_bytes.h"
#include "harness.h"
#include "progress.h"
#include "stop_strings.h"
#include "tiny_llama.h"
#include "tool_calls.h"
#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/tokenizer.h"

namespace wick::testing {
namespace {

using cli::Args;
using cli::Command;
using cli::parse_args;
using cli::UsageError;

Args parse(std::vector<const char*> words) {
  words.insert(words.begin(), "wick");
  return parse_args(static_cast<int>(words.size()), words.data());
}

void expect_usage_error(std::vector<const char*> words, const std::string& needle) {
  try {
    parse(words);
    ADD_FAILURE() << "no UsageError for " << words.size() << " words, wanted '" << needle << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CliArgs, Commands) {
  EXPECT_EQ(parse({}).command, Command::Help);
  EXPECT_EQ(parse({"--help"}).command, Command::Help);
  EXPECT_EQ(parse({"--version"}).command, Command::Version);
  EXPECT_EQ(parse({"info"}).command, Command::Info);
  const Args h = parse({"help", "bench"});
  EXPECT_EQ(h.command, Command::Bench);
  EXPECT_TRUE(h.help);
  EXPECT_TRUE(parse({"info", "--help"}).help);
}

TEST(CliArgs, BenchNamesAndOptions) {
  EXPECT_EQ(parse({"bench"}).benches, cli::kBenchNames);
  const Args a = parse({"bench", "matmul", "storage", "matmul", "--device", "vulkan:1", "--full"});
  EXPECT_EQ(a.benches, (std::vector<std::string>{"matmul", "storage"}));
  EXPECT_EQ(a.device, "vulkan:1");
  EXPECT_TRUE(a.full);
  EXPECT_FALSE(a.quick);
  const Args b = parse({"bench", "--device=cpu", "--quick", "queue", "--worker"});
  EXPECT_EQ(b.device, "cpu");
  EXPECT_TRUE(b.quick);
  EXPECT_TRUE(b.worker);
  EXPECT_EQ(b.benches, (std::vector<std::string>{"queue"}));
}

TEST(CliArgs, BadCommandLines) {
  expect_usage_error({"frobnicate"}, "unknown command 'frobnicate'");
  expect_usage_error({"--frob"}, "unknown option '--frob'");
  expect_usage_error({"bench", "--frob"}, "unknown option '--frob' for 'wick bench'");
  expect_usage_error({"bench", "nosuch"}, "unknown benchmark 'nosuch'");
  expect_usage_error({"bench", "--device"}, "--device needs a value");
  expect_usage_error({"bench", "--device="}, "--device needs a value");
  expect_usage_error({"info", "extra"}, "takes no argument 'extra'");
  expect_usage_error({"info", "--full"}, "unknown option '--full' for 'wick info'");
  expect_usage_error({"bench", "matmul", "--worker"}, "--worker");
  expect_usage_error({"help", "nosuch"}, "unknown command 'nosuch'");
}

TEST(CliArgs, Generate) {
  const Args a = parse({"generate", "--model", "m.gguf", "--prompt=Hi there", "-n", "7", "--temp",
                        "0.8", "--top-k=40", "--top-p", "0.9", "--seed", "5", "--chat", "--device",
                        "vulkan", "--ctx", "256"});
  EXPECT_EQ(a.command, Command::Generate);
  EXPECT_EQ(a.model, "m.gguf");
  EXPECT_EQ(a.prompt, "Hi there");
  EXPECT_EQ(a.n_predict, 7);
  EXPECT_DOUBLE_EQ(a.temperature, 0.8);
  EXPECT_EQ(a.top_k, 40);
  EXPECT_DOUBLE_EQ(a.top_p, 0.9);
  EXPECT_EQ(a.seed, 5u);
  EXPECT_TRUE(a.chat);
  EXPECT_EQ(a.device, "vulkan");
  EXPECT_EQ(a.max_seq, 256);
  EXPECT_EQ(a.kv_type, KvCacheType::F16);  // llama.cpp's default too
  EXPECT_EQ(parse({"generate", "-m", "m", "-p", "x", "--kv-type", "f32"}).kv_type,
            KvCacheType::F32);
  EXPECT_EQ(parse({"chat", "-m", "m", "--kv-type=bf16"}).kv_type, KvCacheType::BF16);
  EXPECT_EQ(parse({"bench", "gen", "--kv-type", "f32"}).kv_type, KvCacheType::F32);
  expect_usage_error({"generate", "-m", "m", "-p", "x", "--kv-type", "f8"},
                     "--kv-type: unknown type 'f8'");
  expect_usage_error({"bench", "storage", "--kv-type", "f32"}, "--kv-type is an option of the gen");
  const Args b = parse({"bench", "gen", "--model", "x.gguf", "--prompt-tokens", "64", "-n", "32"});
  EXPECT_EQ(b.benches, std::vector<std::string>{"gen"});
  EXPECT_EQ(b.model, "x.gguf");
  EXPECT_EQ(b.prompt_tokens, 64);
  EXPECT_EQ(b.n_predict, 32);
  expect_usage_error({"generate", "--prompt", "x"}, "needs --model");
  expect_usage_error({"generate", "--model", "m"}, "needs --prompt");
  expect_usage_error({"generate", "--model", "m", "--prompt", "x", "-n", "0"},
                     "-n needs a whole number in [1, 2147483647]");
  expect_usage_error({"generate", "--model", "m", "--prompt", "x", "-n", "3x"},
                     "-n needs a whole number");
  expect_usage_error({"generate", "--model", "m", "--prompt", "x", "--temp", "-1"},
                     "--temp needs a decimal number >= 0");
  expect_usage_error({"generate", "--model", "m", "--prompt", "x", "--top-p", "1.5"}, "--top-p");
  expect_usage_error({"generate", "--model"}, "--model needs a path");
  expect_usage_error({"generate", "--full"}, "unknown option '--full' for 'wick generate'");
  expect_usage_error({"bench", "--chat"}, "unknown option '--chat' for 'wick bench'");
}

// llama.cpp's short flags name the same options as the long ones.
TEST(CliArgs, LlamaCppShortFlagsAndSamplerOptions) {
  const Args a = parse({"generate",    "-m",
                        "m.gguf",      "-p",
                        "Hi",          "-n",
                        "9",           "-t",
                        "3",           "-c",
                        "128",         "-s",
                        "11",          "--min-p",
                        "0.05",        "--repeat-penalty",
                        "1.1",         "--repeat-last-n=32",
                        "--stop",      "\n\n",
                        "--stop=User:"});
  EXPECT_EQ(a.model, "m.gguf");
  EXPECT_EQ(a.prompt, "Hi");
  EXPECT_EQ(a.n_predict, 9);
  EXPECT_EQ(a.threads, 3);
  EXPECT_EQ(a.max_seq, 128);
  EXPECT_EQ(a.seed, 11u);
  EXPECT_DOUBLE_EQ(a.min_p, 0.05);
  EXPECT_DOUBLE_EQ(a.repeat_penalty, 1.1);
  EXPECT_EQ(a.repeat_last_n, 32);
  EXPECT_EQ(a.stops, (std::vector<std::string>{"\n\n", "User:"}));
  const Args pen = parse({"generate", "-m", "m", "-p", "x", "--frequency-penalty", "-0.5",
                          "--presence-penalty=1.25", "--logit-bias", "15043+1.5", "--logit-bias",
                          "7-2", "--logit-bias=9-inf"});
  EXPECT_DOUBLE_EQ(pen.frequency_penalty, -0.5);
  EXPECT_DOUBLE_EQ(pen.presence_penalty, 1.25);
  ASSERT_EQ(pen.logit_bias.size(), 3u);
  EXPECT_EQ(pen.logit_bias[0], (std::pair<uint32_t, double>{15043, 1.5}));
  EXPECT_EQ(pen.logit_bias[1], (std::pair<uint32_t, double>{7, -2.0}));
  EXPECT_EQ(pen.logit_bias[2].first, 9u);
  EXPECT_EQ(pen.logit_bias[2].second, -std::numeric_limits<double>::infinity());
  for (const char* bad : {"15043", "+1", "15043+inf", "15043--1", "x+1", "15043+101", "1+"})
    expect_usage_error({"generate", "-m", "m", "-p", "x", "--logit-bias", bad}, "--logit-bias");
  expect_usage_error({"generate", "-m", "m", "-p", "x", "--frequency-penalty", "2.5"},
                     "--frequency-penalty needs a decimal number in [-2, 2]");
  expect_usage_error({"generate", "-m", "m", "-p", "x", "--presence-penalty", "nan"},
                     "--presence-penalty");
  const Args f = parse({"generate", "-m", "m.gguf", "-f", "prompt.txt"});
  EXPECT_EQ(f.prompt_file, "prompt.txt");
  EXPECT_TRUE(f.prompt.empty());
  const Args defaults = parse({"generate", "-m", "m", "-p", "x"});
  EXPECT_DOUBLE_EQ(defaults.repeat_penalty, 1.0);
  EXPECT_EQ(defaults.repeat_last_n, 64);
  EXPECT_DOUBLE_EQ(defaults.min_p, 0.0);
  EXPECT_EQ(defaults.threads, 0);
  const Args b = parse({"bench", "gen", "-m", "x.gguf", "--json", "-t", "2"});
  EXPECT_EQ(b.model, "x.gguf");
  EXPECT_TRUE(b.json);
  EXPECT_EQ(b.threads, 2);
  expect_usage_error({"generate", "-m", "m", "-p", "x", "-f", "y"}, "--prompt and --file");
  expect_usage_error({"generate", "-m", "m"}, "needs --prompt TEXT (-p) or --file PATH (-f)");
  expect_usage_error({"generate", "-m", "m", "-p", "x", "--stop", ""}, "--stop needs a text");
  expect_usage_error({"bench", "--json"}, "--json prints the gen benchmark alone");
  expect_usage_error({"bench", "gen", "matmul", "--json"}, "--json prints the gen benchmark");
  expect_usage_error({"bench", "matmul", "--json"}, "--json is an option of the gen benchmark");
  expect_usage_error({"info", "-t", "2"}, "unknown option '-t' for 'wick info'");
}

// Every numeric flag of every command: plain decimal, the whole word, in range (issue 9: "-n 0x10"
// was accepted as 16, "--ctx 1e9" as a billion).
TEST(CliArgs, NumbersArePlainDecimalAndInRange) {
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"-n", "0x10"},
      {"-n", "1e3"},
      {"-n", " 5"},
      {"-n", "+5"},
      {"-n", "5 "},
      {"-n", "-5"},
      {"-n", "0"},
      {"-n", "2147483648"},
      {"-n", "1.0"},
      {"--n-predict", "inf"},
      {"--ctx", "1e9"},
      {"--ctx", "0"},
      {"--ctx", "nan"},
      {"--top-k", "-1"},
      {"--top-k", "0x1"},
      {"--seed", "-1"},
      {"--seed", "18446744073709551616"},
      {"--temp", "nan"},
      {"--temp", "inf"},
      {"--temp", "0x1p-1"},
      {"--temp", "1e-3"},
      {"--temp", "-0.5"},
      {"--temp", "0.5x"},
      {"--top-p", "0"},
      {"--top-p", "nan"},
      {"--top-p", "1.5"},
      {"--top-p", "0x1"},
      {"--min-p", "1.5"},
      {"--min-p", "-0.1"},
      {"--repeat-penalty", "0"},
      {"--repeat-penalty", "inf"},
      {"--repeat-last-n", "-1"},
      {"-t", "0"},
      {"--threads", "2x"},
      {"-c", "0"},
      {"-s", "-2"},
  };
  for (const auto& [flag, value] : bad) {
    SCOPED_TRACE(std::string(flag) + " " + value);
    expect_usage_error({"generate", "--model", "m", "--prompt", "x", flag, value},
                       std::string(flag) + " needs a ");
    expect_usage_error({"generate", "--model", "m", "--prompt", "x", flag, value},
                       std::string("got '") + value + "'");
  }
  for (const char* v : {"0x10", "1e2", "0", "-3"})
    expect_usage_error({"bench", "gen", "--prompt-tokens", v}, "--prompt-tokens needs a whole");
  expect_usage_error({"bench", "gen", "-n", "1"}, "-n needs a whole number in [2, ");  // decode

  const Args a = parse({"generate", "--model", "m", "--prompt", "x", "-n", "0010", "--seed",
                        "18446744073709551615", "--temp", "0.25", "--top-p", "1", "--ctx",
                        "2147483647", "--top-k", "0"});
  EXPECT_EQ(a.n_predict, 10);
  EXPECT_EQ(a.seed, UINT64_MAX);
  EXPECT_DOUBLE_EQ(a.temperature, 0.25);
  EXPECT_DOUBLE_EQ(a.top_p, 1.0);
  EXPECT_EQ(a.max_seq, INT32_MAX);
  EXPECT_EQ(parse({"generate", "--model", "m", "--prompt", "x"}).n_predict, 128);
}

// An empty value is refused like a missing one (issue 9: "--device ''" picked the default).
TEST(CliArgs, EmptyValuesAreRefused) {
  expect_usage_error({"bench", "--device", ""}, "--device needs a value");
  expect_usage_error({"generate", "--model", "m", "--prompt", "x", "--device", ""},
                     "--device needs a value");
  expect_usage_error({"generate", "--model", "", "--prompt", "x"}, "--model needs a path");
  expect_usage_error({"generate", "--model", "m", "--prompt", ""}, "--prompt needs a text");
  expect_usage_error({"generate", "--model", "m", "--prompt="}, "--prompt needs a text");
  expect_usage_error({"bench", "gen", "--save-model", ""}, "--save-model needs a path");
}

// Options no benchmark that runs would read are refused, not ignored.
TEST(CliArgs, BenchGenOptionsNeedTheGenBenchmark) {
  expect_usage_error({"bench", "matmul", "-n", "5"}, "-n is an option of the gen benchmark");
  expect_usage_error({"bench", "storage", "--model", "x.gguf"}, "--model is an option of the gen");
  expect_usage_error({"bench", "queue", "--prompt-tokens", "4"}, "--prompt-tokens is an option");
  expect_usage_error({"bench", "gen", "--ctx", "5"}, "unknown option '--ctx' for 'wick bench'");
  expect_usage_error({"bench", "matmul", "--batch", "4"}, "--batch is an option of the gen");
  expect_usage_error({"bench", "gen", "--batch", "1"}, "--batch needs a whole number in [2, 256]");
  expect_usage_error({"bench", "gen", "--batch", "257"},
                     "--batch needs a whole number in [2, 256]");
  EXPECT_EQ(parse({"bench", "gen", "--batch", "8"}).batch, 8);
  expect_usage_error({"bench", "gen", "--save-text", "t.txt"},
                     "--save-text is an option of the tokenizer benchmark");
  EXPECT_EQ(parse({"bench", "tokenizer", "--save-text", "t.txt"}).save_text, "t.txt");
  EXPECT_EQ(parse({"bench", "gen"}).batch, 0);
  EXPECT_EQ(parse({"bench", "-n", "5"}).n_predict, 5);  // every benchmark, gen among them
  // --quick shrinks the defaults only: explicit sizes win.
  const Args q = parse({"bench", "gen", "--quick"});
  EXPECT_EQ(q.prompt_tokens, 16);
  EXPECT_EQ(q.n_predict, 8);
  const Args qn = parse({"bench", "gen", "--quick", "-n", "20", "--prompt-tokens", "3"});
  EXPECT_EQ(qn.prompt_tokens, 3);
  EXPECT_EQ(qn.n_predict, 20);
  const Args full = parse({"bench", "gen"});
  EXPECT_EQ(full.prompt_tokens, 128);
  EXPECT_EQ(full.n_predict, 128);
}

TEST(CliArgs, DeviceSpecsThatDoNotParseAreUsageErrors) {
  for (const char* spec : {"frob", "vulkan:x", "cpu:", "vulkan:0x1", " cpu"}) {
    SCOPED_TRACE(spec);
    try {
      cli::device_from_flag(spec);
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--device '") + spec + "'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(cli::device_from_flag("cpu"), Device::cpu());
  // A well-formed spec for a device that is not there stays a device error (exit status 1).
  expect_error([] { cli::device_from_flag("cpu:1"); }, ErrorKind::Device, {"cpu:1"});
}

// The bar's line is ended before anything else is printed, also when the load throws (issue 9:
// a load failure was printed on the bar's line).
TEST(CliProgress, TheLineEndsWhenTheLoadFails) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = ::open_memstream(&text, &size);
  ASSERT_NE(out, nullptr);
  try {
    cli::ProgressLine bar(out, "m.gguf", 250);
    bar.update(1, 4, 100);  // quick so far: nothing drawn
    bar.update(2, 4, 300);
    throw std::runtime_error("load failed");
  } catch (const std::runtime_error&) {
    std::fputs("wick: load failed\n", out);
  }
  {
    cli::ProgressLine quick(out, "q.gguf", 250);
    quick.update(4, 4, 10);  // a quick load draws nothing and ends nothing
  }
  std::fclose(out);
  const std::string got(text, size);
  std::free(text);
  EXPECT_EQ(got, "\rloading m.gguf [###############               ]  50%\nwick: load failed\n");
}

TEST(CliProgress, NothingIsDrawnWhenNotATerminal) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = ::open_memstream(&text, &size);
  ASSERT_NE(out, nullptr);
  {
    cli::ProgressLine bar(out, "m.gguf", 0, /*enabled=*/false);
    bar.update(1, 4, 1000);
    bar.update(4, 4, 2000);
  }
  std::fclose(out);
  EXPECT_EQ(size, 0u) << text;
  std::free(text);
}

// A stop string is found across the pieces it arrives in, and neither it nor what follows is
// printed; text that only might begin one is held back until it cannot.
TEST(CliStopStrings, HoldsBackPrefixesAndCutsAtTheFirstStop) {
  cli::StopStrings s({"</s>", "\nUser:"});
  EXPECT_EQ(s.push("Hello <"), "Hello ");
  EXPECT_EQ(s.push("b"), "<b");  // "<b" cannot begin "</s>"
  EXPECT_EQ(s.push("> fine\nUs"), "> fine");
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.push("er: more</s>"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.push("late"), "");
  cli::StopStrings t({"ab", "b"});
  EXPECT_EQ(t.push("xa"), "x");
  EXPECT_EQ(t.push("b!"), "");  // "ab" begins first
  EXPECT_TRUE(t.stopped());
  cli::StopStrings u({"END"});
  EXPECT_EQ(u.push("the E"), "the ");
  EXPECT_EQ(u.finish(), "E");  // generation ended first: the held text is printed
  cli::StopStrings none({});
  EXPECT_EQ(none.push("anything"), "anything");
}

// ---- the binary -------------------------------------------------------------------------------

struct RunResult {
  int status;
  std::string output;  // stdout and stderr together
};

RunResult run_wick(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " '" WICK_CLI_PATH "' " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  RunResult r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

#define EXPECT_HAS(haystack, needle)                                                       \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "no '" << (needle) << "' in:\n" \
                                                        << (haystack)

TEST(CliBinary, UsageErrorsExit2) {
  for (const char* args : {"frobnicate", "bench --frob", "bench nosuch", "info extra"}) {
    SCOPED_TRACE(args);
    const RunResult r = run_wick(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_HAS(r.output, "wick: ");
    EXPECT_HAS(r.output, "wick --help");
  }
}

TEST(CliBinary, Help) {
  const RunResult r = run_wick("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_HAS(r.output, "info");
  EXPECT_HAS(r.output, "bench");
  const RunResult b = run_wick("bench --help");
  EXPECT_EQ(b.status, 0);
  for (const std::string& name : cli::kBenchNames) EXPECT_HAS(b.output, name);
}

TEST(CliBinary, WickErrorExits1) {
  const RunResult r = run_wick("bench storage --device vulkan:99");
  EXPECT_EQ(r.status, 1);
  EXPECT_HAS(r.output, "wick: device error");
}

TEST(CliBinary, Info) {
  const RunResult r =
      run_wick("info", "WICK_COMPUTE_PER_BUFFER=abc WICK_POOL_LIMIT=2M WICK_QMATVEC_MMA=8,1024");
  EXPECT_EQ(r.status, 0);
  EXPECT_HAS(r.output, version());
  EXPECT_HAS(r.output, "| cpu ");
  EXPECT_HAS(r.output, " ms ");  // the time the device took to open
  for (const auto& [name, value] : describe_knobs()) EXPECT_HAS(r.output, name);
  EXPECT_HAS(r.output, "\"abc\"");
  EXPECT_HAS(r.output, std::to_string(2 << 20));  // WICK_POOL_LIMIT as wick read it
  // Values a knob does not take are said once on stderr; a valid one is not.
  EXPECT_HAS(r.output, "wick: ignoring WICK_COMPUTE_PER_BUFFER=abc (it takes");
  EXPECT_HAS(r.output, "wick: ignoring WICK_QMATVEC_MMA=8,1024 (it takes");
  EXPECT_EQ(r.output.find("ignoring WICK_POOL_LIMIT"), std::string::npos);
  EXPECT_EQ(r.output.find("ignoring WICK_COMPUTE_PER_BUFFER",
                          r.output.find("ignoring WICK_COMPUTE_PER_BUFFER") + 1),
            std::string::npos);
}

// A machine without a GPU of some kind says why that backend is absent; one with it lists its
// devices. In CI (no NVIDIA driver) this checks the absent reason of the compiled CUDA backend.
TEST(CliBinary, InfoSaysWhyABackendIsAbsent) {
  const RunResult r = run_wick("info");
  EXPECT_EQ(r.status, 0);
  for (DeviceKind kind : {DeviceKind::Vulkan, DeviceKind::Cuda}) {
    const std::string name = device_kind_name(kind);
    SCOPED_TRACE(name);
    if (backend::device_count(kind) > 0) {
      EXPECT_HAS(r.output, "| " + name + ":0 (");
      EXPECT_EQ(r.output.find(name + ": absent"), std::string::npos) << r.output;
    } else {
      const std::string why = backend::absent_reason(kind);
      EXPECT_FALSE(why.empty());
      EXPECT_HAS(r.output, name + ": absent: " + why);
    }
  }
#ifdef WICK_WITH_CUDA
  if (backend::device_count(DeviceKind::Cuda) == 0) {
    // And opening it is a device error with the same reason.
    const RunResult open = run_wick("bench storage --device cuda");
    EXPECT_EQ(open.status, 1);
    EXPECT_HAS(open.output, "device error");
  }
#endif
}

// WICK_VK_PROFILE: a table of the kernels that ran, their calls adding up to the dispatches the
// header counts and their shares to 100%; nothing without the knob.
TEST(CliBinary, VulkanProfileCountsEveryDispatch) {
  if (backend::device_count(DeviceKind::Vulkan) == 0) GTEST_SKIP() << "no Vulkan device";
  const std::string args = "bench elementwise --quick --device vulkan";
  const RunResult plain = run_wick(args);
  EXPECT_EQ(plain.status, 0);
  EXPECT_EQ(plain.output.find("WICK_VK_PROFILE"), std::string::npos);
  const RunResult r = run_wick(args, "WICK_VK_PROFILE=1");
  ASSERT_EQ(r.status, 0) << r.output;
  const size_t at = r.output.find("wick: WICK_VK_PROFILE, ");
  ASSERT_NE(at, std::string::npos) << r.output;
  std::istringstream lines(r.output.substr(at));
  std::string header, columns, line;
  std::getline(lines, header);
  std::getline(lines, columns);
  const size_t d = header.find(" dispatches");
  ASSERT_NE(d, std::string::npos) << header;
  const size_t start = header.rfind(' ', d - 1) + 1;
  const long dispatches = std::stol(header.substr(start, d - start));
  EXPECT_GT(dispatches, 0);
  long calls = 0;
  double share = 0;
  bool binary = false;
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    std::istringstream row(line);
    std::string pct, kernel;
    double total_ms = 0, mean_us = 0;
    long n = 0;
    row >> pct >> total_ms >> n >> mean_us >> kernel;
    ASSERT_FALSE(row.fail()) << line;
    share += std::stod(pct);
    calls += n;
    EXPECT_GE(total_ms, 0) << line;
    binary = binary || kernel == "binary.comp";
  }
  EXPECT_EQ(calls, dispatches);
  EXPECT_NEAR(share, 100.0, 0.1 * 20);  // each share rounded to 0.1%
  EXPECT_TRUE(binary) << r.output;      // the adds of the benchmark, named by their source
}

TEST(CliBinary, BenchStorage) {
  const RunResult r = run_wick("bench storage");
  EXPECT_EQ(r.status, 0);
  EXPECT_HAS(r.output, "orig=[1.0, 1.0, 0.0, 0.0] copy=[0.0, 0.0, 0.0, 0.0]");
  EXPECT_HAS(r.output, "storage: OK (the copy stayed independent)");
  EXPECT_HAS(r.output, "command: wick bench storage");
}

TEST(CliBinary, BenchBatchMm) {
  const RunResult r = run_wick("bench batch_mm");
  EXPECT_EQ(r.status, 0);
  EXPECT_HAS(r.output, "xn dims [2, 2, 3, 5] stride [60, 15, 5, 1]");
  EXPECT_HAS(r.output, "batch (1,1) max |diff|");
  EXPECT_HAS(r.output, "batch_mm: OK");
}

TEST(CliBinary, BenchQueueReexecutesPerKnobSetting) {
  const RunResult r = run_wick("bench queue --quick");
  EXPECT_EQ(r.status, 0);
  // Each child read its own setting: the re-execution carried the environment.
  EXPECT_HAS(r.output, "WICK_COMPUTE_PER_BUFFER=unset (wick read: default)");
  EXPECT_HAS(r.output, "WICK_COMPUTE_PER_BUFFER=\"0\" (wick read: 0)");
  EXPECT_HAS(r.output, "WICK_COMPUTE_PER_BUFFER=\"10\" (wick read: 10)");
  EXPECT_HAS(r.output, "WICK_COMPUTE_PER_BUFFER=\"abc\" (wick read: default)");
  EXPECT_HAS(r.output, "x[0]=200");
  EXPECT_EQ(r.output.find("WRONG"), std::string::npos) << r.output;
}

TEST(CliBinary, BenchFirstRunsTwoProcesses) {
  const RunResult r = run_wick("bench first --quick");
  EXPECT_EQ(r.status, 0);
  EXPECT_HAS(r.output, "second process: first");
  for (const char* op :
       {"| new device", "| add f32", "| matmul 64", "| matmul 60", "| to_dtype f16",
        "| second device (the same device)", "| second device: matmul 64"})
    EXPECT_HAS(r.output, op);
  EXPECT_EQ(r.output.find("unsupported"), std::string::npos) << r.output;  // the CPU has every op
}

TEST(CliBinary, QuickSpeedBenches) {
  const RunResult r = run_wick("bench matmul qmatmul elementwise overhead --quick");
  EXPECT_EQ(r.status, 0);
  for (const char* row : {"| f32   | 32", "| bf16  | 64", "| 1536 x 576 ", "| add  ",
                          "| matmul 1x1", "| narrow (a view)"})
    EXPECT_HAS(r.output, row);
  EXPECT_EQ(r.output.find("WRONG"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("unsupported"), std::string::npos) << r.output;
}

TEST(CliBinary, GenerateOnATinyModel) {
  Rng rng;
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);
  const std::string model = "--model '" + dir.file("tiny.gguf") + "'";
  const RunResult r = run_wick("generate " + model + " --prompt 'abc' -n 5");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("abc", 0), 0u) << r.output;  // the prompt, then the continuation
  for (const char* line : {"load:", "prompt:", "generation:", "tokens/s"})
    EXPECT_HAS(r.output, line);
  // The same seed samples the same text; --chat wraps the prompt in the template.
  const std::string sampled = "generate " + model + " --prompt 'abc' -n 8 --temp 1 --seed 3";
  const RunResult s1 = run_wick(sampled + " --chat"), s2 = run_wick(sampled + " --chat");
  EXPECT_EQ(s1.status, 0) << s1.output;
  EXPECT_EQ(s1.output.substr(0, s1.output.find("load:")),
            s2.output.substr(0, s2.output.find("load:")));
  const RunResult missing = run_wick("generate --model /nonexistent.gguf --prompt x");
  EXPECT_EQ(missing.status, 1);
  EXPECT_HAS(missing.output, "/nonexistent.gguf");
}

// The chat formats' tool calls: Hermes blocks (several, text around them, an unclosed last one),
// Llama 3.x's whole-answer object, Mistral's array; anything that does not parse stays text.
TEST(CliToolCalls, ParsesTheCommonFormats) {
  using cli::parse_tool_calls;
  const auto calls = [](const cli::ParsedAnswer& a) {
    std::vector<std::string> out;
    for (const cli::ToolCall& c : a.calls) out.push_back(c.name + " " + c.arguments);
    return out;
  };
  cli::ParsedAnswer a = parse_tool_calls(
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>{\"name\": \"time\", "
      "\"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}");
  EXPECT_EQ(a.content, "Let me look.");
  EXPECT_EQ(calls(a), (std::vector<std::string>{R"(get_weather {"city":"Paris","unit":"celsius"})",
                                                R"(time {"tz":"CET"})"}));
  a = parse_tool_calls("<|python_tag|>{\"name\": \"f\", \"parameters\": {\"x\": 1}}");
  EXPECT_EQ(a.content, "");
  EXPECT_EQ(calls(a), (std::vector<std::string>{R"(f {"x":1})"}));
  a = parse_tool_calls("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\"}]");
  EXPECT_EQ(calls(a), (std::vector<std::string>{"f {}", "g {}"}));
  a = parse_tool_calls(" [{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}] ");
  EXPECT_EQ(calls(a), (std::vector<std::string>{R"(f {"a":[1,2]})"}));
  // Not calls: plain text, JSON of another shape, a broken block (kept as text).
  for (const char* text : {"Paris is sunny.", "{\"answer\": 42}", "[1, 2]", "{\"name\": 5}",
                           "{\"name\": \"f\", \"arguments\": 3}"}) {
    a = parse_tool_calls(text);
    EXPECT_TRUE(a.calls.empty()) << text;
    EXPECT_EQ(a.content, text);
  }
  a = parse_tool_calls("x <tool_call>{broken</tool_call> y");
  EXPECT_TRUE(a.calls.empty());
  EXPECT_EQ(a.content, "x <tool_call>{broken</tool_call> y");
}

// wick perplexity is llama.cpp's definition: chunks of --ctx tokens, each run from position 0,
// the second half of each scored; the reference recomputes it from the model's logits in double.
TEST(CliBinary, PerplexityScoresTheSecondHalfOfEachChunk) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);
  std::string text;
  for (int i = 0; i < 400; i++)
    text += i % 5 == 4 ? ' ' : static_cast<char>('a' + rng.integer(0, 7));
  std::ofstream(dir.file("text.txt")) << text;
  const int64_t ctx = 16;
  LlamaModel model = LlamaModel::load_gguf(dir.file("tiny.gguf"));
  const Tokenizer tok = load_gguf_tokenizer(model.gguf());
  ASSERT_FALSE(gguf_adds_bos(model.gguf()));
  std::vector<uint32_t> ids;
  for (const int32_t id : tok.encode(text)) ids.push_back(static_cast<uint32_t>(id));
  const auto available = static_cast<int64_t>(ids.size()) / ctx;
  ASSERT_GE(available, 3);
  const auto reference = [&](int64_t chunks) {
    std::vector<double> running;
    double nll = 0;
    int64_t count = 0;
    const int64_t vocab = model.config().vocab_size;
    for (int64_t c = 0; c < chunks; c++) {
      model.reset();
      const std::vector<uint32_t> chunk(ids.begin() + c * ctx, ids.begin() + (c + 1) * ctx);
      const std::vector<float> l = model.forward_all(chunk).to_vec<float>();
      for (int64_t j = ctx / 2; j < ctx - 1; j++) {
        double z = 0;
        for (int64_t v = 0; v < vocab; v++) z += std::exp(static_cast<double>(l[j * vocab + v]));
        nll -= l[j * vocab + ids[static_cast<size_t>(c * ctx + j + 1)]] - std::log(z);
        count++;
      }
      running.push_back(std::exp(nll / static_cast<double>(count)));
    }
    return running;
  };
  const auto parse = [](const std::string& out) {
    std::vector<double> running;
    for (size_t at = out.find('['); at != std::string::npos; at = out.find('[', at + 1))
      running.push_back(std::stod(out.substr(out.find(']', at) + 1)));
    const size_t fin = out.find("Final estimate: PPL = ");
    return std::make_pair(running,
                          fin == std::string::npos ? -1.0 : std::stod(out.substr(fin + 22)));
  };
  const std::string cmd = "perplexity -m '" + dir.file("tiny.gguf") + "' -f '" +
                          dir.file("text.txt") + "' -c " + std::to_string(ctx);
  for (const int64_t chunks : {int64_t{0}, int64_t{2}}) {
    const RunResult r =
        run_wick(cmd + (chunks ? " --chunks " + std::to_string(chunks) : std::string()));
    ASSERT_EQ(r.status, 0) << r.output;
    const std::vector<double> want = reference(chunks ? chunks : available);
    const auto [running, final_ppl] = parse(r.output);
    ASSERT_EQ(running.size(), want.size()) << r.output;
    for (size_t i = 0; i < want.size(); i++) EXPECT_NEAR(running[i], want[i], 1e-3 * want[i]) << i;
    EXPECT_NEAR(final_ppl, want.back(), 1e-3 * want.back()) << r.output;
  }
  std::ofstream(dir.file("short.txt")) << "ab cd";
  const RunResult short_text =
      run_wick("perplexity -m '" + dir.file("tiny.gguf") + "' -f '" + dir.file("short.txt") + "'");
  EXPECT_EQ(short_text.status, 2) << short_text.output;
  EXPECT_HAS(short_text.output, "less than one chunk of --ctx 64");  // the model's context
  EXPECT_EQ(run_wick(cmd + " -c 4096").status, 2);                   // past the model's context
  EXPECT_EQ(run_wick("perplexity -m x.gguf").status, 2);
  EXPECT_HAS(run_wick("perplexity -m x.gguf").output, "needs --file");
  EXPECT_HAS(run_wick(cmd + " -n 5").output, "unknown option '-n'");
}

// Bad flag values exit 2 with a message naming the flag; never a silent default (issue 9).
TEST(CliBinary, BadFlagValuesExit2NamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"generate --model m.gguf --prompt x --device ''", "--device needs a value"},
      {"generate --model m.gguf --prompt x --device frob", "--device 'frob'"},
      {"generate --model m.gguf --prompt x -n 0x10", "-n needs a whole number"},
      {"generate --model m.gguf --prompt x --ctx 1e9", "--ctx needs a whole number"},
      {"generate --model m.gguf --prompt x --temp nan", "--temp needs a decimal number"},
      {"generate --model m.gguf --prompt x --seed 0x5", "--seed needs a whole number"},
      {"bench gen --device ''", "--device needs a value"},
      {"bench storage --device vulkan:x", "--device 'vulkan:x'"},
      {"bench gen --quick --prompt-tokens 1e2", "--prompt-tokens needs a whole number"},
      {"bench matmul -n 5", "-n is an option of the gen benchmark"},
      {"bench gen --quick --prompt-tokens 8190",
       "--prompt-tokens 8190 + -n 8 is more than the 8192"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const RunResult r = run_wick(args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_HAS(r.output, "wick: " + needle);
  }
  const RunResult env = run_wick("bench storage", "WICK_DEVICE=frob");
  EXPECT_EQ(env.status, 2) << env.output;
  EXPECT_HAS(env.output, "wick: WICK_DEVICE 'frob' is not a device spec");
}

// --ctx is checked against the model's trained context and the machine's memory before the KV
// cache is allocated; a prompt longer than the context is refused; generation that fills the
// context says so (issue 9).
TEST(CliBinary, GenerateChecksTheContext) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);  // context 64
  const std::string model = "generate --model '" + dir.file("tiny.gguf") + "'";

  const RunResult big = run_wick(model + " --prompt abc --ctx 1000000000");
  EXPECT_EQ(big.status, 2) << big.output;
  EXPECT_HAS(big.output, "wick: --ctx 1000000000: ");
  EXPECT_HAS(big.output, "context length of 64");

  // A model trained on 2^31 - 1 tokens: the KV cache of that context cannot be held.
  TinyLlamaConfig cfg;
  cfg.kv_heads = cfg.heads;
  cfg.context = INT32_MAX;
  write_tiny_llama(dir.file("long.gguf"), rng, cfg);
  const RunResult huge =
      run_wick("generate --model '" + dir.file("long.gguf") + "' --prompt abc --ctx 2147483647");
  EXPECT_EQ(huge.status, 2) << huge.output;
  EXPECT_HAS(huge.output, "wick: --ctx 2147483647: ");
  EXPECT_HAS(huge.output, std::to_string(2ull * 2 * 4 * 8 * 2 * INT32_MAX) + " bytes");  // f16
  const RunResult huge32 = run_wick("generate --model '" + dir.file("long.gguf") +
                                    "' --prompt abc --ctx 2147483647 --kv-type f32");
  EXPECT_EQ(huge32.status, 2) << huge32.output;
  EXPECT_HAS(huge32.output, std::to_string(2ull * 2 * 4 * 8 * 4 * INT32_MAX) + " bytes");
  // q8_0 is named (llama.cpp's) but not implemented: a wick error, exit 1.
  const RunResult q8 = run_wick(model + " --prompt abc --kv-type q8_0");
  EXPECT_EQ(q8.status, 1) << q8.output;
  EXPECT_HAS(q8.output, "q8_0 KV cache is not implemented");
  EXPECT_EQ(huge.output.find("internal error"), std::string::npos) << huge.output;

  const RunResult long_prompt =
      run_wick(model + " --ctx 4 --prompt 'abcdefghijklmnopqrstuvwxyz abcdefghijklmnopqrstuvwxyz'");
  EXPECT_EQ(long_prompt.status, 2) << long_prompt.output;
  EXPECT_HAS(long_prompt.output, "more than the context of 4 (--ctx 4;");

  // --ignore-eos: a random model may pick eos before the context fills.
  const RunResult full = run_wick(model + " --ctx 8 --prompt abc -n 50 --ignore-eos");
  EXPECT_EQ(full.status, 0) << full.output;
  EXPECT_HAS(full.output, "wick: the context is full (8 tokens)");
  const RunResult room = run_wick(model + " --ctx 64 --prompt abc -n 5");
  EXPECT_EQ(room.status, 0) << room.output;
  EXPECT_EQ(room.output.find("context is full"), std::string::npos) << room.output;

  // bench gen's context is its prompt plus its tokens.
  const RunResult bench =
      run_wick("bench gen --model '" + dir.file("tiny.gguf") + "' --prompt-tokens 60 -n 10");
  EXPECT_EQ(bench.status, 2) << bench.output;
  EXPECT_HAS(bench.output, "wick: --prompt-tokens 60 + -n 10: ");
}

TEST(CliBinary, BenchGenQuick) {
  const RunResult r = run_wick("bench gen --quick");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* cell : {"model: small model with random weights", "prefill 16 tok/s",
                           "decode tok/s", "first token after load", "| cpu ", "memory: peak RSS ",
                           "KV cache 0.0 MiB (f16, 25 positions)"})
    EXPECT_HAS(r.output, cell);
}

TEST(CliBinary, BenchGenSavesItsModelForOtherRuntimes) {
  TempDir dir;
  const std::string path = dir.file("synth.gguf");
  const RunResult r = run_wick("bench gen --quick --save-model '" + path + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  // The file stays, a llama model with a vocabulary of every byte (what llama.cpp needs to load
  // it).
  const GgufFile f = GgufFile::open(path);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(f.get<std::string>("tokenizer.ggml.model"), "gpt2");
  const Tokenizer tok = load_gguf_tokenizer(f);
  const std::string text = "any bytes: \n\t\xc3\xa9\x01";
  const std::vector<int32_t> ids = tok.encode(text, false);
  EXPECT_EQ(ids.size(), text.size()) << "no merges: one token per byte";
  EXPECT_EQ(tok.decode(ids), text);
  const RunResult both = run_wick("bench gen --quick --model x.gguf --save-model '" + path + "'");
  EXPECT_EQ(both.status, 2) << both.output;
  EXPECT_HAS(both.output, "--save-model");
}

// llama.cpp's short flags, a prompt file, and --stop on the binary: the text before the stop
// string is printed, the string and what follows are not.
TEST(CliBinary, GenerateShortFlagsPromptFileAndStop) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);
  const std::string m = "generate -m '" + dir.file("tiny.gguf") + "' -t 1 -s 3 -n 12";
  const RunResult plain = run_wick(m + " -p abc");
  ASSERT_EQ(plain.status, 0) << plain.output;
  const std::string text = plain.output.substr(0, plain.output.find("\n\n"));
  ASSERT_EQ(text.rfind("abc", 0), 0u) << plain.output;
  {
    std::ofstream f(dir.file("prompt.txt"));
    f << "abc";
  }
  const RunResult file = run_wick(m + " -f '" + dir.file("prompt.txt") + "'");
  EXPECT_EQ(file.status, 0) << file.output;
  EXPECT_EQ(file.output.substr(0, file.output.find("\n\n")), text);
  EXPECT_EQ(file.output.find("loading"), std::string::npos) << "no bar when stderr is a pipe";
  const std::string continuation = text.substr(3);
  if (continuation.size() >= 4) {
    const std::string stop = continuation.substr(2, 2);
    const std::string before = "abc" + continuation.substr(0, continuation.find(stop));
    const RunResult s = run_wick(m + " -p abc --stop '" + stop + "' --stop 'never in it 12'");
    EXPECT_EQ(s.status, 0) << s.output;
    EXPECT_EQ(s.output.substr(0, s.output.find("\n")), before) << s.output;
    EXPECT_HAS(s.output, "(stopped at a stop string)");
  }
  const RunResult pen = run_wick(m + " -p abc --repeat-penalty 1.5 --min-p 0.1 --temp 0.7");
  EXPECT_EQ(pen.status, 0) << pen.output;
  const RunResult missing = run_wick(m + " -f '" + dir.file("none.txt") + "'");
  EXPECT_EQ(missing.status, 1) << missing.output;
  EXPECT_HAS(missing.output, "none.txt");
}

TEST(CliBinary, BenchGenJson) {
  const RunResult r = run_wick("bench gen --quick --json");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("benchmark"), "gen");
  EXPECT_EQ(j.at("prompt_tokens"), 16);
  EXPECT_EQ(j.at("decode_tokens"), 8);
  EXPECT_EQ(j.at("kv_cache_type"), "f16");
  EXPECT_EQ(j.at("context"), 25);  // prompt + decode + 1
  // 2 layers x k and v x 2 kv heads x 25 positions x head dim 64 x 2 bytes
  EXPECT_EQ(j.at("kv_cache_bytes"), 2 * 2 * 2 * 25 * 64 * 2);
  EXPECT_GT(j.at("peak_rss_bytes").get<int64_t>(), j.at("kv_cache_bytes").get<int64_t>());
  EXPECT_HAS(j.at("command").get<std::string>(), "wick bench gen --quick --json");
  ASSERT_GE(j.at("rows").size(), 1u);
  const nlohmann::json& row = j.at("rows")[0];
  EXPECT_EQ(row.at("device"), "cpu");
  for (const char* k : {"load_ms", "first_token_ms", "prefill_tokens_per_s", "decode_tokens_per_s",
                        "first_run_decode_tokens_per_s"})
    EXPECT_GT(row.at(k).get<double>(), 0) << k;
}

// --batch: rows for 1, 2, 4 and 5 sequences decoding together, in the text table and the JSON.
TEST(CliBinary, BenchGenBatched) {
  const RunResult r = run_wick("bench gen --quick --json --batch 5");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const nlohmann::json& rows = j.at("batched");
  ASSERT_EQ(rows.size(), 4u);
  const int64_t want[] = {1, 2, 4, 5};
  for (size_t i = 0; i < rows.size(); i++) {
    SCOPED_TRACE(i);
    const nlohmann::json& row = rows[i];
    const int64_t b = row.at("sequences").get<int64_t>();
    EXPECT_EQ(b, want[i]);
    const double ms = row.at("pass_ms").get<double>(), tps = row.at("decode_tokens_per_s");
    EXPECT_GT(ms, 0);
    EXPECT_NEAR(tps, static_cast<double>(b) * 1e3 / ms, 1e-9 * tps);
    EXPECT_NEAR(row.at("ratio_to_one_sequence").get<double>(),
                tps / rows[0].at("decode_tokens_per_s").get<double>(), 1e-12);
    EXPECT_TRUE(row.at("dispatches_per_pass").is_null()) << "the CPU launches no kernels";
  }
  const RunResult plain = run_wick("bench gen --quick --json");
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_FALSE(nlohmann::json::parse(plain.output).contains("batched"));
  const RunResult text = run_wick("bench gen --quick --batch 2");
  ASSERT_EQ(text.status, 0) << text.output;
  for (const char* cell : {"| sequences |", "aggregate decode tok/s", "| cpu    | 2 ", "1.00x"})
    EXPECT_HAS(text.output, cell);
}

// --save-text: the text the tokenizer benchmark encodes, whole, for another tokenizer to time.
TEST(CliBinary, BenchTokenizerSavesItsText) {
  TempDir dir;
  const std::string path = dir.file("text.txt");
  // No vocabularies: the rows say "missing", the text is still written.
  const std::string env = "WICK_LLAMA_VOCAB_DIR='" + dir.file("none") + "'";
  const RunResult r = run_wick("bench tokenizer --quick --save-text '" + path + "'", env);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "text written to " + path + " (262144 bytes)");
  std::ifstream f(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(text.size(), 262144u);
  EXPECT_TRUE(std::isupper(static_cast<unsigned char>(text[0]))) << text.substr(0, 40);
  EXPECT_NE(text.find(". "), std::string::npos);
  EXPECT_NE(text.find("\n\n"), std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_TRUE(e.path().filename() == "text.txt") << "left behind: " << e.path();
  // The same text every time.
  const RunResult again = run_wick("bench tokenizer --quick --save-text '" + path + "2'", env);
  ASSERT_EQ(again.status, 0) << again.output;
  std::ifstream f2(path + "2", std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f2)), std::istreambuf_iterator<char>()),
            text);
  const RunResult bad =
      run_wick("bench tokenizer --quick --save-text '" + dir.file("no/such/dir/t.txt") + "'", env);
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_HAS(bad.output, "bench tokenizer --save-text: " + dir.file("no/such/dir/t.txt") +
                             ": cannot create a temporary file beside it");
  EXPECT_FALSE(std::filesystem::exists(dir.file("no/such/dir/t.txt")));
}

// `wick chat` driven through stdin: a turn per line ("> " prompt, the line echoed as stdin is
// not a terminal, the reply), empty lines skipped, end of input ends the session with a summary;
// a context too small for the conversation drops the oldest turns with a notice.
TEST(CliBinary, ChatTurnsFromStdin) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  TinyLlamaConfig cfg;
  cfg.context = 512;  // single-letter tokens: a turn is some 15 tokens, the system turn 20
  write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);
  {
    std::ofstream in(dir.file("turns.txt"));
    in << "abc\n\nde f\nghi\n";
  }
  const std::string chat = "'" WICK_CLI_PATH "' chat -m '" + dir.file("tiny.gguf") +
                           "' --system 'be brief' -n 6 < '" + dir.file("turns.txt") + "' 2> '" +
                           dir.file("err.txt") + "'";
  const auto run = [&](const std::string& extra) {
    FILE* p = ::popen((chat + extra).c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << out;
    std::ifstream e(dir.file("err.txt"));
    std::string err((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    return std::make_pair(out, err);
  };
  const auto [out, err] = run("");
  // The turns in order: each prompt, the echoed line, then the reply up to the next prompt.
  std::vector<std::string> lines;
  for (size_t at = 0, next; at < out.size(); at = next + 1) {
    next = out.find('\n', at);
    if (next == std::string::npos) next = out.size();
    lines.push_back(out.substr(at, next - at));
  }
  ASSERT_GE(lines.size(), 8u) << out;
  EXPECT_EQ(lines[0], "> abc");
  EXPECT_EQ(lines[1].rfind("> ", 0), std::string::npos) << "a reply: " << out;
  EXPECT_EQ(lines[2], "> ");  // the empty line: no turn
  EXPECT_EQ(lines[3], "> de f");
  EXPECT_EQ(lines[5], "> ghi");
  EXPECT_EQ(lines[7], "> ");  // end of input
  EXPECT_HAS(err, ": 3 turns, ");
  size_t stats = 0;
  for (size_t at = 0; (at = err.find(" prompt tokens ", at)) != std::string::npos; at++) stats++;
  EXPECT_EQ(stats, 3u) << err;
  EXPECT_EQ(err.find("dropped"), std::string::npos) << err;
  EXPECT_EQ(run("").first, out) << "greedy: the same conversation";

  // A context that holds the first turn but not all three with 6 tokens kept for a reply, even
  // when every reply is empty (the random model may end its turn at once; its random merges set
  // how many tokens a turn takes): the oldest turn must go.
  const GgufFile f = GgufFile::open(dir.file("tiny.gguf"));
  const Tokenizer tok = load_gguf_tokenizer(f);
  const std::vector<ChatMessage> shortest = {{"system", "be brief"}, {"user", "abc"},
                                             {"assistant", ""},      {"user", "de f"},
                                             {"assistant", ""},      {"user", "ghi"}};
  const std::string text =
      load_gguf_chat_template(f).apply(shortest, /*add_generation_prompt=*/true);
  const int64_t fewest = static_cast<int64_t>(tok.encode(text, /*allow_special=*/true).size()) +
                         (gguf_adds_bos(f) && text.rfind(tok.token(tok.bos_id()), 0) != 0);
  const std::string ctx = std::to_string(fewest + 6 - 1);
  const auto [small_out, small_err] = run(" -c " + ctx);
  EXPECT_HAS(small_err,
             "the conversation no longer fits the context of " + ctx + " tokens: dropped");
  EXPECT_HAS(small_err, ": 3 turns, ");
}

TEST(CliArgs, Chat) {
  const Args a = parse({"chat", "-m", "m.gguf", "--system", "Be brief.", "--temp", "0.7", "-c",
                        "256", "--stop", "User:"});
  EXPECT_EQ(a.command, Command::Chat);
  EXPECT_EQ(a.system, "Be brief.");
  EXPECT_EQ(a.n_predict, 512);
  EXPECT_EQ(a.max_seq, 256);
  EXPECT_EQ(a.stops, std::vector<std::string>{"User:"});
  expect_usage_error({"chat"}, "wick chat needs --model");
  expect_usage_error({"chat", "-m", "m", "-p", "x"}, "unknown option '-p' for 'wick chat'");
  expect_usage_error({"chat", "-m", "m", "--chat"}, "unknown option '--chat' for 'wick chat'");
  expect_usage_error({"generate", "-m", "m", "-p", "x", "--system", "s"},
                     "unknown option '--system'");
}

TEST(CliArgs, Serve) {
  Args a = parse({"serve", "-m", "m.gguf"});
  EXPECT_EQ(a.command, Command::Serve);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8080);
  EXPECT_EQ(a.parallel, 4);
  EXPECT_EQ(a.max_queue, 64);
  EXPECT_EQ(a.max_body, 1 << 20);
  EXPECT_EQ(a.n_predict, 512);
  a = parse({"serve", "-m", "m.gguf", "--host", "0.0.0.0",     "--port",   "0",
             "-np",   "8",  "-c",     "1024",   "--max-queue", "0",        "--max-body",
             "4096",  "-n", "64",     "-t",     "2",           "--device", "cpu"});
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 0);
  EXPECT_EQ(a.parallel, 8);
  EXPECT_EQ(a.max_seq, 1024);
  EXPECT_EQ(a.max_queue, 0);
  EXPECT_EQ(a.max_body, 4096);
  EXPECT_EQ(a.n_predict, 64);
  EXPECT_EQ(a.threads, 2);
  EXPECT_EQ(parse({"serve", "-m", "m", "--parallel=3"}).parallel, 3);
  EXPECT_FALSE(a.log_passes);
  EXPECT_TRUE(parse({"serve", "-m", "m", "--log-passes"}).log_passes);
  expect_usage_error({"generate", "-m", "m", "-p", "x", "--log-passes"},
                     "unknown option '--log-passes'");
  expect_usage_error({"serve"}, "wick serve needs --model");
  expect_usage_error({"serve", "-m", "m", "--port", "65536"}, "--port");
  expect_usage_error({"serve", "-m", "m", "-np", "0"}, "-np");
  expect_usage_error({"serve", "-m", "m", "--max-body", "0"}, "--max-body");
  expect_usage_error({"serve", "-m", "m", "-p", "x"}, "unknown option '-p' for 'wick serve'");
  expect_usage_error({"generate", "-m", "m", "-p", "x", "--port", "1"}, "unknown option '--port'");
  EXPECT_TRUE(parse({"help", "serve"}).help);
  EXPECT_NE(cli::help_text(Command::Serve).find("/v1/chat/completions"), std::string::npos);
}

}  // namespace
}  // namespace wick::testing
