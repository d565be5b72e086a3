// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/elf_hooks.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace nvmeadapt::collect {
namespace {

// "/proc/PID/exe": the kernel's link to the image a process runs, the one link followed (it cannot lead
// to anything but the regular file that was executed).
bool IsProcessImageLink(const std::string& path) {
  constexpr std::string_view kProc = "/proc/", kExe = "/exe";
  if (path.size() <= kProc.size() + kExe.size() || path.rfind(kProc, 0) != 0 ||
      path.compare(path.size() - kExe.size(), kExe.size(), kExe) != 0) {
    return false;
  }
  const std::string pid = path.substr(kProc.size(), path.size() - kProc.size() - kExe.size());
  return pid.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

// A binary named by a process (its executable, a library it maps) is the driver's word: a FIFO there would
// block open(2) and read(2) forever, a link may lead anywhere, a sparse file of gigabytes would be read
// whole. Opened without waiting and without following a link, it must be a regular file within the bound.
Result<CheckedBinary> CheckedBinary::Open(const std::string& path) {
  const int follow = IsProcessImageLink(path) ? 0 : O_NOFOLLOW;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | follow);
  if (fd < 0) return SysError("open", path, errno);
  CheckedBinary binary(fd, path);
  struct stat st{};
  if (fstat(fd, &st) != 0) return SysError("fstat", path, errno);
  if (!S_ISREG(st.st_mode)) return MakeError(ErrorCode::kPermissionDenied, path + ": refused: not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxBinaryBytes) {
    return MakeError(ErrorCode::kPermissionDenied, path + ": refused: " + std::to_string(st.st_size) +
                                                       " bytes, over the " + std::to_string(kMaxBinaryBytes) + " read");
  }
  return binary;
}

CheckedBinary& CheckedBinary::operator=(CheckedBinary&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

CheckedBinary::~CheckedBinary() {
  if (fd_ >= 0) close(fd_);
}

std::string CheckedBinary::PinnedPath() const { return "/proc/self/fd/" + std::to_string(fd_); }

Result<BinaryHooks> ReadBinaryHooks(const std::string& path) {
  NA_ASSIGN_OR_RETURN(auto binary, CheckedBinary::Open(path));
  return ReadBinaryHooks(binary);
}

Result<BinaryHooks> ReadBinaryHooks(const CheckedBinary& binary) {
  if (elf_version(EV_CURRENT) == EV_NONE) return MakeError(ErrorCode::kInternal, "libelf: version mismatch");
  // libelf reads with pread(2) from offset 0: the descriptor's position is never relied on.
  Elf* elf = elf_begin(binary.fd(), ELF_C_READ, nullptr);
  if (elf == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, binary.path() + ": not an ELF file (" + elf_errmsg(-1) + ")");
  }
  size_t names_index = 0;
  elf_getshdrstrndx(elf, &names_index);
  BinaryHooks hooks;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr) continue;
    const char* section = elf_strptr(elf, names_index, header.sh_name);
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || section == nullptr) continue;
    if (header.sh_type == SHT_NOTE && std::strcmp(section, ".note.stapsdt") == 0) {
      GElf_Nhdr note;
      size_t offset = 0, name_offset = 0, desc_offset = 0;
      while ((offset = gelf_getnote(data, offset, &note, &name_offset, &desc_offset)) > 0) {
        // desc: pc, base, semaphore (3 addresses), then "provider\0name\0args\0".
        const size_t addresses = 3 * (gelf_getclass(elf) == ELFCLASS32 ? 4 : 8);
        if (note.n_type != 3 || note.n_descsz <= addresses) continue;
        const char* provider = static_cast<const char*>(data->d_buf) + desc_offset + addresses;
        const size_t strings = note.n_descsz - addresses;
        if (strnlen(provider, strings) != 6 || std::strncmp(provider, "uvnvme", strings) != 0) continue;
        hooks.uvnvme_usdt = true;
        const char* probe_name = provider + 7;
        if (strings > 7 && std::strncmp(probe_name, "tally", strings - 7) == 0) hooks.uvnvme_tally = true;
      }
    } else if (header.sh_type == SHT_SYMTAB || header.sh_type == SHT_DYNSYM) {
      const size_t count = header.sh_entsize ? header.sh_size / header.sh_entsize : 0;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym symbol;
        if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr || symbol.st_shndx == SHN_UNDEF) continue;
        const char* name = elf_strptr(elf, header.sh_link, symbol.st_name);
        if (name != nullptr && std::strcmp(name, "spdk_nvme_qpair_process_completions") == 0)
          hooks.spdk_symbol = true;
      }
    }
  }
  elf_end(elf);
  return hooks;
}

}  // namespace nvmeadapt::collect
