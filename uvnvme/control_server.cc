// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/control_server.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "uvnvme/placement.h"

namespace nvmeadapt::uvnvme {
namespace {

constexpr size_t kMaxClients = 32;
constexpr size_t kMaxPendingOutput = 64 * 1024;  // a client that does not read stops being read

struct Client {
  int fd = -1;
  std::string in;
  std::string out;
  bool discarding = false;  // inside an over-long line: drop bytes up to its newline
  bool eof = false;         // the client shut its side: answer what it sent, then close
  bool closed = false;
};

Status PrepareDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0750) == 0) {
    if (chmod(dir.c_str(), 0750) != 0) return SysError("chmod", dir, errno);  // the umask may have narrowed it
  } else if (errno != EEXIST) {
    return SysError("mkdir", dir, errno);
  }
  struct stat st{};
  if (lstat(dir.c_str(), &st) != 0) return SysError("lstat", dir, errno);
  if (!S_ISDIR(st.st_mode)) return MakeError(ErrorCode::kPermissionDenied, dir + ": not a directory (or a symlink)");
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return MakeError(ErrorCode::kPermissionDenied, dir + ": owned by uid " + std::to_string(st.st_uid));
  }
  if (st.st_mode & S_IWOTH) {
    return MakeError(ErrorCode::kPermissionDenied, dir + ": writable by others; refusing to use it");
  }
  // The packaged layout (deploy/systemd/nvme-adapt.tmpfiles): root's directory that the driver group may
  // write, sticky so that no member can remove or replace another member's socket.
  if ((st.st_mode & S_IWGRP) && !(st.st_mode & S_ISVTX)) {
    return MakeError(ErrorCode::kPermissionDenied,
                     dir + ": writable by its group without the sticky bit (chmod +t, as the packaged 3770); "
                           "refusing to use it");
  }
  return OkStatus();
}

void Respond(Client& client, const std::string& response) {
  client.out += response;
  client.out += '\n';
}

void Consume(Client& client, const char* data, size_t size, ControlTarget& target, pid_t pid) {
  client.in.append(data, size);
  size_t start = 0;
  for (size_t newline; (newline = client.in.find('\n', start)) != std::string::npos; start = newline + 1) {
    if (client.discarding) {
      client.discarding = false;  // the rest of the over-long line ends here
      continue;
    }
    Respond(client, HandleControlRequest(std::string_view(client.in).substr(start, newline - start), target, pid));
  }
  client.in.erase(0, start);
  if (!client.discarding && client.in.size() > kMaxRequestBytes) {
    Respond(client, ControlErrorResponse("request longer than " + std::to_string(kMaxRequestBytes) + " bytes"));
    client.discarding = true;
  }
  if (client.discarding) client.in.clear();
}

void ReadFrom(Client& client, ControlTarget& target, pid_t pid) {
  char buffer[8192];
  while (client.out.size() < kMaxPendingOutput) {
    ssize_t got = recv(client.fd, buffer, sizeof buffer, 0);
    if (got > 0) {
      Consume(client, buffer, static_cast<size_t>(got), target, pid);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF: a partial request is dropped, so nothing was changed; complete ones still get their answers.
    if (got == 0) client.eof = true;
    else client.closed = true;
    return;
  }
}

void WriteTo(Client& client) {
  while (!client.out.empty()) {
    ssize_t sent = send(client.fd, client.out.data(), client.out.size(), MSG_NOSIGNAL);
    if (sent > 0) {
      client.out.erase(0, static_cast<size_t>(sent));
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    client.closed = true;  // the client went away before reading its answers
    return;
  }
}

}  // namespace

std::string ControlSocketDir(const std::string& runtime_dir) { return runtime_dir + "/uvnvme"; }

Result<std::unique_ptr<ControlServer>> ControlServer::Start(const std::string& runtime_dir, ControlTarget& target,
                                                            const std::vector<int>& cpus) {
  const std::string dir = ControlSocketDir(runtime_dir);
  if (Status ready = PrepareDirectory(dir); !ready) return std::move(ready).take_error();
  const std::string path = dir + "/" + std::to_string(getpid()) + ".sock";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return MakeError(ErrorCode::kInvalidArgument, "socket path too long for a Unix socket: " + path);
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SysError("socket", path, errno);
  auto fail = [&](const char* what, int err) {
    close(fd);
    return SysError(what, path, err);
  };
  // bind creates the file with the socket inode's mode (minus the umask): owner-only until chmod below.
  if (fchmod(fd, 0600) != 0) return fail("fchmod", errno);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return fail("unlink stale", errno);  // our pid: stale
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return fail("bind", errno);
  if (chmod(path.c_str(), 0660) != 0 || listen(fd, 16) != 0) {
    int err = errno;
    unlink(path.c_str());
    return fail("chmod/listen", err);
  }
  int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    int err = errno;
    unlink(path.c_str());
    return fail("eventfd", err);
  }
  std::unique_ptr<ControlServer> server(new ControlServer(path, fd, stop_fd, target));
  server->thread_ = std::thread([raw = server.get()] { raw->Serve(); });
  if (Status placed = ApplyPlacement(server->thread_.native_handle(), ThreadPlacement{false, cpus}, "control server thread");
      !placed) {
    return std::move(placed).take_error();  // the server is destroyed: its thread stops, the socket goes
  }
  return server;
}

