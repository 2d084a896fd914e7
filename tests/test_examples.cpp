// The programs in examples/ (built with the tests when WICK_BUILD_EXAMPLES is on, as it is for
// the top-level project): each runs and does what its comment says, so they cannot rot. The
// llama example generates from a tiny model with random weights; the custom-kernel example runs
// on every GPU device under test.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gguf_bytes.h"
#include "harness.h"
#include "tiny_llama.h"

#ifdef WICK_EXAMPLES_DIR
namespace wick::testing {
namespace {

struct ExampleRun {
  int status;
  std::string output;  // stdout and stderr together
};

// A path in single quotes for the shell. Built by append: GCC 12 warns (-Wrestrict, a false
// positive) on "'" + std::string&& once inlined.
std::string quoted(const std::string& path) {
  return std::string("'").append(path).append("'");
}

ExampleRun run_example(const std::string& name, const std::string& args) {
  const std::string cmd = "'" WICK_EXAMPLES_DIR "/" + name + "' " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed: " + cmd};
  ExampleRun r;
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

TEST(Examples, QuickstartRuns) {
  const ExampleRun r = run_example("wick_quickstart", "");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "matmul");  // the shape error it provokes on purpose
}

TEST(Examples, LlamaGenerateRunsATinyModelOnEveryDevice) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);
  for (const std::string& spec : test_device_names()) {
    SCOPED_TRACE(spec);
    const ExampleRun r = run_example("wick_llama_generate",
                                     quoted(dir.file("tiny.gguf")) + " 'a cab' " + spec + " 6");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_HAS(r.output, "a cab");  // the prompt, then the generation (after any driver notice)
    EXPECT_HAS(r.output, " tokens on " + spec.substr(0, spec.find(':')));
  }
  const ExampleRun missing = run_example("wick_llama_generate", quoted(dir.file("none.gguf")));
  EXPECT_EQ(missing.status, 1);
  EXPECT_HAS(missing.output, "none.gguf");
  EXPECT_EQ(run_example("wick_llama_generate", "").status, 2);
}

TEST(Examples, TokenizeRoundTrips) {
  Rng rng;
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);
  const ExampleRun r = run_example("wick_tokenize", quoted(dir.file("tiny.gguf")) + " 'bad cafe'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_HAS(r.output, "decoded: 'bad cafe' (round trip)");
}

TEST(Examples, CustomKernelRunsOnEveryGpuAndNotOnTheCpu) {
  for (const std::string& spec : test_device_names()) {
    SCOPED_TRACE(spec);
    const ExampleRun r = run_example("wick_custom_kernel", spec);
    if (spec.rfind("cpu", 0) == 0) {
      EXPECT_EQ(r.status, 1) << r.output;
      EXPECT_HAS(r.output, "custom kernels need a GPU device");
    } else {
      EXPECT_EQ(r.status, 0) << r.output;
      EXPECT_HAS(r.output, "largest difference to wick's ops");
    }
  }
}

}  // namespace
}  // namespace wick::testing
#endif

namespace wick::testing {
namespace {

// docs/api.md is the map of the public headers: each one has a place in it.
TEST(ApiDocs, EveryPublicHeaderIsInDocsApiMd) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(WICK_TESTS_DIR).parent_path();
  std::ifstream in(root / "docs" / "api.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty());
  size_t headers = 0;
  for (const auto& e : fs::directory_iterator(root / "include" / "wick")) {
    const std::string name = std::string("`").append(e.path().filename().string()).append("`");
    EXPECT_NE(doc.find(name), std::string::npos) << name << " is not in docs/api.md";
    headers++;
  }
  EXPECT_GE(headers, 10u);
}

}  // namespace
}  // namespace wick::testing
