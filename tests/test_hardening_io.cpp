// Reproductions of the file-handling failures of issue 9 (items 4, 5, 6 and the io parts of 9),
// each a test that failed before the fix: quadratic safetensors headers, FIFOs and devices that
// hang the readers, a disk cache that trusted spliced entries, saves that leaked temporary files,
// dropped the file's mode or replaced symlinks, and error messages that echoed unbounded input.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "gguf_bytes.h"
#include "gpu/disk_cache.h"
#include "gpu/hash.h"
#include "io/file.h"
#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/safetensors.h"

namespace wick::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Ends the test process when the scope it guards has not finished within `limit`: the code under
// test may be stuck in a blocking open() or an endless read that no test can interrupt, and a
// failed test is better than a CI job that hangs.
class Watchdog {
 public:
  explicit Watchdog(std::string what, std::chrono::seconds limit = std::chrono::seconds(5))
      : what_(std::move(what)), thread_([this, limit] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: %s did not finish within %lld s\n", what_.c_str(),
                         static_cast<long long>(limit.count()));
            std::_Exit(1);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_one();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string u64_le(uint64_t v) {
  return std::string(reinterpret_cast<const char*>(&v), 8);
}

std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

std::vector<std::string> folder_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// A pid that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

void set_mtime_seconds_ago(const std::string& path, int seconds) {
  const auto when = fs::file_time_type::clock::now() - std::chrono::seconds(seconds);
  fs::last_write_time(path, when);
}

// CPU time of the calling thread: unlike wall time, not stretched by a loaded machine.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// ---- item 4: safetensors headers parse in linear time -----------------------------------------

// `n` one-byte U8 tensors named t0..t{n-1}, tensor i holding data[i].
std::string many_tensor_header(int64_t n, const std::string& extra_entry = "") {
  std::string header = "{";
  header.reserve(static_cast<size_t>(n) * 64);
  for (int64_t i = 0; i < n; i++) {
    header += i ? ",\"t" : "\"t";
    header += std::to_string(i) + R"(":{"dtype":"U8","shape":[1],"data_offsets":[)" +
              std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  }
  return header + extra_entry + "}";
}

TEST(HardeningIo, SafetensorsHeaderOf100kTensorsParsesInLinearTime) {
  // Was quadratic (nlohmann's callback parser rescans the parent object at every entry): 100,000
  // entries took over 400 s.
  constexpr int64_t kTensors = 100000;
  Rng rng;
  SCOPED_TRACE(rng.seed());
  TempDir dir;
  std::string data(kTensors, '\0');
  for (char& c : data) c = static_cast<char>(rng.integer(0, 255));
  const std::string path = dir.file("many.safetensors");
  write_text(path, safetensors_bytes(many_tensor_header(kTensors), data));

  const Watchdog watchdog("parsing 100,000 safetensors entries", std::chrono::seconds(20));
  const auto t0 = Clock::now();
  const double cpu0 = thread_cpu_seconds();
  const SafetensorsFile file(path);
  const double cpu = thread_cpu_seconds() - cpu0;
  std::printf("[ timing   ] 100,000-entry safetensors header parsed in %.3f s (%.3f s of CPU)\n",
              std::chrono::duration<double>(Clock::now() - t0).count(), cpu);
  EXPECT_LT(cpu, 5.0);
  ASSERT_EQ(file.names().size(), static_cast<size_t>(kTensors));
  for (int k = 0; k < 20; k++) {
    const int64_t i = rng.integer(0, kTensors - 1);
    const std::string name = detail::concat("t", i);
    EXPECT_EQ(file.names()[static_cast<size_t>(i)], name) << "names are in data order";
    EXPECT_EQ(file.entry(name).begin, static_cast<uint64_t>(i));
    EXPECT_EQ(file.tensor(name).to_vec<uint8_t>(),
              std::vector<uint8_t>{static_cast<uint8_t>(data[static_cast<size_t>(i)])});
  }

  // A duplicate after 100,000 names is still found, as fast.
  write_text(path, safetensors_bytes(many_tensor_header(kTensors, R"(,"t7":{})"), data));
  const double cpu1 = thread_cpu_seconds();
  expect_error([&] { SafetensorsFile f(path); }, ErrorKind::Parse, {path, "'t7'", "twice"});
  EXPECT_LT(thread_cpu_seconds() - cpu1, 5.0);
}

TEST(HardeningIo, SafetensorsNamesAreUniqueInEveryObject) {
  // The DOM keeps the last of two equal keys: a second "dtype" silently replaced the first.
  TempDir dir;
  const std::string path = dir.file("dup.safetensors");
  write_text(path, safetensors_bytes(
                       R"({"t":{"dtype":"U8","dtype":"F32","shape":[1],"data_offsets":[0,1]}})",
                       std::string(1, '\0')));
  expect_error([&] { SafetensorsFile f(path); }, ErrorKind::Parse,
               {path, "tensor 't'", "'dtype' appears twice"});
  write_text(path, safetensors_bytes(R"({"__metadata__":{"k":"a","k":"b"}})", ""));
  expect_error([&] { SafetensorsFile f(path); }, ErrorKind::Parse,
               {path, "__metadata__", "'k' appears twice"});
}

TEST(HardeningIo, SafetensorsDeeplyNestedHeaderIsRefused) {
  // A shape nested a million deep: printing it in the error recursed once per level (a stack
  // overflow). Nesting deeper than a header needs is refused while scanning.
  constexpr size_t kDepth = 1u << 20;
  TempDir dir;
  const std::string path = dir.file("deep.safetensors");
  const std::string shape = std::string(kDepth, '[') + std::string(kDepth, ']');
  write_text(path,
             safetensors_bytes(
                 R"({"t":{"dtype":"U8","shape":)" + shape + R"(,"data_offsets":[0,0]}})", ""));
  expect_error([&] { SafetensorsFile f(path); }, ErrorKind::Parse, {path, "nests deeper"});
}

// ---- item 5: nothing but a regular file is read, and nothing blocks -----------------------------

class FifoTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << fifo; }
  TempDir dir;
  const std::string fifo = dir.file("model.fifo");
};

