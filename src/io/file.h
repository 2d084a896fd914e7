// File access shared by every reader and writer of wick's files (GGUF, safetensors, the GPU
// kernel disk cache): a reader refuses anything but a regular file before it reads a byte, a save
// is atomic and leaves nothing behind, and file contents echoed in error messages are bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wick::io {

// An open file descriptor, closed when the object goes.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& o) noexcept;
  FileDescriptor& operator=(FileDescriptor&& o) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes now: 0, or close()'s errno.
  int close();

 private:
  int fd_ = -1;
};

// A regular file open for reading, and its size when it was opened.
struct ReadableFile {
  FileDescriptor fd;
  uint64_t size = 0;
};

// Opens `path` for reading. The open cannot block (O_NONBLOCK: a FIFO or a device returns at
// once) and anything but a regular file is refused before a byte is read. On failure returns
// nothing and sets `why` ("cannot open: No such file or directory", "not a regular file (a
// FIFO)").
std::optional<ReadableFile> try_open_regular_file(const std::string& path, std::string& why);
// The same, throwing Error(Io) "<op>: <path>: <why>".
ReadableFile open_regular_file(const std::string& path, const char* op);

// The file's bytes when it holds at most `max_bytes` and reads whole; nothing otherwise.
std::optional<std::vector<uint8_t>> read_whole_file(const ReadableFile& file, uint64_t max_bytes);

// A whole file mapped private and writable: pages written in memory are copied, the file never
// changes. An empty file maps to nothing (data() is null).
class FileMapping {
 public:
  FileMapping(std::byte* data, size_t size) : data_(data), size_(size) {}
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  ~FileMapping();
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_;
  size_t size_;
};

// Opens `path` as open_regular_file does and maps it; throws Error(Io) "<op>: <path>: ...".
std::shared_ptr<FileMapping> map_regular_file(const std::string& path, const char* op);

// Writes a file so that no reader ever sees it half-written and a writer killed at any point
// leaves nothing behind: the bytes go to an unnamed file beside the target (O_TMPFILE), which
// commit() fsyncs, names and renames over the target. Where the file system has no O_TMPFILE,
// a hidden file ".<name>.tmp.<pid>.<n>" takes its place, and such files that a dead process left
// (older than a minute) are removed by the next save of the same name.
// A symlink at `path` is followed (its target is replaced, atomically, and the link stays) unless
// the options say otherwise. An existing target keeps its permission bits; a new file gets 0666
// less the umask. Errors are Error(Io) "<op>: <path>: ...".
class AtomicFileWriter {
 public:
  struct Options {
    bool follow_symlink = true;  // false: a symlink at `path` is replaced by the new file
  };
  AtomicFileWriter(const std::string& path, const char* op, Options options);
  AtomicFileWriter(const std::string& path, const char* op)
      : AtomicFileWriter(path, op, Options{}) {}
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  // Without commit(), nothing changes at the target.
  ~AtomicFileWriter();

  void write(const void* data, size_t n);
  // Makes the bytes written the target's contents.
  void commit();
  // The file that commit() replaces (`path` with symlinks resolved).
  const std::string& target() const { return target_; }

 private:
  [[noreturn]] void fail_io(const char* what, int err) const;
  void flush_buffer();
  void write_fully(const char* p, size_t n);
  void discard() noexcept;

  std::string path_, target_, dir_;
  const char* op_;
  FileDescriptor fd_;
  std::string temp_path_;  // a named temporary file, or "" while the file is unnamed
  bool unnamed_ = false;   // opened with O_TMPFILE
  bool committed_ = false;
  std::vector<char> buffer_;  // small writes gather here
};

// The temporary-file name used when O_TMPFILE is missing: ".<name>.tmp.<pid>.<n>".
std::string temporary_name(std::string_view file_name, long pid, uint64_t n);

// Test hook: whether AtomicFileWriter tries O_TMPFILE first (default true).
bool& atomic_writer_uses_tmpfile();

// How deep arrays and objects nest in JSON text (brackets inside strings skipped), counted in one
// pass without recursion. nlohmann::json parses without recursion but dumps, copies and compares
// with one call per level, so untrusted JSON deeper than kMaxJsonNesting is refused before it is
// parsed (a request body of 500,000 brackets overflowed the stack in an error message's dump()).
size_t json_nesting_depth(std::string_view text);
inline constexpr size_t kMaxJsonNesting = 128;
// Error(Parse) from `op` naming `what` when `text` nests deeper than kMaxJsonNesting.
void check_json_nesting(std::string_view text, const char* op, std::string_view what);

// `text` as it may appear in an error message: control bytes, quotes and backslashes escaped, at
// most `max_bytes` of it (cut at a UTF-8 boundary), then "... (N bytes)" when it was longer.
std::string excerpt(std::string_view text, size_t max_bytes = 80);

}  // namespace wick::io
