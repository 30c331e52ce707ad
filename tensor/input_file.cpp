// tensor/input_file.cpp — see input_file.hpp.
#include "tensor/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <streambuf>
#include <system_error>
#include <utility>

#include "tensor/error.hpp"
#include "tensor/printable.hpp"

namespace attograd {

namespace {

// What a file that is not regular is, for the refusal.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string os_reason(int code) { return std::system_category().message(code); }

}  // namespace

// A read buffer over the descriptor, for stream().
class InputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd) {}

 protected:
  int_type underflow() override {
    ssize_t count = 0;
    do {
      count = ::read(fd_, bytes_, sizeof bytes_);
    } while (count < 0 && errno == EINTR);
    if (count < 0) throw Error(fmt::format("read error: {}", os_reason(errno)));
    if (count == 0) return traits_type::eof();
    setg(bytes_, bytes_, bytes_ + count);
    return traits_type::to_int_type(bytes_[0]);
  }

 private:
  int fd_;
  char bytes_[1 << 16];
};

InputFile::InputFile(const std::filesystem::path& path, InputFileRules rules)
    : shown_path_(printable(path.string(), 300)), reader_(std::move(rules.reader)) {
  const std::string& remedy = rules.remedy;
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of
  // waiting; it is refused below, and a regular file ignores the flag.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat status {};
  if (fd_ < 0) {
    const int code = errno;
    check(code != ENOENT, "{}: '{}' does not exist ({})", reader_, shown_path_, remedy);
    // A socket cannot be opened at all (ENXIO); say what it is.
    if (::stat(path.c_str(), &status) != 0 || S_ISREG(status.st_mode)) {
      fail("{}: cannot open '{}': {} ({})", reader_, shown_path_, os_reason(code), remedy);
    }
  } else if (::fstat(fd_, &status) != 0) {
    const int code = errno;
    ::close(fd_);
    fail("{}: cannot read the size of '{}': {} ({})", reader_, shown_path_, os_reason(code),
         remedy);
  }
  if (!S_ISREG(status.st_mode)) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    check(!S_ISDIR(status.st_mode), "{}: '{}' is a folder, not a file ({})", reader_, shown_path_,
          remedy);
    fail("{}: '{}' is {}, not a regular file; only regular files are read ({})", reader_,
         shown_path_, file_kind(status.st_mode), remedy);
  }
  size_ = static_cast<std::uint64_t>(status.st_size);
  if (rules.max_bytes > 0 && size_ > rules.max_bytes) {
    ::close(fd_);
    fail("{}: '{}' is {} bytes, more than this reader's limit of {} bytes ({})", reader_,
         shown_path_, size_, rules.max_bytes, remedy);
  }
  // Back to blocking reads: a regular file never blocks, and the flag has no
  // further use.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

InputFile::~InputFile() {
  stream_.reset();
  buffer_.reset();
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(std::uint64_t offset, char* out, std::uint64_t count) {
  const std::uint64_t first = offset;
  while (count > 0) {
    const ssize_t got = ::pread(fd_, out, count, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    check(got > 0,
          "{}: reading file bytes {}..{} of '{}' failed: {} (the file changed or shrank while it "
          "was read, or the disk reported an error)",
          reader_, first, offset + count, shown_path_,
          got < 0 ? os_reason(errno) : std::string("it ended early"));
    out += got;
    offset += static_cast<std::uint64_t>(got);
    count -= static_cast<std::uint64_t>(got);
  }
}

std::istream& InputFile::stream() {
  if (!stream_) {
    buffer_ = std::make_unique<Buffer>(fd_);
    stream_ = std::make_unique<std::istream>(buffer_.get());
  }
  return *stream_;
}

}  // namespace attograd