TEST_F(FifoTest, GgufOpenRefusesAFifo) {
  const Watchdog watchdog("GgufFile::open on a FIFO");
  expect_error([&] { GgufFile::open(fifo); }, ErrorKind::Io, {fifo, "not a regular file (a FIFO)"});
}

TEST_F(FifoTest, SafetensorsRefusesAFifo) {
  const Watchdog watchdog("SafetensorsFile on a FIFO");
  expect_error([&] { SafetensorsFile f(fifo); }, ErrorKind::Io, {fifo, "a FIFO"});
  expect_error([&] { load_safetensors(fifo); }, ErrorKind::Io, {fifo, "a FIFO"});
}

TEST_F(FifoTest, LlamaLoaderRefusesAFifo) {
  const Watchdog watchdog("LlamaModel::load_gguf on a FIFO");
  expect_error([&] { LlamaModel::load_gguf(fifo); }, ErrorKind::Io, {fifo, "a FIFO"});
}

TEST_F(FifoTest, CliGenerateRefusesAFifo) {
  // `timeout` ends a wick that blocks (status 124), so this test cannot hang either.
  const std::string cmd =
      "timeout 30 '" WICK_CLI_PATH "' generate --model '" + fifo + "' --prompt x 2>&1";
  const auto t0 = Clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_NE(output.find(fifo), std::string::npos) << output;
  EXPECT_NE(output.find("a FIFO"), std::string::npos) << output;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 20.0);
}

TEST(HardeningIo, DevicesAreRefusedAndSymlinksToFilesRead) {
  const Watchdog watchdog("opening /dev/zero");
  expect_error([&] { GgufFile::open("/dev/zero"); }, ErrorKind::Io,
               {"/dev/zero", "a character device"});
  expect_error([&] { SafetensorsFile f("/dev/zero"); }, ErrorKind::Io,
               {"/dev/zero", "a character device"});
  // A symlink to a regular file is that file.
  TempDir dir;
  GgufWriter w;
  w.set("k", "v");
  w.write(dir.file("real.gguf"));
  fs::create_symlink("real.gguf", dir.file("link.gguf"));
  EXPECT_EQ(GgufFile::open(dir.file("link.gguf")).get<std::string>("k"), "v");
}

