#include "config/file_text.hpp"

#include <floodgate/config/rule_file.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace floodgate::config::detail {

namespace {

file_text failure(std::string message) { return {{}, std::move(message)}; }

file_text too_large(std::uint64_t size) {
  return failure("file is too large (" + std::to_string(size) + " bytes; the limit is " +
                 std::to_string(max_rule_file_bytes) + ")");
}

}  // namespace

file_text read_file_text(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not hang a reload.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return failure(std::string("cannot open: ") + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_on_return{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return failure(std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return failure("is a directory, not a rule file");
  if (!S_ISREG(st.st_mode)) return failure("is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_rule_file_bytes) {
    return too_large(static_cast<std::uint64_t>(st.st_size));
  }
  // Read to the end (the file may have grown since fstat), one chunk past the cap at most.
  file_text out;
  out.text.reserve(static_cast<std::size_t>(st.st_size) + 1);
  char chunk[64 * 1024];
  while (out.text.size() <= max_rule_file_bytes) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure(std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;
    out.text.append(chunk, static_cast<std::size_t>(n));
  }
  if (out.text.size() > max_rule_file_bytes) return too_large(out.text.size());
  return out;
}

}  // namespace floodgate::config::detail
