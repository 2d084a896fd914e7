// libFuzzer target for the safetensors reader. The reader maps files, so each input is written
// to a scratch file first. Any input must open or throw Error(Parse) / Error(Io); in a file that
// opens, every tensor's byte range lies inside the data section, and every tensor of a wick dtype
// loads and reads back (other dtypes throw Error(Unsupported)).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "wick/safetensors.h"

using namespace wick;

namespace {

[[noreturn]] void die(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_safetensors: %s %s\n", what, detail.c_str());
  std::abort();
}

void check(bool ok, const char* what, const std::string& detail = "") {
  if (!ok) die(what, detail);
}

// One file per process in memory-backed /dev/shm when there is one; removed at exit.
struct ScratchFile {
  std::string path;
  ScratchFile() {
    const std::filesystem::path dir =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    path = (dir / ("wick_fuzz_" + std::to_string(getpid()) + ".safetensors")).string();
  }
  ~ScratchFile() { std::remove(path.c_str()); }
};

const std::string& scratch_path() {
  static const ScratchFile file;
  return file.path;
}

void write_input(const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(scratch_path().c_str(), "wb");
  check(f != nullptr, "cannot create", scratch_path());
  check(size == 0 || std::fwrite(data, 1, size, f) == size, "cannot write", scratch_path());
  check(std::fclose(f) == 0, "cannot close", scratch_path());
}

uint64_t header_end(const uint8_t* data, size_t size) {
  uint64_t n = 0;
  if (size >= 8) std::memcpy(&n, data, 8);
  return 8 + n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_input(data, size);
  try {
    const SafetensorsFile f(scratch_path());
    check(f.mapped_size() == size, "mapped size differs from the input");
    const uint64_t data_start = header_end(data, size);
    check(data_start <= size, "header longer than the file accepted");
    for (const std::string& name : f.names()) {
      const SafetensorsFile::Entry& e = f.entry(name);
      check(e.begin <= e.end && e.end <= size - data_start, "tensor range outside the file:", name);
      try {
        const Tensor t = f.tensor(name);
        check(static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype()) == e.end - e.begin,
              "tensor size differs from its byte range:", name);
        volatile double sum = 0;
        for (double v : t.to_vec<double>()) sum = sum + v;
      } catch (const Error& err) {
        check(err.kind() == ErrorKind::Unsupported, "tensor load failed:", err.what());
      }
    }
  } catch (const Error& e) {
    check(e.kind() == ErrorKind::Parse || e.kind() == ErrorKind::Io, "unexpected error:", e.what());
    check(std::string(e.what()).find(scratch_path()) != std::string::npos,
          "file not named:", e.what());
  }
  return 0;
}