// ---- items 5 and 6: the disk kernel cache ------------------------------------------------------

class DiskCacheTest : public ::testing::Test {
 protected:
  TempDir dir;
  gpu::DiskCache cache{dir.path().string()};
  const std::vector<uint8_t> payload_a{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<uint8_t> payload_b{0xa, 0xb, 0xc};
};

TEST_F(DiskCacheTest, AnotherEntrysPayloadUnderTheRightKeyIsAMiss) {
  // The checksum covered the payload alone: an entry's key followed by another entry's length,
  // payload and checksum passed, and the wrong kernel ran.
  ASSERT_TRUE(cache.store("key-a", payload_a));
  ASSERT_TRUE(cache.store("key-bb", payload_b));
  const std::string a = read_text(cache.path_for("key-a"));
  const std::string b = read_text(cache.path_for("key-bb"));
  const size_t a_head = 8 + 8 + std::string("key-a").size();
  const size_t b_head = 8 + 8 + std::string("key-bb").size();
  write_text(cache.path_for("key-a"), a.substr(0, a_head) + b.substr(b_head));
  EXPECT_FALSE(cache.load("key-a").has_value());
  // The next store replaces the bad entry.
  ASSERT_TRUE(cache.store("key-a", payload_a));
  EXPECT_EQ(cache.load("key-a"), payload_a);
}

TEST_F(DiskCacheTest, AVersion1EntryIsAMiss) {
  // Written the way the previous format was (payload-only checksum): never trusted now.
  std::string v1 = "WICKKC1\n" + u64_le(5) + "key-a" + u64_le(payload_a.size());
  const std::string payload(payload_a.begin(), payload_a.end());
  v1 += payload + u64_le(gpu::hash64(payload));
  fs::create_directories(dir.path());
  write_text(cache.path_for("key-a"), v1);
  EXPECT_FALSE(cache.load("key-a").has_value());
}

TEST_F(DiskCacheTest, EveryTruncationAndByteFlipIsAMiss) {
  ASSERT_TRUE(cache.store("key-a", payload_a));
  const std::string path = cache.path_for("key-a");
  const std::string good = read_text(path);
  for (size_t n = 0; n < good.size(); n++) {
    write_text(path, good.substr(0, n));
    EXPECT_FALSE(cache.load("key-a").has_value()) << "truncated to " << n << " bytes";
  }
  for (size_t i = 0; i < good.size(); i++) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    write_text(path, bad);
    EXPECT_FALSE(cache.load("key-a").has_value()) << "byte " << i << " flipped";
  }
  write_text(path, good);
  EXPECT_EQ(cache.load("key-a"), payload_a);
}

TEST_F(DiskCacheTest, AFifoEntryIsAMissAndIsReplaced) {
  ASSERT_TRUE(cache.store("key-a", payload_a));
  const std::string path = cache.path_for("key-a");
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  {
    const Watchdog watchdog("DiskCache::load of a FIFO");
    EXPECT_FALSE(cache.load("key-a").has_value());
  }
  ASSERT_TRUE(cache.store("key-a", payload_a));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  EXPECT_EQ(cache.load("key-a"), payload_a);
}

TEST_F(DiskCacheTest, AnEntryLinkedToDevZeroIsAMissAndIsReplaced) {
  // Was read without a bound: std::bad_alloc, or minutes.
  ASSERT_TRUE(cache.store("key-a", payload_a));
  const std::string path = cache.path_for("key-a");
  fs::remove(path);
  fs::create_symlink("/dev/zero", path);
  {
    const Watchdog watchdog("DiskCache::load of a link to /dev/zero");
    EXPECT_FALSE(cache.load("key-a").has_value());
  }
  // The link is replaced by an entry, not written through.
  ASSERT_TRUE(cache.store("key-a", payload_a));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  EXPECT_EQ(cache.load("key-a"), payload_a);
}

TEST_F(DiskCacheTest, AHugeRegularFileIsNotRead) {
  ASSERT_TRUE(cache.store("key-a", payload_a));
  const std::string path = cache.path_for("key-a");
  fs::resize_file(path, uint64_t{1} << 32);  // sparse: no disk, no memory
  const Watchdog watchdog("DiskCache::load of a 4 GiB file");
  EXPECT_FALSE(cache.load("key-a").has_value());
}

