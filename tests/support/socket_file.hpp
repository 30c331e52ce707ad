// tests/support/socket_file.hpp — a Unix socket file, one of the
// non-regular files the input tests must see refused.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

namespace attograd::testing {

// A Unix socket file at `path` (it stays after the socket is closed).
inline void make_socket(const std::filesystem::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(path.string().size() < sizeof(address.sun_path));
  std::strcpy(address.sun_path, path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  ::close(fd);
}

}  // namespace attograd::testing
