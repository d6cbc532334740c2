// UDP ports on loopback for tests that start a served rack (`mxtb rack --serve --listen
// 127.0.0.1:P` puts server s on P + s).
#pragma once

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace test_ports {

// A UDP port p on loopback with p + 1 free too (for a rack's --listen 127.0.0.1:p).
inline int free_port_pair() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const int p = ntohs(a.sin_port);
    int fd2 = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in b = a;
    b.sin_port = htons(static_cast<uint16_t>(p + 1));
    const bool ok = p < 65535 && bind(fd2, reinterpret_cast<sockaddr*>(&b), sizeof b) == 0;
    close(fd);
    close(fd2);
    if (ok) return p;
  }
  FAIL("no two free UDP ports in a row");
  return 0;
}

}  // namespace test_ports