// ---- item 9: saves ------------------------------------------------------------------------------

// The two savers. prepare() builds what is to be written (tensors, a GgufWriter) and returns the
// call that writes it, so that a forked child only writes.
struct Saver {
  const char* name;
  std::function<std::function<void()>(const std::string& path, float value, int64_t numel)> prepare;
  std::function<float(const std::string& path)> load;
  void save(const std::string& path, float value, int64_t numel) const {
    prepare(path, value, numel)();
  }
};

std::vector<Saver> savers() {
  return {
      {"save_safetensors",
       [](const std::string& path, float value, int64_t numel) -> std::function<void()> {
         const Tensor t = Tensor::full(value, {numel}, DType::F32);
         return [path, t] { save_safetensors(path, {{"t", t}}); };
       },
       [](const std::string& path) { return load_safetensors(path).at("t").to_vec<float>()[0]; }},
      {"GgufWriter::write",
       [](const std::string& path, float value, int64_t numel) -> std::function<void()> {
         auto w = std::make_shared<GgufWriter>();
         w->add_tensor("t", Tensor::full(value, {numel}, DType::F32));
         return [path, w] { w->write(path); };
       },
       [](const std::string& path) { return GgufFile::open(path).tensor("t").to_vec<float>()[0]; }},
  };
}

TEST(HardeningIo, KilledSaveLeavesNoTemporaryFile) {
  // A save killed mid-write (here by SIGXFSZ at a file-size limit) left a hidden temporary file
  // that nothing removed. Both ways of writing: an unnamed file (O_TMPFILE), and the named
  // temporary file used where the file system lacks it.
  for (const bool unnamed : {true, false}) {
    io::atomic_writer_uses_tmpfile() = unnamed;
    for (const Saver& s : savers()) {
      SCOPED_TRACE(std::string(s.name) + (unnamed ? ", O_TMPFILE" : ", named temporary file"));
      TempDir dir;
      const std::string path = dir.file("model.bin");
      s.save(path, 1.5f, 4);
      const std::function<void()> write_big = s.prepare(path, 2.5f, 1 << 18);  // 1 MiB
      const pid_t child = ::fork();
      if (child == 0) {
        const rlimit no_core{0, 0}, limit{64 << 10, 64 << 10};
        ::setrlimit(RLIMIT_CORE, &no_core);
        ::setrlimit(RLIMIT_FSIZE, &limit);
        ::signal(SIGXFSZ, SIG_DFL);
        write_big();
        ::_exit(0);
      }
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << "status " << status;
      EXPECT_EQ(s.load(path), 1.5f) << "the old file is intact";
      if (unnamed) {
        EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"model.bin"});
      }
      // A named temporary file of a dead writer is removed by the next save once it is a minute
      // old.
      for (const std::string& name : folder_entries(dir.path()))
        if (name != "model.bin") set_mtime_seconds_ago(dir.file(name), 120);
      s.save(path, 3.5f, 4);
      EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"model.bin"});
      EXPECT_EQ(s.load(path), 3.5f);
    }
  }
  io::atomic_writer_uses_tmpfile() = true;
}

TEST(HardeningIo, SaveRemovesOnlyStaleTemporaryFiles) {
  for (const Saver& s : savers()) {
    SCOPED_TRACE(s.name);
    TempDir dir;
    const std::string path = dir.file("m.bin");
    const std::string stale = dir.file(".m.bin.tmp." + std::to_string(dead_pid()) + ".0");
    const std::string recent = dir.file(".m.bin.tmp." + std::to_string(dead_pid()) + ".1");
    const std::string live = dir.file(".m.bin.tmp." + std::to_string(::getpid()) + ".99");
    const std::string other_name = dir.file(".n.bin.tmp." + std::to_string(dead_pid()) + ".0");
    const std::string not_ours = dir.file(".m.bin.tmp.notes");
    for (const std::string& f : {stale, recent, live, other_name, not_ours}) {
      write_text(f, "leftover");
      if (f != recent) set_mtime_seconds_ago(f, 3600);
    }
    s.save(path, 1.0f, 2);
    EXPECT_FALSE(fs::exists(stale)) << "a dead writer's hour-old file";
    for (const std::string& f : {recent, live, other_name, not_ours})
      EXPECT_TRUE(fs::exists(f)) << f;
  }
}

