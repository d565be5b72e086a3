// SPDX-License-Identifier: Apache-2.0
#include "common/journald_sink.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include <string>

namespace nvmeadapt {

namespace {

// Where sd_journal_sendv sends; it reports success when nothing listens there ("fail silently if the journal
// is not available"), so a line would vanish: without the socket the line goes to stderr instead.
constexpr char kJournalSocket[] = "/run/systemd/journal/socket";

}  // namespace

bool SendToJournald(int priority, std::string_view message, const LogFields& fields) {
  struct stat socket_file{};
  if (stat(kJournalSocket, &socket_file) != 0 || !S_ISSOCK(socket_file.st_mode)) return false;
  const std::string entry[] = {
      "MESSAGE=" + std::string(message),
      "PRIORITY=" + std::to_string(priority),
      std::string("SYSLOG_IDENTIFIER=") + program_invocation_short_name,
      fields.controller.empty() ? "" : "CONTROLLER=" + std::string(fields.controller),
      fields.queue.empty() ? "" : "QUEUE=" + std::string(fields.queue),
      fields.reason.empty() ? "" : "REASON=" + std::string(fields.reason),
  };
  iovec vectors[std::size(entry)];
  int count = 0;
  for (const std::string& field : entry) {
    if (field.empty()) continue;
    vectors[count++] = iovec{const_cast<char*>(field.data()), field.size()};
  }
  return sd_journal_sendv(vectors, count) >= 0;
}

}  // namespace nvmeadapt
