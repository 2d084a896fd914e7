#include "io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <utility>

#include "wick/error.h"

namespace wick::io {

namespace {

constexpr size_t kWriteBufferBytes = 64u << 10;
constexpr int kMaxSymlinkHops = 40;  // Linux's own limit for a path
// A temporary file of a dead writer younger than this is left alone: the pid in its name may be
// another pid namespace's, whose live writer would not have paused writing for this long.
constexpr time_t kStaleAfterSeconds = 60;

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

std::string parent_folder(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// `path` with the symlinks at its last component followed; a dangling link gives the path it
// names. Returns 0 or an errno.
int resolve_symlinks(std::string& path) {
  for (int hops = 0;; hops++) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return 0;
    if (hops == kMaxSymlinkHops) return ELOOP;
    std::string target(static_cast<size_t>(std::max<off_t>(st.st_size, 255)) + 1, '\0');
    ssize_t n;
    while ((n = ::readlink(path.c_str(), target.data(), target.size())) ==
           static_cast<ssize_t>(target.size()))
      target.resize(target.size() * 2);
    if (n < 0) return errno;
    target.resize(static_cast<size_t>(n));
    path = target.front() == '/' ? target : parent_folder(path) + "/" + target;
  }
}

// The pid in a temporary file name ".<name>.tmp.<pid>.<n>" (see temporary_name), or 0.
long temporary_file_pid(std::string_view entry, std::string_view name) {
  const std::string head = detail::concat('.', name, ".tmp.");
  if (!entry.starts_with(head)) return 0;
  const char* end = entry.data() + entry.size();
  long pid = 0;
  uint64_t n = 0;
  const auto [dot, pid_error] = std::from_chars(entry.data() + head.size(), end, pid);
  if (pid_error != std::errc() || dot == end || *dot != '.') return 0;
  const auto [last, n_error] = std::from_chars(dot + 1, end, n);
  if (n_error != std::errc() || last != end) return 0;
  return pid > 0 ? pid : 0;
}

// Removes the temporary files of `name` in `folder` that a killed writer left: its process is gone
// and the file has not changed for a while.
void remove_stale_temporaries(const std::string& folder, std::string_view name) {
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) return;
  const time_t now = std::time(nullptr);
  while (const dirent* e = ::readdir(dir)) {
    const long pid = temporary_file_pid(e->d_name, name);
    if (pid == 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (now - st.st_mtime >= kStaleAfterSeconds) ::unlinkat(::dirfd(dir), e->d_name, 0);
  }
  ::closedir(dir);
}

std::atomic<uint64_t> temporary_counter{0};

}  // namespace

// ---- reading ----------------------------------------------------------------------------------

FileDescriptor::FileDescriptor(FileDescriptor&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  close();
}

int FileDescriptor::close() {
  if (fd_ < 0) return 0;
  const int rc = ::close(std::exchange(fd_, -1));
  return rc == 0 ? 0 : errno;
}

std::optional<ReadableFile> try_open_regular_file(const std::string& path, std::string& why) {
  // O_NONBLOCK only changes the open here: a regular file's reads never block on it.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    why = detail::concat("cannot open: ", std::strerror(errno));
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    why = detail::concat("cannot stat: ", std::strerror(errno));
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = detail::concat("not a regular file (", file_type_name(st.st_mode), ")");
    return std::nullopt;
  }
  return ReadableFile{std::move(fd), static_cast<uint64_t>(st.st_size)};
}

ReadableFile open_regular_file(const std::string& path, const char* op) {
  std::string why;
  std::optional<ReadableFile> f = try_open_regular_file(path, why);
  if (!f) fail(ErrorKind::Io, op, path, ": ", why);
  return std::move(*f);
}

std::optional<std::vector<uint8_t>> read_whole_file(const ReadableFile& file, uint64_t max_bytes) {
  if (file.size > max_bytes) return std::nullopt;
  std::vector<uint8_t> bytes(static_cast<size_t>(file.size));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(file.fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;  // an error, or the file shrank
    got += static_cast<size_t>(n);
  }
  return bytes;
}

FileMapping::~FileMapping() {
  if (data_) ::munmap(data_, size_);
}

std::shared_ptr<FileMapping> map_regular_file(const std::string& path, const char* op) {
  const ReadableFile file = open_regular_file(path, op);
  if (file.size == 0) return std::make_shared<FileMapping>(nullptr, 0);
  const auto size = static_cast<size_t>(file.size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, file.fd.get(), 0);
  if (p == MAP_FAILED) fail(ErrorKind::Io, op, path, ": cannot map: ", std::strerror(errno));
  return std::make_shared<FileMapping>(static_cast<std::byte*>(p), size);
}

// ---- writing ----------------------------------------------------------------------------------