TEST(HardeningIo, SaveKeepsTheModeOfAnExistingFile) {
  // A 0600 file became 0644 (the temporary file's mode) after a save.
  for (const Saver& s : savers()) {
    SCOPED_TRACE(s.name);
    TempDir dir;
    const std::string path = dir.file("secret.bin");
    s.save(path, 1.0f, 2);
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
    s.save(path, 2.0f, 2);
    EXPECT_EQ(mode_of(path), 0600u);
    ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
    s.save(path, 3.0f, 2);
    EXPECT_EQ(mode_of(path), 0640u);
    EXPECT_EQ(s.load(path), 3.0f);
    // A new file gets 0666 less the umask.
    const mode_t old_mask = ::umask(027);
    s.save(dir.file("new.bin"), 1.0f, 2);
    ::umask(old_mask);
    EXPECT_EQ(mode_of(dir.file("new.bin")), 0640u);
  }
}

TEST(HardeningIo, SaveThroughASymlinkReplacesItsTarget) {
  // Saving through a symlink replaced the link with a regular file.
  for (const Saver& s : savers()) {
    SCOPED_TRACE(s.name);
    TempDir dir;
    fs::create_directories(dir.path() / "store");
    const std::string target = dir.file("store/model.bin");
    s.save(target, 1.0f, 2);
    fs::create_symlink("store/model.bin", dir.file("link.bin"));      // relative
    fs::create_symlink(dir.file("link.bin"), dir.file("link2.bin"));  // absolute, to a link
    s.save(dir.file("link2.bin"), 2.0f, 2);
    EXPECT_TRUE(fs::is_symlink(dir.file("link.bin")));
    EXPECT_TRUE(fs::is_symlink(dir.file("link2.bin")));
    EXPECT_EQ(fs::read_symlink(dir.file("link.bin")), "store/model.bin");
    EXPECT_EQ(s.load(target), 2.0f);
    EXPECT_EQ(folder_entries(dir.path() / "store"), std::vector<std::string>{"model.bin"});
    // A dangling link: the file it names is created.
    fs::create_symlink("store/new.bin", dir.file("dangling.bin"));
    s.save(dir.file("dangling.bin"), 3.0f, 2);
    EXPECT_TRUE(fs::is_symlink(dir.file("dangling.bin")));
    EXPECT_EQ(s.load(dir.file("store/new.bin")), 3.0f);
    // A loop is an error naming the path, and leaves nothing behind.
    fs::create_symlink("loop_b", dir.file("loop_a"));
    fs::create_symlink("loop_a", dir.file("loop_b"));
    expect_error([&] { s.save(dir.file("loop_a"), 1.0f, 2); }, ErrorKind::Io,
                 {dir.file("loop_a"), "symlink"});
  }
}

// ---- item 9: error messages echo bounded pieces of input ---------------------------------------

void expect_bounded_error(const std::function<void()>& f, ErrorKind kind,
                          std::vector<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), kind) << what.substr(0, 300);
    EXPECT_LT(what.size(), 800u) << what.substr(0, 300);
    for (const std::string& n : needles)
      EXPECT_NE(what.find(n), std::string::npos) << "no '" << n << "' in " << what.substr(0, 800);
  }
}

TEST(HardeningIo, SafetensorsErrorsEchoBoundedInput) {
  // A 1 MiB tensor name made a 1 MiB error message.
  const std::string huge(1 << 20, 'n');
  const std::string size = "(1048576 bytes)";
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto expect = [&](const std::string& header, std::vector<std::string> needles) {
    SCOPED_TRACE(header.substr(0, 60));
    write_text(path, safetensors_bytes(header, std::string(8, '\0')));
    needles.push_back(path);
    expect_bounded_error([&] { SafetensorsFile f(path); }, ErrorKind::Parse, needles);
  };
  expect("{\"" + huge + "\":3}", {"not an object", size});
  expect("{\"" + huge + "\":{},\"" + huge + "\":{}}", {"twice", size});
  expect("{\"" + huge + R"(":{"dtype":"U8","shape":[9],"data_offsets":[0,8]}})", {"needs", size});
  expect(R"({"t":{"dtype":"U8","shape":[")" + huge + R"("],"data_offsets":[0,8]}})",
         {"bad dim", "bytes)"});
  expect(R"({"__metadata__":{")" + huge + R"(":1}})", {"__metadata__", size});
  expect("{\"" + huge, {"bad JSON header", "bytes)"});  // nlohmann echoes the token it read
  write_text(path, safetensors_bytes(
                       R"({"t":{"dtype":")" + huge + R"(","shape":[8],"data_offsets":[0,8]}})",
                       std::string(8, '\0')));
  const SafetensorsFile f(path);
  expect_bounded_error([&] { f.tensor("t"); }, ErrorKind::Unsupported, {"'t'", size});
  expect_bounded_error([&] { f.tensor(huge); }, ErrorKind::OutOfRange, {"no tensor", size});
}

