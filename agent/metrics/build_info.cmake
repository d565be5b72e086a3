# Writes OUTPUT with the version and the current git commit; rewrites it only when they changed, so an
# unchanged commit rebuilds nothing. Run at every build: cmake -DSOURCE_DIR= -DOUTPUT= -DVERSION= -P build_info.cmake
execute_process(COMMAND git describe --always --dirty --abbrev=12 --match=no-tag-matches-this
                WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit unknown)
endif()
file(WRITE "${OUTPUT}.new" "#define NVME_ADAPT_VERSION \"${VERSION}\"\n#define NVME_ADAPT_COMMIT \"${commit}\"\n")
file(COPY_FILE "${OUTPUT}.new" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.new")
