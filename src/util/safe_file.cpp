#include "util/safe_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/error.hpp"

namespace orchid {

namespace fs = std::filesystem;

namespace {

// Closes the descriptor on every exit path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused after fstat.
int open_for_reading(const std::string& path, bool follow_final_symlink) {
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
  if (!follow_final_symlink) flags |= O_NOFOLLOW;
  return ::open(path.c_str(), flags);
}

std::int64_t checked_regular_size(int fd, const std::string& path, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    fail("{} '{}' cannot be examined: {}", what, path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    fail("{} '{}' is {}; only regular files are read", what, path, kind_of(st.st_mode));
  }
  return static_cast<std::int64_t>(st.st_size);
}

void read_at(int fd, std::int64_t offset, std::int64_t length, char* out, const std::string& path,
             const std::string& what) {
  std::int64_t done = 0;
  while (done < length) {
    const ssize_t got = ::pread(fd, out + done, static_cast<std::size_t>(length - done),
                                static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("{} '{}' cannot be read: {}", what, path, std::strerror(errno));
    if (got == 0) {
      fail("{} '{}' is too short (need {} bytes at offset {})", what, path, length, offset);
    }
    done += got;
  }
}

bool lies_inside(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return i != inner.end();
}

}  // namespace

std::string read_regular_file(const std::string& path, std::int64_t max_bytes,
                              const std::string& what) {
  Fd fd(open_for_reading(path, true));
  if (fd.get() < 0) {
    if (errno == ENOENT) fail("{} '{}' does not exist", what, path);
    fail("{} '{}' cannot be opened: {}", what, path, std::strerror(errno));
  }
  const std::int64_t size = checked_regular_size(fd.get(), path, what);
  if (size > max_bytes) {
    fail("{} '{}' has {} bytes, more than the {} bytes allowed", what, path, size, max_bytes);
  }
  std::string out(static_cast<std::size_t>(size), '\0');
  read_at(fd.get(), 0, size, out.data(), path, what);
  return out;
}

std::string confined_path(const std::string& folder, const std::string& location,
                          const std::string& context) {
  const fs::path relative(location);
  if (relative.empty()) fail("{}: the location is empty", context);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) {
    fail("{}: location '{}' is absolute; only paths relative to the model folder are allowed",
         context, location);
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(folder.empty() ? "." : folder, ec);
  if (ec) fail("{}: folder '{}' cannot be resolved: {}", context, folder, ec.message());
  const fs::path target = fs::weakly_canonical(base / relative, ec);
  if (ec) fail("{}: location '{}' cannot be resolved: {}", context, location, ec.message());
  if (!lies_inside(target, base)) {
    fail("{}: location '{}' resolves to '{}', outside the model folder '{}'", context, location,
         target.string(), base.string());
  }
  return target.string();
}

namespace {

// The data file opened for a range of it (no final symlink followed, a regular file long
// enough), or an error naming it.
int open_range(const std::string& path, std::int64_t offset, std::int64_t length,
               const std::string& what) {
  Fd fd(open_for_reading(path, false));
  if (fd.get() < 0) {
    if (errno == ELOOP) fail("{} '{}' is a symbolic link; it is not followed", what, path);
    if (errno == ENOENT) fail("{} '{}' does not exist", what, path);
    fail("{} '{}' cannot be opened: {}", what, path, std::strerror(errno));
  }
  const std::int64_t size = checked_regular_size(fd.get(), path, what);
  if (offset < 0 || length < 0 || offset > size || size - offset < length) {
    fail("{} '{}' is too short (need {} bytes at offset {}, it has {})", what, path, length, offset,
         size);
  }
  return fd.release();
}

}  // namespace

void read_file_range(const std::string& path, std::int64_t offset, std::int64_t length, void* out,
                     const std::string& context) {
  const std::string what = context + ": data file";
  Fd fd(open_range(path, offset, length, what));
  read_at(fd.get(), offset, length, static_cast<char*>(out), path, what);
}

std::optional<MappedRange> map_file_range(const std::string& path, std::int64_t offset,
                                          std::int64_t length, const std::string& context) {
  Fd fd(open_range(path, offset, length, context + ": data file"));
  if (length == 0) return std::nullopt;
  const std::int64_t page = ::sysconf(_SC_PAGESIZE);
  const std::int64_t start = page > 0 ? offset - offset % page : offset;
  const auto span = static_cast<std::size_t>(length + (offset - start));
  void* base = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), start);
  if (base == MAP_FAILED) return std::nullopt;
  MappedRange m;
  m.data = static_cast<std::byte*>(base) + (offset - start);
  m.owner = std::shared_ptr<void>(base, [span](void* p) { ::munmap(p, span); });
  return m;
}

std::int64_t regular_file_size(const std::string& path) {
  Fd fd(open_for_reading(path, false));
  if (fd.get() < 0) return -1;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<std::int64_t>(st.st_size);
}

}  // namespace orchid
