// SPDX-License-Identifier: Apache-2.0
#include "tests/unit/fake_uvnvme.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace nvmeadapt::testing {
namespace {

constexpr size_t kMaxLine = 4096;

int ListenOn(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(strerror(errno)));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0) {
    const std::string why = strerror(errno);
    close(fd);
    throw std::runtime_error("bind/listen " + path + ": " + why);
  }
  return fd;
}

nlohmann::json Refusal(const std::string& message) { return {{"ok", false}, {"error", message}}; }

bool UnsignedField(const nlohmann::json& request, const char* name, uint32_t* value) {
  const auto it = request.find(name);
  if (it == request.end() || !it->is_number_unsigned()) return false;
  *value = it->get<uint32_t>();
  return true;
}

}  // namespace

FakeUvnvmeServer::FakeUvnvmeServer(std::string path, uint32_t pid, std::vector<QueueState> queues)
    : path_(std::move(path)), pid_(pid), queues_(std::move(queues)) {
  listen_fd_ = ListenOn(path_);
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  thread_ = std::thread([this] { Serve(); });
}

FakeUvnvmeServer::~FakeUvnvmeServer() { Stop(); }

void FakeUvnvmeServer::Stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  const char byte = 1;
  (void)!write(wake_pipe_[1], &byte, 1);
  thread_.join();
  close(listen_fd_);
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
  unlink(path_.c_str());
}

void FakeUvnvmeServer::SetBehavior(Behavior behavior) {
  std::lock_guard lock(mutex_);
  behavior_ = behavior;
}

void FakeUvnvmeServer::RefuseNextSetMode(std::string message) {
  std::lock_guard lock(mutex_);
  refuse_next_ = std::move(message);
}

std::vector<std::string> FakeUvnvmeServer::Requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

int FakeUvnvmeServer::Connections() const {
  std::lock_guard lock(mutex_);
  return connections_;
}

FakeUvnvmeServer::QueueState FakeUvnvmeServer::Queue(uint32_t ctrl, uint32_t qid) const {
  std::lock_guard lock(mutex_);
  for (const auto& q : queues_) {
    if (q.ctrl == ctrl && q.qid == qid) return q;
  }
  throw std::runtime_error("no such fake queue");
}

std::string FakeUvnvmeServer::Answer(const std::string& line) {
  std::lock_guard lock(mutex_);
  requests_.push_back(line);
  if (line.size() > kMaxLine) return Refusal("request longer than 4096 bytes").dump();
  const nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
  if (request.is_discarded() || !request.is_object()) return Refusal("invalid JSON").dump();
  const auto op = request.find("op");
  if (op == request.end() || !op->is_string()) return Refusal("missing or mistyped field 'op'").dump();
  if (*op == "list") {
    nlohmann::json queues = nlohmann::json::array();
    for (const auto& q : queues_) {
      queues.push_back({{"ctrl", q.ctrl}, {"qid", q.qid}, {"mode", q.mode}, {"submitted", 0}, {"completed", 0},
                        {"wakeups", 0}, {"mode_switches", q.mode_switches},
                        {"coalesce_threshold", q.coalesce_threshold}, {"coalesce_time_us", q.coalesce_time_us}});
    }
    return nlohmann::json{{"ok", true}, {"pid", pid_}, {"queues", queues}}.dump();
  }
  if (*op != "set_mode" && *op != "set_coalescing") return Refusal("unknown op '" + op->get<std::string>() + "'").dump();
  uint32_t ctrl = 0;
  uint32_t qid = 0;
  if (!UnsignedField(request, "ctrl", &ctrl) || !UnsignedField(request, "qid", &qid)) {
    return Refusal("missing or mistyped field 'ctrl' or 'qid'").dump();
  }
  QueueState* queue = nullptr;
  for (auto& q : queues_) {
    if (q.ctrl == ctrl && q.qid == qid) queue = &q;
  }
  if (queue == nullptr) {
    return Refusal("unknown queue ctrl " + std::to_string(ctrl) + " qid " + std::to_string(qid)).dump();
  }
  if (*op == "set_mode") {
    const auto mode = request.find("mode");
    if (mode == request.end() || !mode->is_string() || (*mode != "interrupt" && *mode != "poll")) {
      return Refusal("unknown mode").dump();
    }
    if (!refuse_next_.empty()) {
      std::string message = std::move(refuse_next_);
      refuse_next_.clear();
      return Refusal(message).dump();
    }
    if (queue->mode != mode->get<std::string>()) ++queue->mode_switches;
    queue->mode = mode->get<std::string>();
    return nlohmann::json{{"ok", true}, {"mode", queue->mode}}.dump();
  }
  uint32_t threshold = 0;
  uint32_t time_us = 0;
  if (!UnsignedField(request, "threshold", &threshold) || !UnsignedField(request, "time_us", &time_us)) {
    return Refusal("missing or mistyped field 'threshold' or 'time_us'").dump();
  }
  queue->coalesce_threshold = threshold;
  queue->coalesce_time_us = time_us;
  return nlohmann::json{{"ok", true}}.dump();
}

void FakeUvnvmeServer::Serve() {
  struct Client {
    int fd;
    std::string buffer;
  };
  std::vector<Client> clients;
  for (;;) {
    std::vector<pollfd> fds{{wake_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const auto& c : clients) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        clients.push_back({fd, {}});
        std::lock_guard lock(mutex_);
        ++connections_;
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Client& client = clients[i - 2];
      char buffer[8192];
      const ssize_t n = read(client.fd, buffer, sizeof buffer);
      if (n <= 0) {
        close(client.fd);
        client.fd = -1;
        continue;
      }
      client.buffer.append(buffer, static_cast<size_t>(n));
      size_t newline;
      while (client.fd >= 0 && (newline = client.buffer.find('\n')) != std::string::npos) {
        const std::string line = client.buffer.substr(0, newline);
        client.buffer.erase(0, newline + 1);
        Behavior behavior;
        {
          std::lock_guard lock(mutex_);
          behavior = behavior_;
        }
        std::string reply;
        switch (behavior) {
          case Behavior::kProtocol: reply = Answer(line) + "\n"; break;
          case Behavior::kGarbage: {
            std::lock_guard lock(mutex_);
            requests_.push_back(line);
            reply = "this is not JSON {\n";
            break;
          }
          case Behavior::kSilent:
          case Behavior::kCloseAtOnce: {
            std::lock_guard lock(mutex_);
            requests_.push_back(line);
            break;
          }
        }
        if (behavior == Behavior::kCloseAtOnce) {
          close(client.fd);
          client.fd = -1;
          break;
        }
        if (!reply.empty()) (void)!send(client.fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
    }
    std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
  }
  for (const auto& c : clients) close(c.fd);
}

void MakeStaleSocket(const std::string& path) {
  const int fd = ListenOn(path);
  close(fd);  // the file stays; nobody listens any more
}

}  // namespace nvmeadapt::testing
