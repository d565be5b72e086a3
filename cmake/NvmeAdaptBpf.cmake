# Builds a BPF object with clang 14 and generates its libbpf skeleton:
#   clang -target bpf -g -O2 -mcpu=v3   ->  NAME.tmp.o
#   bpftool gen object NAME.bpf.o NAME.tmp.o   (links and strips DWARF: the skeleton embeds a small object)
#   bpftool gen skeleton NAME.bpf.o name NAME  ->  NAME.skel.h
# nvme_adapt_bpf_skeleton(TARGET NAME SOURCE [DEPENDS headers...]) makes an INTERFACE target whose
# include directory holds NAME.skel.h. -mcpu=v3 for BPF_ATOMIC fetch/xchg/cmpxchg (kernel 5.12+).
find_program(NVME_ADAPT_CLANG NAMES clang-14 clang)
find_program(NVME_ADAPT_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin)
nvme_adapt_require(NVME_ADAPT_CLANG "clang")
nvme_adapt_require(NVME_ADAPT_BPFTOOL "bpftool")

function(nvme_adapt_bpf_skeleton target name source)
  cmake_parse_arguments(ARG "" "" "DEPENDS" ${ARGN})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/skel")
  set(tmp "${out}/${name}.tmp.o")
  set(obj "${out}/${name}.bpf.o")
  set(skel "${out}/${name}.skel.h")
  add_custom_command(
    OUTPUT "${skel}" "${obj}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${out}"
    COMMAND ${NVME_ADAPT_CLANG} -target bpf -g -O2 -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror
            -I${PROJECT_SOURCE_DIR}/bpf -I/usr/include/x86_64-linux-gnu -c "${source}" -o "${tmp}"
    COMMAND ${NVME_ADAPT_BPFTOOL} gen object "${obj}" "${tmp}"
    COMMAND ${NVME_ADAPT_BPFTOOL} gen skeleton "${obj}" name ${name} > "${skel}"
    DEPENDS "${source}" ${ARG_DEPENDS}
    COMMENT "BPF ${name}: clang, bpftool gen object, bpftool gen skeleton"
    VERBATIM)
  add_custom_target(${target}_gen DEPENDS "${skel}")
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_gen)
  target_include_directories(${target} INTERFACE "${out}")
endfunction()