std::string temporary_name(std::string_view file_name, long pid, uint64_t n) {
  return detail::concat('.', file_name, ".tmp.", pid, '.', n);
}

bool& atomic_writer_uses_tmpfile() {
  static bool use = true;
  return use;
}

AtomicFileWriter::AtomicFileWriter(const std::string& path, const char* op, Options options)
    : path_(path), target_(path), op_(op) {
  if (options.follow_symlink)
    if (const int err = resolve_symlinks(target_)) {
      target_ = path_;
      fail_io("cannot follow the symlink", err);
    }
  dir_ = parent_folder(target_);
  const std::string name = std::filesystem::path(target_).filename().string();
  struct stat st {};
  const bool keep_mode = ::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode);

  remove_stale_temporaries(dir_, name);
  // An unnamed file needs /proc to be linked into the folder (linkat through /proc/self/fd).
  static const bool have_proc_fd = ::access("/proc/self/fd", X_OK) == 0;
  if (atomic_writer_uses_tmpfile() && have_proc_fd) {
    fd_ = FileDescriptor(::open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666));
    unnamed_ = fd_.valid();
  }
  for (int attempt = 0; !fd_.valid(); attempt++) {
    temp_path_ = dir_ + "/" + temporary_name(name, ::getpid(), temporary_counter++);
    fd_ = FileDescriptor(::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd_.valid() && (errno != EEXIST || attempt > 100)) {
      const int err = errno;
      temp_path_.clear();
      fail_io("cannot create a temporary file beside it", err);
    }
  }
  if (keep_mode && ::fchmod(fd_.get(), st.st_mode & 07777) != 0) {
    const int err = errno;
    discard();  // no destructor runs for an object whose constructor throws
    fail_io("cannot give the new file the old one's mode", err);
  }
  buffer_.reserve(kWriteBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  discard();
}

void AtomicFileWriter::discard() noexcept {
  if (committed_) return;
  fd_.close();
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

void AtomicFileWriter::fail_io(const char* what, int err) const {
  if (target_ != path_)
    fail(ErrorKind::Io, op_, path_, " (a link to ", target_, "): ", what, ": ", std::strerror(err));
  fail(ErrorKind::Io, op_, path_, ": ", what, ": ", std::strerror(err));
}

void AtomicFileWriter::write_fully(const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_.get(), p, std::min<size_t>(n, 1u << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail_io("write failed", w < 0 ? errno : EIO);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFileWriter::flush_buffer() {
  write_fully(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFileWriter::write(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  if (buffer_.size() + n > kWriteBufferBytes) flush_buffer();
  if (n >= kWriteBufferBytes) {
    write_fully(p, n);
  } else {
    buffer_.insert(buffer_.end(), p, p + n);
  }
}

void AtomicFileWriter::commit() {
  flush_buffer();
  if (::fsync(fd_.get()) != 0) fail_io("fsync failed", errno);
  if (unnamed_) {
    // A link cannot replace a file: name the file beside the target, then rename it over.
    const std::string self = detail::concat("/proc/self/fd/", fd_.get());
    const std::string name = std::filesystem::path(target_).filename().string();
    for (int attempt = 0; temp_path_.empty(); attempt++) {
      temp_path_ = dir_ + "/" + temporary_name(name, ::getpid(), temporary_counter++);
      if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temp_path_.c_str(), AT_SYMLINK_FOLLOW) == 0)
        break;
      const int err = errno;
      temp_path_.clear();
      if (err != EEXIST || attempt > 100) fail_io("cannot link the new file into its folder", err);
    }
  }
  if (const int err = fd_.close()) fail_io("close failed", err);
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0)
    fail_io("cannot rename the temporary file into place", errno);
  committed_ = true;
  // Makes the rename itself durable; a folder that cannot be synced loses nothing already written.
  const FileDescriptor dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid()) (void)::fsync(dir.get());
}

// ---- messages ---------------------------------------------------------------------------------

size_t json_nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        i++;  // the escaped character, a quote among them
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return deepest;
}

void check_json_nesting(std::string_view text, const char* op, std::string_view what) {
  if (const size_t d = json_nesting_depth(text); d > kMaxJsonNesting)
    fail(ErrorKind::Parse, op, what, ": nests arrays and objects ", d, " deep, more than ",
         kMaxJsonNesting);
}

std::string excerpt(std::string_view text, size_t max_bytes) {
  size_t cut = std::min(text.size(), max_bytes);
  if (cut < text.size())
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) cut--;
  std::string out;
  out.reserve(cut + 24);
  for (const char ch : text.substr(0, cut)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  if (cut < text.size()) out += detail::concat("... (", text.size(), " bytes)");
  return out;
}

}  // namespace wick::io