ControlServer::ControlServer(std::string path, int listen_fd, int stop_fd, ControlTarget& target)
    : path_(std::move(path)), listen_fd_(listen_fd), stop_fd_(stop_fd), target_(target), pid_(getpid()) {}

ControlServer::~ControlServer() {
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) != sizeof one) NA_WARN("control server: cannot signal stop");
  if (thread_.joinable()) thread_.join();
  unlink(path_.c_str());
  close(listen_fd_);
  close(stop_fd_);
}

void ControlServer::Serve() {
  pthread_setname_np(pthread_self(), "uvnvme-control");
  // A driver's control plane must not preempt its data path: woken by a request or by the reaper's
  // acknowledgement, this thread waits for the CPU instead of taking it from a polling reaper (SCHED_BATCH
  // keeps its fair share, without wakeup preemption). A switch the agent asked for is timed by the
  // reaper's mode probe, so the wait costs the try nothing.
  const sched_param no_priority{};
  if (sched_setscheduler(0, SCHED_BATCH, &no_priority) != 0) {
    NA_WARN("control server " << path_ << ": cannot run SCHED_BATCH: " << std::strerror(errno));
  }
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  while (true) {
    fds.assign({{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (const Client& client : clients) {
      short events = !client.eof && client.out.size() < kMaxPendingOutput ? POLLIN : 0;
      if (!client.out.empty()) events |= POLLOUT;
      fds.push_back({client.fd, events, 0});
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      NA_ERROR("control server " << path_ << ": poll: " << std::strerror(errno));
      break;
    }
    if (fds[0].revents) break;
    auto serve = [&](Client& client, bool readable) {
      if (readable && !client.closed) ReadFrom(client, target_, pid_);
      if (!client.closed) WriteTo(client);
      if (client.eof && client.out.empty()) client.closed = true;
    };
    auto drop_closed = [&] {
      std::erase_if(clients, [](const Client& client) {
        if (client.closed) close(client.fd);
        return client.closed;
      });
    };
    for (size_t i = 0; i < clients.size(); ++i) serve(clients[i], fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR));
    if (fds[1].revents & POLLIN) {
      for (int fd; (fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
        if (clients.size() >= kMaxClients) {
          // Clients accepted in this burst may have sent their request and left already: serve them
          // (the sockets are non-blocking) before a departed client costs a new one its place.
          for (Client& client : clients) serve(client, true);
          drop_closed();
        }
        if (clients.size() >= kMaxClients) {
          const std::string busy = ControlErrorResponse("too many clients") + "\n";
          (void)!send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          close(fd);
          continue;
        }
        clients.push_back(Client{fd});
      }
    }
    drop_closed();
  }
  for (Client& client : clients) close(client.fd);
}

}  // namespace nvmeadapt::uvnvme