TEST(HardeningIo, GgufErrorsEchoBoundedInput) {
  const std::string huge(1 << 20, 'k');
  const std::string size = "(1048576 bytes)";
  {
    GgufBytes g;
    g.header(3, 0, 2).kv_u32(huge, 1).kv_u32(huge, 2);
    expect_bounded_error([&] { GgufFile::parse(g.span(), nullptr, "dup.gguf"); }, ErrorKind::Parse,
                         {"dup.gguf", "duplicate key", size});
  }
  {
    GgufBytes g;
    g.header(3, 1, 0).tensor_info(huge, {0}, QuantType::F32, 0);
    expect_bounded_error([&] { GgufFile::parse(g.span(), nullptr, "dim.gguf"); }, ErrorKind::Parse,
                         {"dim.gguf", "ne[0] = 0", size});
  }
  {
    GgufBytes g;
    g.header(3, 1, 0).tensor_info(huge, {4}, QuantType::F32, 0).pad(32);
    expect_bounded_error([&] { GgufFile::parse(g.span(), nullptr, "out.gguf"); }, ErrorKind::Parse,
                         {"out.gguf", "outside", size});
  }
  {
    GgufBytes g;
    g.header(3, 0, 1).key("general.alignment", GgufValueType::String).str(huge);
    expect_bounded_error([&] { GgufFile::parse(g.span(), nullptr, "align.gguf"); },
                         ErrorKind::Parse, {"align.gguf", "alignment", size});
  }
  GgufWriter w;
  expect_bounded_error([&] { w.add_tensor(huge, Tensor::zeros({2}, DType::U8)); }, ErrorKind::DType,
                       {"GgufWriter::add_tensor", size});
}

// JSON nesting is counted without recursion, brackets in strings (escaped quotes too) skipped.
TEST(HardeningIo, JsonNestingDepthSkipsStrings) {
  EXPECT_EQ(io::json_nesting_depth(""), 0u);
  EXPECT_EQ(io::json_nesting_depth("7"), 0u);
  EXPECT_EQ(io::json_nesting_depth("[]"), 1u);
  EXPECT_EQ(io::json_nesting_depth(R"({"a": [1, {"b": []}], "c": {}})"), 4u);
  EXPECT_EQ(io::json_nesting_depth(R"(["[[[{", "\"[[", "\\", []])"), 2u);
  EXPECT_EQ(io::json_nesting_depth("]]]}"), 0u);
  EXPECT_EQ(io::json_nesting_depth(std::string(1000000, '[')), 1000000u);
}

TEST(HardeningIo, ExcerptEscapesCutsAndCounts) {
  EXPECT_EQ(io::excerpt("plain"), "plain");
  EXPECT_EQ(io::excerpt("a\"b\\c\n\x7f"), "a\\\"b\\\\c\\x0a\\x7f");
  EXPECT_EQ(io::excerpt(std::string(100, 'x'), 10), "xxxxxxxxxx... (100 bytes)");
  // Never half a UTF-8 character: a cut inside the second "é" (two bytes) drops all of it.
  EXPECT_EQ(io::excerpt("a\xc3\xa9\xc3\xa9", 4), "a\xc3\xa9... (5 bytes)");
  EXPECT_EQ(io::excerpt(std::string(80, 'y')), std::string(80, 'y'));
}

}  // namespace
}  // namespace wick::testing
